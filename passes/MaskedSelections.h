//===- MaskedSelections.h - Data-dependent selections as masked tensors ===//
//
// Part of remove-sync-points (RemoveSyncPoints.cpp): the rewrite of
// `masked_select` and `nonzero` (with the gathers by its indices) into
// fixed-shape tensors with a mask. MaskedSelections.cpp states the rule.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_PASSES_MASKEDSELECTIONS_H
#define CGC_PASSES_MASKEDSELECTIONS_H

#include "passes/Pass.h"

namespace cgc {

/// Rewrites every selection of \p graph (not of its regions), or refuses
/// each one it cannot rewrite with a located error and returns false.
bool rewriteSelections(Graph &graph, PassContext &ctx);

} // namespace cgc

#endif
