//===- FuseElementwise.cpp - Group elementwise ops into fusion nodes ---------===//
//
// Algorithm: the regions of `if` and `while` (graphs of their own at run
// time) are fused first, innermost first, then the graph itself; within a
// graph, walk the nodes in order. An elementwise node (family
// Elementwise in Ops.def) or dropout starts a group or joins the groups of
// its per-element producers: all of them when merging keeps the contracted
// graph acyclic (no node outside the merged set is both reachable from it
// and feeding it), every member has the same result shape, no dropout
// reads its rng state from a member (a kernel reads it from memory), the
// merged group holds at most kMaxFusedOps ops (the bound on one kernel's
// size, and so on NVRTC's time for it) and spans at most kMaxFusedSpan
// positions of the node order (the bound on the acyclicity check). Each
// check costs at most the span, so the pass is linear in the nodes. Two
// groups can still feed each other once both are contracted (a check
// sees the other groups uncontracted): a final pass over the contracted
// graph (Kahn's algorithm) leaves out a group on a cycle until none is
// left; it is linear per group dropped, and drops none in the usual case.
// A group of small ops that broadcast to the joining node's shape (rank 0:
// a count cast to float, a scale; or at most kMaxRecomputedElements
// elements: a batch norm's per-channel factors; no dropout) whose values
// only the joining node reads also joins it: the kernel recomputes them per
// element, which costs less than a kernel of its own.
// Operands from outside the group may broadcast. Splat constants and
// fills read by a member are cloned into the body as scalar sources, and
// iotas as sources computed from the element's coordinates (a group of
// one op reading an iota fuses with it); the originals go away when
// nothing else reads them. Each group with two or
// more ops becomes one `fusion` node (FusionBuilder.h) whose body holds
// copies of the original ops (same names, attributes and locations);
// results used outside the group or returned become fusion results; a
// group with no such value is dead and left as it is (for dce). The
// replaced members are erased together, and each graph's order is then
// rebuilt by a stable topological sort.
// Requires: a verified graph with static shapes on the fused values, whose
// existing fusion nodes (written by hand or by an earlier run) hold only
// elementwise ops, dropouts and sources; anything else is refused with an
// error at the offending body node.
// Guarantees: the graph computes the same values; fusion bodies hold only
// elementwise ops, dropouts of the fusion's shape (their rng states body
// inputs) and scalar sources; no fusion is nested; a reduction, library
// call or data movement never lands inside a fusion.
//
//===----------------------------------------------------------------------===//
#include "passes/FusionBuilder.h"
#include "passes/Pass.h"

#include "ir/Builder.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <queue>

using namespace cgc;

namespace {

/// Positions of the node order one fusion may span.
constexpr unsigned kMaxFusedSpan = 1024;
/// The most elements of a group that a larger node recomputes per element
/// (joinsRecomputed): a per-channel value of 4096 channels.
constexpr int64_t kMaxRecomputedElements = 4096;

/// Whether \p small broadcasts to \p large (NumPy's rule) and is smaller.
bool broadcastsTo(const TensorType &small, const TensorType &large) {
  auto joint = broadcastShapes(small.dims, large.dims);
  return joint && llvm::ArrayRef<Dim>(*joint) == llvm::ArrayRef<Dim>(large.dims) &&
         small.dims != large.dims;
}

class FuseElementwisePass : public Pass {
public:
  llvm::StringRef name() const override { return "fuse-elementwise"; }
  llvm::StringRef summary() const override {
    return "group chains and DAGs of elementwise ops into fusion nodes";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    nextId = 0;
    return forEachGraphInnermostFirst(
        graph, [&](Graph &g) { return fuseGraph(g, ctx); });
  }

private:
  bool fuseGraph(Graph &graph, PassContext &ctx);
  bool canMerge(Graph &graph, const NodeSet &merged) const;
  bool joinsRecomputed(const Graph &graph, const NodeSet &group,
                      const Node &user) const;
  static unsigned groupInCycle(const Graph &graph,
                               const std::vector<NodeSet> &fused);
  Node *buildFusion(Graph &graph, const NodeSet &members, unsigned id,
                    GraphBuilder &builder, std::vector<Node *> &dead);

