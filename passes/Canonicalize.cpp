//===- Canonicalize.cpp - Local simplifications and constant folding --------===//
//
// Algorithm: walk the nodes in order and apply the first matching rule,
// repeating until nothing changes (at most 8 sweeps):
//   x * 1, 1 * x, x + 0, 0 + x, x - 0, x / 1   -> x
//   neg(neg(x)), cast(x) to x's dtype           -> x
//   transpose(transpose(x))                      -> transpose(x) composed,
//                                                   or x when the identity
//   reshape(reshape(x)), reshape to x's shape    -> one reshape, or x
//   broadcast_to x's own shape                   -> x
//   matmul(transpose(a), b), the transpose swapping only the last two
//   dims                                         -> matmul(a, b) with
//                                                   transpose_a flipped
//                                                   (the same for b): the
//                                                   product reads the layout
//   attention(q, repeat(k, g), repeat(v, g)), repeat(x, g) =
//   reshape(broadcast_to(reshape(x, [.., H, 1, S, D]), [.., H, g, S, D]),
//   [.., H * g, S, D]) (Hugging Face's repeat_kv)
//                                                -> attention(q, k, v) with
//                                                   grouped heads (no copy
//                                                   of k and v g times)
//   linear(transpose(x)), the transpose keeping
//   the last axis and read by the linear alone   -> transpose(linear(x)):
//                                                   the transpose meets
//                                                   what reads the product
//                                                   (a head split attention
//                                                   reads in place)
//   transpose(reshape(linear(x))), x a matrix, the
//   reshape splitting its rows, the transpose
//   keeping the last axis                        -> reshape(linear(reshape(
//                                                   transpose(reshape(x)))))
//                                                   (the rows permuted
//                                                   before the product, where
//                                                   they meet what x is:
//                                                   nn.MultiheadAttention's
//                                                   sequence-first output)
//   transpose(reshape(x)), the reshape merging
//   runs of dims the transpose moves together    -> reshape(transpose(x))
//                                                   (meets a transpose x is)
//   transpose(x) moving unit dims only           -> reshape(x) (a view: a
//                                                   decoding step's head
//                                                   split runs no kernel)
//   u(reshape(p)), u a unary elementwise op, p a
//   product's result or its bias add             -> reshape(u(p)) (a
//                                                   reshape is a view): an
//                                                   activation after a
//                                                   product's view (GPT-2's
//                                                   addmm) meets the product
//   0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
//   (GPT-2's gelu_new written out)               -> gelu_tanh(x), which
//                                                   fuse-epilogue folds into
//                                                   a product's epilogue
//   an elementwise op on splat constants         -> a splat constant
// A rule only fires when the replacement has exactly the node's type, so
// broadcasting never changes a result shape. Dead nodes are left to dce.
// Requires: a verified graph. Guarantees: the same values at every output
// (checked by --check-equivalence), no identity ops of the forms above.
//
//===----------------------------------------------------------------------===//
#include "passes/CanonicalizeModelRules.h"
#include "passes/Pass.h"

#include "ir/Builder.h"
#include "ir/Initializers.h"
#include "ir/OpAttrs.h"
#include "ir/TypeRules.h"

#include "llvm/ADT/Optional.h"
#include "llvm/Support/ErrorHandling.h"
#include <cmath>

using namespace cgc;

static bool isSplat(const Value *v, double expected) {
  auto value = splatConstant(v);
  return value && realOf(v->getType().dtype, *value) == expected;
}

namespace {
class CanonicalizePass : public Pass {
public:
  llvm::StringRef name() const override { return "canonicalize"; }
  llvm::StringRef summary() const override {
    return "fold identities, double transposes and reshapes, and constants";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    GraphBuilder builder(graph, ctx.diag);
    for (unsigned sweep = 0; sweep < 8; ++sweep) {
      bool changed = false;
      if (!simplify(graph, builder, changed))
        return false;
      if (!changed)
        break;
    }
    return true;
  }

private:
  static bool simplify(Graph &graph, GraphBuilder &builder, bool &changed);
  static Value *identityOperand(Node &node);
  static Value *foldChain(Node &node, bool &changed);
  static Value *foldSplat(GraphBuilder &builder, Node &node);
  static void foldTransposeIntoProduct(Node &node, bool &changed);
};
} // namespace

