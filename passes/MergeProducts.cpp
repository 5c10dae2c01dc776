//===- MergeProducts.cpp - One product for sibling linears ------------------===//
//
// Algorithm: `linear` nodes that read the same input x (attention's query,
// key and value projections; a gated MLP's gate and up projections) and
// whose weights, and biases if they have them, are state no replay
// changes, are grouped by everything one product needs alike (the
// weights' dtype and input width, bias or none, the result dtype). A
// group of two or more becomes
//   w = concat(w1, ..., wn, axis 0)      [N1 + ... + Nn, K]
//   b = concat(b1, ..., bn, axis 0)      (when they have biases)
//   y = linear(x, w, b)
//   yi = slice(y, last axis, N1 + ... + N(i-1), N1 + ... + Ni)
// at the first member's place, each yi replacing the i-th member's
// result. plan-memory lays each concat's operands side by side
// (packsState), so the concats cost nothing at run time, and one product
// of n times the width replaces n products: at batch 1 a product is
// short of blocks to fill the GPU and launch-bound, so the merged one
// costs little more than one of its members (measurements in
// docs/passes.md).
// Two kinds of group, in this order:
// 1. In the body of a top-level `while` (a generation loop's decoding
//    step), linears whose weights are carried values the body passes
//    through unchanged and reads nowhere else, and whose initial values
//    are such state: the concats go at the start of the graph, their
//    result becomes one new carried value, and the members' carried
//    weights, now dead, are removed (passes/CarriedValues.h).
// 2. In the top-level graph, linears whose weights the graph reads
//    nowhere else but in concats; when a group's weights are already the
//    operands of one such concat (the loop's, for the prefill's
//    projections) the group reads it, else a group whose weights another
//    concat reads is left alone.
// Groups whose concats plan-memory would not pack are left alone (a
// concat of weights would copy them on every replay). Runs only where
// the graph's state layout is its own (PlanLayout::packState: not in
// training, whose eval graph shares the train graph's state).
// Requires: a verified graph, before the fusion passes. Guarantees: the
// same values (each column of y is the dot product its member computed,
// with the same bias).
//
//===----------------------------------------------------------------------===//
#include "passes/CarriedValues.h"
#include "passes/MemoryPlan.h"
#include "passes/Pass.h"
#include "passes/ValueBuilder.h"

#include "llvm/ADT/STLExtras.h"
#include <map>
#include <tuple>

using namespace cgc;

