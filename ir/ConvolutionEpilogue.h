//===- ConvolutionEpilogue.h - The body of a conv_fusion ----------*- C++ -*-===//
//
// One reading of a conv_fusion's body, shared by its type rule
// (RegionTypeRules.cpp), the fuse-convolution-epilogue pass that builds it
// and codegen (which gives it to cuDNN as one operation graph). The body
// is a chain, each member reading the one before:
//   conv(x, w)                 of dtype T, its channels last, no bias
//   cast to f32                when T is not f32 and scale or bias follow
//   mul by scale               } f32 values of the result's rank, every
//   add of bias                } dim 1 but the channels (O)
//   cast back to T             when the first cast is there
//   add of a residual          a value of the result's type
//   relu
// with at least one member after the conv; scale, bias and the residual
// are body inputs. cuDNN computes the chain in f32 and rounds once.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_CONVOLUTIONEPILOGUE_H
#define CGC_IR_CONVOLUTIONEPILOGUE_H

#include "ir/Graph.h"

#include "llvm/ADT/Optional.h"
#include <string>

namespace cgc {

struct ConvolutionEpilogue {
  const Node *conv = nullptr;
  /// The body inputs each member reads, or null where it is absent.
  const Value *scale = nullptr, *bias = nullptr, *residual = nullptr;
  bool relu = false;
  /// The chain's last member: its result is the body's output.
  const Node *last = nullptr;
};

/// Whether \p v is a per-channel value for a result of type \p result
/// held channels last: f32, the result's rank, every dim 1 but the last,
/// which is the result's.
bool isPerChannel(const Value *v, const TensorType &result);

/// \p body's chain; none, with \p why naming the member that breaks it,
/// when it is not one.
llvm::Optional<ConvolutionEpilogue> convolutionEpilogue(const Graph &body,
                                                        std::string &why);

} // namespace cgc

#endif
