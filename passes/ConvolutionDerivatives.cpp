//===- ConvolutionDerivatives.cpp - conv's vector-Jacobian products -------===//
//
// Part of autodiff's rules (DerivativeRules.h). For y = conv(x, w, b) over
// channels-first operands with strides s, pads (before, after), dilations
// d and groups G, given g = dL/dy [N, O, E..]:
//   dx = conv_transpose(g, w) with the same strides, pads, dilations and
//        groups, and output_padding the remainder ((D + before + after -
//        d (K - 1) - 1) mod s) that the forward's rounding dropped, so that
//        its extents are x's;
//   dw = conv(x as [C, N, D..], g as [O, N, E..]) at stride d, dilation s
//        and x's pads: [C, O, K'..] with K' >= K, cut to K and transposed
//        to [O, C, K..] (groups 1; a grouped conv's weight is refused);
//   db = g summed over every axis but 1.
// Each is an op the later passes know: the convs run on cuDNN or are
// written out, conv_transpose becomes a conv (expand-convolution).
//
//===----------------------------------------------------------------------===//
#include "ir/ConvolutionShape.h"
#include "passes/DerivativeRules.h"

using namespace cgc;

namespace {

std::vector<int64_t> swapFirstTwo(unsigned rank) {
  std::vector<int64_t> perm{1, 0};
  for (unsigned a = 2; a < rank; ++a)
    perm.push_back(a);
  return perm;
}

/// The `pads` attribute of \p s: every before, then every after.
std::vector<int64_t> padsOf(const ConvolutionShape &s) {
  std::vector<int64_t> pads = s.before;
  pads.insert(pads.end(), s.after.begin(), s.after.end());
  return pads;
}

Value *dataAdjoint(const Node &n, Value *g, ValueBuilder &gb, const ConvolutionShape &s) {
  std::vector<int64_t> dropped;
  for (size_t a = 0; a < s.in.size(); ++a)
    dropped.push_back((s.in[a] + s.before[a] + s.after[a] -
                       s.dilations[a] * (s.kernel[a] - 1) - 1) % s.strides[a]);
  return gb.op(OpKind::ConvTranspose, {g, n.operand(1)},
               {{"strides", s.strides},
                {"pads", padsOf(s)},
                {"dilations", s.dilations},
                {"groups", s.groups},
                {"output_padding", dropped}},
               "dx");
}

Value *weightAdjoint(const Node &n, Value *g, ValueBuilder &gb, const ConvolutionShape &s) {
  unsigned rank = unsigned(s.in.size() + 2);
  Value *xt = gb.op(OpKind::Transpose, {n.operand(0)}, {{"perm", swapFirstTwo(rank)}}, "xt");
  Value *gt = gb.op(OpKind::Transpose, {g}, {{"perm", swapFirstTwo(rank)}}, "gt");
  Value *r = gb.op(OpKind::Conv, {xt, gt},
                   {{"strides", s.dilations},
                    {"pads", padsOf(s)},
                    {"dilations", s.strides},
                    {"groups", int64_t(1)}},
                   "dw");
  for (size_t a = 0; a < s.in.size() && r; ++a) {
    if (r->getType().dims[2 + a].extent() == s.kernel[a])
      continue;
    r = gb.slice(r, unsigned(2 + a), 0, s.kernel[a], "dw");
  }
  return gb.op(OpKind::Transpose, {r}, {{"perm", swapFirstTwo(rank)}}, "dw");
}

} // namespace

bool cgc::convolutionAdjoints(const Node &n, Value *g, ValueBuilder &gb,
                              std::vector<Value *> &adj, std::string &why) {
  auto s = convolutionShape(n, why);
  if (!s)
    return false;
  if (s->channelsLast) {
    why = "no derivative rule for a channels_last conv yet";
    return false;
  }
  if (s->groups != 1) {
    why = "no derivative rule for a grouped conv's weight yet";
    return false;
  }
  adj[0] = dataAdjoint(n, g, gb, *s);
  adj[1] = weightAdjoint(n, g, gb, *s);
  if (n.numOperands() == 3) {
    std::vector<int64_t> axes{0};
    for (size_t a = 0; a < s->in.size(); ++a)
      axes.push_back(int64_t(2 + a));
    adj[2] = gb.sum(g, axes, false);
  }
  return true;
}
