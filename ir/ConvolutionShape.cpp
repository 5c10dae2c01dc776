//===- ConvolutionShape.cpp - A conv node's attributes, checked --------------===//
#include "ir/ConvolutionShape.h"

using namespace cgc;

static std::string list(const std::vector<int64_t> &values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

llvm::Optional<ConvolutionShape> cgc::convolutionShape(const Node &conv,
                                                       std::string &why) {
  const auto &x = conv.operand(0)->getType().dims, &w = conv.operand(1)->getType().dims;
  size_t d = x.size() - 2;
  ConvolutionShape s;
  s.channels = x[1].extent();
  s.outChannels = w[0].extent();
  s.groups = conv.intAttr("groups", 1);
  // Bounds that keep every extent below 2^62: no overflow in the sums.
  const int64_t most = (int64_t(1) << 31) - 1;
  auto attr = [&](llvm::StringRef key, size_t count, int64_t fallback,
                  int64_t least, std::vector<int64_t> &into) {
    into = conv.attr(key) ? conv.intsAttr(key) : std::vector<int64_t>(count, fallback);
    if (into.size() != count) {
      why = "attribute '" + key.str() + "' must hold " + std::to_string(count) +
            " values (" + std::to_string(d) + " spatial dims), got " + list(into);
      return false;
    }
    for (int64_t v : into)
      if (v < least || v > most) {
        why = "attribute '" + key.str() + "' must hold values from " +
              std::to_string(least) + " to 2^31 - 1, got " + list(into);
        return false;
      }
    return true;
  };
  std::vector<int64_t> pads;
  if (!attr("strides", d, 1, 1, s.strides) || !attr("dilations", d, 1, 1, s.dilations) ||
      !attr("pads", 2 * d, 0, 0, pads))
    return llvm::None;
  if (s.groups < 1 || s.channels % s.groups != 0 || s.outChannels % s.groups != 0) {
    why = "groups = " + std::to_string(s.groups) + " must divide the " +
          std::to_string(s.channels) + " input and " + std::to_string(s.outChannels) +
          " output channels";
    return llvm::None;
  }
  if (w[1].extent() * s.groups != s.channels) {
    why = "w has " + std::to_string(w[1].extent()) + " input channels per group; x has " +
          std::to_string(s.channels) + " in " + std::to_string(s.groups) + " group(s)";
    return llvm::None;
  }
  for (size_t i = 0; i < d; ++i) {
    s.in.push_back(x[i + 2].extent());
    s.kernel.push_back(w[i + 2].extent());
    s.before.push_back(pads[i]);
    s.after.push_back(pads[d + i]);
    int64_t padded = s.in[i] + s.before[i] + s.after[i];
    // span = dilation (kernel - 1) + 1, compared without overflow.
    bool fits = s.kernel[i] >= 1 && padded >= 1 &&
                s.kernel[i] - 1 <= (padded - 1) / s.dilations[i];
    int64_t span = fits ? s.dilations[i] * (s.kernel[i] - 1) + 1 : 0;
    if (!fits) {
      why = "spatial dim " + std::to_string(i) + ": the kernel spans more than " +
            "the padded input (extent " + std::to_string(s.kernel[i]) +
            ", dilation " + std::to_string(s.dilations[i]) + ", padded input " +
            std::to_string(padded) + ")";
      return llvm::None;
    }
    s.out.push_back((padded - span) / s.strides[i] + 1);
  }
  return s;
}
