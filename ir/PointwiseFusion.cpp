//===- PointwiseFusion.cpp - What a fusion body may hold -------------------===//
#include "ir/PointwiseFusion.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace cgc;

bool cgc::isIndexMove(const Node &node) {
  OpKind op = node.getOp();
  bool moves = op == OpKind::Transpose || op == OpKind::Reshape ||
               op == OpKind::BroadcastTo || op == OpKind::Slice ||
               op == OpKind::Concat;
  if (!moves || !node.result()->getType().isStatic())
    return false;
  return llvm::all_of(node.getOperands(),
                      [](const Value *v) { return v->getType().isStatic(); });
}

bool cgc::movesElements(const Graph &body) {
  return llvm::any_of(body.nodes(), [](const auto &n) { return isIndexMove(*n); });
}

bool cgc::computesPerElement(const Node &node) {
  if (node.info().has(Elementwise) || node.getOp() == OpKind::Dropout)
    return true;
  return node.getOp() == OpKind::Fusion && !movesElements(node.region(0));
}

/// Whether body value \p v is read only at the coordinates it is stored
/// at: by elementwise ops of its shape whose values are so read, or as a
/// result.
static bool readAtItsElement(const Value *v) {
  return llvm::all_of(v->uses(), [&](const Use &u) {
    return u.user->info().has(Elementwise) &&
           u.user->result()->getType().dims == v->getType().dims &&
           readAtItsElement(u.user->result());
  });
}

bool cgc::readsOnlyInPlace(const Node &fusion, const Value *v) {
  const Graph &body = fusion.region(0);
  for (unsigned k = 0; k < fusion.numOperands(); ++k)
    if (fusion.operand(k) == v && !readAtItsElement(body.inputs()[k].value))
      return false;
  return true;
}

bool cgc::repeatsOneOperand(const Node &node) {
  return node.getOp() == OpKind::Concat &&
         llvm::all_of(node.getOperands(),
                      [&](const Value *v) { return v == node.operand(0); });
}

/// \p a + \p b, saturating far above any bound.
static uint64_t addCapped(uint64_t a, uint64_t b) {
  const uint64_t cap = uint64_t(1) << 48;
  return std::min(cap, a + b);
}

/// Propagates \p counts through \p body's nodes, readers first; returns
/// the evaluations of the body's values.
static uint64_t propagateThrough(const Graph &body, EvaluationCounts &counts) {
  uint64_t total = 0;
  for (const auto &n : llvm::reverse(body.nodes()))
    total = addCapped(total, propagateEvaluations(*n, counts));
  return total;
}

uint64_t cgc::propagateEvaluations(const Node &node, EvaluationCounts &counts) {
  uint64_t asked = 0;
  for (unsigned r = 0; r < node.numResults(); ++r)
    asked = addCapped(asked, counts.lookup(node.result(r)));
  if (!asked)
    return 0;
  if (node.getOp() != OpKind::Fusion) {
    bool ownCoordinates = node.getOp() == OpKind::Concat && !repeatsOneOperand(node);
    llvm::SmallVector<const Value *, 4> seen;
    for (const Value *v : node.getOperands()) {
      if (!ownCoordinates && llvm::is_contained(seen, v))
        continue; // Asked at the same coordinates: computed once.
      seen.push_back(v);
      counts[v] = addCapped(counts.lookup(v), asked);
    }
    return asked;
  }
  const Graph &body = node.region(0);
  for (unsigned r = 0; r < node.numResults(); ++r)
    counts[body.outputs[r].value] =
        addCapped(counts.lookup(body.outputs[r].value), counts.lookup(node.result(r)));
  uint64_t total = addCapped(asked, propagateThrough(body, counts));
  for (unsigned k = 0; k < node.numOperands(); ++k)
    counts[node.operand(k)] =
        addCapped(counts.lookup(node.operand(k)), counts.lookup(body.inputs()[k].value));
  return total;
}

uint64_t cgc::viewEvaluations(const Graph &body) {
  EvaluationCounts counts;
  for (const GraphOutput &out : body.outputs)
    counts[out.value] = addCapped(counts.lookup(out.value), 1);
  uint64_t total = propagateThrough(body, counts);
  for (const GraphInput &in : body.inputs())
    total = addCapped(total, counts.lookup(in.value));
  return total;
}