/// The operand an elementwise op passes through unchanged, if any.
static Value *elementwiseIdentity(Node &node) {
  switch (node.getOp()) {
  case OpKind::Mul:
    if (isSplat(node.operand(1), 1))
      return node.operand(0);
    return isSplat(node.operand(0), 1) ? node.operand(1) : nullptr;
  case OpKind::Add:
    if (isSplat(node.operand(1), 0))
      return node.operand(0);
    return isSplat(node.operand(0), 0) ? node.operand(1) : nullptr;
  case OpKind::Sub:
    return isSplat(node.operand(1), 0) ? node.operand(0) : nullptr;
  case OpKind::Div:
    return isSplat(node.operand(1), 1) ? node.operand(0) : nullptr;
  case OpKind::Cast:
    return node.operand(0);
  case OpKind::Neg: {
    Node *inner = node.operand(0)->getDef();
    return inner && inner->getOp() == OpKind::Neg ? inner->operand(0) : nullptr;
  }
  case OpKind::Abs: case OpKind::Exp: case OpKind::Log: case OpKind::Sqrt:
  case OpKind::Rsqrt: case OpKind::Tanh: case OpKind::Sigmoid:
  case OpKind::Relu: case OpKind::Gelu: case OpKind::GeluTanh:
  case OpKind::Erf: case OpKind::Sin: case OpKind::Cos: case OpKind::Floor:
  case OpKind::Ceil: case OpKind::Round:
  case OpKind::LogicalNot: case OpKind::Pow: case OpKind::Fmod:
  case OpKind::Maximum:
  case OpKind::Minimum: case OpKind::Eq: case OpKind::Ne: case OpKind::Lt:
  case OpKind::Le: case OpKind::Gt: case OpKind::Ge: case OpKind::LogicalAnd:
  case OpKind::LogicalOr: case OpKind::Where: case OpKind::BitwiseNot:
  case OpKind::BitwiseAnd: case OpKind::BitwiseOr: case OpKind::BitwiseXor:
    return nullptr;
#define CGC_ELEMENTWISE_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not an elementwise op");
}

/// The operand whose value the node passes on unchanged (x * 1, x + 0,
/// neg(neg(x)), a cast, reshape or broadcast_to of x to its own type), if
/// any.
Value *CanonicalizePass::identityOperand(Node &node) {
  Value *candidate = nullptr;
  switch (node.info().family) {
  case Elementwise:
    candidate = elementwiseIdentity(node);
    break;
  case Movement:
    if (node.getOp() == OpKind::Reshape || node.getOp() == OpKind::BroadcastTo)
      candidate = node.operand(0);
    break;
  case Source: case Reduction: case Scan: case Normalization: case Loss:
  case Random: case MatMul: case Attention: case Convolution: case SyncPoint:
  case Collective: case ControlFlow:
  case Fused:
    break;
  }
  // The operand must have the node's type: broadcasting may not change a
  // result shape.
  if (candidate && candidate->getType() == node.result()->getType())
    return candidate;
  return nullptr;
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

/// \p op on the splat values \p a and \p b (unused by unary ops), for the
/// elementwise ops that fold.
static llvm::Optional<double> foldScalar(OpKind op, double a, double b) {
  switch (op) {
  case OpKind::Add: return a + b;
  case OpKind::Sub: return a - b;
  case OpKind::Mul: return a * b;
  case OpKind::Neg: return -a;
  case OpKind::Sqrt: return std::sqrt(a);
  case OpKind::Exp: return std::exp(a);
  case OpKind::Floor: return std::floor(a);
  case OpKind::Ceil: return std::ceil(a);
  case OpKind::Round: return std::nearbyint(a);
  case OpKind::Abs: case OpKind::Log: case OpKind::Rsqrt: case OpKind::Tanh:
  case OpKind::Sigmoid: case OpKind::Relu: case OpKind::Gelu:
  case OpKind::GeluTanh: case OpKind::Erf: case OpKind::Sin:
  case OpKind::Cos: case OpKind::LogicalNot: case OpKind::Div:
  case OpKind::Pow: case OpKind::Fmod: case OpKind::Maximum:
  case OpKind::Minimum:
  case OpKind::Eq: case OpKind::Ne: case OpKind::Lt: case OpKind::Le:
  case OpKind::Gt: case OpKind::Ge: case OpKind::LogicalAnd:
  case OpKind::LogicalOr: case OpKind::Where: case OpKind::Cast:
  case OpKind::BitwiseNot: case OpKind::BitwiseAnd: case OpKind::BitwiseOr:
  case OpKind::BitwiseXor:
    return llvm::None;
#define CGC_ELEMENTWISE_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not an elementwise op");
}

/// An elementwise op whose operands are all splats becomes a splat fill.
Value *CanonicalizePass::foldSplat(GraphBuilder &builder, Node &node) {
  const TensorType &type = node.result()->getType();
  if (!node.info().has(Elementwise) || type.dtype != DType::F32 ||
      !type.isStatic() || node.numOperands() > 2)
    return nullptr;
  double a = 0, b = 0;
  auto lhs = splatConstant(node.operand(0));
  if (!lhs)
    return nullptr;
  a = realOf(node.operand(0)->getType().dtype, *lhs);
  if (node.numOperands() == 2) {
    auto rhs = splatConstant(node.operand(1));
    if (!rhs)
      return nullptr;
    b = realOf(node.operand(1)->getType().dtype, *rhs);
  }
  llvm::Optional<double> r = foldScalar(node.getOp(), a, b);
  if (!r)
    return nullptr;
  builder.setInsertionPoint(node);
  builder.setOrigin(node);
  // Round through float so the folded value equals what the op gives in f32.
  Node *fill = builder.create(
      OpKind::Fill, node.getName() + ".folded", {},
      {{"dtype", type.dtype},
       {"shape", std::vector<Dim>(type.dims.begin(), type.dims.end())},
       {"value", Number::ofReal(double(float(*r)))}});
  return fill ? fill->result() : nullptr;
}

/// Whether \p n is a transpose that swaps the last two dims only.
static bool swapsLastTwoDims(const Node &n) {
  if (n.getOp() != OpKind::Transpose)
    return false;
  unsigned rank = n.result()->getType().rank();
  std::vector<int64_t> perm = transposePerm(n, rank);
  if (rank < 2)
    return false;
  for (unsigned i = 0; i + 2 < rank; ++i)
    if (perm[i] != int64_t(i))
      return false;
  return perm[rank - 2] == int64_t(rank - 1) && perm[rank - 1] == int64_t(rank - 2);
}

void CanonicalizePass::foldTransposeIntoProduct(Node &node, bool &changed) {
  if (node.getOp() != OpKind::MatMul)
    return;
  for (unsigned k = 0; k < 2; ++k) {
    Node *def = node.operand(k)->getDef();
    if (!def || !swapsLastTwoDims(*def))
      continue;
    const char *flag = k == 0 ? "transpose_a" : "transpose_b";
    node.setOperand(k, def->operand(0));
    node.setAttr(flag, !node.boolAttr(flag, false));
    changed = true;
  }
}

bool CanonicalizePass::simplify(Graph &graph, GraphBuilder &builder,
                                bool &changed) {
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    Node &node = *graph.nodes()[i];
    for (unsigned k = 0; k < node.numRegions(); ++k)
      if (!simplify(node.region(k), builder, changed))
        return false;
    if (node.numResults() != 1 ||
        (!node.result()->hasUses() && !graph.isOutput(node.result())))
      continue;
    foldTransposeIntoProduct(node, changed);
    changed |= foldRepeatedHeads(node);
    Value *replacement = identityOperand(node);
    if (!replacement)
      replacement = foldChain(node, changed);
    // The rules that build their replacement, first match wins.
    using Rewrite = Value *(*)(GraphBuilder &, Node &);
    static const Rewrite rewrites[] = {foldSplat,   foldWrittenGelu, sinkReshape,
                                       sinkTransposeBelowLinear, transposeAboveLinear,
                                       transposeThroughReshape, unitTransposeAsReshape};
    for (Rewrite rewrite : rewrites)
      if (!replacement)
        replacement = rewrite(builder, node);
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
