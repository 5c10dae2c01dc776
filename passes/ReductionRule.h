//===- ReductionRule.h - How row and column kernels map to threads -*- C++ -*-===//
//
// Reductions, softmax, log_softmax, layernorm and cross_entropy over
// contiguous rows take a shape class from the static row length
// (rowSchedule): 1 to 32 lanes per row for short rows (several rows per
// warp), a warp per row for medium ones, a block per row for long ones;
// 16-byte loads where the row length allows. A reduction over a dim that
// is not innermost reads coalesced columns (columnSplit). The schedule
// depends on the shape alone, never on the device, so a result has the
// same bits on every GPU and every run (no atomics anywhere).
//
// A reduction over few long rows would leave the GPU idle with one block
// per row: a sum over 1M floats ran in one
// block at 650 us on an H100 (branch_1m, docs/perf.md). Such a reduction
// splits in two phases: phase 1 gives each row `chunks` blocks, which write
// one partial each into a scratch buffer that plan-memory reserves; phase 2
// combines each row's partials in a fixed order. The result does not
// depend on timing (no atomics): the same bits every run. plan-memory
// (the scratch) and codegen (the two kernels) ask this one rule.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_PASSES_REDUCTIONRULE_H
#define CGC_PASSES_REDUCTIONRULE_H

#include "ir/Graph.h"
#include "ir/Types.h"

#include "llvm/ADT/Optional.h"

#include <cstdint>

namespace cgc {

/// A sum, mean, max, min or prod of a static tensor whose reduced dims form one
/// run, viewed as [outer, length, inner] reduced over the middle: rows
/// when inner = 1, columns otherwise.
struct ReducedRun {
  int64_t outer = 1, length = 1, inner = 1;
};
/// \p node's run; none for other nodes and for an empty result.
llvm::Optional<ReducedRun> reducedRun(const Node &node);

/// Splits need rows no longer than this many elements per phase-1 block...
constexpr int64_t kSplitReductionChunk = 8192;
/// ...rows at least this long, fewer rows than this (with 128 or more
/// rows, one block per row already fills an H100's 132 SMs)...
constexpr int64_t kSplitReductionMinLength = 32768;
constexpr int64_t kSplitReductionMaxRows = 128;
/// ...and at most this many phase-1 blocks in all.
constexpr int64_t kSplitReductionMaxBlocks = 2048;

struct ReductionSplit {
  int64_t rows = 0, length = 0;
  int64_t chunks = 0; ///< Phase-1 blocks per row; 0: no split.
  unsigned partialBytes = 0; ///< Per partial (the accumulator's size).
};

/// How \p node (a sum, mean, max, min or prod over the trailing dims of a
/// static tensor) splits; chunks = 0 for every other node.
ReductionSplit reductionSplit(const Node &node);

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

/// The rule: lanes is the smallest power of two that gives each thread at
/// most kRowRegisterElements elements, at most 1024. So a row op keeps
/// rows of up to 32768 elements in registers, 16 to 32 per thread (fewer
/// only for rows shorter than 32 * vector), and reads longer ones again.
/// Measured on an H100: 32 elements per thread rather than 16 took a
/// softmax over rows of 256 floats from 98.5 to 96.1 us (more bytes in
/// flight per warp; the kernel is latency-bound), the fused residual +
/// dropout + layernorm from 41.0 to 40.7 us, and left the others alone.
RowSchedule rowSchedule(int64_t rows, int64_t length, DType dtype);

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

/// Column tiles times chunks aim at this many blocks (two waves of an
/// H100; fixed so that results do not depend on the device), with at
/// least kColumnMinChunkRows rows per chunk.
constexpr int64_t kColumnTargetBlocks = 264;
constexpr int64_t kColumnMinChunkRows = 64;

/// How \p node (a sum, mean, max, min or prod) reduces columns; chunks = 0 when
/// it reduces rows or other dims.
ColumnSplit columnSplit(const Node &node);

/// The schedule of row op \p node (static): a sum, mean, max, min or prod with
/// a reducedRun, softmax or log_softmax over the innermost axis, layernorm.
RowSchedule rowScheduleOf(const Node &node);
/// Whether \p node runs as one row kernel that reads each input element
/// once: a sum, mean, max, min or prod over trailing dims that does not split,
/// or softmax, log_softmax (innermost axis) or layernorm whose rows fit
/// registers. fuse-rows folds a prologue only into these.
bool rowReadOnce(const Node &node);
/// Bytes of scratch \p node's kernels pass between their two phases
/// (split and column partials; cross_entropy's per-row losses and counts
/// when it reduces them), 0 for a node of one kernel.
uint64_t phaseScratchBytes(const Node &node);

} // namespace cgc

#endif
