//===- Canonicalize.cpp - Local simplifications and constant folding --------===//
//
// Algorithm: walk the nodes in order and apply the first matching rule,
// repeating until nothing changes (at most 8 sweeps):
//   x * 1, 1 * x, x + 0, 0 + x, x - 0, x / 1   -> x
//   neg(neg(x)), cast(x) to x's dtype           -> x
//   transpose(transpose(x))                      -> transpose(x) composed,
//                                                   or x when the identity
//   reshape(reshape(x)), reshape to x's shape    -> one reshape, or x
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
  static void foldRepeatedHeads(Node &node, bool &changed);
  static Value *foldWrittenGelu(GraphBuilder &builder, Node &node);
  static Value *sinkReshape(GraphBuilder &builder, Node &node);
  static Value *sinkTransposeBelowLinear(GraphBuilder &builder, Node &node);
  static Value *transposeAboveLinear(GraphBuilder &builder, Node &node);
  static Value *transposeThroughReshape(GraphBuilder &builder, Node &node);
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
/// neg(neg(x)), a cast or reshape of x to its own type), if any.
Value *CanonicalizePass::identityOperand(Node &node) {
  Value *candidate = nullptr;
  switch (node.info().family) {
  case Elementwise:
    candidate = elementwiseIdentity(node);
    break;
  case Movement:
    if (node.getOp() == OpKind::Reshape)
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

/// Whether \p v is a splat equal to \p c within its dtype's precision
/// (a constant the model wrote in its own 16-bit dtype rounds).
static bool isSplatNear(const Value *v, double c) {
  auto value = splatConstant(v);
  if (!value)
    return false;
  DType dtype = v->getType().dtype;
  double tolerance = dtype == DType::BF16 ? 8e-3 : dtype == DType::F16 ? 1e-3 : 1e-6;
  return std::fabs(realOf(dtype, *value) - c) <= tolerance * std::fabs(c);
}

/// The other operand of \p v's producer when that is \p op (commutative)
/// with a splat near \p c as one operand; else null.
static Value *besideSplat(const Value *v, OpKind op, double c) {
  const Node *n = v ? v->getDef() : nullptr;
  if (!n || n->getOp() != op || n->numOperands() != 2)
    return nullptr;
  for (unsigned k = 0; k < 2; ++k)
    if (isSplatNear(n->operand(k), c))
      return n->operand(1 - k);
  return nullptr;
}

/// Whether \p v is x + 0.044715 * x^3 (either order of each operation).
static bool isCubicTerm(const Value *v, const Value *x) {
  const Node *add = v->getDef();
  if (!add || add->getOp() != OpKind::Add)
    return false;
  for (unsigned k = 0; k < 2; ++k) {
    if (add->operand(k) != x)
      continue;
    Value *cube = besideSplat(add->operand(1 - k), OpKind::Mul, 0.044715);
    const Node *pow = cube ? cube->getDef() : nullptr;
    if (pow && pow->getOp() == OpKind::Pow && pow->operand(0) == x &&
        isSplatNear(pow->operand(1), 3.0))
      return true;
  }
  return false;
}

static std::vector<int64_t> staticDims(const Value *v) {
  std::vector<int64_t> out;
  for (Dim d : v->getType().dims)
    out.push_back(d.extent());
  return out;
}

static Value *reshapeTo(GraphBuilder &builder, const std::string &base, Value *x,
                        const std::vector<int64_t> &shape) {
  std::vector<Dim> dims;
  for (int64_t d : shape)
    dims.push_back(Dim::fixed(d));
  Node *n = builder.create(OpKind::Reshape, base, {x}, {{"shape", dims}});
  return n ? n->result() : nullptr;
}

/// Whether \p perm keeps the last of its axes last.
static bool keepsLastAxis(const std::vector<int64_t> &perm) {
  return !perm.empty() && perm.back() == int64_t(perm.size() - 1);
}

Value *CanonicalizePass::transposeAboveLinear(GraphBuilder &builder, Node &node) {
  if (node.getOp() != OpKind::Transpose || !node.result()->getType().isStatic())
    return nullptr;
  Node *split = node.operand(0)->getDef();
  Node *product = split && split->getOp() == OpKind::Reshape ? split->operand(0)->getDef()
                                                               : nullptr;
  if (!product || product->getOp() != OpKind::Linear || split->result()->uses().size() != 1 ||
      product->result()->uses().size() != 1 || node.getParent()->isOutput(split->result()) ||
      node.getParent()->isOutput(product->result()) ||
      product->operand(0)->getType().rank() != 2 ||
      !product->operand(0)->getType().isStatic())
    return nullptr;
  std::vector<int64_t> rows = staticDims(split->result());
  std::vector<int64_t> x = staticDims(product->operand(0));
  std::vector<int64_t> perm = transposePerm(node, rows.size());
  if (!keepsLastAxis(perm) || rows.back() != staticDims(product->result()).back())
    return nullptr;
  builder.setInsertionPoint(node);
  builder.setOrigin(node);
  std::vector<int64_t> unflat(rows.begin(), rows.end() - 1);
  unflat.push_back(x[1]);
  Value *r = reshapeTo(builder, node.getName() + ".rows", product->operand(0), unflat);
  Node *t = r ? builder.create(OpKind::Transpose, node.getName() + ".rows", {r},
                               {{"perm", perm}})
              : nullptr;
  Value *flat = t ? reshapeTo(builder, node.getName() + ".rows", t->result(), x) : nullptr;
  if (!flat)
    return nullptr;
  std::vector<Value *> operands(product->getOperands().begin(), product->getOperands().end());
  operands[0] = flat;
  builder.setOrigin(*product);
  Node *moved = builder.clone(*product, operands);
  return moved ? reshapeTo(builder, node.getName(), moved->result(),
                           staticDims(node.result()))
               : nullptr;
}

Value *CanonicalizePass::transposeThroughReshape(GraphBuilder &builder, Node &node) {
  Node *reshape = node.getOp() == OpKind::Transpose ? node.operand(0)->getDef() : nullptr;
  if (!reshape || reshape->getOp() != OpKind::Reshape ||
      !reshape->operand(0)->getType().isStatic() || !node.result()->getType().isStatic())
    return nullptr;
  // Each dim of the reshape's result as a run of x's dims (unit dims left
  // out); none where the reshape splits a dim.
  std::vector<int64_t> x, dims = staticDims(reshape->result());
  for (int64_t d : staticDims(reshape->operand(0)))
    if (d != 1)
      x.push_back(d);
  std::vector<std::vector<int64_t>> runs;
  size_t at = 0;
  bool merges = false;
  for (int64_t d : dims) {
    std::vector<int64_t> run;
    for (int64_t size = 1; size < d && at < x.size(); ++at) {
      size *= x[at];
      run.push_back(int64_t(at));
      if (d % size != 0)
        return nullptr;
    }
    int64_t size = 1;
    for (int64_t a : run)
      size *= x[a];
    if (size != d)
      return nullptr;
    merges |= run.size() > 1;
    runs.push_back(run);
  }
  if (!merges || at != x.size())
    return nullptr;
  std::vector<int64_t> perm = transposePerm(node, dims.size()), expanded;
  for (int64_t p : perm)
    expanded.insert(expanded.end(), runs[p].begin(), runs[p].end());
  builder.setInsertionPoint(node);
  builder.setOrigin(node);
  bool identity = true;
  for (size_t a = 0; a < expanded.size(); ++a)
    identity &= expanded[a] == int64_t(a);
  if (identity) // It moves unit dims only.
    return reshapeTo(builder, node.getName(), reshape->operand(0), staticDims(node.result()));
  Value *squeezed = reshapeTo(builder, node.getName() + ".runs", reshape->operand(0), x);
  Node *t = squeezed ? builder.create(OpKind::Transpose, node.getName(), {squeezed},
                                      {{"perm", expanded}})
                     : nullptr;
  return t ? reshapeTo(builder, node.getName(), t->result(), staticDims(node.result()))
           : nullptr;
}

Value *CanonicalizePass::sinkTransposeBelowLinear(GraphBuilder &builder, Node &node) {
  if (node.getOp() != OpKind::Linear)
    return nullptr;
  Node *t = node.operand(0)->getDef();
  if (!t || t->getOp() != OpKind::Transpose || t->result()->uses().size() != 1 ||
      t->getParent()->isOutput(t->result()))
    return nullptr;
  unsigned rank = t->result()->getType().rank();
  std::vector<int64_t> perm = transposePerm(*t, rank);
  if (rank < 2 || perm[rank - 1] != int64_t(rank - 1))
    return nullptr;
  builder.setInsertionPoint(node);
  builder.setOrigin(node);
  std::vector<Value *> operands(node.getOperands().begin(), node.getOperands().end());
  operands[0] = t->operand(0);
  Node *product = builder.clone(node, operands);
  if (!product)
    return nullptr;
  builder.setOrigin(*t);
  Node *moved = builder.create(OpKind::Transpose, t->getName(), {product->result()},
                               {{"perm", perm}});
  return moved ? moved->result() : nullptr;
}

Value *CanonicalizePass::sinkReshape(GraphBuilder &builder, Node &node) {
  if (!node.info().has(Elementwise) || node.numOperands() != 1)
    return nullptr;
  Node *reshape = node.operand(0)->getDef();
  const Node *producer = reshape && reshape->getOp() == OpKind::Reshape
                             ? reshape->operand(0)->getDef()
                             : nullptr;
  // A product, or its bias add (addmm as the export decomposes it).
  auto isProduct = [](const Value *v) {
    return v->getDef() && v->getDef()->info().has(MatMul);
  };
  bool afterProduct = producer && (producer->info().has(MatMul) ||
                                   (producer->getOp() == OpKind::Add &&
                                    llvm::any_of(producer->getOperands(), isProduct)));
  if (!afterProduct)
    return nullptr;
  builder.setInsertionPoint(node);
  builder.setOrigin(node);
  Node *inner = builder.clone(node, {reshape->operand(0)});
  if (!inner)
    return nullptr;
  const auto &dims = node.result()->getType().dims;
  builder.setOrigin(*reshape);
  Node *outer = builder.create(OpKind::Reshape, reshape->getName(), {inner->result()},
                               {{"shape", std::vector<Dim>(dims.begin(), dims.end())}});
  return outer ? outer->result() : nullptr;
}

Value *CanonicalizePass::foldWrittenGelu(GraphBuilder &builder, Node &node) {
  if (node.getOp() != OpKind::Mul || !isFloat(node.result()->getType().dtype))
    return nullptr;
  for (unsigned k = 0; k < 2; ++k) {
    Value *x = besideSplat(node.operand(k), OpKind::Mul, 0.5);
    Value *tanhValue = besideSplat(node.operand(1 - k), OpKind::Add, 1.0);
    const Node *tanh = tanhValue ? tanhValue->getDef() : nullptr;
    if (!x || !tanh || tanh->getOp() != OpKind::Tanh ||
        x->getType() != node.result()->getType())
      continue;
    Value *inner = besideSplat(tanh->operand(0), OpKind::Mul, 0.7978845608028654);
    if (!inner || !isCubicTerm(inner, x))
      continue;
    builder.setInsertionPoint(node);
    builder.setOrigin(node);
    Node *gelu = builder.create(OpKind::GeluTanh, node.getName() + ".gelu_tanh", {x});
    return gelu ? gelu->result() : nullptr;
  }
  return nullptr;
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

/// x and g when \p v is x [.., H, S, D] with each head repeated g times
/// in place (repeat_kv's reshape, broadcast and reshape); else null.
static std::pair<Value *, int64_t> repeatedHeads(Value *v) {
  Node *merge = v->getDef();
  if (!merge || merge->getOp() != OpKind::Reshape)
    return {nullptr, 0};
  Node *broadcast = merge->operand(0)->getDef();
  if (!broadcast || broadcast->getOp() != OpKind::BroadcastTo)
    return {nullptr, 0};
  Node *split = broadcast->operand(0)->getDef();
  if (!split || split->getOp() != OpKind::Reshape)
    return {nullptr, 0};
  Value *x = split->operand(0);
  const auto &xd = x->getType().dims, &sd = split->result()->getType().dims,
             &bd = broadcast->result()->getType().dims, &vd = v->getType().dims;
  size_t r = xd.size();
  if (r < 3 || sd.size() != r + 1 || bd.size() != r + 1 || vd.size() != r ||
      !xd[r - 3].isStatic() || !bd[r - 2].isStatic())
    return {nullptr, 0};
  int64_t g = bd[r - 2].extent();
  for (size_t a = 0; a <= r; ++a) {
    Dim expect = a < r - 2 ? xd[a] : a == r - 2 ? Dim::fixed(1) : xd[a - 1];
    if (!(sd[a] == expect) || !(bd[a] == (a == r - 2 ? Dim::fixed(g) : expect)))
      return {nullptr, 0};
  }
  for (size_t a = 0; a < r; ++a) {
    Dim expect = a == r - 3 ? Dim::fixed(xd[a].extent() * g) : xd[a];
    if (!(vd[a] == expect))
      return {nullptr, 0};
  }
  return {x, g};
}

void CanonicalizePass::foldRepeatedHeads(Node &node, bool &changed) {
  if (node.getOp() != OpKind::Attention)
    return;
  auto [k, gk] = repeatedHeads(node.operand(1));
  auto [v, gv] = repeatedHeads(node.operand(2));
  if (!k || !v || gk != gv)
    return;
  node.setOperand(1, k);
  node.setOperand(2, v);
  changed = true;
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
    foldRepeatedHeads(node, changed);
    Value *replacement = identityOperand(node);
    if (!replacement)
      replacement = foldChain(node, changed);
    if (!replacement)
      replacement = foldSplat(builder, node);
    if (!replacement)
      replacement = foldWrittenGelu(builder, node);
    if (!replacement)
      replacement = sinkReshape(builder, node);
    if (!replacement)
      replacement = sinkTransposeBelowLinear(builder, node);
    if (!replacement)
      replacement = transposeAboveLinear(builder, node);
    if (!replacement)
      replacement = transposeThroughReshape(builder, node);
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
