//===- FuseRows.cpp - Fold elementwise ops into the row ops around them ----===//
//
// Algorithm: for each row op that runs as one row kernel reading its input
// once (readsRowsOnce, target/Scheduler.h: a sum, mean, max, min or prod over trailing dims that does
// not split, softmax or log_softmax over the innermost axis and layernorm,
// the last three with rows that fit registers), in node order, regions of
// `if` and `while` first:
//   - the prologue: the elementwise ops and dropouts of the shape of the
//     row op's first operand that this operand depends on through such
//     ops (not through a dropout's rng state), nearest first, at most
//     kMaxFusedOps. A candidate leaves the set, until none does, when a
//     node outside the set reads it before the row op (or the row op reads
//     it as another operand, or an earlier group reads it), when it reads
//     an operand or writes a result the row kernel cannot access with the
//     row's vector width (VectorRule.h), or when it is a dropout whose rng
//     state the set computes. A member whose value is read after the row
//     op, or returned, becomes a result too (a multi-output fusion),
//     written once where the kernel reads it, unless the row op is one row
//     (a whole-tensor reduction: one block): then a member that another
//     node reads leaves the set, so that the work that node waits for runs
//     as an elementwise kernel over the whole GPU rather than behind one
//     block (measured: a training step's backward waited on its loss).
//   - the epilogue: the users of the row op's result and of epilogue
//     values, in node order: each elementwise op or dropout of the row
//     op's result shape whose other operands are defined before the row op
//     outside the prologue (or are splat constants, cloned into the body)
//     and accessible with the epilogue's width (the row's vector for
//     softmax and layernorm, 1 for reductions), up to kMaxFusedOps in all.
//   - siblings (unless the row op is one row): each later reduction within
//     kMaxSiblingSpan nodes that reduces like it (isSiblingReduction,
//     ir/RowFusion.h) joins with its own prologue (found as above, the
//     group's members left to the group), when everything it and that
//     prologue read from outside is defined before the row op, and none
//     of it reads the row op's result: one kernel folds each reduction
//     over the same loads (batch norm's and layernorm's two gradient
//     sums). The body holds the prologues, the row op, the siblings and
//     the epilogue, in that order.
// A row op whose other operands (layernorm's weight and bias) are splat
// constants is left alone: they stay body inputs, never cloned sources.
// So is a group that reads no value from outside (a prologue over splat
// constants only): a row_fusion takes at least one operand.
// The group becomes one `row_fusion` node (FusionBuilder.h) when it has a
// prologue or an epilogue. Each row op's search is bounded by kMaxFusedOps
// members and their users, so the pass is linear in the nodes.
// The rule on recomputing: none. Each prologue op runs once per element
// because the kernel reads each input element once (that is why rows read
// more than once, and split or column reductions, take no prologue), and
// each epilogue op once per result element.
// Requires: a verified graph; fuse-epilogue has run (a layernorm it folds
// into a product is not a row op here any more). Ops already in a fusion
// are not taken: run before fuse-elementwise. A row op with a
// (hand-written) schedule record runs as recorded and takes no fusion.
// Guarantees: the graph computes the same values; every row_fusion body is
// what the row_fusion type rule admits and what codegen runs as one row
// kernel; no value is computed twice; the graph stays acyclic: a group
// reads only values defined before its row op, every outside reader of
// its values comes after the row op, and no value an earlier group reads
// joins a later one, so a path from one group to another goes forward in
// row-op order.
//
//===----------------------------------------------------------------------===//
#include "ir/RowFusion.h"
#include "passes/FusionBuilder.h"
#include "passes/Pass.h"
#include "target/Scheduler.h"
#include "target/VectorRule.h"

#include "llvm/ADT/SmallPtrSet.h"
#include <queue>

using namespace cgc;

namespace {

/// Positions after a row op searched for its sibling reductions.
constexpr unsigned kMaxSiblingSpan = 64;

/// What a row kernel's prologue or epilogue may access: its iteration
/// space and vector width.
struct Access {
  Extents iter;
  unsigned width;

