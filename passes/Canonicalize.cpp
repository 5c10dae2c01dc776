//===- Canonicalize.cpp - Local simplifications and constant folding --------===//
//
// Algorithm: walk the nodes in order and apply the first matching rule,
// repeating until nothing changes (at most 8 sweeps):
//   x * 1, 1 * x, x + 0, 0 + x, x - 0, x / 1   -> x
//   neg(neg(x)), cast(x) to x's dtype           -> x
//   transpose(transpose(x))                      -> transpose(x) composed,
//                                                   or x when the identity
//   reshape(reshape(x)), reshape to x's shape    -> one reshape, or x
//   an elementwise op on splat constants         -> a splat constant
// A rule only fires when the replacement has exactly the node's type, so
// broadcasting never changes a result shape. Dead nodes are left to dce.
// Requires: a verified graph. Guarantees: the same values at every output
// (checked by --check-equivalence), no identity ops of the forms above.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/OpAttrs.h"
#include "ir/TypeRules.h"

#include "llvm/ADT/Optional.h"
#include <cmath>

using namespace cgc;

static bool isSplat(const Value *v, double expected) {
  auto value = splatConstant(v);
  return value && *value == expected;
}

namespace {
class CanonicalizePass : public Pass {
public:
  llvm::StringRef name() const override { return "canonicalize"; }
  llvm::StringRef summary() const override {
    return "fold identities, double transposes and reshapes, and constants";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    for (unsigned sweep = 0; sweep < 8; ++sweep) {
      bool changed = false;
      if (!simplify(graph, ctx.diag, changed))
        return false;
      if (!changed)
        break;
    }
    return true;
  }

private:
  static bool simplify(Graph &graph, DiagnosticEngine &diag, bool &changed);
  static Value *identityOperand(Node &node);
  static Value *foldChain(Node &node, bool &changed);
  static Value *foldSplat(Graph &graph, Node &node);
};
} // namespace

Value *CanonicalizePass::identityOperand(Node &node) {
  auto sameType = [&](Value *v) {
    return v->getType() == node.result()->getType() ? v : nullptr;
  };
  switch (node.getOp()) {
  case OpKind::Mul:
    if (isSplat(node.operand(1), 1))
      return sameType(node.operand(0));
    if (isSplat(node.operand(0), 1))
      return sameType(node.operand(1));
    return nullptr;
  case OpKind::Add:
    if (isSplat(node.operand(1), 0))
      return sameType(node.operand(0));
    if (isSplat(node.operand(0), 0))
      return sameType(node.operand(1));
    return nullptr;
  case OpKind::Sub:
    return isSplat(node.operand(1), 0) ? sameType(node.operand(0)) : nullptr;
  case OpKind::Div:
    return isSplat(node.operand(1), 1) ? sameType(node.operand(0)) : nullptr;
  case OpKind::Cast:
  case OpKind::Reshape:
    return sameType(node.operand(0));
  case OpKind::Neg: {
    Node *inner = node.operand(0)->getDef();
    return inner && inner->getOp() == OpKind::Neg ? inner->operand(0) : nullptr;
  }
  default:
    return nullptr;
  }
}

/// transpose(transpose(x)) and reshape(reshape(x)) read x directly: the
/// node is rewritten in place (\p changed), or replaced by x when the
/// composed transpose is the identity.
Value *CanonicalizePass::foldChain(Node &node, bool &changed) {
  if (node.getOp() != OpKind::Transpose && node.getOp() != OpKind::Reshape)
    return nullptr;
  Node *inner = node.operand(0)->getDef();
  if (!inner || inner->getOp() != node.getOp())
    return nullptr;
  if (node.getOp() == OpKind::Reshape) {
    node.setOperand(0, inner->operand(0));
    changed = true;
    return nullptr;
  }
  unsigned rank = node.result()->getType().rank();
  std::vector<int64_t> outer = transposePerm(node, rank);
  std::vector<int64_t> first = transposePerm(*inner, rank);
  std::vector<int64_t> composed(rank);
  bool identity = true;
  for (unsigned i = 0; i < rank; ++i) {
    composed[i] = first[outer[i]];
    identity &= composed[i] == int64_t(i);
  }
  if (identity)
    return inner->operand(0);
  node.setOperand(0, inner->operand(0));
  node.setAttr("perm", composed);
  changed = true;
  return nullptr;
}

/// An elementwise op whose operands are all splats becomes a splat fill.
Value *CanonicalizePass::foldSplat(Graph &graph, Node &node) {
  const OpInfo &info = node.info();
  if (!info.has(Elementwise) || node.getOp() == OpKind::Where ||
      node.getOp() == OpKind::Cast || !node.result()->getType().isStatic())
    return nullptr;
  double a = 0, b = 0;
  auto lhs = splatConstant(node.operand(0));
  if (!lhs)
    return nullptr;
  a = *lhs;
  if (node.numOperands() == 2) {
    auto rhs = splatConstant(node.operand(1));
    if (!rhs)
      return nullptr;
    b = *rhs;
  }
  double r;
  switch (node.getOp()) {
  case OpKind::Add: r = a + b; break;
  case OpKind::Sub: r = a - b; break;
  case OpKind::Mul: r = a * b; break;
  case OpKind::Neg: r = -a; break;
  case OpKind::Sqrt: r = std::sqrt(a); break;
  case OpKind::Exp: r = std::exp(a); break;
  default: return nullptr;
  }
  const TensorType &type = node.result()->getType();
  if (type.dtype != DType::F32)
    return nullptr;
  // Round through float so the folded value equals what the op gives in f32.
  r = double(float(r));
  auto fill = std::make_unique<Node>(OpKind::Fill, node.getName() + ".folded",
                                     node.getLoc());
  fill->setAttr("dtype", type.dtype);
  fill->setAttr("shape", std::vector<Dim>(type.dims.begin(), type.dims.end()));
  fill->setAttr("value", r);
  Node *inserted = graph.insertBefore(&node, std::move(fill));
  return inserted->addResult(node.getName() + ".folded", type);
}

bool CanonicalizePass::simplify(Graph &graph, DiagnosticEngine &diag,
                                bool &changed) {
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    Node &node = *graph.nodes()[i];
    for (unsigned k = 0; k < node.numRegions(); ++k)
      if (!simplify(node.region(k), diag, changed))
        return false;
    if (node.numResults() != 1 ||
        (!node.result()->hasUses() && !graph.isOutput(node.result())))
      continue;
    Value *replacement = identityOperand(node);
    if (!replacement)
      replacement = foldChain(node, changed);
    if (!replacement)
      replacement = foldSplat(graph, node);
    if (!replacement || replacement == node.result())
      continue;
    graph.replaceAllUsesWith(node.result(), replacement);
    changed = true;
  }
  return true;
}

std::unique_ptr<Pass> cgc::createCanonicalizePass() {
  return std::make_unique<CanonicalizePass>();
}
