//===- ReductionRule.h - When a reduction runs in two phases -----*- C++ -*-===//
//
// A reduction runs one 256-thread block per output row. With few rows and
// long ones that leaves the GPU idle: a sum over 1M floats ran in one
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

struct ReductionSplit {
  int64_t rows = 0, length = 0;
  int64_t chunks = 0; ///< Phase-1 blocks per row; 0: no split.
  unsigned partialBytes = 0; ///< Per partial (the accumulator's size).
};

/// How \p node (a sum, mean, max or min over the trailing dims of a
/// static tensor) splits; chunks = 0 for every other node.
ReductionSplit reductionSplit(const Node &node);

} // namespace cgc

#endif
