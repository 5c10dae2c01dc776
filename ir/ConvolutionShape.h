//===- ConvolutionShape.h - A window op's attributes, checked ----*- C++ -*-===//
//
// The one reading of the attributes of a `conv`, `conv_transpose`,
// `max_pool` or `avg_pool` node (kernel, strides, pads, dilations, groups,
// ceil_mode, output_padding) with their defaults, checked against its
// operands, for the type rules, the interpreter and expand-convolution.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_CONVOLUTIONSHAPE_H
#define CGC_IR_CONVOLUTIONSHAPE_H

#include "ir/Graph.h"

#include "llvm/ADT/Optional.h"
#include <cstdint>
#include <string>
#include <vector>

namespace cgc {

struct ConvolutionShape {
  /// A pool's channels are its input's, its groups 1.
  int64_t channels = 0, outChannels = 0, groups = 1;
  /// `channels_last`: x [N, spatial..., C], w [O, kernel..., C / G] and the
  /// result [N, spatial..., O] (NHWC); else channels first (NCHW).
  bool channelsLast = false;
  /// Per spatial dim: input extent, kernel extent, stride, dilation,
  /// padding before and after, output extent, and the positions past the
  /// padding that the last window of a ceil_mode pool covers (read as
  /// nothing: never in a max, never counted in an average).
  std::vector<int64_t> in, kernel, strides, dilations, before, after, out, overhang;
  /// conv_transpose: the positions added after each spatial dim's last.
  std::vector<int64_t> outputPadding;
};

/// The axis of a window op's operand or result of \p rank dims that
/// holds its channels (a conv's weight: its input channels), and the
/// axis of its spatial dim \p a.
inline unsigned channelAxis(bool channelsLast, unsigned rank) {
  return channelsLast ? rank - 1 : 1;
}
inline unsigned spatialAxis(bool channelsLast, size_t a) {
  return unsigned(channelsLast ? 1 + a : 2 + a);
}
/// The permutation that moves the channels of a rank-\p rank tensor from
/// the last axis to axis 1, and its inverse.
std::vector<int64_t> channelsFirstPerm(unsigned rank);
std::vector<int64_t> channelsLastPerm(unsigned rank);

/// Whether a conv_transpose of shape \p s is exactly the data gradient of
/// the conv with its attributes: its output_padding is below its stride
/// in every dim, so the conv of its result has its input's extents (any
/// other window op: true). cuDNN's backward data and conv_transpose's
/// derivative rule both need it.
inline bool transposesConv(const ConvolutionShape &s) {
  for (size_t a = 0; a < s.outputPadding.size(); ++a)
    if (s.outputPadding[a] >= s.strides[a])
      return false;
  return true;
}

/// conv, conv_transpose and conv_weight_grad: the window ops that multiply
/// by weights (the others pool or resize), which cuDNN may run.
inline bool isWeightedConvolution(OpKind op) {
  return op == OpKind::Conv || op == OpKind::ConvTranspose || op == OpKind::ConvWeightGrad;
}

/// \p node's window shape (static channels, spatial dims and weights);
/// none, with \p why set, when its attributes do not fit its operands.
llvm::Optional<ConvolutionShape> convolutionShape(const Node &node, std::string &why);

} // namespace cgc

#endif
