//===- RandomStreams.h - Advancing the dropout streams per replay -*- C++ -*-===//
//
// A training step's dropouts read `rng_state` inputs {seed, offset}; each
// replay must draw fresh masks with no host work, so the step writes
// `rng + [0, k]` back to every stream it reads, k past the largest stream
// its dropouts draw (offset attribute + elements, over the bounds of
// symbolic dims, rounded up to 4). apply-optimizer and
// accumulate-gradients (a micro-step without an update) both end with it.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_PASSES_RANDOMSTREAMS_H
#define CGC_PASSES_RANDOMSTREAMS_H

#include "passes/ValueBuilder.h"

#include <utility>
#include <vector>

namespace cgc {

/// For each top-level `rng_state` input of \p graph that a dropout reads
/// (regions included), its next value built with \p vb at the builder's
/// insertion point: (the input, the advanced stream).
std::vector<std::pair<Value *, Value *>> advancedStreams(Graph &graph, ValueBuilder &vb);

} // namespace cgc

#endif // CGC_PASSES_RANDOMSTREAMS_H
