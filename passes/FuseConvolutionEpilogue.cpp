//===- FuseConvolutionEpilogue.cpp - The ops after a conv into its call -----===//
//
// Algorithm: for each `conv` cuDNN runs whose epilogue its fused engines
// take (target/Scheduler.h: f16 or bf16, channels last, 2-D, one group,
// channels in multiples of 8; no bias of its own, no record), follow the
// chain of sole users of its result and absorb, in order:
//   affine ops   add, sub, mul or div of the running value (first
//                operand for sub and div) and a per-channel value (every
//                dim 1 but the channels, of the conv's dtype): a batch
//                norm's (x - mean) * scale + shift;
//   a residual   an add of a value of the result's type;
//   relu.
// The affine ops fold into one scale and one bias per channel, computed
// in f32 by new elementwise ops on the per-channel values (fuse-elementwise
// and kernel batching make them small kernels off the critical path):
// x - q -> bias - q, x + q -> bias + q, x * q -> scale * q and bias * q,
// x / q likewise with 1 / q. The conv and the chain become one
// `conv_fusion` at the place of the chain's last member, its body the
// chain of ir/ConvolutionEpilogue.h (conv, cast to f32, mul by the scale,
// add of the bias, cast back, residual add, relu), which cuDNN runs as
// one operation graph.
// Requires: a verified graph after the layout pass; runs before
// fuse-elementwise. Guarantees: the same values but for rounding (the
// chain is computed in f32 and rounded once where the ops rounded each
// step); a value read outside the chain or returned is never absorbed.
//
//===----------------------------------------------------------------------===//
#include "ir/Builder.h"
#include "passes/Pass.h"
#include "passes/ValueBuilder.h"
#include "target/Scheduler.h"

#include "llvm/ADT/STLExtras.h"

using namespace cgc;

namespace {

/// One affine member: the running value op'd with a per-channel value.
struct AffineStep {
  OpKind op;
  Value *channel;
};

struct Chain {
  Node *conv;
  std::vector<Node *> members; ///< After the conv, in order.
  std::vector<AffineStep> affine;
  Value *residual = nullptr;
  bool relu = false;

  Value *last() const { return members.empty() ? conv->result() : members.back()->result(); }
};

/// The sole user of \p v in \p g, if v is not returned.
Node *soleUser(const Graph &g, Value *v) {
  if (g.isOutput(v) || v->uses().size() != 1)
    return nullptr;
  Node *user = v->uses().begin()->user;
  return user->getParent() == &g ? user : nullptr;
}

/// Whether \p v broadcasts over \p result (channels last) as one value
/// per channel: static, of the result's dtype, every dim 1 but a last one
/// of the result's channels.
bool isChannelValue(const Value *v, const TensorType &result) {
  const TensorType &t = v->getType();
  if (!t.isStatic() || t.dtype != result.dtype || t.rank() == 0 ||
      t.rank() > result.rank() || t.dims.back() != result.dims.back())
    return false;
  for (unsigned a = 0; a + 1 < t.rank(); ++a)
    if (t.dims[a] != Dim::fixed(1))
      return false;
  return true;
}

/// Adds \p user to \p c when it is the chain's next member.
bool absorb(Chain &c, Node &user) {
  Value *running = c.last();
  const TensorType &result = c.conv->result()->getType();
  if (user.result()->getType() != result)
    return false;
  OpKind op = user.getOp();
  if (op == OpKind::Relu) {
    c.relu = true;
  } else if (c.relu || user.numOperands() != 2 || !user.info().has(Elementwise)) {
    return false;
  } else if (op == OpKind::Add && !c.residual &&
             user.operand(user.operand(0) == running ? 1 : 0)->getType() == result &&
             user.operand(0) != user.operand(1)) {
    c.residual = user.operand(user.operand(0) == running ? 1 : 0);
  } else {
    bool first = user.operand(0) == running;
    Value *other = user.operand(first ? 1 : 0);
    bool commutes = op == OpKind::Add || op == OpKind::Mul;
    bool affine = op == OpKind::Add || op == OpKind::Sub || op == OpKind::Mul ||
                  op == OpKind::Div;
    if (c.residual || !affine || (!first && !commutes) || !isChannelValue(other, result))
      return false;
    c.affine.push_back({op, other});
  }
  c.members.push_back(&user);
  return true;
}

/// The per-channel f32 scale and bias of \p c's affine steps (null where
/// the steps leave 1 or 0).
std::pair<Value *, Value *> scaleAndBias(ValueBuilder &vb, const Chain &c) {
  const TensorType &result = c.conv->result()->getType();
  std::vector<Dim> dims(result.rank(), Dim::fixed(1));
  dims.back() = result.dims.back();
  Value *scale = nullptr, *bias = nullptr;
  for (const AffineStep &s : c.affine) {
    Value *q = vb.reshape(vb.op(OpKind::Cast, {s.channel}, {{"dtype", DType::F32}}, "f32"),
                          dims, "channel");
    if (s.op == OpKind::Add) {
      bias = bias ? vb.add(bias, q) : q;
    } else if (s.op == OpKind::Sub) {
      bias = bias ? vb.sub(bias, q) : vb.neg(q);
    } else if (s.op == OpKind::Mul) {
      scale = scale ? vb.mul(scale, q) : q;
      bias = bias ? vb.mul(bias, q) : nullptr;
    } else { // Div: absorb() admits only the four.
      scale = scale ? vb.div(scale, q) : vb.div(vb.fill(1, DType::F32, "one"), q);
      bias = bias ? vb.div(bias, q) : nullptr;
    }
  }
  return {scale, bias};
}

class FuseConvolutionEpiloguePass : public Pass {
public:
  llvm::StringRef name() const override { return "fuse-convolution-epilogue"; }
  llvm::StringRef summary() const override {
    return "fold a batch norm's scale and shift, a residual add and relu into "
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
          convolutionRunsOnLibrary(*node, ctx.target) &&
          convolutionTakesEpilogue(*node, ctx.target))
        convs.push_back(node.get());
    GraphBuilder builder(g, ctx.diag);
    std::vector<Node *> dead;
    for (Node *conv : convs) {
      Chain chain{conv, {}, {}};
      while (Node *user = soleUser(g, chain.last()))
        if (!absorb(chain, *user))
          break;
      if (!chain.members.empty() && !build(g, chain, builder, dead))
        return false;
    }
    g.erase(dead);
    return true;
  }

