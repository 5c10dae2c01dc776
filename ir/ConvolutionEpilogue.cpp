//===- ConvolutionEpilogue.cpp - The body of a conv_fusion ------------------===//
#include "ir/ConvolutionEpilogue.h"

using namespace cgc;

bool cgc::isPerChannel(const Value *v, const TensorType &result) {
  const TensorType &t = v->getType();
  if (t.dtype != DType::F32 || t.rank() != result.rank() || t.rank() == 0)
    return false;
  for (unsigned a = 0; a + 1 < t.rank(); ++a)
    if (t.dims[a] != Dim::fixed(1))
      return false;
  return t.dims.back() == result.dims.back();
}

static bool isCastTo(const Node &n, DType to) {
  return n.getOp() == OpKind::Cast && n.attr("dtype") &&
         std::get<DType>(*n.attr("dtype")) == to;
}

static bool isBodyInput(const Graph &body, const Value *v) {
  for (const GraphInput &in : body.inputs())
    if (in.value == v)
      return true;
  return false;
}

llvm::Optional<ConvolutionEpilogue> cgc::convolutionEpilogue(const Graph &body,
                                                             std::string &why) {
  auto fail = [&](std::string text) -> llvm::Optional<ConvolutionEpilogue> {
    why = std::move(text);
    return llvm::None;
  };
  const auto &nodes = body.nodes();
  if (nodes.empty() || nodes[0]->getOp() != OpKind::Conv)
    return fail("its first member must be a conv");
  ConvolutionEpilogue e;
  e.conv = e.last = nodes[0].get();
  if (e.conv->numOperands() != 2 || !e.conv->boolAttr("channels_last", false) ||
      !isBodyInput(body, e.conv->operand(0)) || !isBodyInput(body, e.conv->operand(1)))
    return fail("its conv must read two body inputs (no bias) and hold its channels last");
  const TensorType &result = e.conv->result()->getType();
  bool half = result.dtype != DType::F32, widened = false;
  // The stages of the chain, each taken at most once, in order.
  enum Stage { Widen, Scale, Bias, Narrow, Residual, Relu, End } at = Widen;
  const Value *running = e.conv->result();
  for (size_t i = 1; i < nodes.size(); ++i) {
    const Node &n = *nodes[i];
    if (!llvm::is_contained(n.getOperands(), running))
      return fail("'" + n.getName() + "' must read the member before it");
    const Value *other = n.numOperands() != 2          ? nullptr
                         : n.operand(0) == running ? n.operand(1)
                                                   : n.operand(0);
    bool f32 = widened || !half;
    bool perChannel = other && other != running && isBodyInput(body, other) &&
                      isPerChannel(other, result);
    if (at <= Widen && half && isCastTo(n, DType::F32)) {
      widened = true;
      at = Scale;
    } else if (at <= Scale && f32 && n.getOp() == OpKind::Mul && perChannel) {
      e.scale = other;
      at = Bias;
    } else if (at <= Bias && f32 && n.getOp() == OpKind::Add && perChannel) {
      e.bias = other;
      at = Narrow;
    } else if (widened && isCastTo(n, result.dtype) && (e.scale || e.bias)) {
      widened = false;
      at = Residual;
    } else if (!widened && at <= Residual && n.getOp() == OpKind::Add && other &&
               other != running && isBodyInput(body, other) &&
               other->getType() == result) {
      e.residual = other;
      at = Relu;
    } else if (!widened && at <= Relu && n.getOp() == OpKind::Relu) {
      e.relu = true;
      at = End;
    } else {
      return fail("'" + n.getName() + "' (" + mnemonic(n.getOp()).str() +
                  ") cannot follow: the chain is conv, [cast to f32], [mul by a "
                  "per-channel f32 scale], [add of a per-channel f32 bias], [cast "
                  "back], [add of a residual of the result's type], [relu]");
    }
    running = n.result();
    e.last = &n;
  }
  if (widened)
    return fail("the cast to f32 must be cast back after the scale and bias");
  if (e.last == e.conv)
    return fail("a conv_fusion holds at least one member after its conv");
  if (body.outputs.size() != 1 || body.outputs[0].value != running)
    return fail("its one result is the chain's last member");
  return e;
}
