//===- FuseViews.cpp - Pointwise kernels read through movement ops -----------===//
//
// Algorithm: after fuse-elementwise, each pointwise consumer (an
// elementwise op or a `fusion`, without dropout), the last first, grows
// upward through the producers of its operands, in each graph (regions
// innermost first):
//  - an index move (ir/PointwiseFusion.h: transpose, reshape,
//    broadcast_to, slice, concat, gather, embedding) that dissolves — it
//    is no output and each of its readers is a pointwise consumer or an
//    index move that dissolves — is copied into the consumer's body, so that the consumer
//    reads the move's operand at computed coordinates; once every reader
//    has its copy, the move runs no kernel of its own (a reshape, which
//    aliases its operand, only when it reads such a move);
//  - an elementwise op or a `fusion` of one result without dropout whose
//    readers all joined this consumer moves into it when the consumer's
//    body reads its value once per element of the kernel: it has one
//    reader, an elementwise op of its shape, a transpose, reshape, slice or
//    concat (bijective or injective on elements), or it is a result, and
//    that reader is read once too (never through a broadcast, which would
//    compute it again per broadcast element).
// A consumer that took anything is rebuilt as one `fusion` named like it
// (results keep their names) at its place; the taken nodes left with no
// reader are erased, and so are the sources (splat fills, iotas) copied
// into the body that nothing else reads. Each consumer's body stays within
// kMaxFusedOps and kMaxViewEvaluations (a concat evaluates each operand at its own
// coordinates, so nested concats that read one value twice would double
// the kernel's text per level).
// Llama's rotary embedding (slices of the projection, a negation, a
// concat, products and a sum) thus becomes one kernel per q and k that
// reads the merged projection in place; a gated MLP reads its merged
// product's halves in place.
// Requires: a verified graph after fuse-elementwise (bodies as the fusion
// type rule allows).
// Guarantees: the graph computes the same values; every fusion it builds
// holds elementwise ops, sources and index moves, no dropout, and results
// of one shape; no node is computed more often per element than before
// except index moves (loads) and producers below a concat's branch, which
// each element evaluates once.
//
//===----------------------------------------------------------------------===//
#include "passes/FusionBuilder.h"
#include "passes/Pass.h"

#include "ir/Builder.h"
#include "ir/PointwiseFusion.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace cgc;