  llvm::DenseMap<Node *, unsigned> groupOf;
  std::vector<NodeSet> groups;
  llvm::DenseMap<Node *, unsigned> position;
  llvm::DenseSet<Node *> erasedSources;
  unsigned nextId = 0; ///< Fusion names are unique across nesting.
};
} // namespace

/// Whether \p group is small ops that broadcast to \p user's larger shape
/// (kMaxRecomputedElements) and that only \p user (or the group) reads.
bool FuseElementwisePass::joinsRecomputed(const Graph &graph,
                                         const NodeSet &group,
                                         const Node &user) const {
  const TensorType &large = user.result()->getType();
  return llvm::all_of(group, [&](Node *m) {
    const TensorType &small = m->result()->getType();
    // A dropout draws per element of the fusion: never one of them.
    return broadcastsTo(small, large) && small.isStatic() &&
           small.numElements() <= kMaxRecomputedElements && m->getOp() != OpKind::Dropout &&
           !graph.isOutput(m->result()) &&
           llvm::all_of(m->result()->uses(), [&](const Use &u) {
             return u.user == &user || group.count(u.user);
           });
  });
}

/// The ops a group's kernel computes: its members and the iotas they read.
static size_t fusedOps(const NodeSet &group) {
  llvm::SmallPtrSet<Node *, 4> iotas;
  for (Node *m : group)
    for (Value *v : m->getOperands())
      if (Node *d = v->getDef(); d && isIotaSource(*d))
        iotas.insert(d);
  return group.size() + iotas.size();
}

bool FuseElementwisePass::canMerge(Graph &graph, const NodeSet &merged) const {
  // Nodes outside `merged` that depend on it; none may feed a member.
  unsigned first = ~0u, last = 0;
  for (Node *n : merged) {
    first = std::min(first, position.lookup(n));
    last = std::max(last, position.lookup(n));
  }
  if (merged.size() > kMaxFusedOps || last - first > kMaxFusedSpan)
    return false;
  if (llvm::any_of(merged, [&](Node *n) { return readsRngFrom(*n, merged); }))
    return false;
  llvm::DenseSet<Node *> tainted;
  for (unsigned i = first; i <= last; ++i) {
    Node *n = graph.nodes()[i].get();
    bool fromGroup = false;
    for (Value *v : n->getOperands())
      if (Node *d = v->getDef())
        fromGroup |= merged.count(d) || tainted.count(d);
    if (!fromGroup)
      continue;
    if (merged.count(n)) {
      for (Value *v : n->getOperands())
        if (v->getDef() && tainted.count(v->getDef()))
          return false;
      continue;
    }
    tainted.insert(n);
  }
  return true;
}

/// 1 + the index of a group of \p fused that is on a cycle of the graph
/// with every group contracted to one node; 0 when it is acyclic. Kahn's
/// algorithm over the contracted graph leaves the cycles and what they
/// feed; walking back through unfinished predecessors from any of them
/// must repeat a node, and the walk since that node is a cycle.
unsigned FuseElementwisePass::groupInCycle(const Graph &graph,
                                           const std::vector<NodeSet> &fused) {
  llvm::DenseMap<const Node *, unsigned> id; // Groups: 0..F-1, nodes after.
  for (unsigned g = 0; g < fused.size(); ++g)
    for (Node *m : fused[g])
      id[m] = g;
  unsigned next = fused.size();
  for (const auto &owned : graph.nodes())
    if (!id.count(owned.get()))
      id[owned.get()] = next++;
  std::vector<unsigned> pending(next, 0);
  std::vector<llvm::SmallVector<unsigned, 4>> users(next), feeders(next);
  llvm::DenseSet<std::pair<unsigned, unsigned>> edges;
  for (const auto &owned : graph.nodes()) {
    unsigned to = id.lookup(owned.get());
    for (Value *v : owned->getOperands()) {
      Node *d = v->getDef();
      if (!d || d->getParent() != &graph)
        continue;
      unsigned from = id.lookup(d);
      if (from != to && edges.insert({from, to}).second) {
        users[from].push_back(to);
        feeders[to].push_back(from);
        ++pending[to];
      }
    }
  }
  std::vector<unsigned> ready;
  for (unsigned i = 0; i < next; ++i)
    if (!pending[i])
      ready.push_back(i);
  while (!ready.empty()) {
    unsigned i = ready.back();
    ready.pop_back();
    for (unsigned u : users[i])
      if (!--pending[u])
        ready.push_back(u);
  }
  unsigned at = 0;
  while (at < next && !pending[at])
    ++at;
  if (at == next)
    return 0;
  std::vector<unsigned> walk, seenAt(next, ~0u);
  while (seenAt[at] == ~0u) {
    seenAt[at] = walk.size();
    walk.push_back(at);
    at = *llvm::find_if(feeders[at], [&](unsigned f) { return pending[f] != 0; });
  }
  for (unsigned k = seenAt[at]; k < walk.size(); ++k)
    if (walk[k] < fused.size())
      return walk[k] + 1;
  llvm_unreachable("a cycle of single nodes in a graph in order");
}

