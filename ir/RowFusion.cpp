//===- RowFusion.cpp - The parts of a row_fusion body ----------------------===//
#include "ir/RowFusion.h"
#include "ir/TypeRules.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace cgc;

bool cgc::isInnermostSoftmax(const Node &node) {
  OpKind op = node.getOp();
  if (op != OpKind::Softmax && op != OpKind::LogSoftmax)
    return false;
  unsigned rank = node.operand(0)->getType().rank();
  return normalizeAxis(node.intAttr("axis", -1), rank) == rank - 1;
}

bool cgc::isRowOp(const Node &node) {
  OpKind op = node.getOp();
  return isInnermostSoftmax(node) || op == OpKind::Sum || op == OpKind::Mean ||
         op == OpKind::Max || op == OpKind::Min || op == OpKind::Prod ||
         isRowNorm(node);
}

bool cgc::isRowNorm(const Node &node) {
  OpKind op = node.getOp();
  return op == OpKind::LayerNorm || op == OpKind::RmsNorm;
}

bool cgc::isPerElement(const Node &node) {
  return node.info().has(Elementwise) || node.getOp() == OpKind::Dropout;
}

static bool isReduction(OpKind op) {
  return op == OpKind::Sum || op == OpKind::Mean || op == OpKind::Max || op == OpKind::Min ||
         op == OpKind::Prod;
}

bool cgc::isSiblingReduction(const Node &root, const Node &sibling) {
  return isReduction(root.getOp()) && isReduction(sibling.getOp()) &&
         isFloat(root.operand(0)->getType().dtype) &&
         root.operand(0)->getType() == sibling.operand(0)->getType() &&
         root.result()->getType().dims == sibling.result()->getType().dims &&
         reducedAxes(root, root.operand(0)->getType().rank()) ==
             reducedAxes(sibling, sibling.operand(0)->getType().rank());
}

RowFusionParts cgc::rowFusionParts(const Graph &body) {
  RowFusionParts parts;
  llvm::SmallPtrSet<const Value *, 16> late;
  for (const auto &owned : body.nodes()) {
    const Node *n = owned.get();
    if (n->info().has(Source)) {
      parts.sources.push_back(n);
      continue;
    }
    if (!isPerElement(*n)) {
      if (!parts.root)
        parts.root = n;
      else if (parts.epilogue.empty() && parts.others.empty() &&
               isSiblingReduction(*parts.root, *n))
        parts.siblings.push_back(n);
      else
        parts.others.push_back(n);
      continue;
    }
    bool readsLate = parts.root && llvm::any_of(n->getOperands(), [&](const Value *v) {
      return v == parts.root->result() || late.count(v);
    });
    if (readsLate) {
      parts.epilogue.push_back(n);
      late.insert(n->result());
    } else {
      parts.prologue.push_back(n);
    }
  }
  return parts;
}
