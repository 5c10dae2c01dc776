//===- AttentionTypeRules.cpp - The result type of attention ----------------===//
//
// attention(q, k, v[, mask]): q [..., Hq, Sq, E], k [..., Hkv, Sk, E],
// v [..., Hkv, Sk, Ev] of one float dtype and one rank (>= 3), the leading
// dims equal; Hq a multiple of Hkv (grouped-query heads); the mask bool or
// q's dtype, broadcasting to the scores [..., Hq, Sq, Sk]. The result is
// [..., Hq, Sq, Ev] in q's dtype. Reports an error at the node and returns
// false otherwise.
//
//===----------------------------------------------------------------------===//
#include "ir/OpAttrs.h"
#include "ir/Printer.h"
#include "ir/TypeChecker.h"

#include <cmath>

using namespace cgc;
using namespace cgc::typerules;

bool TypeChecker::attention(Types &out) {
  if (!checkOperandDTypes(0, 3))
    return false;
  const TensorType &q = operandType(0), &k = operandType(1), &v = operandType(2);
  unsigned rank = q.rank();
  if (rank < 3 || k.rank() != rank || v.rank() != rank)
    return fail("q, k and v must be [..., heads, sequence, width] of one rank "
                ">= 3, got " + str(q) + ", " + str(k) + " and " + str(v));
  for (unsigned a = 0; a + 3 < rank; ++a)
    if (k.dims[a] != q.dims[a] || v.dims[a] != q.dims[a])
      return fail("the leading dims of q, k and v differ: " + str(q) + ", " +
                  str(k) + " and " + str(v));
  Dim qHeads = q.dims[rank - 3], kvHeads = k.dims[rank - 3];
  if (v.dims[rank - 3] != kvHeads || v.dims[rank - 2] != k.dims[rank - 2])
    return fail("k is " + str(k) + " but v is " + str(v) +
                " (they need the same heads and sequence)");
  if (qHeads != kvHeads &&
      (!qHeads.isStatic() || !kvHeads.isStatic() || kvHeads.extent() == 0 ||
       qHeads.extent() % kvHeads.extent() != 0))
    return fail("q has " + dimToString(qHeads, table) + " heads, k and v " +
                dimToString(kvHeads, table) +
                " (grouped-query heads need a multiple)");
  Dim width = q.dims[rank - 1];
  if (k.dims[rank - 1] != width)
    return fail("q is " + str(q) + " but k is " + str(k) +
                " (their last dims are contracted)");
  if (const Attribute *scale = node.attr("scale")) {
    double s = std::get<double>(*scale);
    if (!std::isfinite(s))
      return fail("attribute 'scale' must be finite");
  } else if (!width.isStatic()) {
    return fail("attribute 'scale' is needed for the symbolic width " +
                dimToString(width, table));
  }
  if (node.intAttr("window", 0) < 0)
    return fail("attribute 'window' must be at least 0 (0: no window)");
  double softcap = node.floatAttr("softcap", 0);
  if (!(softcap >= 0) || !std::isfinite(softcap))
    return fail("attribute 'softcap' must be finite and at least 0 (0: none)");
  Shape scores(q.dims.begin(), q.dims.end() - 1);
  scores.push_back(k.dims[rank - 2]);
  if (node.numOperands() == 4) {
    const TensorType &mask = operandType(3);
    if (mask.dtype != DType::Bool && mask.dtype != q.dtype)
      return fail("the mask has dtype " + dtypeName(mask.dtype) +
                  ", expected bool (true: kept) or " + dtypeName(q.dtype) +
                  " (added to the scores)");
    auto joined = broadcastShapes(mask.dims, scores);
    if (mask.rank() > rank || !joined || *joined != scores)
      return fail("the mask " + str(mask) + " does not broadcast to the scores " +
                  str(scores));
  }
  Shape result(q.dims.begin(), q.dims.end() - 1);
  result.push_back(v.dims[rank - 1]);
  out.push_back(TensorType(q.dtype, result));
  return true;
}