bool FuseElementwisePass::fuseGraph(Graph &graph, PassContext &ctx) {
  groupOf.clear();
  groups.clear();
  position.clear();
  erasedSources.clear();
  for (unsigned i = 0; i < graph.nodes().size(); ++i)
    position[graph.nodes()[i].get()] = i;
  for (const auto &owned : graph.nodes()) {
    Node *n = owned.get();
    if (!isFusiblePerElement(*n))
      continue;
    llvm::SmallVector<unsigned, 4> producers;
    for (Value *v : n->getOperands()) {
      auto it = v->getDef() ? groupOf.find(v->getDef()) : groupOf.end();
      if (it == groupOf.end() || llvm::is_contained(producers, it->second))
        continue;
      // The last member has the group's shape (scalars join before it).
      const NodeSet &group = groups[it->second];
      if (group.back()->result()->getType().dims == n->result()->getType().dims ||
          joinsRecomputed(graph, group, *n))
        producers.push_back(it->second);
    }
    // Join as many producer groups as stay legal, in operand order.
    NodeSet merged;
    merged.insert(n);
    llvm::SmallVector<unsigned, 4> joined;
    for (unsigned g : producers) {
      NodeSet trial = merged;
      trial.insert(groups[g].begin(), groups[g].end());
      if (canMerge(graph, trial)) {
        merged = std::move(trial);
        joined.push_back(g);
      }
    }
    unsigned target = joined.empty() ? groups.size() : joined[0];
    if (joined.empty())
      groups.emplace_back();
    for (unsigned k = 1; k < joined.size(); ++k)
      groups[joined[k]].clear();
    std::vector<Node *> members(merged.begin(), merged.end());
    llvm::sort(members, [&](Node *a, Node *b) {
      return position.lookup(a) < position.lookup(b);
    });
    NodeSet ordered(members.begin(), members.end());
    groups[target] = ordered;
    for (Node *m : ordered)
      groupOf[m] = target;
  }
  std::vector<NodeSet> fused;
  for (const NodeSet &g : groups)
    if (fusedOps(g) >= 2 && llvm::any_of(g, [&](Node *m) {
          return isExternal(graph, g, m->result());
        }))
      fused.push_back(g); // A dead group is left to dce.
  // Each group is acyclic with the rest as it stood when it grew, but two
  // groups can still feed each other once both are contracted.
  while (unsigned stuck = groupInCycle(graph, fused))
    fused.erase(fused.begin() + (stuck - 1));
  GraphBuilder builder(graph, ctx.diag);
  std::vector<Node *> dead;
  for (const NodeSet &g : fused)
    if (!buildFusion(graph, g, nextId++, builder, dead))
      return false;
  graph.erase(dead);
  sortStably(graph, position);
  return true;
}

Node *FuseElementwisePass::buildFusion(Graph &graph, const NodeSet &members,
                                       unsigned id, GraphBuilder &builder,
                                       std::vector<Node *> &dead) {
  Node *fusion = buildFusionNode(graph, members, OpKind::Fusion,
                                 "fused_" + std::to_string(id), builder, dead,
                                 erasedSources);
  if (fusion)
    position[fusion] = position.lookup(members.front());
  return fusion;
}

std::unique_ptr<Pass> cgc::createFuseElementwisePass() {
  return std::make_unique<FuseElementwisePass>();
}