namespace {

bool holdsDropout(const Node &n) {
  return n.getOp() == OpKind::Fusion &&
         llvm::any_of(n.region(0).nodes(), [](const auto &m) {
           return m->getOp() == OpKind::Dropout;
         });
}

bool isStaticNode(const Node &n) {
  for (unsigned r = 0; r < n.numResults(); ++r)
    if (!n.result(r)->getType().isStatic())
      return false;
  return llvm::all_of(n.getOperands(),
                      [](const Value *v) { return v->getType().isStatic(); });
}

bool isRead(const Graph &graph, const Node &n) {
  for (unsigned r = 0; r < n.numResults(); ++r)
    if (n.result(r)->hasUses() || graph.isOutput(n.result(r)))
      return true;
  return false;
}

/// An elementwise op or a `fusion` without dropout whose results have one
/// shape: a kernel of one thread per element that can read an operand at
/// computed coordinates (the fusion type rule).
bool isPointwiseConsumer(const Node &n) {
  bool kind = n.info().has(Elementwise) || n.getOp() == OpKind::Fusion;
  for (unsigned r = 1; r < n.numResults(); ++r)
    if (n.result(r)->getType().dims != n.result(0)->getType().dims)
      return false;
  return kind && !holdsDropout(n) && isStaticNode(n);
}

/// How many body ops \p n brings into a consumer.
size_t opsOf(const Node &n) {
  return n.getOp() == OpKind::Fusion ? n.region(0).nodes().size() : 1;
}

/// The absorption plan of one consumer: the outer nodes it takes.
struct Plan {
  Node *consumer = nullptr;
  llvm::SetVector<Node *> taken;
  size_t ops = 0;
};

/// An upper bound on the evaluations per element of the body \p plan
/// would build (ir/PointwiseFusion.h): its nodes' and bodies' values and
/// the outer values it loads, the consumer's results asked once each.
uint64_t evaluations(const Graph &graph, const Plan &plan) {
  std::vector<const Node *> nodes(plan.taken.begin(), plan.taken.end());
  nodes.push_back(plan.consumer);
  llvm::sort(nodes, [&](const Node *a, const Node *b) {
    return graph.indexOf(a) > graph.indexOf(b);
  });
  EvaluationCounts counts;
  for (unsigned r = 0; r < plan.consumer->numResults(); ++r)
    counts.askAtElement(plan.consumer->result(r));
  uint64_t total = 0;
  for (const Node *n : nodes)
    total += counts.propagate(*n);
  llvm::SmallPtrSet<const Value *, 8> loaded;
  for (const Node *n : nodes)
    for (const Value *v : n->getOperands())
      if ((!v->getDef() || !llvm::is_contained(nodes, v->getDef())) &&
          loaded.insert(v).second)
        total += counts.of(v);
  return total;
}

class FuseViewsPass : public Pass {
public:
  llvm::StringRef name() const override { return "fuse-views"; }
  llvm::StringRef summary() const override {
    return "let pointwise kernels read through transposes, reshapes, slices, "
           "concats and gathers";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    return forEachGraphInnermostFirst(
        graph, [&](Graph &g) { return fuseGraph(g, ctx); });
  }

private:
  bool fuseGraph(Graph &graph, PassContext &ctx);
  bool dissolves(const Graph &graph, Node &n);
  bool overMove(const Graph &graph, Node &n);
  bool movesIn(const Graph &graph, const Plan &plan, Node &producer) const;
  bool readOnce(const Plan &plan, const Value *v) const;
  Plan planFor(const Graph &graph, Node &consumer);
  Node *rebuild(Graph &graph, const Plan &plan, GraphBuilder &builder,
                llvm::SmallVectorImpl<Node *> &cloned);

  llvm::DenseMap<Node *, bool> dissolving;
};
} // namespace

bool FuseViewsPass::dissolves(const Graph &graph, Node &n) {
  auto known = dissolving.find(&n);
  if (known != dissolving.end())
    return known->second;
  dissolving[&n] = false; // No cycles in a graph; a guard all the same.
  bool ok = isIndexMove(n) && !graph.isOutput(n.result()) && n.result()->hasUses() &&
            llvm::all_of(n.result()->uses(), [&](const Use &u) {
              return u.user->getParent() == &graph &&
                     (isPointwiseConsumer(*u.user) || dissolves(graph, *u.user));
            });
  return dissolving[&n] = ok;
}

/// Whether the consumer's body, as \p plan would build it, reads \p v (an
/// outer value read by the plan, or a value of the consumer's own body)
/// once per element of the kernel.
bool FuseViewsPass::readOnce(const Plan &plan, const Value *v) const {
  const Node &consumer = *plan.consumer;
  const Graph *body =
      consumer.getOp() == OpKind::Fusion ? &consumer.region(0) : nullptr;
  bool inBody = body && ((v->getDef() && v->getDef()->getParent() == body) ||
                         llvm::any_of(body->inputs(), [&](const GraphInput &in) {
                           return in.value == v;
                         }));
  unsigned reads = 0;
  const Node *reader = nullptr; // Null: read as a result or a body input.
  if (inBody)
    reads = llvm::count_if(body->outputs,
                           [&](const GraphOutput &o) { return o.value == v; });
  for (const Use &u : v->uses()) {
    ++reads;
    if (inBody || plan.taken.count(u.user) || (u.user == &consumer && !body)) {
      reader = u.user;
    } else if (u.user == &consumer) {
      reader = nullptr;
      if (!readOnce(plan, body->inputs()[u.operandIndex].value))
        return false;
    } else {
      return false; // Read outside the plan.
    }
  }
  if (reads != 1)
    return false;
  if (!reader)
    return true;
  OpKind op = reader->getOp();
  bool once = (reader->info().has(Elementwise) &&
               reader->result()->getType().dims == v->getType().dims) ||
              op == OpKind::Transpose || op == OpKind::Reshape ||
              op == OpKind::Slice || op == OpKind::Concat;
  return once && (reader == &consumer || readOnce(plan, reader->result()));
}

