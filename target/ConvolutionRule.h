//===- ConvolutionRule.h - When a convolution runs on cuDNN -----*- C++ -*-===//
//
// A `conv` node runs as one cuDNN call (a library_convolution record: the
// runtime picks and times cuDNN's engines at load, on the actual GPU) when
// its operands are static and f32, f16 or bf16 and it has at most three
// spatial dims; so do a `conv_transpose` (cuDNN's backward-data operation)
// and a `conv_weight_grad` (backward filter), channels first, the
// derivatives autodiff gives a conv (a conv_transpose only where its
// output_padding is below its stride). expand-convolution writes every
// other one out as window gathers and products. Pools are always written
// out: their reductions are cgc's own kernels. The workspace the engine may use is reserved in
// the arena at compile time: a flat kConvolutionWorkspaceBytes, the
// budget PyTorch gives cuDNN's searches (its engines are then filtered
// by it at load). An epilogue (a per-channel scale and bias, a residual,
// relu: ir/ConvolutionEpilogue.h) joins the call only where cuDNN's
// runtime-fusion engines take it. Private to the scheduling library
// (target/Scheduler.h).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TARGET_CONVOLUTIONRULE_H
#define CGC_TARGET_CONVOLUTIONRULE_H

#include "ir/Graph.h"
#include "target/Target.h"

#include <cstdint>
#include <string>

namespace cgc {

constexpr int64_t kConvolutionWorkspaceBytes = int64_t(32) << 20;

/// Why cuDNN cannot run `conv`, `conv_transpose`, `conv_weight_grad` or
/// `conv_fusion` node \p conv; empty when it can.
std::string libraryConvolutionRefusal(const Node &conv);
/// Why cuDNN's fused engines would not run an epilogue after `conv` node
/// \p conv (fuse-convolution-epilogue asks); empty when they would:
/// f16 or bf16, channels last, 2-D, one group, input and output channels
/// multiples of 8 (the runtime-fusion engines' alignment).
std::string convolutionEpilogueRefusal(const Node &conv);

} // namespace cgc

#endif
