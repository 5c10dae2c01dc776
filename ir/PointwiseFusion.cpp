//===- PointwiseFusion.cpp - What a fusion body may hold -------------------===//
#include "ir/PointwiseFusion.h"

#include "llvm/ADT/STLExtras.h"

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
