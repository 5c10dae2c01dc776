//===- ConvolutionShape.h - A conv node's attributes, checked ----*- C++ -*-===//
//
// The one reading of a `conv` node's attributes (strides, pads, dilations,
// groups) with their defaults, checked against its operands, for the type
// rule, the interpreter and expand-convolution.
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
  int64_t channels = 0, outChannels = 0, groups = 1;
  /// Per spatial dim: input extent, kernel extent, stride, dilation,
  /// padding before and after, output extent.
  std::vector<int64_t> in, kernel, strides, dilations, before, after, out;
};

/// \p conv's shape (static channels, spatial dims and weights); none, with
/// \p why set, when its attributes do not fit its operands.
llvm::Optional<ConvolutionShape> convolutionShape(const Node &conv, std::string &why);

} // namespace cgc

#endif
