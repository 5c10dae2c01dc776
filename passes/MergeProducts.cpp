//===- MergeProducts.cpp - One product for sibling linears ------------------===//
//
// Algorithm: the `linear` nodes of the top-level graph that read the same
// input x (attention's query, key and value projections; a gated MLP's
// gate and up projections) and whose weights, and biases if they have
// them, are state no replay changes and nothing else reads, are grouped
// by everything one product needs alike (the weights' dtype and input
// width, bias or none, the result dtype). A group of two or more becomes
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
// docs/passes.md). Groups whose concats plan-memory would not pack are
// left alone (a concat of weights would copy them on every replay).
// Runs only where the graph's state layout is its own (PlanLayout::
// packState: not in training, whose eval graph shares the train graph's
// state).
// Requires: a verified graph, before the fusion passes. Guarantees: the
// same values (each column of y is the dot product its member computed,
// with the same bias).
//
//===----------------------------------------------------------------------===//
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

/// Whether \p v is state the merged product may own: read-only, static,
/// read by one node.
bool ownedState(const Value *v, const llvm::DenseSet<const Value *> &readOnly) {
  return readOnly.count(v) && v->getType().isStatic() && v->uses().size() == 1;
}

/// The key of a linear the pass may merge, or nothing.
llvm::Optional<GroupKey> keyOf(const Node &n,
                               const llvm::DenseSet<const Value *> &readOnly) {
  if (n.getOp() != OpKind::Linear)
    return llvm::None;
  const Value *w = n.operand(1);
  bool bias = n.numOperands() == 3;
  if (!ownedState(w, readOnly) || w->getType().rank() != 2 ||
      (bias && (!ownedState(n.operand(2), readOnly) ||
                n.operand(2)->getType().rank() != 1)))
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

/// Whether plan-memory will pack the concats of \p members' weights and
/// biases (else each replay would copy them).
bool packable(const Graph &graph, llvm::ArrayRef<Node *> members,
              const llvm::DenseSet<const Value *> &readOnly) {
  return mayPackState(graph, operandsOf(members, 1), readOnly) &&
         mayPackState(graph, operandsOf(members, 2), readOnly);
}

/// Replaces \p members by one linear over their concatenated weights and
/// slices of its result. False when a type rule refused a node (reported).
bool merge(Graph &graph, llvm::ArrayRef<Node *> members, DiagnosticEngine &diag) {
  GraphBuilder b(graph, diag);
  ValueBuilder vb(b);
  Node &first = *members.front();
  vb.setInsertionPoint(first);
  vb.setOrigin(first);
  vb.setBase(first.getName() + ".merged");
  Value *w = vb.op(OpKind::Concat, operandsOf(members, 1), {{"axis", int64_t(0)}}, "weight");
  std::vector<Value *> operands{first.operand(0), w};
  if (first.numOperands() == 3)
    operands.push_back(
        vb.op(OpKind::Concat, operandsOf(members, 2), {{"axis", int64_t(0)}}, "bias"));
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
    graph.replaceAllUsesWith(m->result(), part);
  }
  graph.erase(members);
  return !vb.hasFailed();
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
    // Groups in the order of their first member (the map only indexes).
    std::map<GroupKey, unsigned> index;
    std::vector<std::vector<Node *>> groups;
    for (const auto &n : graph.nodes())
      if (llvm::Optional<GroupKey> key = keyOf(*n, readOnly)) {
        auto [it, fresh] = index.try_emplace(*key, groups.size());
        if (fresh)
          groups.emplace_back();
        groups[it->second].push_back(n.get());
      }
    for (const std::vector<Node *> &members : groups)
      if (members.size() > 1 && packable(graph, members, readOnly) &&
          !merge(graph, members, ctx.diag))
        return false;
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> cgc::createMergeProductsPass() {
  return std::make_unique<MergeProductsPass>();
}
