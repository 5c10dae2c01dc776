//===- ConvolutionDerivatives.cpp - conv's vector-Jacobian products -------===//
//
// Part of autodiff's rules (DerivativeRules.h). For y = conv(x, w, b) over
// channels-first operands with strides s, pads (before, after), dilations
// d and groups G, given g = dL/dy [N, O, E..]:
//   dx = conv_transpose(g, w) with the same strides, pads, dilations and
//        groups, and output_padding the remainder ((D + before + after -
//        d (K - 1) - 1) mod s) that the forward's rounding dropped, so that
//        its extents are x's;
//   dw = conv_weight_grad(x, g) with the same attributes and w's kernel;
//   db = g summed over every axis but 1.
// conv_transpose is conv's data gradient, so for y = conv_transpose(x, w,
// b) the roles turn: dx = conv(g, w), dw = conv_weight_grad(g, x), db as
// above; an output_padding of a stride or more (below the dilation) is
// refused: x is then not the extent of g's conv. Refused too: a
// channels_last conv (its derivatives' ops are channels first).
// Each is an op the later passes know: cuDNN runs it (forward, backward
// data and backward filter operations) or expand-convolution writes it
// out. conv_weight_grad has no rule (no second derivatives of a conv).
//
//===----------------------------------------------------------------------===//
#include "ir/ConvolutionShape.h"
#include "passes/DerivativeRules.h"

using namespace cgc;

namespace {

/// The `pads` attribute of \p s: every before, then every after.
std::vector<int64_t> padsOf(const ConvolutionShape &s) {
  std::vector<int64_t> pads = s.before;
  pads.insert(pads.end(), s.after.begin(), s.after.end());
  return pads;
}

/// The window attributes that conv, conv_transpose and conv_weight_grad
/// share.
AttrMap windowAttrs(const ConvolutionShape &s) {
  return {{"strides", s.strides},
          {"pads", padsOf(s)},
          {"dilations", s.dilations},
          {"groups", s.groups}};
}

/// conv_weight_grad(x, g) of a window shape \p s: [O, C / G, K..].
Value *weightGradient(Value *x, Value *g, ValueBuilder &gb, const ConvolutionShape &s) {
  auto attrs = windowAttrs(s);
  attrs["kernel"] = s.kernel;
  return gb.op(OpKind::ConvWeightGrad, {x, g}, attrs, "dw");
}

/// g summed over every axis but the channels (1).
Value *biasGradient(Value *g, ValueBuilder &gb, const ConvolutionShape &s) {
  std::vector<int64_t> axes{0};
  for (size_t a = 0; a < s.in.size(); ++a)
    axes.push_back(int64_t(2 + a));
  return gb.sum(g, axes, false);
}

Value *convDataAdjoint(const Node &n, Value *g, ValueBuilder &gb, const ConvolutionShape &s) {
  std::vector<int64_t> dropped;
  for (size_t a = 0; a < s.in.size(); ++a)
    dropped.push_back((s.in[a] + s.before[a] + s.after[a] -
                       s.dilations[a] * (s.kernel[a] - 1) - 1) % s.strides[a]);
  auto attrs = windowAttrs(s);
  attrs["output_padding"] = dropped;
  return gb.op(OpKind::ConvTranspose, {g, n.operand(1)}, attrs, "dx");
}

void convAdjoints(const Node &n, Value *g, ValueBuilder &gb, std::vector<Value *> &adj,
                  const ConvolutionShape &s) {
  adj[0] = convDataAdjoint(n, g, gb, s);
  adj[1] = weightGradient(n.operand(0), g, gb, s);
}

void transposedAdjoints(const Node &n, Value *g, ValueBuilder &gb, std::vector<Value *> &adj,
                        const ConvolutionShape &s) {
  adj[0] = gb.op(OpKind::Conv, {g, n.operand(1)}, windowAttrs(s), "dx");
  adj[1] = weightGradient(g, n.operand(0), gb, s);
}

/// Why the rule refuses a window op of shape \p s; empty when it takes it.
std::string refusalOf(const ConvolutionShape &s) {
  if (s.channelsLast)
    return "no derivative rule for a channels_last conv yet";
  if (!transposesConv(s))
    return "no derivative rule for a conv_transpose whose output_padding reaches its "
           "stride yet";
  return "";
}

} // namespace

std::string cgc::convolutionDerivativeRefusal(const Node &n) {
  std::string why;
  auto s = convolutionShape(n, why);
  return s ? refusalOf(*s) : why;
}

bool cgc::convolutionAdjoints(const Node &n, Value *g, ValueBuilder &gb,
                              std::vector<Value *> &adj, std::string &why) {
  auto s = convolutionShape(n, why);
  if (s)
    why = refusalOf(*s);
  if (!s || !why.empty())
    return false;
  if (n.getOp() == OpKind::Conv)
    convAdjoints(n, g, gb, adj, *s);
  else
    transposedAdjoints(n, g, gb, adj, *s);
  if (n.numOperands() == 3)
    adj[2] = biasGradient(g, gb, *s);
  return true;
}