  bool reads(const Value *v) const {
    return vectorAccess(v->getType().dtype, extentsOf(v->getType()), iter, width);
  }
  bool writes(const Value *v) const {
    return width == 1 || isWholeWord(dtypeSize(v->getType().dtype) * width);
  }
};

/// Whether operand \p i of \p n is a dropout's rng state.
bool isRngOperand(const Node &n, unsigned i) {
  return n.getOp() == OpKind::Dropout && i == 1;
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
    return forEachGraphInnermostFirst(
        graph, [&](Graph &g) { return fuseGraph(g, ctx); });
  }

private:
  bool fuseGraph(Graph &graph, PassContext &ctx);
  NodeSet prologueOf(Graph &graph, Node &root, const Access &access,
                     bool sideOutputs) const;
  bool legalPrologueMember(Node &m, Node &root, const NodeSet &set,
                           const Access &access, bool sideOutputs) const;
  void addEpilogue(Graph &graph, Node &root, const Access &access,
                   NodeSet &group) const;
  void addSiblings(Graph &graph, Node &root, const Access &access, NodeSet &group);
  bool placeableAt(unsigned at, const NodeSet &group, const NodeSet &joining) const;

  llvm::DenseMap<Node *, unsigned> position;
  llvm::DenseSet<Node *> taken;
  unsigned nextId = 0;
};

} // namespace

/// Whether a member of \p group reads a value that neither a member nor a
/// splat source (cloned into the body) computes: the row_fusion's operand.
static bool readsOutsideValue(const NodeSet &group) {
  for (Node *m : group)
    for (Value *v : m->getOperands()) {
      Node *def = v->getDef();
      if (!def || (!group.count(def) && !isSplatSource(*def)))
        return true;
    }
  return false;
}

bool FuseRowsPass::legalPrologueMember(Node &m, Node &root, const NodeSet &set,
                                       const Access &access,
                                       bool sideOutputs) const {
  unsigned at = position.lookup(&root);
  for (const Use &u : m.result()->uses()) {
    if (u.user == &root) {
      if (u.operandIndex != 0)
        return false;
      continue;
    }
    if (!set.count(u.user) && (!sideOutputs || position.lookup(u.user) < at ||
                               taken.count(u.user)))
      return false;
  }
  for (unsigned i = 0; i < m.numOperands(); ++i) {
    Value *v = m.operand(i);
    Node *def = v->getDef();
    if ((def && set.count(def)) || (def && isSplatSource(*def)) ||
        isRngOperand(m, i))
      continue;
    if (!access.reads(v))
      return false;
  }
  return access.writes(m.result()) && !readsRngFrom(m, set);
}

NodeSet FuseRowsPass::prologueOf(Graph &graph, Node &root,
                                 const Access &access, bool sideOutputs) const {
  const auto &wanted = root.operand(0)->getType().dims;
  // Candidates: per-element ancestors of the first operand, nearest first.
  NodeSet set;
  std::queue<Value *> work;
  work.push(root.operand(0));
  while (!work.empty() && set.size() < kMaxFusedOps) {
    Node *def = work.front()->getDef();
    work.pop();
    if (!def || def->getParent() != &graph || taken.count(def) ||
        !isFusiblePerElement(*def) || def->result()->getType().dims != wanted ||
        !set.insert(def))
      continue;
    for (unsigned i = 0; i < def->numOperands(); ++i)
      if (!isRngOperand(*def, i))
        work.push(def->operand(i));
  }
  // Drop illegal members until none is (at most kMaxFusedOps rounds).
  bool changed = true;
  while (changed) {
    changed = false;
    for (Node *m : llvm::make_early_inc_range(set))
      if (!legalPrologueMember(*m, root, set, access, sideOutputs)) {
        set.remove(m);
        changed = true;
      }
  }
  return set;
}

void FuseRowsPass::addEpilogue(Graph &graph, Node &root, const Access &access,
                               NodeSet &group) const {
  const auto &wanted = root.result()->getType().dims;
  unsigned at = position.lookup(&root);
  llvm::SmallPtrSet<const Value *, 8> inside;
  inside.insert(root.result());
  // Users of the group's values, in node order.
  using Item = std::pair<unsigned, Node *>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> next;
  llvm::SmallPtrSet<Node *, 16> queued;
  auto pushUsers = [&](Value *v) {
    for (const Use &u : v->uses())
      if (u.user->getParent() == &graph && queued.insert(u.user).second)
        next.push({position.lookup(u.user), u.user});
  };
  pushUsers(root.result());
  while (!next.empty() && group.size() < kMaxFusedOps) {
    Node *n = next.top().second;
    next.pop();
    if (taken.count(n) || !isFusiblePerElement(*n) ||
        n->result()->getType().dims != wanted || !access.writes(n->result()))
      continue;
    bool legal = true;
    for (unsigned i = 0; i < n->numOperands() && legal; ++i) {
      Value *v = n->operand(i);
      Node *def = v->getDef();
      if (inside.count(v)) {
        legal = !isRngOperand(*n, i);
        continue;
      }
      if (def && isSplatSource(*def) && !isRngOperand(*n, i))
        continue;
      legal = (!def || (def->getParent() == &graph &&
                        position.lookup(def) < at && !group.count(def))) &&
              (isRngOperand(*n, i) || access.reads(v));
    }
    if (!legal)
      continue;
    group.insert(n);
    inside.insert(n->result());
    pushUsers(n->result());
  }
}