/// Whether elementwise or fusion \p producer moves into \p plan's consumer.
bool FuseViewsPass::movesIn(const Graph &graph, const Plan &plan,
                            Node &producer) const {
  bool kind = producer.info().has(Elementwise) || producer.getOp() == OpKind::Fusion;
  if (!kind || producer.numResults() != 1 || holdsDropout(producer) ||
      !isStaticNode(producer) || graph.isOutput(producer.result()))
    return false;
  return readOnce(plan, producer.result());
}

/// Whether reshape \p n reads an index move that dissolves: taking the
/// reshape lets the kernel take the move (a reshape alone aliases its
/// operand and costs no kernel).
bool FuseViewsPass::overMove(const Graph &graph, Node &n) {
  Node *def = n.operand(0)->getDef();
  return def && def->getParent() == &graph && dissolves(graph, *def);
}

Plan FuseViewsPass::planFor(const Graph &graph, Node &consumer) {
  Plan plan;
  plan.consumer = &consumer;
  plan.ops = opsOf(consumer);
  llvm::SmallVector<Node *, 8> work{&consumer};
  while (!work.empty()) {
    Node *reader = work.pop_back_val();
    for (Value *v : reader->getOperands()) {
      Node *def = v->getDef();
      if (!def || def->getParent() != &graph || plan.taken.count(def) ||
          plan.ops + opsOf(*def) > kMaxFusedOps)
        continue;
      if (!dissolves(graph, *def) && !movesIn(graph, plan, *def))
        continue;
      if (def->getOp() == OpKind::Reshape && !overMove(graph, *def))
        continue; // It aliases its operand: a kernel reads it as it is.
      plan.taken.insert(def);
      if (evaluations(graph, plan) > kMaxViewEvaluations) {
        plan.taken.remove(def);
        continue;
      }
      plan.ops += opsOf(*def);
      work.push_back(def);
    }
  }
  return plan;
}

