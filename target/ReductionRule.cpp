//===- ReductionRule.cpp - How row and column kernels map to threads ---------===//
#include "target/ReductionRule.h"

#include "ir/RowFusion.h"
#include "ir/TypeRules.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace cgc;

unsigned cgc::partialBytesOf(DType dtype) {
  return dtype == DType::I64 ? 8 : 4;
}

ReductionSplit cgc::reductionSplit(const Node &node) {
  ReductionSplit s;
  auto run = reducedRun(node);
  if (!run || run->inner != 1)
    return s;
  s.rows = run->outer;
  s.length = run->length;
  if (s.rows >= kSplitReductionMaxRows || s.length < kSplitReductionMinLength)
    return s;
  int64_t chunks = (s.length + kSplitReductionChunk - 1) / kSplitReductionChunk;
  s.chunks = std::min(chunks, kSplitReductionMaxBlocks / s.rows);
  s.partialBytes = partialBytesOf(node.operand(0)->getType().dtype);
  if (s.chunks < 2)
    s.chunks = 0;
  return s;
}

unsigned cgc::rowVectorWidth(int64_t length, DType dtype) {
  unsigned size = dtypeSize(dtype);
  if (dtype == DType::Bool || dtype == DType::I64)
    return 1;
  for (unsigned bytes : {16u, 8u, 4u})
    if (bytes > size && length % (bytes / size) == 0)
      return bytes / size;
  return 1;
}

RowSchedule cgc::rowSchedule(int64_t rows, int64_t length, DType dtype) {
  RowSchedule s;
  s.rows = rows;
  s.length = length;
  s.vector = rowVectorWidth(length, dtype);
  int64_t units = std::max<int64_t>((length + s.vector - 1) / s.vector, 1);
  auto lanesFor = [&](int64_t elements) {
    int64_t loads = std::max<int64_t>(elements / s.vector, 1);
    return unsigned(llvm::PowerOf2Ceil(uint64_t((units + loads - 1) / loads)));
  };
  s.lanes = std::min(lanesFor(RowSchedule::kRowRegisterElements), 1024u);
  s.loads = (units + s.lanes - 1) / s.lanes;
  return s;
}

ColumnSplit cgc::columnSplit(const Node &node) {
  ColumnSplit c;
  auto run = reducedRun(node);
  if (!run || run->inner == 1)
    return c;
  c.outer = run->outer;
  c.length = run->length;
  c.inner = run->inner;
  DType dtype = node.operand(0)->getType().dtype;
  c.vector = dtype == DType::F32 || dtype == DType::I32
                 ? rowVectorWidth(c.inner, dtype) : 1;
  c.partialBytes = partialBytesOf(dtype);
  int64_t wanted = (kColumnTargetBlocks + c.tiles() - 1) / c.tiles();
  int64_t most = std::max<int64_t>(c.length / kColumnMinChunkRows, 1);
  c.chunks = std::clamp<int64_t>(wanted, 1, most);
  return c;
}

uint64_t cgc::phaseScratchBytes(const Node &node) {
  ReductionSplit split = reductionSplit(node);
  if (split.chunks)
    return uint64_t(split.rows * split.chunks) * split.partialBytes;
  ColumnSplit column = columnSplit(node);
  if (column.chunks > 1)
    return uint64_t(column.chunks * column.outer * column.inner) *
           column.partialBytes;
  // Two floats per row (at least one row: the total of no rows is 0).
  if (node.getOp() == OpKind::CrossEntropy &&
      node.strAttr("reduction", "mean") != "none" &&
      node.operand(0)->getType().isStatic())
    return uint64_t(std::max<int64_t>(
               node.operand(0)->getType().dims[0].extent(), 1)) * 8;
  return 0;
}

RowSchedule cgc::rowScheduleOf(const Node &node) {
  const TensorType &in = node.operand(0)->getType();
  if (auto run = reducedRun(node))
    return rowSchedule(run->outer, run->length, in.dtype);
  unsigned rank = in.rank();
  // Softmaxes: innermost only (isInnermostSoftmax); cross_entropy's
  // logits are [N, C] rows (its type rule).
  unsigned axis = rank - 1;
  switch (node.getOp()) {
  case OpKind::LayerNorm: case OpKind::RmsNorm:
    axis = *normalizeAxis(node.intAttr("axis", -1), rank);
    break;
  case OpKind::Softmax: case OpKind::LogSoftmax: case OpKind::CrossEntropy:
    break;
  case OpKind::MseLoss:
    llvm_unreachable("expand-mse-loss writes mse_loss out");
  case OpKind::BatchNorm:
    llvm_unreachable("expand-batch-norm writes batch_norm out");
#define CGC_NORMALIZATION_OP(...)
#define CGC_LOSS_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("the row ops besides reductions are normalizations "
                     "and cross_entropy");
  }
  int64_t length = 1;
  for (unsigned d = axis; d < rank; ++d)
    length *= in.dims[d].extent();
  return rowSchedule(length ? in.numElements() / length : 0, length, in.dtype);
}

bool cgc::rowReadOnce(const Node &node) {
  if (auto run = reducedRun(node))
    return run->inner == 1 && !reductionSplit(node).chunks;
  if (!isInnermostSoftmax(node) && !isRowNorm(node))
    return false;
  const TensorType &in = node.operand(0)->getType();
  return in.isStatic() && in.numElements() != 0 &&
         rowScheduleOf(node).inRegisters();
}
