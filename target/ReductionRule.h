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
// depend on timing (no atomics): the same bits every run. Private to the
// scheduling library: the schedule pass records the answers on the node
// (target/Scheduler.h), and plan-memory and codegen read the record.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TARGET_REDUCTIONRULE_H
#define CGC_TARGET_REDUCTIONRULE_H

#include "target/Problem.h"

#include <cstdint>

namespace cgc {

/// Splits need rows no longer than this many elements per phase-1 block...
constexpr int64_t kSplitReductionChunk = 8192;
/// ...rows at least this long, fewer rows than this (with 128 or more
/// rows, one block per row already fills an H100's 132 SMs)...
constexpr int64_t kSplitReductionMinLength = 32768;
constexpr int64_t kSplitReductionMaxRows = 128;
/// ...and at most this many phase-1 blocks in all.
constexpr int64_t kSplitReductionMaxBlocks = 2048;


/// Bytes of one partial of a reduction of \p dtype (its accumulator).
unsigned partialBytesOf(DType dtype);
/// The widest load (16, 8 or 4 bytes) whose element count divides
/// \p length, in elements; 1 when none does (and for bool and i64).
unsigned rowVectorWidth(int64_t length, DType dtype);

/// How \p node (a sum, mean, max, min or prod over the trailing dims of a
/// static tensor) splits; chunks = 0 for every other node.
ReductionSplit reductionSplit(const Node &node);


/// The rule: lanes is the smallest power of two that gives each thread at
/// most kRowRegisterElements elements, at most 1024. So a row op keeps
/// rows of up to 32768 elements in registers, 16 to 32 per thread (fewer
/// only for rows shorter than 32 * vector), and reads longer ones again.
/// Measured on an H100: 32 elements per thread rather than 16 took a
/// softmax over rows of 256 floats from 98.5 to 96.1 us (more bytes in
/// flight per warp; the kernel is latency-bound), the fused residual +
/// dropout + layernorm from 41.0 to 40.7 us, and left the others alone.
RowSchedule rowSchedule(int64_t rows, int64_t length, DType dtype);


/// Column tiles times chunks aim at this many blocks (two waves of an
/// H100; fixed so that results do not depend on the device), with at
/// least kColumnMinChunkRows rows per chunk.
constexpr int64_t kColumnTargetBlocks = 264;
constexpr int64_t kColumnMinChunkRows = 64;

/// How \p node (a sum, mean, max, min or prod) reduces columns; chunks = 0 when
/// it reduces rows or other dims.
ColumnSplit columnSplit(const Node &node);

/// Threads per row of a kernel that streams its rows (cross_entropy): a
/// row is read once and not kept, so blocks stay at 256 threads and eight
/// fit on a multiprocessor.
constexpr unsigned kStreamingRowBlock = 256;

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
