//===- FuseConvolutionEpilogue.cpp - The ops after a conv into its call -----===//
//
// Algorithm: for each `conv` cuDNN runs whose epilogue its fused engines
// take (target/Scheduler.h: f16 or bf16, channels last, 2-D, one group,
// channels in multiples of 8; no bias of its own, no record), follow the
// chain of sole users of its result and absorb, in order and up to
// kMaxEpilogueSteps: add, sub, mul or div of the running value and a
// per-channel value (sub and div with the running value first: a batch
// norm's (x - mean) * scale + shift), one add of a value of the result's
// type (a residual), one relu. The conv and the chain become one
// `conv_fusion` at the place of the chain's last member, whose body holds
// copies of them (ir/ConvolutionEpilogue.h), which cuDNN runs as one
// operation graph; the per-channel values are computed where they were
// (hoist-invariants gathers those of parameters for kernel batching).
// Requires: a verified graph after the layout pass; runs before
// fuse-elementwise. Guarantees: the same values (the body is the chain;
// cuDNN computes it in f32 and rounds once, as fused kernels do); a value
// read outside the chain or returned is never absorbed.
//
//===----------------------------------------------------------------------===//
#include "ir/Builder.h"
#include "passes/FusionBuilder.h"
#include "passes/Pass.h"
#include "ir/ConvolutionEpilogue.h"
#include "target/Scheduler.h"

#include "llvm/ADT/STLExtras.h"

using namespace cgc;

namespace {

struct Chain {
  Node *conv;
  std::vector<Node *> members; ///< After the conv, in order.
  bool residual = false, relu = false;

  Value *last() const { return members.empty() ? conv->result() : members.back()->result(); }
};

/// Adds \p user to \p c when it is the chain's next member (what the
/// conv_fusion type rule admits: ir/ConvolutionEpilogue.h).
bool absorb(Chain &c, Node &user) {
  Value *running = c.last();
  const TensorType &result = c.conv->result()->getType();
  OpKind op = user.getOp();
  if (c.relu || c.members.size() == kMaxEpilogueSteps || user.result()->getType() != result)
    return false;
  bool first = user.operand(0) == running;
  Value *other = user.numOperands() == 2 ? user.operand(first ? 1 : 0) : nullptr;
  bool affine = op == OpKind::Add || op == OpKind::Sub || op == OpKind::Mul ||
                op == OpKind::Div;
  if (op == OpKind::Relu) {
    c.relu = true;
  } else if (!other || other == running) {
    return false;
  } else if (affine && !c.residual && isPerChannel(other, result) &&
             (first || op == OpKind::Add || op == OpKind::Mul)) {
  } else if (op == OpKind::Add && !c.residual && other->getType() == result) {
    c.residual = true;
  } else {
    return false;
  }
  c.members.push_back(&user);
  return true;
}

class FuseConvolutionEpiloguePass : public Pass {
public:
  llvm::StringRef name() const override { return "fuse-convolution-epilogue"; }
  llvm::StringRef summary() const override {
    return "fold a batch norm's per-channel ops, a residual add and relu into "
           "the cuDNN convolution before them";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    return forEachGraphInnermostFirst(graph, [&](Graph &g) { return fuse(g, ctx); });
  }

private:
  static bool fuse(Graph &g, PassContext &ctx) {
    std::vector<Node *> convs;
    for (const auto &node : g.nodes())
      if (node->getOp() == OpKind::Conv && node->numOperands() == 2 && !node->schedule() &&
          convolutionTakesEpilogue(*node, ctx.target))
        convs.push_back(node.get());
    GraphBuilder builder(g, ctx.diag);
    std::vector<Node *> dead;
    for (Node *conv : convs) {
      Chain chain{conv, {}};
      while (Node *user = soleUser(g, chain.last()))
        if (!absorb(chain, *user))
          break;
      if (!chain.members.empty() && !build(g, chain, builder, dead))
        return false;
    }
    g.erase(dead);
    return true;
  }

  /// Replaces the chain by one conv_fusion at its last member.
  static bool build(Graph &g, const Chain &chain, GraphBuilder &builder,
                    std::vector<Node *> &dead) {
    std::vector<Node *> members = {chain.conv};
    members.insert(members.end(), chain.members.begin(), chain.members.end());
    return buildChainFusion(g, members, OpKind::ConvolutionFusion, *chain.conv, builder,
                            dead);
  }
};

} // namespace

std::unique_ptr<Pass> cgc::createFuseConvolutionEpiloguePass() {
  return std::make_unique<FuseConvolutionEpiloguePass>();
}
