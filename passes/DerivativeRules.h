//===- DerivativeRules.h - Vector-Jacobian products of IR ops --*- C++ -*-===//
//
// Part of the autodiff pass (Autodiff.cpp): for one node and the adjoint of
// its result, the adjoints of its operands, built as ordinary IR ops.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_PASSES_DERIVATIVERULES_H
#define CGC_PASSES_DERIVATIVERULES_H

#include "passes/ValueBuilder.h"

#include <string>
#include <vector>

namespace cgc {

/// Dynamic loss scaling (f16 training): the f32 state that scales the
/// loss's adjoint (autodiff) and that apply-optimizer unscales and updates,
/// starting at GradScaler's init_scale, 2^16.
constexpr const char *kLossScale = "optimizer.loss_scale";
constexpr double kInitialLossScale = 65536.0;
/// \p graph's loss-scale state input, added when it has none.
Value *lossScale(Graph &graph);

/// The adjoints of \p n's operands given \p g, the adjoint of its result
/// (null where an operand gets none: integers, bools, RNG state). False
/// with \p why set when \p n has no rule.
bool operandAdjoints(const Node &n, Value *g, ValueBuilder &gb,
                     std::vector<Value *> &adjoints, std::string &why);

/// conv's and conv_transpose's rule (ConvolutionDerivatives.cpp): for a
/// conv dx as a conv_transpose of g, dw a conv_weight_grad of x and g, db
/// g's sum; for a conv_transpose dx a conv of g, dw a conv_weight_grad of
/// g and x; channels first.
bool convolutionAdjoints(const Node &n, Value *g, ValueBuilder &gb,
                         std::vector<Value *> &adjoints, std::string &why);
/// Why conv's and conv_transpose's rule refuses \p n (channels_last; an
/// output_padding of a stride or more), empty when it takes it;
/// expand-convolution writes out the ones it refuses before autodiff.
std::string convolutionDerivativeRefusal(const Node &n);

/// batch_norm's rule (BatchNormDerivatives.cpp): PyTorch's backward, two
/// per-channel sums (g's and g xhat's) and elementwise ops; in training
/// static shapes only.
bool batchNormAdjoints(const Node &n, Value *g, ValueBuilder &gb,
                       std::vector<Value *> &adjoints, std::string &why);

/// gather's and embedding's rule (IndexDerivatives.cpp): the data's
/// adjoint an index_add of g's slices into zeros at the indices.
bool gatherAdjoints(const Node &n, Value *g, ValueBuilder &gb,
                    std::vector<Value *> &adjoints, std::string &why);
/// index_add's rule (IndexDerivatives.cpp): x's adjoint g, the source's a
/// gather of g at the indices (zeros where one is out of range).
bool indexAddAdjoints(const Node &n, Value *g, ValueBuilder &gb,
                      std::vector<Value *> &adjoints, std::string &why);
/// index_copy's rule (IndexDerivatives.cpp): x's adjoint g with the
/// overwritten slices zeroed, the source's a gather of g where each of its
/// slices writes (in range, the last of duplicate indices).
bool indexCopyAdjoints(const Node &n, Value *g, ValueBuilder &gb,
                       std::vector<Value *> &adjoints, std::string &why);

} // namespace cgc

#endif
