//===- ConvolutionEpilogue.cpp - The body of a conv_fusion ------------------===//
#include "ir/ConvolutionEpilogue.h"

#include "llvm/ADT/STLExtras.h"

using namespace cgc;

bool cgc::isPerChannel(const Value *v, const TensorType &result) {
  const TensorType &t = v->getType();
  if (t.dtype != result.dtype || t.rank() == 0 || t.rank() > result.rank() ||
      t.dims.back() != result.dims.back())
    return false;
  for (unsigned a = 0; a + 1 < t.rank(); ++a)
    if (t.dims[a] != Dim::fixed(1))
      return false;
  return true;
}

static bool isBodyInput(const Graph &body, const Value *v) {
  return llvm::any_of(body.inputs(), [&](const GraphInput &in) { return in.value == v; });
}

/// Whether \p op takes its operands either way round.
static bool commutes(OpKind op) { return op == OpKind::Add || op == OpKind::Mul; }

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
  e.conv = nodes[0].get();
  if (e.conv->numOperands() != 2 || !e.conv->boolAttr("channels_last", false) ||
      !isBodyInput(body, e.conv->operand(0)) || !isBodyInput(body, e.conv->operand(1)))
    return fail("its conv must read two body inputs (no bias) and hold its channels last");
  const TensorType &result = e.conv->result()->getType();
  const Value *running = e.conv->result();
  bool residual = false, relu = false;
  for (size_t i = 1; i < nodes.size(); ++i) {
    const Node &n = *nodes[i];
    OpKind op = n.getOp();
    bool first = n.numOperands() >= 1 && n.operand(0) == running;
    const Value *other = n.numOperands() != 2 ? nullptr : n.operand(first ? 1 : 0);
    bool reads = first || (n.numOperands() == 2 && n.operand(1) == running);
    bool affine = op == OpKind::Add || op == OpKind::Sub || op == OpKind::Mul ||
                  op == OpKind::Div;
    ConvolutionEpilogue::Step step{&n, other, false};
    if (!reads || relu || n.result()->getType() != result)
      return fail("'" + n.getName() + "' must read the member before it, of the conv's type, "
                  "before any relu");
    if (op == OpKind::Relu) {
      relu = true;
    } else if (affine && other != running && isBodyInput(body, other) && !residual &&
               isPerChannel(other, result) && (first || commutes(op))) {
    } else if (op == OpKind::Add && other != running && isBodyInput(body, other) &&
               !residual && other->getType() == result) {
      residual = step.residual = true;
    } else {
      return fail("'" + n.getName() + "' (" + mnemonic(op).str() +
                  ") cannot follow: the chain is conv, then add, sub, mul or div "
                  "by per-channel values, one residual add, one relu");
    }
    e.steps.push_back(step);
    running = n.result();
  }
  if (e.steps.empty() || e.steps.size() > kMaxEpilogueSteps)
    return fail("a conv_fusion holds 1 to " + std::to_string(kMaxEpilogueSteps) +
                " members after its conv");
  if (body.outputs.size() != 1 || body.outputs[0].value != running)
    return fail("its one result is the chain's last member");
  return e;
}
