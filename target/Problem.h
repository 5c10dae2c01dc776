//===- Problem.h - What a heavy node computes, in the rules' terms -*- C++ -*-===//
//
// The shapes the scheduling rules (target/Scheduler.h) reason about: a
// matrix product as (m, n, k, batch), a reduction as a run of dims, and
// an attention with its leading dims merged, and
// the thread mappings a schedule record describes (RowSchedule,
// ReductionSplit, ColumnSplit), which the emitters read from the record.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TARGET_PROBLEM_H
#define CGC_TARGET_PROBLEM_H

#include "ir/Graph.h"

#include "llvm/ADT/Optional.h"
#include <array>
#include <cstdint>
#include <vector>

namespace cgc {

/// Whether every operand and result of \p node has a static type (the
/// shapes below are of static nodes).
bool hasStaticTypes(const Node &node);

/// A product in row-major terms: per batch, out[m, n] = sum_k A[m, k] B[k, n]
/// where A is stored [m, k] (or [k, m] when transA) and B is stored [k, n]
/// (or [n, k] when transB: a linear's weight).
struct ProductProblem {
  int64_t m = 1, n = 1, k = 1;
  std::vector<int64_t> batch;  ///< The result's batch dims.
  std::vector<int64_t> batchA; ///< A's batch dims (NumPy-broadcast to batch).
  std::vector<int64_t> batchB;
  bool transA = false, transB = false;
  DType dtype = DType::F32;

  int64_t batchCount() const;
};

/// The problem of a `matmul` or `linear` node (static shapes).
ProductProblem productProblem(const Node &product);
/// The product node of a `matmul`, `linear` or `product_fusion` node.
const Node &productOf(const Node &node);

/// A sum, mean, max, min or prod of a static tensor whose reduced dims form one
/// run, viewed as [outer, length, inner] reduced over the middle: rows
/// when inner = 1, columns otherwise.
struct ReducedRun {
  int64_t outer = 1, length = 1, inner = 1;
};
/// \p node's run; none for other nodes and for an empty result.
llvm::Optional<ReducedRun> reducedRun(const Node &node);

/// A static attention node as the kernel sees it: the leading dims merged.
struct AttentionShape {
  int64_t outer = 1, qHeads = 1, kvHeads = 1, rows = 0, keys = 0;
  int64_t width = 0, valueWidth = 0;
  /// Element strides of the mask over (outer, head, row, key); 0 where it
  /// broadcasts.
  std::array<int64_t, 4> maskStrides{};
};
AttentionShape attentionShape(const Node &node);

/// The decode attention kernel's launch (a decode_attention record's, as
/// target/Scheduler.h's decodeAttentionLaunchOf derives it): query rows per
/// block (R), the keys split into `split` spans of `span` keys.
struct DecodeAttentionLaunch {
  /// kv heads of all outer indices; row chunks of R per kv head.
  int64_t groups = 1, rowChunks = 1;
  int64_t rowsPerBlock = 1, split = 1, span = 0;
  int64_t blocks() const { return groups * rowChunks * split; }
};

/// Threads of a kernel over \p rows contiguous rows of \p length elements.
struct RowSchedule {
  int64_t rows = 0, length = 0;
  /// Elements per load: 16 bytes' worth when the row length divides (8
  /// for f16/bf16, 4 for f32/i32), else 8 or 4 bytes' worth, else 1.
  unsigned vector = 1;
  /// Threads per row: a power of two. Up to 32, several rows share a
  /// warp (lanes per row) and a block holds kRowBlock threads; above, a
  /// block of `lanes` threads runs each row.
  unsigned lanes = 1;
  /// Loads per thread and row: ceil(length / (vector * lanes)).
  int64_t loads = 0;
  /// A row op keeps its row in registers (one read of memory) when each
  /// thread holds at most kRowRegisterElements elements.
  bool inRegisters() const { return loads * vector <= kRowRegisterElements; }
  bool blockPerRow() const { return lanes > 32; }
  static constexpr int64_t kRowRegisterElements = 32;
  static constexpr unsigned kRowBlock = 256;
};

/// A reduction over few long rows in two phases.
struct ReductionSplit {
  int64_t rows = 0, length = 0;
  unsigned vector = 1; ///< Phase 1's elements per load: 4 (float4) or 1.
  int64_t chunks = 0; ///< Phase-1 blocks per row; 0: no split.
  unsigned partialBytes = 0; ///< Per partial (the accumulator's size).
};

/// A reduction over one run of dims that is not innermost, viewed as
/// [outer, length, inner] reduced over the middle. Blocks of 32 x 8
/// threads read 32 * vector adjacent columns; `chunks` blocks share each
/// column tile along `length` and write partials that a second kernel
/// combines in order when chunks > 1.
struct ColumnSplit {
  int64_t outer = 0, length = 0, inner = 0;
  unsigned vector = 1;
  int64_t chunks = 0; ///< 0: not a column reduction.
  unsigned partialBytes = 0;
  int64_t tiles() const { return outer * ((inner / vector + 31) / 32); }
};

/// The thread mapping a record of strategy Rows, SplitRows or Columns
/// describes (ir/Schedule.h).
RowSchedule rowScheduleIn(const Schedule &record);
ReductionSplit reductionSplitIn(const Schedule &record);
ColumnSplit columnSplitIn(const Schedule &record);

} // namespace cgc

#endif