namespace {

/// What the members of one merged product have alike: the input, the
/// weights' dtype and width, bias or none, the biases' and the result's
/// dtypes.
using GroupKey = std::tuple<const Value *, DType, int64_t, bool, DType, DType>;

/// Groups of linears in the order of their first member.
class Groups {
public:
  void add(const GroupKey &key, Node *n) {
    auto [it, fresh] = index.try_emplace(key, groups.size());
    if (fresh)
      groups.emplace_back();
    groups[it->second].push_back(n);
  }
  const std::vector<std::vector<Node *>> &all() const { return groups; }

private:
  std::map<GroupKey, unsigned> index; // Only indexes.
  std::vector<std::vector<Node *>> groups;
};

/// The key of \p n (a linear) when \p merged(v) holds for its weight and
/// bias (rank 2 and 1), or nothing.
llvm::Optional<GroupKey> keyOf(const Node &n,
                               llvm::function_ref<bool(const Value *)> merged) {
  if (n.getOp() != OpKind::Linear)
    return llvm::None;
  const Value *w = n.operand(1);
  bool bias = n.numOperands() == 3;
  if (!merged(w) || w->getType().rank() != 2 ||
      (bias && (!merged(n.operand(2)) || n.operand(2)->getType().rank() != 1)))
    return llvm::None;
  return GroupKey{n.operand(0), w->getType().dtype, w->getType().dims[1].extent(),
                  bias, bias ? n.operand(2)->getType().dtype : DType::F32,
                  n.result()->getType().dtype};
}

/// Operand \p i of each of \p members that has one (a group's members
/// all have biases or none).
std::vector<Value *> operandsOf(llvm::ArrayRef<Node *> members, unsigned i) {
  std::vector<Value *> out;
  for (Node *m : members)
    if (i < m->numOperands())
      out.push_back(m->operand(i));
  return out;
}

bool isConcat(const Use &u) { return u.user->getOp() == OpKind::Concat; }

/// The concat (axis 0) of exactly \p values, in their order, placed
/// before \p user, or null.
Value *concatOf(llvm::ArrayRef<Value *> values, const Node &user) {
  if (values.empty())
    return nullptr;
  const Graph &graph = *user.getParent();
  for (const Use &u : values.front()->uses())
    if (isConcat(u) && u.user->intAttr("axis", -1) == 0 &&
        u.user->getOperands() == values && u.user->getParent() == &graph &&
        graph.indexOf(u.user) < graph.indexOf(&user))
      return u.user->result();
  return nullptr;
}

/// The concat of \p values for \p user, made at \p b's insertion point
/// unless one exists.
Value *concat(ValueBuilder &b, const Node &user, std::vector<Value *> values,
              llvm::StringRef suffix) {
  if (Value *existing = concatOf(values, user))
    return existing;
  return b.op(OpKind::Concat, std::move(values), {{"axis", int64_t(0)}}, suffix);
}

/// Whether plan-memory will pack the concat of \p values that \p user
/// (the group's first member) reads: none exists yet and no concat reads
/// them, or exactly this one exists before it.
bool packable(const Graph &graph, llvm::ArrayRef<Value *> values, const Node &user,
              const llvm::DenseSet<const Value *> &readOnly) {
  if (values.empty())
    return true;
  bool readByConcat = llvm::any_of(values, [](const Value *v) {
    return llvm::any_of(v->uses(), isConcat);
  });
  return (!readByConcat || concatOf(values, user)) && mayPackState(graph, values, readOnly);
}

/// Replaces \p members (nodes of \p region) by one linear over \p w and
/// \p bias (null: none) and slices of its result. False when a type rule
/// refused a node (reported).
bool mergeInto(Graph &region, llvm::ArrayRef<Node *> members, Value *w, Value *bias,
               DiagnosticEngine &diag) {
  GraphBuilder b(region, diag);
  ValueBuilder vb(b);
  Node &first = *members.front();
  vb.setInsertionPoint(first);
  vb.setOrigin(first);
  vb.setBase(first.getName() + ".merged");
  std::vector<Value *> operands{first.operand(0), w};
  if (bias)
    operands.push_back(bias);
  Value *y = vb.op(OpKind::Linear, operands);
  unsigned axis = first.result()->getType().rank() - 1;
  int64_t offset = 0;
  for (Node *m : members) {
    int64_t width = m->operand(1)->getType().dims[0].extent();
    vb.setBase(m->getName());
    Value *part = vb.slice(y, axis, offset, offset + width, "part");
    offset += width;
    if (!part)
      return false;
    region.replaceAllUsesWith(m->result(), part);
  }
  region.erase(members);
  return !vb.hasFailed();
}

/// Merges a top-level group: its weights' (and biases') concats, new or
/// the loop's, then one product.
bool mergeGroup(Graph &graph, llvm::ArrayRef<Node *> members, DiagnosticEngine &diag) {
  GraphBuilder b(graph, diag);
  ValueBuilder vb(b);
  vb.setInsertionPoint(*members.front());
  vb.setOrigin(*members.front());
  vb.setBase(members.front()->getName() + ".merged");
  const Node &first = *members.front();
  Value *w = concat(vb, first, operandsOf(members, 1), "weight");
  Value *bias = first.numOperands() == 3 ? concat(vb, first, operandsOf(members, 2), "bias")
                                         : nullptr;
  return w && !vb.hasFailed() && mergeInto(graph, members, w, bias, diag);
}

/// A `while` of the top-level graph and the state its body's linears may
/// merge.
class LoopGroups {
public:
  /// \p start: the node the concats go before (the graph's first).
  LoopGroups(Node &loop, Node &start, const llvm::DenseSet<const Value *> &readOnly)
      : loop(loop), start(start), readOnly(readOnly) {}

  /// Whether body value \p v is a carried weight a merged product may
  /// take over: passed through, read once in the body and nowhere in
  /// `cond`, its result unused, its initial value state that no other
  /// region node or concat reads.
  bool mergeable(const Value *v) const {
    const Graph &body = loop.region(1);
    if (!passesThrough(body, v) || v->uses().size() != 1)
      return false;
    unsigned k = v->getResultIndex();
    const Value *init = loop.operand(k);
    return unread(loop.region(0), k) && !loop.result(k)->hasUses() &&
           !loop.getParent()->isOutput(loop.result(k)) && readOnly.count(init) &&
           init->getType().isStatic() && llvm::count(loop.getOperands(), init) == 1 &&
           llvm::all_of(init->uses(), [&](const Use &u) {
             return u.user == &loop || readsPackedInPlace(u);
           });
  }

