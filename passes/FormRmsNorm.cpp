//===- FormRmsNorm.cpp - The arithmetic of an RMS norm as one rms_norm ------===//
//
// Algorithm: models write RMS normalization (Llama, Mistral, Qwen, Gemma,
// T5; torch.nn.RMSNorm and ONNX's RMSNormalization once decomposed) as
// arithmetic:
//   q = x * x                    (pow(x, 2) after canonicalize)
//   m = mean(q, axes = [a, rank), keepdim)
//   s = m + eps                  (eps a positive splat constant)
//   y = x * rsqrt(s)  or  x / sqrt(s)
//   [z = y * w]                  (w of x's shape from axis a on)
// Each `mean` that starts such a chain, in each graph (regions innermost
// first), one chain at a time in node order (a chain may read another's
// result), becomes one `rms_norm` of x (with w when the weight product
// follows) over axes [a, rank), named after the chain's last node and at
// its place; the chain's nodes go. Each link must be read by the next
// alone and be no result, so nothing else needs an intermediate (the
// backward of a training step reads them: there the chain stays). A
// chain over a cast of x to f32 (Llama in bf16) forms over the f32 value;
// the cast back and a weight product after it stay outside, for fuse-rows
// to take into the row kernel.
// Why: rms_norm runs as one row kernel that reads each row once (the
// arithmetic ran as a reduction and a second kernel reading the row
// again), and a product_fusion may normalize its input rows with it
// (fuse-epilogue), as it does a layernorm.
// Requires: a verified graph after canonicalize. Guarantees: the graph
// computes the same values but for rounding (rms_norm computes in f32 and
// rounds once; the chain rounded each step to x's dtype).
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"
#include "passes/ValueBuilder.h"

#include "ir/Initializers.h"
#include "ir/TypeRules.h"

#include <cmath>

using namespace cgc;

namespace {

/// One recognized chain: its nodes (in graph order) and the rms_norm's
/// operands and attributes.
struct RmsChain {
  std::vector<Node *> nodes;
  Value *x = nullptr, *weight = nullptr;
  int64_t axis = 0;
  double eps = 0;
};

/// The operand of binary \p n other than \p v (null unless v is one).
Value *otherOperand(const Node &n, const Value *v) {
  if (n.numOperands() != 2)
    return nullptr;
  if (n.operand(0) == v)
    return n.operand(1);
  return n.operand(1) == v ? n.operand(0) : nullptr;
}

/// The first axis of \p mean's axes when they are [a, rank) with keepdim,
/// else -1.
int64_t trailingAxis(const Node &mean) {
  unsigned rank = mean.operand(0)->getType().rank();
  auto axes = reductionAxes(mean, rank);
  if (axes.empty() || !mean.boolAttr("keepdim", false))
    return -1;
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - axes.size() + i)
      return -1;
  return axes.front();
}

/// The positive finite value of splat constant \p v, else 0.
double positiveSplat(const Value *v) {
  auto value = splatConstant(v);
  if (!value)
    return 0;
  double e = realOf(v->getType().dtype, *value);
  return std::isfinite(e) && e > 0 ? e : 0;
}

/// The chain that mean \p m starts, if it is one.
llvm::Optional<RmsChain> chainFrom(const Graph &g, Node &m) {
  RmsChain c;
  c.axis = trailingAxis(m);
  Node *q = m.operand(0)->getDef();
  if (c.axis < 0 || !q || q->getParent() != &g || q->getOp() != OpKind::Mul ||
      q->operand(0) != q->operand(1) || soleUser(g, q->result()) != &m)
    return llvm::None;
  c.x = q->operand(0);
  const TensorType &type = c.x->getType();
  Node *s = soleUser(g, m.result());
  if (!s || s->getOp() != OpKind::Add)
    return llvm::None;
  c.eps = positiveSplat(otherOperand(*s, m.result()));
  Node *root = soleUser(g, s->result());
  Node *y = root ? soleUser(g, root->result()) : nullptr;
  bool byRsqrt = root && root->getOp() == OpKind::Rsqrt && y &&
                 y->getOp() == OpKind::Mul && otherOperand(*y, root->result()) == c.x;
  bool bySqrt = root && root->getOp() == OpKind::Sqrt && y &&
                y->getOp() == OpKind::Div && y->operand(0) == c.x &&
                y->operand(1) == root->result();
  if (!c.eps || !(byRsqrt || bySqrt) || y->result()->getType() != type)
    return llvm::None;
  c.nodes = {q, &m, s, root, y};
  Node *eps = otherOperand(*s, m.result())->getDef();
  if (soleUser(g, eps->result()) == s)
    c.nodes.insert(c.nodes.begin(), eps); // Its constant goes with it.
  Node *scaled = soleUser(g, y->result());
  Value *w = scaled && scaled->getOp() == OpKind::Mul
                 ? otherOperand(*scaled, y->result()) : nullptr;
  if (w && w != y->result() && w->getType().dtype == type.dtype &&
      llvm::makeArrayRef(w->getType().dims) ==
          llvm::makeArrayRef(type.dims).drop_front(c.axis) &&
      scaled->result()->getType() == type) {
    c.weight = w;
    c.nodes.push_back(scaled);
  }
  return c;
}

class FormRmsNormPass : public Pass {
public:
  llvm::StringRef name() const override { return "form-rms-norm"; }
  llvm::StringRef summary() const override {
    return "write the arithmetic of an RMS normalization as one rms_norm";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    return forEachGraphInnermostFirst(
        graph, [&](Graph &g) { return formInGraph(g, ctx); });
  }

private:
  static bool formInGraph(Graph &g, PassContext &ctx);
};

} // namespace

/// The first chain of \p g in node order, if any.
static llvm::Optional<RmsChain> firstChain(Graph &g) {
  for (const auto &n : g.nodes())
    if (n->getOp() == OpKind::Mean)
      if (auto chain = chainFrom(g, *n))
        return chain;
  return llvm::None;
}

/// One chain at a time, the graph searched again after each: a chain may
/// read another's result (two norms in a row, or one norm's result as
/// another's weight), which the rewrite replaces.
bool FormRmsNormPass::formInGraph(Graph &g, PassContext &ctx) {
  GraphBuilder builder(g, ctx.diag);
  ValueBuilder vb(builder);
  while (llvm::Optional<RmsChain> c = firstChain(g)) {
    Node &last = *c->nodes.back();
    vb.setInsertionPoint(last);
    vb.setOrigin(last);
    vb.setBase(last.getName() + ".rms");
    std::vector<Value *> operands{c->x};
    if (c->weight)
      operands.push_back(c->weight);
    Value *norm = vb.op(OpKind::RmsNorm, operands,
                        {{"axis", c->axis}, {"eps", c->eps}});
    if (!norm)
      return false;
    g.replaceAllUsesWith(last.result(), norm);
    std::string node = last.getName(), value = last.result()->getName();
    for (Node *n : llvm::reverse(c->nodes))
      n->dropOperands();
    g.erase(c->nodes);
    norm->getDef()->setName(node); // Free once the chain is gone.
    norm->setName(value);
  }
  return true;
}

std::unique_ptr<Pass> cgc::createFormRmsNormPass() {
  return std::make_unique<FormRmsNormPass>();
}
