//===- ConvolutionEpilogue.h - The body of a conv_fusion ----------*- C++ -*-===//
//
// One reading of a conv_fusion's body, shared by its type rule
// (RegionTypeRules.cpp), the fuse-convolution-epilogue pass that builds it
// and codegen (which gives it to cuDNN as one operation graph). The body
// is a chain, each member reading the one before:
//   conv(x, w)          its channels last, no bias, of dtype T
//   affine steps        add, sub, mul or div of the running value and a
//                       per-channel value (T, every dim 1 but a last one of
//                       the result's channels); sub and div with the
//                       running value first
//   a residual add      of a value of the result's type (once)
//   relu                (once, last)
// with 1 to kMaxEpilogueSteps members after the conv; every other operand
// is a body input. The members are the ops they replace, so the body
// computes what they did; cuDNN computes the chain in f32 and rounds once.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_CONVOLUTIONEPILOGUE_H
#define CGC_IR_CONVOLUTIONEPILOGUE_H

#include "ir/Graph.h"

#include "llvm/ADT/Optional.h"
#include <string>
#include <vector>

namespace cgc {

/// The most members after the conv (the artifact's limit).
constexpr size_t kMaxEpilogueSteps = 8;

struct ConvolutionEpilogue {
  struct Step {
    const Node *node;
    /// The body input it reads beside the running value (null for relu),
    /// and whether that is a residual (the result's type).
    const Value *operand = nullptr;
    bool residual = false;
  };
  const Node *conv = nullptr;
  std::vector<Step> steps;
};

/// Whether \p v is a per-channel value for \p result (channels last): its
/// dtype, every dim 1 but a last one of the result's channels.
bool isPerChannel(const Value *v, const TensorType &result);

/// \p body's chain; none, with \p why naming the member that breaks it,
/// when it is not one.
llvm::Optional<ConvolutionEpilogue> convolutionEpilogue(const Graph &body,
                                                        std::string &why);

} // namespace cgc

#endif