  /// Replaces the chain by one conv_fusion at its last member; the conv
  /// and the members join \p dead.
  static bool build(Graph &g, const Chain &chain, GraphBuilder &builder,
                    std::vector<Node *> &dead) {
    Node *last = chain.members.back();
    ValueBuilder vb(builder);
    vb.setInsertionPoint(*last);
    vb.setOrigin(*chain.conv);
    vb.setBase(chain.conv->getName());
    auto [scale, bias] = scaleAndBias(vb, chain);
    if (vb.hasFailed())
      return false;
    builder.setInsertionPoint(*last);
    builder.setOrigin(*chain.conv);
    Node *fusion = builder.createWithRegions(OpKind::ConvolutionFusion,
                                             chain.conv->getName() + ".fused", {});
    Graph &body = fusion->region(0);
    builder.setInsertionPointToEnd(body);
    auto input = [&](Value *v) {
      fusion->addOperand(v);
      return body.addInput(builder.uniqueName("in" + std::to_string(fusion->numOperands() - 1)),
                           v->getType());
    };
    Value *x = input(chain.conv->operand(0)), *w = input(chain.conv->operand(1));
    Node *conv = builder.clone(*chain.conv, {x, w});
    if (!conv)
      return false;
    Value *running = conv->result();
    DType dtype = running->getType().dtype;
    auto add = [&](OpKind op, std::vector<Value *> operands, const AttrMap &attrs,
                   const std::string &name) {
      Node *n = builder.create(op, name, operands, attrs);
      running = n ? n->result() : nullptr;
      return n != nullptr;
    };
    std::string base = chain.conv->getName();
    bool widen = (scale || bias) && dtype != DType::F32;
    if ((widen && !add(OpKind::Cast, {running}, {{"dtype", DType::F32}}, base + ".f32")) ||
        (scale && !add(OpKind::Mul, {running, input(scale)}, {}, base + ".scaled")) ||
        (bias && !add(OpKind::Add, {running, input(bias)}, {}, base + ".shifted")) ||
        (widen && !add(OpKind::Cast, {running}, {{"dtype", dtype}}, base + ".narrow")) ||
        (chain.residual && !add(OpKind::Add, {running, input(chain.residual)}, {},
                                base + ".residual")) ||
        (chain.relu && !add(OpKind::Relu, {running}, {}, base + ".relu")))
      return false;
    std::string resultName = last->result()->getName();
    body.outputs.push_back({resultName, running, OutputKind::Output, "", last->getLoc()});
    if (!builder.addResults(*fusion, {resultName}))
      return false;
    g.replaceAllUsesWith(last->result(), fusion->result());
    chain.conv->dropOperands();
    for (Node *member : chain.members)
      member->dropOperands();
    dead.push_back(chain.conv);
    dead.insert(dead.end(), chain.members.begin(), chain.members.end());
    fusion->result()->setName(resultName);
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> cgc::createFuseConvolutionEpiloguePass() {
  return std::make_unique<FuseConvolutionEpiloguePass>();
}
