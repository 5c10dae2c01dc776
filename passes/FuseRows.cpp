//===- FuseRows.cpp - Fold elementwise ops into the row ops around them ----===//
//
// Algorithm: for each row op that runs as one row kernel reading its input
// once (rowReadOnce: a sum, mean, max or min over trailing dims that does
// not split, softmax or log_softmax over the innermost axis and layernorm,
// the last three with rows that fit registers), in node order, regions of
// `if` and `while` first:
//   - the prologue is the set of elementwise ops and dropouts, of the
//     shape of the row op's first operand, that this operand depends on
//     through such ops alone; a candidate whose value is read before the
//     row op by a node outside the set (or by the row op as another
//     operand) or by a node of an earlier group leaves it, until no such
//     candidate is left. A member whose
//     value is read after the row op or returned becomes a result too (a
//     multi-output fusion), written once where the kernel reads it.
//   - the epilogue takes, in node order after the row op, each
//     elementwise op and dropout of the row op's result shape that reads
//     the row op's result or an epilogue value, and otherwise only values
//     defined before the row op and outside the prologue, and splat
//     constants (cloned into the body, wherever they are defined).
// The group becomes one `row_fusion` node (FusionBuilder.h) when it has a
// prologue or an epilogue.
// The rule on recomputing: none. Each prologue op runs once per element
// because the kernel reads each input element once (that is why rows read
// more than once, and split or column reductions, take no prologue), and
// each epilogue op once per result element.
// Requires: a verified graph; fuse-epilogue has run (a layernorm it folds
// into a product is not a row op here any more). Ops already in a fusion
// are not taken: run before fuse-elementwise.
// Guarantees: the graph computes the same values; every row_fusion body is
// what the row_fusion type rule admits; no value is computed twice; the
// graph stays acyclic: a group reads only values defined before its row
// op, every outside reader of its values comes after the row op, and no
// value an earlier group reads joins a later one, so a path from one
// group to another goes forward in row-op order.
//
//===----------------------------------------------------------------------===//
#include "passes/FusionBuilder.h"
#include "passes/Pass.h"
#include "passes/ReductionRule.h"

#include "ir/TypeRules.h"

#include "llvm/ADT/SmallPtrSet.h"

using namespace cgc;

namespace {

bool isStaticValue(const Value *v) { return v->getType().isStatic(); }

/// An op a prologue or epilogue may hold.
bool isPointwiseOp(const Node &n) {
  if (!n.info().has(Elementwise) && n.getOp() != OpKind::Dropout)
    return false;
  return isStaticValue(n.result()) &&
         llvm::all_of(n.getOperands(), isStaticValue);
}

class FuseRowsPass : public Pass {
public:
  llvm::StringRef name() const override { return "fuse-rows"; }
  llvm::StringRef summary() const override {
    return "fold elementwise ops and dropouts into the row op they feed "
           "(prologue) or read (epilogue)";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    nextId = 0;
    return fuseNested(graph, ctx);
  }

private:
  bool fuseNested(Graph &graph, PassContext &ctx);
  bool fuseGraph(Graph &graph, PassContext &ctx);
  NodeSet prologueOf(Graph &graph, Node &root) const;
  void addEpilogue(Graph &graph, Node &root, NodeSet &group) const;

  llvm::DenseMap<Node *, unsigned> position;
  llvm::DenseSet<Node *> taken;
  unsigned nextId = 0;
};

} // namespace

bool FuseRowsPass::fuseNested(Graph &graph, PassContext &ctx) {
  for (const auto &node : graph.nodes())
    if (node->info().has(ControlFlow))
      for (unsigned r = 0; r < node->numRegions(); ++r)
        if (!fuseNested(node->region(r), ctx))
          return false;
  return fuseGraph(graph, ctx);
}

