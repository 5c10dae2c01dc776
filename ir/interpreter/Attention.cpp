//===- Attention.cpp - attention ------------------------------------------===//
//
// For every leading index, query head h (reading key and value head
// h / (Hq / Hkv)) and query row i, over the keys j:
//   s_j = scale * (q_i . k_j)        (scale = 1 / sqrt(E) when unset)
//   s_j = softcap * tanh(s_j / softcap)   with softcap > 0
//   a bool mask drops j where it is false; an additive one is added;
//   causal drops j > i, a window w > 0 drops j <= i - w (both top-left
//   aligned, as PyTorch's is_causal); a dropped score is -inf;
//   out_i = sum_j softmax(s)_j v_j
// (a row with every key dropped gives 0, as PyTorch's scaled_dot_product_
// attention does; a NaN score gives NaN). In double, rounded once to the
// result's dtype.
//
//===----------------------------------------------------------------------===//
#include "ir/OpAttrs.h"
#include "ir/interpreter/Kernels.h"

#include <cmath>
#include <optional>

using namespace cgc;
using namespace cgc::interp;

namespace {
struct AttentionLimits {
  double scale, softcap;
  bool causal;
  int64_t window;

  bool dropped(int64_t i, int64_t j) const {
    return (causal && j > i) || (window > 0 && j <= i - window);
  }
  double capped(double s) const {
    s *= scale;
    return softcap > 0 ? softcap * std::tanh(s / softcap) : s;
  }
};
} // namespace

Tensor interp::evalAttention(const Node &node, const Operands &in) {
  const Tensor &q = *in[0], &k = *in[1], &v = *in[2];
  const Tensor *mask = in.size() > 3 ? in[3] : nullptr;
  size_t rank = q.shape.size();
  int64_t qHeads = q.shape[rank - 3], kvHeads = k.shape[rank - 3];
  int64_t rows = q.shape[rank - 2], keys = k.shape[rank - 2];
  int64_t width = q.shape[rank - 1], valueWidth = v.shape[rank - 1];
  int64_t outer = numElements(Shape(q.shape.begin(), q.shape.end() - 3));
  AttentionLimits limits{attentionScale(node),
                         node.floatAttr("softcap", 0),
                         node.boolAttr("causal", false),
                         node.intAttr("window", 0)};
  Shape scores(q.shape.begin(), q.shape.end() - 1), result = scores;
  scores.push_back(keys);
  result.push_back(valueWidth);
  std::optional<BroadcastMap> maskAt;
  if (mask)
    maskAt.emplace(mask->shape, scores);
  Tensor out(q.dtype, result);
  int64_t group = kvHeads ? qHeads / kvHeads : 1;
  std::vector<double> s(size_t(keys), 0.0);
  for (int64_t head = 0; head < outer * qHeads; ++head) {
    int64_t kvHead = head / qHeads * kvHeads + head % qHeads / group;
    for (int64_t i = 0; i < rows; ++i) {
      int64_t row = head * rows + i;
      double m = -INFINITY;
      for (int64_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (int64_t t = 0; t < width; ++t)
          dot += q.real(row * width + t) * k.real((kvHead * keys + j) * width + t);
        double x = limits.capped(dot);
        if (mask) {
          int64_t at = (*maskAt)(row * keys + j);
          if (mask->dtype == DType::Bool)
            x = mask->nonzero(at) ? x : -INFINITY;
          else
            x += mask->real(at);
        }
        s[size_t(j)] = limits.dropped(i, j) ? -INFINITY : x;
        m = std::isnan(m) || std::isnan(s[size_t(j)]) ? NAN : std::max(m, s[size_t(j)]);
      }
      if (m == -INFINITY) { // Every key dropped.
        for (int64_t c = 0; c < valueWidth; ++c)
          out.setReal(row * valueWidth + c, 0.0);
        continue;
      }
      double sum = 0;
      for (int64_t j = 0; j < keys; ++j)
        sum += std::exp(s[size_t(j)] - m);
      for (int64_t c = 0; c < valueWidth; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < keys; ++j)
          acc += std::exp(s[size_t(j)] - m) / sum *
                 v.real((kvHead * keys + j) * valueWidth + c);
        out.setReal(row * valueWidth + c, acc);
      }
    }
  }
  out.round();
  return out;
}
