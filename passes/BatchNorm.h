//===- BatchNorm.h - batch_norm's batch statistics -------------*- C++ -*-===//
//
// What expand-batch-norm (ExpandBatchNorm.cpp) and batch_norm's derivative
// rule (BatchNormDerivatives.cpp) build alike, so that cse merges the
// statistics the rule reads with the ones the expansion computes.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_PASSES_BATCHNORM_H
#define CGC_PASSES_BATCHNORM_H

#include "passes/ValueBuilder.h"

#include <utility>

namespace cgc {

/// The mean and the biased variance of each channel of \p x [N, C, S..]
/// over every axis but 1, as [1, C, 1..1] in f32 (x cast to f32 first).
std::pair<Value *, Value *> batchStatistics(ValueBuilder &vb, Value *x);

} // namespace cgc

#endif
