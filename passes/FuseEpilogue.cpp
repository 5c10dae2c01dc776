//===- FuseEpilogue.cpp - Fold the ops around a matrix product into it ------===//
//
// Algorithm: for each `matmul` and `linear` (regions of `if` and `while`
// included), follow the chain of sole users of its result and absorb, in
// order: a bias add (a rank-1 operand of n elements, unless the product
// has a bias already) and a residual add (an operand of the result's
// type), then one activation. What may be absorbed depends on how the
// product will run (the scheduling library, target/Scheduler.h):
//   - Library (cuBLASLt): bias, residual (the beta * C input), relu and
//     gelu_tanh, the forms cuBLASLt's epilogues compute. The erf-form gelu
//     stays outside and fuse-elementwise puts it in the next kernel.
//   - Tiled: bias, residual, relu, gelu, gelu_tanh.
//   - Generated: bias, residual, relu, gelu, gelu_tanh; and, before the
//     product, what computes its first operand, when the kernel can
//     compute its rows (productComputesInput()): either the layernorm or
//     rms_norm over the last axis that produces it, for every reader of
//     the norm, each a product reading it as its first operand alone
//     (each product_fusion then holds a copy of the norm: every block of a
//     generated product normalizes all its rows into shared memory
//     anyway, so a norm read by q, k and v projections at decode costs no
//     more in three than in one), or a prologue: the elementwise ops,
//     splat sources and index moves (isProductPrologueOp) that compute it,
//     each read only by the prologue and the product, at least one of
//     them elementwise, within productComputesPrologue()'s bound on the
//     blocks' redundant work and kMaxViewEvaluations (a decoder's
//     silu(gate) * up before its down projection, read from the merged
//     gate/up product's halves). Either runs no kernel of its own.
// A chain of two or more nodes becomes one `product_fusion` node at the
// place of its last member, whose body holds copies of the members (same
// names, attributes and locations).
// Requires: a verified graph; products with symbolic shapes, and products
// or layernorms with a (hand-written) schedule record, are left alone.
// Guarantees: the same values; every product_fusion body is a norm or a
// prologue, a product, and a chain its strategy runs as one epilogue; a
// value read outside the fusion or returned is never absorbed (the
// norm's copies apart).
//
//===----------------------------------------------------------------------===//
#include "ir/PointwiseFusion.h"
#include "ir/RowFusion.h"
#include "passes/FusionBuilder.h"
#include "passes/Pass.h"
#include "target/Scheduler.h"

#include "ir/Builder.h"
#include "ir/ProductEpilogue.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

using namespace cgc;

namespace {

/// What a chain has absorbed so far.
struct Chain {
  Strategy strategy;
  std::vector<Node *> members; ///< [input layernorm,] product, epilogue.
  ProductEpilogue epilogue;

