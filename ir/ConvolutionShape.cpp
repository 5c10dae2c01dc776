//===- ConvolutionShape.cpp - A window op's attributes, checked --------------===//
#include "ir/ConvolutionShape.h"

#include <algorithm>

using namespace cgc;

static std::string list(const std::vector<int64_t> &values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

namespace {
/// Reads integer list attributes of \p node for \p d spatial dims.
struct AttrReader {
  const Node &node;
  size_t d;
  std::string &why;

  // Bounds that keep every extent below 2^62: no overflow in the sums.
  static constexpr int64_t kMost = (int64_t(1) << 31) - 1;

  bool read(llvm::StringRef key, size_t count, int64_t fallback, int64_t least,
            std::vector<int64_t> &into) {
    into = node.attr(key) ? node.intsAttr(key) : std::vector<int64_t>(count, fallback);
    if (into.size() != count) {
      why = "attribute '" + key.str() + "' must hold " + std::to_string(count) +
            " values (" + std::to_string(d) + " spatial dims), got " + list(into);
      return false;
    }
    for (int64_t v : into)
      if (v < least || v > kMost) {
        why = "attribute '" + key.str() + "' must hold values from " +
              std::to_string(least) + " to 2^31 - 1, got " + list(into);
        return false;
      }
    return true;
  }
};
} // namespace

/// `groups`, from 1 to 2^31 - 1.
static bool readGroups(const Node &node, AttrReader &attrs, ConvolutionShape &s) {
  s.groups = node.intAttr("groups", 1);
  if (s.groups < 1 || s.groups > AttrReader::kMost) {
    attrs.why = "groups = " + std::to_string(s.groups) + " must be from 1 to 2^31 - 1";
    return false;
  }
  return true;
}

/// The groups divide the input and output channels.
static bool groupsDivide(AttrReader &attrs, const ConvolutionShape &s) {
  if (s.channels % s.groups != 0 || s.outChannels % s.groups != 0) {
    attrs.why = "groups = " + std::to_string(s.groups) + " must divide the " +
                std::to_string(s.channels) + " input and " +
                std::to_string(s.outChannels) + " output channels";
    return false;
  }
  return true;
}

/// The channels and kernel of a conv (from its weight, checked against
/// its groups), a conv_weight_grad (g's channels, its `kernel`) or a pool
/// (its `kernel`).
static bool channelsAndKernel(const Node &node, AttrReader &attrs, ConvolutionShape &s) {
  const auto &x = node.operand(0)->getType().dims;
  unsigned rank = unsigned(x.size());
  s.channels = x[channelAxis(s.channelsLast, rank)].extent();
  bool transposed = node.getOp() == OpKind::ConvTranspose;
  if (node.getOp() == OpKind::ConvWeightGrad) {
    s.outChannels = node.operand(1)->getType().dims[1].extent();
    return attrs.read("kernel", attrs.d, 1, 1, s.kernel) && readGroups(node, attrs, s) &&
           groupsDivide(attrs, s);
  }
  if (node.getOp() != OpKind::Conv && !transposed) {
    s.outChannels = s.channels;
    return attrs.read("kernel", attrs.d, 1, 1, s.kernel);
  }
  const auto &w = node.operand(1)->getType().dims;
  if (!readGroups(node, attrs, s))
    return false;
  // conv's w is [O, C / G, K..]; conv_transpose's [C, O / G, K..].
  s.outChannels = transposed ? w[1].extent() * s.groups : w[0].extent();
  for (size_t a = 0; a + 2 < w.size(); ++a)
    s.kernel.push_back(w[spatialAxis(s.channelsLast, a)].extent());
  int64_t perGroup = transposed ? w[0].extent() / s.groups
                                : w[channelAxis(s.channelsLast, rank)].extent();
  if (transposed && w[0].extent() != s.channels) {
    attrs.why = "w has " + std::to_string(w[0].extent()) + " input channels; x has " +
                std::to_string(s.channels);
    return false;
  }
  if (!groupsDivide(attrs, s))
    return false;
  if (perGroup * s.groups != s.channels) {
    attrs.why = "w has " + std::to_string(perGroup) +
                " input channels per group; x has " + std::to_string(s.channels) +
                " in " + std::to_string(s.groups) + " group(s)";
    return false;
  }
  return true;
}

/// conv_transpose's output extents: (in - 1) stride - before - after +
/// dilation (kernel - 1) + output_padding + 1, each from 1 to 2^40 (in
/// 128-bit arithmetic: the products of 2^31-bounded attributes and
/// extents cannot wrap), from an input and kernel of at least 1, with
/// output_padding below the stride or the dilation (PyTorch's rule).
static bool transposedExtents(AttrReader &attrs, ConvolutionShape &s) {
  if (!attrs.read("output_padding", attrs.d, 0, 0, s.outputPadding))
    return false;
  constexpr __int128 kLargest = __int128(1) << 40;
  for (size_t i = 0; i < attrs.d; ++i) {
    std::string dim = "spatial dim " + std::to_string(i) + ": ";
    if (s.in[i] < 1 || s.kernel[i] < 1) {
      attrs.why = dim + "conv_transpose needs an input and a kernel of at least 1";
      return false;
    }
    if (s.outputPadding[i] >= std::max(s.strides[i], s.dilations[i])) {
      attrs.why = dim + "output_padding " + std::to_string(s.outputPadding[i]) +
                  " must be below the stride or the dilation";
      return false;
    }
    __int128 out = __int128(s.in[i] - 1) * s.strides[i] - s.before[i] - s.after[i] +
                   __int128(s.dilations[i]) * (s.kernel[i] - 1) + s.outputPadding[i] + 1;
    if (out < 1 || out > kLargest) {
      attrs.why = dim + (out < 1 ? "the padding leaves no output (" +
                                       std::to_string(int64_t(out)) + ")"
                                 : std::string("the output exceeds 2^40 positions"));
      return false;
    }
    s.out.push_back(int64_t(out));
    s.overhang.push_back(0);
  }
  return true;
}

llvm::Optional<ConvolutionShape> cgc::convolutionShape(const Node &node,
                                                       std::string &why) {
  const auto &x = node.operand(0)->getType().dims;
  size_t d = x.size() - 2;
  AttrReader attrs{node, d, why};
  ConvolutionShape s;
  s.channelsLast = node.boolAttr("channels_last", false);
  std::vector<int64_t> pads;
  if (!channelsAndKernel(node, attrs, s) || !attrs.read("strides", d, 1, 1, s.strides) ||
      !attrs.read("dilations", d, 1, 1, s.dilations) || !attrs.read("pads", 2 * d, 0, 0, pads))
    return llvm::None;
  bool ceil = node.boolAttr("ceil_mode", false);
  for (size_t i = 0; i < d; ++i) {
    s.in.push_back(x[spatialAxis(s.channelsLast, i)].extent());
    s.before.push_back(pads[i]);
    s.after.push_back(pads[d + i]);
  }
  if (node.getOp() == OpKind::ConvTranspose)
    return transposedExtents(attrs, s) ? llvm::Optional<ConvolutionShape>(s) : llvm::None;
  for (size_t i = 0; i < d; ++i) {
    int64_t padded = s.in[i] + s.before[i] + s.after[i];
    // span = dilation (kernel - 1) + 1, compared without overflow.
    bool fits = s.kernel[i] >= 1 && padded >= 1 &&
                s.kernel[i] - 1 <= (padded - 1) / s.dilations[i];
    if (!fits) {
      why = "spatial dim " + std::to_string(i) + ": the kernel spans more than " +
            "the padded input (extent " + std::to_string(s.kernel[i]) + ", dilation " +
            std::to_string(s.dilations[i]) + ", padded input " + std::to_string(padded) + ")";
      return llvm::None;
    }
    int64_t span = s.dilations[i] * (s.kernel[i] - 1) + 1;
    int64_t steps = padded - span, out = steps / s.strides[i] + 1;
    // ceil_mode (PyTorch's rule): one more window when some is left over,
    // unless it would start in the padding after the input.
    if (ceil && steps % s.strides[i] != 0 && out * s.strides[i] < s.in[i] + s.before[i])
      ++out;
    s.out.push_back(out);
    s.overhang.push_back(std::max<int64_t>(0, (out - 1) * s.strides[i] + span - padded));
  }
  return s;
}

std::vector<int64_t> cgc::channelsFirstPerm(unsigned rank) {
  std::vector<int64_t> perm{0, int64_t(rank) - 1};
  for (unsigned a = 1; a + 1 < rank; ++a)
    perm.push_back(a);
  return perm;
}

std::vector<int64_t> cgc::channelsLastPerm(unsigned rank) {
  std::vector<int64_t> perm{0};
  for (unsigned a = 2; a < rank; ++a)
    perm.push_back(a);
  perm.push_back(1);
  return perm;
}
