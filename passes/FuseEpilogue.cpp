//===- FuseEpilogue.cpp - Fold what follows a matrix product into it --------===//
//
// Algorithm: for each `matmul` and `linear` (regions of `if` and `while`
// included), follow the chain of sole users of its result and absorb, in
// order: a bias add (a rank-1 operand of n elements, unless the product
// has a bias already) and a residual add (an operand of the result's
// type), then one activation, then, last, a layernorm over the last axis.
// What may be absorbed depends on how the product runs (ProductRule.h):
//   - Library (cuBLASLt): bias, residual (the beta * C input), relu and
//     gelu_tanh, the forms cuBLASLt's epilogues compute. The erf-form gelu
//     stays outside and fuse-elementwise puts it in the next kernel.
//   - Generated: bias, residual, relu, gelu, gelu_tanh, and the layernorm
//     where fusesLayerNorm() says one cluster reads the weight fast.
// A chain of two or more nodes becomes one `product_fusion` node at the
// place of its last member, whose body holds copies of the members (same
// names, attributes and locations).
// Requires: a verified graph with static shapes on products.
// Guarantees: the same values; every product_fusion body is a product
// followed by a chain its strategy runs as one epilogue; a value read
// outside the chain or returned is never absorbed.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"
#include "passes/ProductRule.h"

#include "ir/Builder.h"

#include "llvm/ADT/STLExtras.h"

using namespace cgc;

namespace {

/// What a chain has absorbed so far.
struct Chain {
  ProductStrategy strategy;
  bool layerNorm; ///< fusesLayerNorm(): the strategy can end with one.
  std::vector<Node *> members;
  bool bias = false, residual = false, activation = false;

  Value *last() const { return members.back()->result(); }
};

bool isStaticProduct(const Node &n) {
  if (!n.info().has(MatMul) || !n.result()->getType().isStatic())
    return false;
  return llvm::all_of(n.getOperands(),
                      [](Value *v) { return v->getType().isStatic(); });
}

/// The sole user of \p v in its graph, if v is not returned.
Node *soleUser(const Graph &g, Value *v) {
  if (g.isOutput(v) || v->uses().size() != 1)
    return nullptr;
  Node *user = v->uses().begin()->user;
  return user->getParent() == &g ? user : nullptr;
}

bool absorbAdd(Chain &c, const Node &add) {
  Value *cur = c.last();
  if (add.operand(0) == add.operand(1) || c.activation)
    return false;
  Value *other = add.operand(add.operand(0) == cur ? 1 : 0);
  const TensorType &t = other->getType(), &out = cur->getType();
  if (t.dtype != out.dtype || !t.isStatic())
    return false;
  if (!c.bias && t.rank() == 1 && t.dims[0] == out.dims.back())
    return c.bias = true;
  if (!c.residual && t.dims == out.dims)
    return c.residual = true;
  return false;
}

bool absorbActivation(Chain &c, const Node &act) {
  if (c.activation)
    return false;
  if (act.getOp() == OpKind::Gelu && c.strategy == ProductStrategy::Library)
    return false; // cuBLASLt's GELU is the tanh form.
  return c.activation = true;
}

/// Whether \p user joins the chain; a layernorm ends it.
bool absorb(Chain &c, const Node &user, bool &ends) {
  OpKind op = user.getOp();
  if (op == OpKind::Add)
    return absorbAdd(c, user);
  if (op == OpKind::Relu || op == OpKind::Gelu || op == OpKind::GeluTanh)
    return absorbActivation(c, user);
  if (op != OpKind::LayerNorm)
    return false;
  unsigned rank = c.last()->getType().rank();
  ends = true;
  return c.layerNorm && user.operand(0) == c.last() &&
         normalizeAxis(user.intAttr("axis", -1), rank) == rank - 1;
}

class FuseEpiloguePass : public Pass {
public:
  llvm::StringRef name() const override { return "fuse-epilogue"; }
  llvm::StringRef summary() const override {
    return "fold bias, residual, activation and layernorm into the matrix "
           "product before them";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    return fuseNested(graph, ctx);
  }

private:
  bool fuseNested(Graph &graph, PassContext &ctx);
  bool buildFusion(Graph &graph, const Chain &chain, GraphBuilder &builder);
};

} // namespace

bool FuseEpiloguePass::fuseNested(Graph &graph, PassContext &ctx) {
  std::vector<Node *> products;
  for (const auto &node : graph.nodes()) {
    if (node->info().has(ControlFlow))
      for (unsigned r = 0; r < node->numRegions(); ++r)
        if (!fuseNested(node->region(r), ctx))
          return false;
    if (isStaticProduct(*node))
      products.push_back(node.get());
  }
  GraphBuilder builder(graph, ctx.diag);
  for (Node *product : products) {
    ProductProblem problem = productProblem(*product);
    Chain chain{productStrategy(problem), fusesLayerNorm(problem), {product}};
    chain.bias = product->numOperands() == 3; // linear with its bias
    bool ends = false;
    while (!ends) {
      Node *user = soleUser(graph, chain.last());
      if (!user || !absorb(chain, *user, ends))
        break;
      chain.members.push_back(user);
    }
    if (chain.members.size() > 1 && !buildFusion(graph, chain, builder))
      return false;
  }
  return true;
}

bool FuseEpiloguePass::buildFusion(Graph &graph, const Chain &chain,
                                   GraphBuilder &builder) {
  Node *product = chain.members.front(), *last = chain.members.back();
  builder.setInsertionPoint(*last);
  builder.setOrigin(*product);
  Node *fusion = builder.createWithRegions(OpKind::ProductFusion,
                                           product->getName() + ".fused", {});
  Graph &body = fusion->region(0);
  builder.setInsertionPointToEnd(body);
  Value *previous = nullptr, *mappedPrevious = nullptr;
  for (Node *m : chain.members) {
    llvm::SmallVector<Value *, 3> operands;
    for (Value *v : m->getOperands()) {
      if (v == previous) {
        operands.push_back(mappedPrevious);
        continue;
      }
      fusion->addOperand(v);
      operands.push_back(body.addInput(
          builder.uniqueName("in" + std::to_string(fusion->numOperands() - 1)),
          v->getType()));
    }
    Node *clone = builder.clone(*m, operands);
    if (!clone)
      return false;
    previous = m->result();
    mappedPrevious = clone->result();
  }
  std::string resultName = last->result()->getName();
  body.outputs.push_back(
      {resultName, mappedPrevious, OutputKind::Output, "", last->getLoc()});
  if (!builder.addResults(*fusion, {resultName}))
    return false;
  Value *result = fusion->result();
  llvm::SmallVector<Use, 4> uses(last->result()->uses().begin(),
                                 last->result()->uses().end());
  for (const Use &u : uses)
    u.user->setOperand(u.operandIndex, result);
  for (GraphOutput &o : graph.outputs)
    if (o.value == last->result())
      o.value = result;
  for (auto it = chain.members.rbegin(); it != chain.members.rend(); ++it)
    (*it)->dropOperands();
  for (auto it = chain.members.rbegin(); it != chain.members.rend(); ++it)
    graph.erase(*it);
  result->setName(resultName);
  return true;
}

std::unique_ptr<Pass> cgc::createFuseEpiloguePass() {
  return std::make_unique<FuseEpiloguePass>();
}