/// Whether \p joining (a sibling and its prologue) may join \p group, a
/// row op at position \p at, its prologue and earlier siblings, at that
/// place: every value it reads from outside both is defined before \p at,
/// and of the group it reads prologue values only (the kernel computes
/// them per element; the row op's and siblings' results come at the end).
bool FuseRowsPass::placeableAt(unsigned at, const NodeSet &group,
                               const NodeSet &joining) const {
  for (Node *m : joining)
    for (Value *v : m->getOperands()) {
      Node *def = v->getDef();
      if (!def || isSplatSource(*def) || joining.count(def))
        continue;
      if (group.count(def) ? !isPerElement(*def) : position.lookup(def) >= at)
        return false;
    }
  return true;
}

void FuseRowsPass::addSiblings(Graph &graph, Node &root, const Access &access,
                               NodeSet &group) {
  unsigned at = position.lookup(&root);
  const auto &nodes = graph.nodes();
  for (unsigned p = at + 1; p < nodes.size() && p <= at + kMaxSiblingSpan; ++p) {
    Node &sibling = *nodes[p];
    // A sibling nothing reads (no result for the kernel to write) stays
    // for dce.
    if (taken.count(&sibling) || sibling.schedule() || !isSiblingReduction(root, sibling) ||
        !readsRowsOnce(sibling) ||
        (sibling.result()->uses().empty() && !graph.isOutput(sibling.result())))
      continue;
    // Its prologue, leaving the group's members to the group.
    for (Node *m : group)
      taken.insert(m);
    NodeSet joining = prologueOf(graph, sibling, access, /*sideOutputs=*/true);
    for (Node *m : group)
      taken.erase(m);
    joining.insert(&sibling);
    if (group.size() + joining.size() > kMaxFusedOps || !placeableAt(at, group, joining))
      continue;
    group.insert(joining.begin(), joining.end());
  }
}

bool FuseRowsPass::fuseGraph(Graph &graph, PassContext &ctx) {
  position.clear();
  taken.clear();
  for (unsigned i = 0; i < graph.nodes().size(); ++i)
    position[graph.nodes()[i].get()] = i;
  std::vector<std::pair<Node *, NodeSet>> groups;
  for (const auto &owned : graph.nodes()) {
    Node &root = *owned;
    // A row op with a schedule record (hand-written) runs as recorded.
    if (taken.count(&root) || root.schedule() || !readsRowsOnce(root))
      continue;
    bool splatOperand = false;
    for (unsigned i = 1; i < root.numOperands(); ++i)
      if (Node *def = root.operand(i)->getDef())
        splatOperand |= isSplatSource(*def);
    if (splatOperand)
      continue;
    unsigned width = rowVectorOf(root);
    bool oneRow = runsAsOneRow(root);
    Access rows{extentsOf(root.operand(0)->getType()), width};
    NodeSet group = prologueOf(graph, root, rows, !oneRow);
    group.insert(&root);
    if (!oneRow)
      addSiblings(graph, root, rows, group);
    NodeSet beforeEpilogue = group;
    addEpilogue(graph, root,
                {extentsOf(root.result()->getType()), reducedRun(root) ? 1 : width},
                group);
    if (group.size() < 2 || !readsOutsideValue(group))
      continue;
    for (Node *m : group)
      taken.insert(m);
    // The body's order: the prologues, the row op, its siblings, the
    // epilogue, each in node order.
    auto phase = [&](Node *m) {
      return m == &root ? 1 : !beforeEpilogue.count(m) ? 3 : isPerElement(*m) ? 0 : 2;
    };
    std::vector<Node *> ordered(group.begin(), group.end());
    llvm::sort(ordered, [&](Node *a, Node *b) {
      return std::make_pair(phase(a), position.lookup(a)) <
             std::make_pair(phase(b), position.lookup(b));
    });
    groups.push_back({&root, NodeSet(ordered.begin(), ordered.end())});
  }
  GraphBuilder builder(graph, ctx.diag);
  std::vector<Node *> dead;
  llvm::DenseSet<Node *> erasedSources;
  llvm::DenseMap<Node *, unsigned> key;
  for (const auto &[root, members] : groups) {
    Node *fusion = buildFusionNode(
        graph, members, OpKind::RowFusion,
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