NodeSet FuseRowsPass::prologueOf(Graph &graph, Node &root) const {
  const auto &wanted = root.operand(0)->getType().dims;
  unsigned at = position.lookup(&root);
  // Candidates: pointwise ancestors of the first operand, through such ops.
  llvm::SetVector<Node *> set;
  llvm::SmallVector<Value *, 8> work{root.operand(0)};
  while (!work.empty()) {
    Node *def = work.pop_back_val()->getDef();
    if (!def || def->getParent() != &graph || taken.count(def) ||
        !isPointwiseOp(*def) || def->result()->getType().dims != wanted ||
        !set.insert(def))
      continue;
    for (Value *v : def->getOperands())
      work.push_back(v);
  }
  // Drop members read early from outside, until none is.
  bool changed = true;
  while (changed) {
    changed = false;
    for (Node *m : llvm::make_early_inc_range(set)) {
      bool early = llvm::any_of(m->result()->uses(), [&](const Use &u) {
        if (u.user == &root)
          return u.operandIndex != 0;
        return !set.count(u.user) &&
               (position.lookup(u.user) < at || taken.count(u.user));
      });
      if (early) {
        set.remove(m);
        changed = true;
      }
    }
  }
  return set;
}

void FuseRowsPass::addEpilogue(Graph &graph, Node &root, NodeSet &group) const {
  const auto &wanted = root.result()->getType().dims;
  unsigned at = position.lookup(&root);
  llvm::SmallPtrSet<const Value *, 8> inside;
  inside.insert(root.result());
  for (unsigned i = at + 1; i < graph.nodes().size(); ++i) {
    Node *n = graph.nodes()[i].get();
    if (taken.count(n) || !isPointwiseOp(*n) ||
        n->result()->getType().dims != wanted)
      continue;
    bool readsGroup = false, legal = true;
    for (Value *v : n->getOperands()) {
      if (inside.count(v)) {
        readsGroup = true;
        continue;
      }
      Node *def = v->getDef();
      legal &= !def || isSplatSource(*def) ||
               (def->getParent() == &graph && position.lookup(def) < at &&
                !group.count(def));
    }
    if (readsGroup && legal) {
      group.insert(n);
      inside.insert(n->result());
    }
  }
}

bool FuseRowsPass::fuseGraph(Graph &graph, PassContext &ctx) {
  position.clear();
  taken.clear();
  for (unsigned i = 0; i < graph.nodes().size(); ++i)
    position[graph.nodes()[i].get()] = i;
  std::vector<NodeSet> groups;
  for (const auto &owned : graph.nodes()) {
    Node &root = *owned;
    if (taken.count(&root) || !rowReadOnce(root))
      continue;
    // The row op's other operands stay body inputs (a cloned splat would not).
    bool splatOperand = false;
    for (unsigned i = 1; i < root.numOperands(); ++i)
      if (Node *def = root.operand(i)->getDef())
        splatOperand |= isSplatSource(*def);
    if (splatOperand)
      continue;
    NodeSet group = prologueOf(graph, root);
    group.insert(&root);
    addEpilogue(graph, root, group);
    if (group.size() < 2)
      continue;
    for (Node *m : group)
      taken.insert(m);
    std::vector<Node *> ordered(group.begin(), group.end());
    llvm::sort(ordered, [&](Node *a, Node *b) {
      return position.lookup(a) < position.lookup(b);
    });
    groups.push_back(NodeSet(ordered.begin(), ordered.end()));
  }
  GraphBuilder builder(graph, ctx.diag);
  std::vector<Node *> dead;
  llvm::DenseSet<Node *> erasedSources;
  llvm::DenseMap<Node *, unsigned> key;
  for (const NodeSet &g : groups) {
    Node *root = *llvm::find_if(g, [](Node *n) { return rowReadOnce(*n); });
    Node *fusion = buildFusionNode(
        graph, g, OpKind::RowFusion,
        root->getName() + ".rows" + std::to_string(nextId++), builder, dead,
        erasedSources);
    if (!fusion)
      return false;
    key[fusion] = position.lookup(root);
  }
  graph.erase(dead);
  for (const auto &owned : graph.nodes())
    if (!key.count(owned.get()))
      key[owned.get()] = position.lookup(owned.get());
  sortStably(graph, key);
  return true;
}

std::unique_ptr<Pass> cgc::createFuseRowsPass() {
  return std::make_unique<FuseRowsPass>();
}