/// \p plan's fusion, in the consumer's place; \p cloned gets the outer
/// sources (splats, iotas) copied into its body.
Node *FuseViewsPass::rebuild(Graph &graph, const Plan &plan, GraphBuilder &builder,
                             llvm::SmallVectorImpl<Node *> &cloned) {
  Node &consumer = *plan.consumer;
  std::vector<Node *> taken(plan.taken.begin(), plan.taken.end());
  llvm::sort(taken, [&](Node *a, Node *b) { return graph.indexOf(a) < graph.indexOf(b); });
  taken.push_back(&consumer);
  builder.setInsertionPoint(consumer);
  builder.setOrigin(consumer);
  Node *fusion = builder.createWithRegions(OpKind::Fusion, consumer.getName(), {});
  Graph &body = fusion->region(0);
  builder.setInsertionPointToEnd(body);
  llvm::DenseMap<const Value *, Value *> mapped;
  auto mapOperand = [&](Value *v) -> Value * {
    auto it = mapped.find(v);
    if (it != mapped.end())
      return it->second;
    Node *def = v->getDef();
    if (def && (isSplatSource(*def) || isIotaSource(*def))) {
      cloned.push_back(def);
      Node *clone = builder.clone(*def, {});
      return mapped[v] = clone ? clone->result() : nullptr;
    }
    fusion->addOperand(v);
    return mapped[v] = body.addInput(
               builder.uniqueName("in" + std::to_string(fusion->numOperands() - 1)),
               v->getType());
  };
  auto cloneInto = [&](const Node &n, llvm::ArrayRef<Value *> operands) {
    Node *copy = builder.clone(n, operands);
    if (copy)
      mapped[n.result()] = copy->result();
    return copy != nullptr;
  };
  for (Node *n : taken) {
    llvm::SmallVector<Value *, 4> operands;
    for (Value *v : n->getOperands())
      operands.push_back(mapOperand(v));
    if (llvm::is_contained(operands, nullptr))
      return nullptr;
    if (n->getOp() != OpKind::Fusion) {
      if (!cloneInto(*n, operands))
        return nullptr;
      continue;
    }
    const Graph &inner = n->region(0);
    for (unsigned k = 0; k < inner.inputs().size(); ++k)
      mapped[inner.inputs()[k].value] = operands[k];
    for (const auto &m : inner.nodes()) {
      llvm::SmallVector<Value *, 4> innerOperands;
      for (Value *v : m->getOperands())
        innerOperands.push_back(mapped.lookup(v));
      if (!cloneInto(*m, innerOperands))
        return nullptr;
    }
    for (unsigned r = 0; r < n->numResults(); ++r)
      mapped[n->result(r)] = mapped.lookup(inner.outputs[r].value);
  }
  std::vector<std::string> names;
  for (unsigned r = 0; r < consumer.numResults(); ++r) {
    Value *v = consumer.result(r);
    body.outputs.push_back({v->getName(), mapped.lookup(v), OutputKind::Output, "",
                            consumer.getLoc()});
    names.push_back(v->getName());
  }
  if (!builder.addResults(*fusion, names))
    return nullptr;
  for (unsigned r = 0; r < consumer.numResults(); ++r)
    graph.replaceAllUsesWith(consumer.result(r), fusion->result(r));
  consumer.dropOperands();
  return fusion;
}

/// Erases the nodes of \p candidates left with no reader, readers first,
/// adding them to \p erased.
static void eraseUnread(Graph &graph, llvm::SetVector<Node *> &candidates,
                        llvm::DenseSet<Node *> &erased) {
  for (bool more = true; more;) {
    std::vector<Node *> dead;
    for (Node *n : candidates)
      if (!isRead(graph, *n))
        dead.push_back(n);
    for (Node *n : dead) {
      candidates.remove(n);
      n->dropOperands();
      erased.insert(n);
    }
    graph.erase(dead);
    more = !dead.empty();
  }
}

bool FuseViewsPass::fuseGraph(Graph &graph, PassContext &ctx) {
  dissolving.clear();
  std::vector<Node *> consumers;
  for (const auto &owned : graph.nodes())
    if (isPointwiseConsumer(*owned))
      consumers.push_back(owned.get());
  GraphBuilder builder(graph, ctx.diag);
  llvm::DenseSet<Node *> erased;
  // Readers first: a consumer takes its producers whole before any of them
  // grows on its own.
  for (Node *consumer : llvm::reverse(consumers)) {
    if (erased.count(consumer))
      continue;
    Plan plan = planFor(graph, *consumer);
    if (plan.taken.empty())
      continue;
    llvm::SmallVector<Node *, 4> cloned;
    Node *fusion = rebuild(graph, plan, builder, cloned);
    if (!fusion)
      return false;
    std::string name = consumer->getName();
    graph.erase(consumer);
    erased.insert(consumer);
    fusion->setName(name);
    for (unsigned r = 0; r < fusion->numResults(); ++r)
      fusion->result(r)->setName(fusion->region(0).outputs[r].name);
    dissolving.clear(); // Readers changed.
    // The sources the body copied go once nothing else reads them.
    plan.taken.insert(cloned.begin(), cloned.end());
    eraseUnread(graph, plan.taken, erased);
  }
  return true;
}

std::unique_ptr<Pass> cgc::createFuseViewsPass() {
  return std::make_unique<FuseViewsPass>();
}