  /// The initial values of body values \p values.
  std::vector<Value *> initial(llvm::ArrayRef<Value *> values) const {
    std::vector<Value *> out;
    for (Value *v : values)
      out.push_back(loop.operand(v->getResultIndex()));
    return out;
  }

  bool merge(llvm::ArrayRef<Node *> members, DiagnosticEngine &diag);

private:
  Node &loop, &start;
  const llvm::DenseSet<const Value *> &readOnly;
};

/// Concatenates the members' initial weights (and biases) at the start
/// of the graph, carries each concat into the loop, merges the members
/// over it and drops their carried weights.
bool LoopGroups::merge(llvm::ArrayRef<Node *> members, DiagnosticEngine &diag) {
  Graph &graph = *loop.getParent();
  std::vector<Value *> carried = operandsOf(members, 1), biases = operandsOf(members, 2);
  carried.insert(carried.end(), biases.begin(), biases.end());
  GraphBuilder b(graph, diag);
  ValueBuilder vb(b);
  vb.setInsertionPoint(start);
  vb.setOrigin(loop);
  vb.setBase(members.front()->getName() + ".merged");
  Value *w = vb.op(OpKind::Concat, initial(operandsOf(members, 1)), {{"axis", int64_t(0)}},
                   "weight");
  Value *bias = biases.empty() ? nullptr
                               : vb.op(OpKind::Concat, initial(biases),
                                       {{"axis", int64_t(0)}}, "bias");
  if (!w || vb.hasFailed())
    return false;
  Value *bodyW = addPassThroughCarried(loop, w, w->getName());
  Value *bodyBias = bias ? addPassThroughCarried(loop, bias, bias->getName()) : nullptr;
  if (!mergeInto(loop.region(1), members, bodyW, bodyBias, diag))
    return false;
  for (Value *v : carried)
    eraseCarried(loop, v->getResultIndex());
  return true;
}

/// Merges the groups of each top-level loop's body.
bool mergeInLoops(Graph &graph, const llvm::DenseSet<const Value *> &readOnly,
                  DiagnosticEngine &diag) {
  std::vector<Node *> loops;
  for (const auto &n : graph.nodes())
    if (n->getOp() == OpKind::While)
      loops.push_back(n.get());
  Node *start = graph.nodes().empty() ? nullptr : graph.nodes().front().get();
  for (Node *loop : loops) {
    LoopGroups state(*loop, *start, readOnly);
    Groups groups;
    for (const auto &n : loop->region(1).nodes())
      if (llvm::Optional<GroupKey> key =
              keyOf(*n, [&](const Value *v) { return state.mergeable(v); }))
        groups.add(*key, n.get());
    for (const std::vector<Node *> &members : groups.all())
      if (members.size() > 1 &&
          packable(graph, state.initial(operandsOf(members, 1)), *loop, readOnly) &&
          packable(graph, state.initial(operandsOf(members, 2)), *loop, readOnly) &&
          !state.merge(members, diag))
        return false;
  }
  return true;
}

/// Merges the groups of the top-level graph.
bool mergeTopLevel(Graph &graph, const llvm::DenseSet<const Value *> &readOnly,
                   DiagnosticEngine &diag) {
  // State read by this linear and otherwise only by concats.
  auto merged = [&](const Value *v) {
    return readOnly.count(v) && v->getType().isStatic() &&
           llvm::count_if(v->uses(), [](const Use &u) { return !isConcat(u); }) == 1;
  };
  Groups groups;
  for (const auto &n : graph.nodes())
    if (llvm::Optional<GroupKey> key = keyOf(*n, merged))
      groups.add(*key, n.get());
  for (const std::vector<Node *> &members : groups.all())
    if (members.size() > 1 &&
        packable(graph, operandsOf(members, 1), *members.front(), readOnly) &&
        packable(graph, operandsOf(members, 2), *members.front(), readOnly) &&
        !mergeGroup(graph, members, diag))
      return false;
  return true;
}

class MergeProductsPass : public Pass {
public:
  llvm::StringRef name() const override { return "merge-products"; }
  llvm::StringRef summary() const override {
    return "one product for sibling linears that read the same input";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    if (!ctx.layout.packState)
      return true;
    llvm::DenseSet<const Value *> readOnly = readOnlyState(graph);
    return mergeInLoops(graph, readOnly, ctx.diag) &&
           mergeTopLevel(graph, readOnly, ctx.diag);
  }
};

} // namespace

std::unique_ptr<Pass> cgc::createMergeProductsPass() {
  return std::make_unique<MergeProductsPass>();
}
