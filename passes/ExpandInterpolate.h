//===- ExpandInterpolate.h - interpolate written out -----------*- C++ -*-===//
//
// expand-convolution's rewrite of an `interpolate` (ExpandInterpolate.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_PASSES_EXPANDINTERPOLATE_H
#define CGC_PASSES_EXPANDINTERPOLATE_H

#include "passes/ValueBuilder.h"

namespace cgc {

/// \p n (an `interpolate`) as gathers at constant indices mixed by
/// constant weights (linear; in f32 for f16 and bf16, rounded once), or
/// index moves for a whole-factor nearest resize: its result.
Value *expandInterpolate(ValueBuilder &vb, const Node &n);

} // namespace cgc

#endif
