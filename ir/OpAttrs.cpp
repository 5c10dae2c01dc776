//===- OpAttrs.cpp - Attribute values with their defaults applied ------------===//
#include "ir/OpAttrs.h"

#include <algorithm>
#include <cmath>

using namespace cgc;

std::vector<int64_t> cgc::transposePerm(const Node &node, unsigned rank) {
  if (node.attr("perm"))
    return node.intsAttr("perm");
  std::vector<int64_t> perm;
  for (unsigned i = rank; i-- > 0;)
    perm.push_back(i);
  return perm;
}

SliceParams cgc::sliceParams(const Node &node) {
  SliceParams p{node.intsAttr("starts"), node.intsAttr("ends"),
                node.intsAttr("axes"), node.intsAttr("steps")};
  if (!node.attr("axes"))
    for (size_t i = 0; i < p.starts.size(); ++i)
      p.axes.push_back(i);
  if (!node.attr("steps"))
    p.steps.assign(p.starts.size(), 1);
  return p;
}

SliceRange cgc::sliceRange(int64_t start, int64_t end, int64_t step,
                           int64_t n) {
  auto clampIndex = [n](int64_t v) {
    if (v < 0)
      v += n;
    return std::min(std::max<int64_t>(v, 0), n);
  };
  int64_t b = clampIndex(start), e = clampIndex(end);
  // (e - b - 1) / step + 1 rather than (e - b + step - 1) / step, which
  // overflows for steps near INT64_MAX.
  return {b, e > b ? (e - b - 1) / step + 1 : 0};
}

double cgc::attentionScale(const Node &attention) {
  const TensorType &q = attention.operand(0)->getType();
  return attention.attr("scale") ? attention.floatAttr("scale", 1)
                                 : 1.0 / std::sqrt(double(q.dims[q.rank() - 1].extent()));
}

bool cgc::allReduceAverages(const Node &allReduce) {
  return allReduce.strAttr("reduction", "sum") == "mean";
}
