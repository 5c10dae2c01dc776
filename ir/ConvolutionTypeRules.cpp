//===- ConvolutionTypeRules.cpp - The result type of conv --------------------===//
//
// conv(x, w[, b]): x [N, C, D1..Dd] and w [O, C / groups, K1..Kd] of one
// float dtype, d = 1, 2 or 3; b [O]. `strides` and `dilations` hold d
// values of at least 1 (default 1), `pads` 2d values of at least 0, the
// padding before each spatial dim and then after it (default 0), `groups`
// divides C and O (default 1). Every dim but N is static. The result is
// [N, O, E1..Ed] with Ei = (Di + before + after - dilation (Ki - 1) - 1)
// / stride + 1 (rounded down), each at least 1.
// max_pool(x) and avg_pool(x): x [N, C, D1..Dd] of a float dtype and the
// same attributes but `kernel` (d values) for w and no groups; ceil_mode
// rounds Ei up (PyTorch's rule: not past a window that would start in the
// padding after the input). The result is [N, C, E1..Ed].
// conv_transpose(x, w[, b]): x [N, C, D1..Dd], w [C, O / groups, K1..Kd],
// b [O], the same attributes and `output_padding` (d values below the
// stride or the dilation, default 0); the result is [N, O, E1..Ed] with Ei
// = (Di - 1) stride - before - after + dilation (Ki - 1) + output_padding
// + 1, each at least 1.
// conv_weight_grad(x, g): x [N, C, D1..Dd] and g [N, O, E1..Ed] of one
// float dtype, the attributes of a conv and its `kernel` (d values of at
// least 1), g's extents the conv's result's; the result is [O, C / groups,
// K1..Kd], every dim static but N.
// With `channels_last` (default false) every operand and the result hold
// their channels last: x [N, D1..Dd, C], w [O, K1..Kd, C / groups] and the
// result [N, E1..Ed, O] (NHWC), the same op on transposed values.
//
//===----------------------------------------------------------------------===//
#include "ir/ConvolutionShape.h"
#include "ir/Interpolation.h"
#include "ir/Printer.h"
#include "ir/TypeChecker.h"

using namespace cgc;
using namespace cgc::typerules;

/// [N, C, E1..Ed], or [N, E1..Ed, C] under channels_last.
static std::vector<Dim> resultDims(Dim batch, int64_t channels, const ConvolutionShape &s) {
  std::vector<Dim> dims{batch};
  if (!s.channelsLast)
    dims.push_back(Dim::fixed(channels));
  for (int64_t e : s.out)
    dims.push_back(Dim::fixed(e));
  if (s.channelsLast)
    dims.push_back(Dim::fixed(channels));
  return dims;
}

/// interpolate: x [N, C, S1..Sd] of a float dtype with static channels
/// and spatial dims, 1 <= d <= 3, attributes ir/Interpolation.h checks.
bool TypeChecker::interpolate(Types &out) {
  const TensorType &x = operandType(0);
  if (!isFloat(x.dtype) || x.rank() < 3 || x.rank() > 5)
    return fail("x must be a float [N, C, spatial...] with 1 to 3 spatial dims, got " +
                str(x));
  std::vector<int64_t> in;
  for (unsigned a = 1; a < x.rank(); ++a) {
    if (!x.dims[a].isStatic())
      return fail("interpolate needs static channels and spatial dims, got " + str(x));
    if (a > 1)
      in.push_back(x.dims[a].extent());
  }
  std::string why;
  if (!checkInterpolation(node, in, why))
    return fail(why);
  std::vector<Dim> dims{x.dims[0], x.dims[1]};
  for (int64_t s : node.intsAttr("sizes"))
    dims.push_back(Dim::fixed(s));
  out.push_back(TensorType(x.dtype, dims));
  return true;
}

/// conv_weight_grad: g must be the gradient of the conv's result.
bool TypeChecker::convolutionWeightGradient(Types &out) {
  const TensorType &x = operandType(0), &g = operandType(1);
  unsigned rank = x.rank();
  if (rank < 3 || rank > 5 || g.rank() != rank)
    return fail("x and g must be [N, C, spatial...] and [N, O, spatial...] with 1 to 3 "
                "spatial dims, got " + str(x) + " and " + str(g));
  for (unsigned a = 1; a < rank; ++a)
    if (!x.dims[a].isStatic() || !g.dims[a].isStatic())
      return fail("conv_weight_grad needs static channels and spatial dims, got " + str(x) +
                  " and " + str(g));
  std::string why;
  auto shape = convolutionShape(node, why);
  if (!shape)
    return fail(why);
  std::vector<Dim> expected{x.dims[0], Dim::fixed(shape->outChannels)};
  for (int64_t e : shape->out)
    expected.push_back(Dim::fixed(e));
  TensorType result(g.dtype, expected);
  if (!(g == result))
    return fail("g must be the conv's result " + str(result) + ", got " + str(g));
  std::vector<Dim> dims{Dim::fixed(shape->outChannels),
                        Dim::fixed(shape->channels / shape->groups)};
  for (int64_t k : shape->kernel)
    dims.push_back(Dim::fixed(k));
  out.push_back(TensorType(x.dtype, dims));
  return true;
}

bool TypeChecker::convolution(Types &out) {
  if (!checkOperandDTypes(0, node.numOperands()))
    return false;
  if (node.getOp() == OpKind::ConvWeightGrad)
    return convolutionWeightGradient(out);
  const TensorType &x = operandType(0);
  unsigned rank = x.rank();
  bool conv = node.getOp() == OpKind::Conv || node.getOp() == OpKind::ConvTranspose;
  if (!conv) {
    if (rank < 3 || rank > 5)
      return fail("x must be [N, C, spatial...] (or channels last) with 1 to 3 spatial dims, got " + str(x));
    for (unsigned a = 1; a < rank; ++a)
      if (!x.dims[a].isStatic())
        return fail("pooling needs static channels and spatial dims, got " + str(x));
    std::string why;
    auto shape = convolutionShape(node, why);
    if (!shape)
      return fail(why);
    out.push_back(TensorType(x.dtype, resultDims(x.dims[0], shape->channels, *shape)));
    return true;
  }
  const TensorType &w = operandType(1);
  bool transposed = node.getOp() == OpKind::ConvTranspose;
  std::string weights = transposed ? "[C, O / groups, kernel...]" : "[O, C / groups, kernel...]";
  if (rank < 3 || rank > 5 || w.rank() != rank)
    return fail("x and w must be [N, C, spatial...] and " + weights +
                " with 1 to 3 spatial dims, got " + str(x) + " and " + str(w));
  for (unsigned a = 1; a < rank; ++a)
    if (!x.dims[a].isStatic() || !w.dims[a].isStatic() || !w.dims[0].isStatic())
      return fail(mnemonic(node.getOp()).str() +
                  " needs static channels, spatial dims and weights, got " + str(x) +
                  " and " + str(w));
  std::string why;
  auto shape = convolutionShape(node, why);
  if (!shape)
    return fail(why);
  if (node.numOperands() == 3) {
    const TensorType &b = operandType(2);
    if (b.rank() != 1 || b.dims[0] != Dim::fixed(shape->outChannels))
      return fail("the bias must be [" + std::to_string(shape->outChannels) +
                  "] (one per output channel), got " + str(b));
  }
  out.push_back(TensorType(x.dtype, resultDims(x.dims[0], shape->outChannels, *shape)));
  return true;
}
