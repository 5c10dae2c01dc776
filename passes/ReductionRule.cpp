//===- ReductionRule.cpp - When a reduction runs in two phases ---------------===//
#include "passes/ReductionRule.h"

#include "ir/TypeRules.h"

#include <algorithm>

using namespace cgc;

ReductionSplit cgc::reductionSplit(const Node &node) {
  ReductionSplit s;
  OpKind op = node.getOp();
  if (op != OpKind::Sum && op != OpKind::Mean && op != OpKind::Max &&
      op != OpKind::Min)
    return s;
  const TensorType &in = node.operand(0)->getType();
  if (!in.isStatic())
    return s;
  // The reduced dims must be the trailing ones: each row is contiguous.
  auto axes = reductionAxes(node, in.rank());
  unsigned first = in.rank() - unsigned(axes.size());
  for (unsigned k = 0; k < axes.size(); ++k)
    if (axes[k] != first + k)
      return s;
  s.rows = 1;
  s.length = 1;
  for (unsigned d = 0; d < in.rank(); ++d)
    (d < first ? s.rows : s.length) *= in.dims[d].extent();
  if (s.rows >= kSplitReductionMaxRows || s.length < kSplitReductionMinLength)
    return s;
  int64_t chunks = (s.length + kSplitReductionChunk - 1) / kSplitReductionChunk;
  s.chunks = std::min(chunks, kSplitReductionMaxBlocks / s.rows);
  s.partialBytes = in.dtype == DType::I64 ? 8 : 4;
  if (s.chunks < 2)
    s.chunks = 0;
  return s;
}