  Value *last() const { return members.back()->result(); }
};

bool isStaticProduct(const Node &n) {
  if (!n.info().has(MatMul) || !n.result()->getType().isStatic())
    return false;
  return llvm::all_of(n.getOperands(),
                      [](Value *v) { return v->getType().isStatic(); });
}

/// Whether \p user joins the chain: what the product_fusion type rule
/// admits (ProductEpilogue.h), less the erf gelu when cuBLASLt runs the
/// product (its GELU epilogue is the tanh form).
bool absorb(Chain &c, const Node &user) {
  if (user.getOp() == OpKind::Gelu && c.strategy == Strategy::LibraryProduct)
    return false;
  for (const Value *v : user.getOperands())
    if (!v->getType().isStatic())
      return false;
  return c.epilogue.admit(user, c.last()) != ProductEpilogue::Role::Refused;
}

/// Whether \p reader may normalize its first operand, \p norm's result,
/// itself: a static product without a schedule record whose kernel
/// normalizes its input rows, reading the norm as that operand alone.
bool normalizesInput(const Node &reader, const Value *norm, const Target &target) {
  return isStaticProduct(reader) && !reader.schedule() && reader.operand(0) == norm &&
         llvm::count(reader.getOperands(), norm) == 1 &&
         productComputesInput(reader, target);
}

/// The layernorm or rms_norm over the last axis that computes \p
/// product's first operand, if every reader of it may normalize its input
/// itself.
Node *inputLayerNorm(const Graph &g, Node &product,
                     const Target &target) {
  Node *norm = product.operand(0)->getDef();
  if (!norm || !isRowNorm(*norm) || norm->schedule() ||
      norm->getParent() != &g || g.isOutput(norm->result()) ||
      !llvm::all_of(norm->result()->uses(), [&](const Use &u) {
        return u.user->getParent() == &g &&
               normalizesInput(*u.user, norm->result(), target);
      }))
    return nullptr;
  unsigned rank = norm->result()->getType().rank();
  return normalizeAxis(norm->intAttr("axis", -1), rank) == rank - 1 ? norm
                                                                    : nullptr;
}

/// The prologue that computes \p product's first operand (in graph order),
/// or none: see the header. Grows from the operand's definition through
/// prologue ops of \p g, then drops, until none is left to drop, every
/// member with a reader outside the members and the product (and the
/// product's operands other than its first).
std::vector<Node *> inputPrologue(const Graph &g, Node &product, const Target &target) {
  // Nodes looked at: more than any prologue productComputesPrologue takes.
  constexpr size_t WalkLimit = 64;
  Value *x = product.operand(0);
  if (!x->getDef() || llvm::count(product.getOperands(), x) != 1)
    return {};
  llvm::SetVector<Node *> members;
  std::vector<Node *> work{x->getDef()};
  while (!work.empty() && members.size() < WalkLimit) {
    Node *n = work.back();
    work.pop_back();
    if (members.count(n) || n->getParent() != &g || n->schedule() ||
        !isProductPrologueOp(*n) || g.isOutput(n->result()))
      continue;
    members.insert(n);
    for (Value *v : n->getOperands())
      if (v->getDef())
        work.push_back(v->getDef());
  }
  auto readOutside = [&](const Node *n) {
    return llvm::any_of(n->result()->uses(), [&](const Use &u) {
      return u.user == &product ? u.operandIndex != 0 : !members.count(u.user);
    });
  };
  for (bool dropped = true; dropped;) {
    dropped = false;
    for (Node *n : llvm::to_vector(members)) // Against the whole current set.
      if (readOutside(n)) {
        members.remove(n);
        dropped = true;
      }
  }
  std::vector<Node *> ordered;
  for (const auto &n : g.nodes())
    if (members.count(n.get()))
      ordered.push_back(n.get());
  bool computes = llvm::any_of(ordered, [](const Node *n) {
    return n->info().has(Elementwise);
  });
  if (!members.count(x->getDef()) || !computes ||
      !productComputesPrologue(product, ordered.size(), target) ||
      prologueEvaluations(ordered, x) > kMaxViewEvaluations)
    return {};
  return ordered;
}

class FuseEpiloguePass : public Pass {
public:
  llvm::StringRef name() const override { return "fuse-epilogue"; }
  llvm::StringRef summary() const override {
    return "fold the layernorm or prologue that computes a matrix product's "
           "input, and its bias, residual and activation, into the product";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    return fuseNested(graph, ctx);
  }

private:
  bool fuseNested(Graph &graph, PassContext &ctx);
  /// Replaces the chain by one fusion; its members join \p dead.
  bool buildFusion(Graph &graph, const Chain &chain, GraphBuilder &builder,
                   std::vector<Node *> &dead, size_t shared);
};

} // namespace

bool FuseEpiloguePass::fuseNested(Graph &graph, PassContext &ctx) {
  std::vector<Node *> products;
  for (const auto &node : graph.nodes()) {
    if (node->info().has(ControlFlow))
      for (unsigned r = 0; r < node->numRegions(); ++r)
        if (!fuseNested(node->region(r), ctx))
          return false;
    // A product with a schedule record (hand-written) runs as recorded.
    if (isStaticProduct(*node) && !node->schedule())
      products.push_back(node.get());
  }
  GraphBuilder builder(graph, ctx.diag);
  std::vector<Node *> dead;
  llvm::SetVector<Node *> norms; // Copied into their readers' fusions.
  for (Node *product : products) {
    Chain chain{productStrategyOf(*product, ctx.target), {product},
                ProductEpilogue(product->numOperands() == 3)};
    Node *norm = inputLayerNorm(graph, *product, ctx.target);
    if (norm) {
      chain.members.insert(chain.members.begin(), norm);
      norms.insert(norm);
    } else {
      std::vector<Node *> prologue = inputPrologue(graph, *product, ctx.target);
      chain.members.insert(chain.members.begin(), prologue.begin(), prologue.end());
    }
    while (Node *user = soleUser(graph, chain.last())) {
      if (!absorb(chain, *user))
        break;
      chain.members.push_back(user);
    }
    if (chain.members.size() > 1 &&
        !buildFusion(graph, chain, builder, dead, norm ? 1 : 0))
      return false;
  }
  for (Node *norm : norms) { // Every reader took a copy.
    norm->dropOperands();
    dead.push_back(norm);
  }
  graph.erase(dead);
  return true;
}

static const Node &productOfChain(const Chain &chain) {
  return **llvm::find_if(chain.members, [](const Node *n) { return n->info().has(MatMul); });
}

bool FuseEpiloguePass::buildFusion(Graph &graph, const Chain &chain,
                                   GraphBuilder &builder,
                                   std::vector<Node *> &dead, size_t shared) {
  return buildChainFusion(graph, chain.members, OpKind::ProductFusion,
                          productOfChain(chain), builder, dead, shared);
}

std::unique_ptr<Pass> cgc::createFuseEpiloguePass() {
  return std::make_unique<FuseEpiloguePass>();
}
