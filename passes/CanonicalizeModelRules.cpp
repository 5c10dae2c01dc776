//===- CanonicalizeModelRules.cpp - canonicalize's rules for model idioms ---===//
#include "passes/CanonicalizeModelRules.h"
#include "passes/ValueBuilder.h"

#include "ir/Initializers.h"
#include "ir/OpAttrs.h"

#include "llvm/ADT/STLExtras.h"
#include <cmath>

using namespace cgc;

namespace {

/// Whether \p v is a splat equal to \p c within its dtype's precision
/// (a constant the model wrote in its own 16-bit dtype rounds).
bool isSplatNear(const Value *v, double c) {
  auto value = splatConstant(v);
  if (!value)
    return false;
  DType dtype = v->getType().dtype;
  double tolerance = dtype == DType::BF16 ? 8e-3 : dtype == DType::F16 ? 1e-3 : 1e-6;
  return std::fabs(realOf(dtype, *value) - c) <= tolerance * std::fabs(c);
}

/// The other operand of \p v's producer when that is \p op (commutative)
/// with a splat near \p c as one operand; else null.
Value *besideSplat(const Value *v, OpKind op, double c) {
  const Node *n = v ? v->getDef() : nullptr;
  if (!n || n->getOp() != op || n->numOperands() != 2)
    return nullptr;
  for (unsigned k = 0; k < 2; ++k)
    if (isSplatNear(n->operand(k), c))
      return n->operand(1 - k);
  return nullptr;
}

/// Whether \p v is x + 0.044715 * x^3 (either order of each operation).
bool isCubicTerm(const Value *v, const Value *x) {
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

std::vector<Dim> fixedDims(const std::vector<int64_t> &shape) {
  std::vector<Dim> dims;
  for (int64_t d : shape)
    dims.push_back(Dim::fixed(d));
  return dims;
}

/// Whether \p perm keeps its last axis last.
bool keepsLastAxis(const std::vector<int64_t> &perm) {
  return !perm.empty() && perm.back() == int64_t(perm.size() - 1);
}

/// Whether \p n's result is read by one node and is no output.
bool readOnce(const Node &n) {
  return n.result()->uses().size() == 1 && !n.getParent()->isOutput(n.result());
}

/// A ValueBuilder at \p node, its values named after \p base.
ValueBuilder builderAt(GraphBuilder &builder, Node &node, const std::string &base) {
  ValueBuilder vb(builder);
  vb.setInsertionPoint(node);
  vb.setOrigin(node);
  vb.setBase(base);
  return vb;
}

/// Each dim of \p dims as a run of the dims of \p x (unit dims of x left
/// out, as the indices of \p x's non-unit dims); none where one of \p dims
/// is no product of consecutive dims of \p x.
llvm::Optional<std::vector<std::vector<int64_t>>> mergedRuns(const std::vector<int64_t> &x,
                                                            const std::vector<int64_t> &dims) {
  std::vector<std::vector<int64_t>> runs;
  size_t at = 0;
  for (int64_t d : dims) {
    std::vector<int64_t> run;
    int64_t size = 1;
    for (; size < d && at < x.size(); ++at) {
      size *= x[at];
      run.push_back(int64_t(at));
    }
    if (size != d)
      return llvm::None;
    runs.push_back(run);
  }
  if (at != x.size())
    return llvm::None;
  return runs;
}

/// x and g when \p v is x [.., H, S, D] with each head repeated g times
/// in place (repeat_kv's reshape, broadcast and reshape); else null.
std::pair<Value *, int64_t> repeatedHeads(Value *v) {
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

} // namespace

bool cgc::foldRepeatedHeads(Node &node) {
  if (node.getOp() != OpKind::Attention)
    return false;
  auto [k, gk] = repeatedHeads(node.operand(1));
  auto [v, gv] = repeatedHeads(node.operand(2));
  if (!k || !v || gk != gv)
    return false;
  node.setOperand(1, k);
  node.setOperand(2, v);
  return true;
}

Value *cgc::foldWrittenGelu(GraphBuilder &builder, Node &node) {
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
    if (inner && isCubicTerm(inner, x))
      return builderAt(builder, node, node.getName()).op(OpKind::GeluTanh, {x}, {}, "gelu_tanh");
  }
  return nullptr;
}

Value *cgc::sinkReshape(GraphBuilder &builder, Node &node) {
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
  ValueBuilder vb = builderAt(builder, node, reshape->getName());
  return vb.reshape(vb.clone(node, {reshape->operand(0)}), node.result()->getType().dims);
}

Value *cgc::sinkTransposeBelowLinear(GraphBuilder &builder, Node &node) {
  Node *t = node.getOp() == OpKind::Linear ? node.operand(0)->getDef() : nullptr;
  if (!t || t->getOp() != OpKind::Transpose || !readOnce(*t))
    return nullptr;
  std::vector<int64_t> perm = transposePerm(*t, t->result()->getType().rank());
  if (perm.size() < 2 || !keepsLastAxis(perm))
    return nullptr;
  std::vector<Value *> operands(node.getOperands().begin(), node.getOperands().end());
  operands[0] = t->operand(0);
  ValueBuilder vb = builderAt(builder, node, t->getName());
  return vb.op(OpKind::Transpose, {vb.clone(node, operands)}, {{"perm", perm}});
}

Value *cgc::transposeAboveLinear(GraphBuilder &builder, Node &node) {
  if (node.getOp() != OpKind::Transpose || !node.result()->getType().isStatic())
    return nullptr;
  Node *split = node.operand(0)->getDef();
  Node *product = split && split->getOp() == OpKind::Reshape ? split->operand(0)->getDef()
                                                               : nullptr;
  if (!product || product->getOp() != OpKind::Linear || !readOnce(*split) ||
      !readOnce(*product) || product->operand(0)->getType().rank() != 2 ||
      !product->operand(0)->getType().isStatic())
    return nullptr;
  std::vector<int64_t> rows = split->result()->getType().extents();
  std::vector<int64_t> x = product->operand(0)->getType().extents();
  std::vector<int64_t> perm = transposePerm(node, rows.size());
  if (!keepsLastAxis(perm) || rows.back() != product->result()->getType().extents().back())
    return nullptr;
  // x's rows split as the product's are, permuted, then flat again.
  std::vector<int64_t> unflat(rows.begin(), rows.end() - 1);
  unflat.push_back(x[1]);
  ValueBuilder vb = builderAt(builder, node, node.getName());
  Value *r = vb.reshape(product->operand(0), fixedDims(unflat), "rows");
  Value *t = vb.op(OpKind::Transpose, {r}, {{"perm", perm}}, "rows");
  std::vector<Value *> operands(product->getOperands().begin(), product->getOperands().end());
  operands[0] = vb.reshape(t, fixedDims(x), "rows");
  vb.setOrigin(*product);
  return vb.reshape(vb.clone(*product, operands), node.result()->getType().dims);
}

Value *cgc::unitTransposeAsReshape(GraphBuilder &builder, Node &node) {
  if (node.getOp() != OpKind::Transpose || !node.result()->getType().isStatic())
    return nullptr;
  // A transpose that reads this one composes with it first (foldChain):
  // their composition may fold into a product's flags.
  for (const Use &use : node.result()->uses())
    if (use.user->getOp() == OpKind::Transpose)
      return nullptr;
  const std::vector<int64_t> x = node.operand(0)->getType().extents();
  int64_t last = -1;
  for (int64_t p : transposePerm(node, x.size())) {
    if (x[p] == 1)
      continue;
    if (p < last)
      return nullptr;
    last = p;
  }
  return builderAt(builder, node, node.getName())
      .reshape(node.operand(0), node.result()->getType().dims);
}

Value *cgc::transposeThroughReshape(GraphBuilder &builder, Node &node) {
  Node *reshape = node.getOp() == OpKind::Transpose ? node.operand(0)->getDef() : nullptr;
  if (!reshape || reshape->getOp() != OpKind::Reshape ||
      !reshape->operand(0)->getType().isStatic() || !node.result()->getType().isStatic())
    return nullptr;
  std::vector<int64_t> x, dims = reshape->result()->getType().extents();
  for (int64_t d : reshape->operand(0)->getType().extents())
    if (d != 1)
      x.push_back(d);
  auto runs = mergedRuns(x, dims);
  if (!runs || llvm::none_of(*runs, [](const auto &run) { return run.size() > 1; }))
    return nullptr;
  std::vector<int64_t> expanded;
  for (int64_t p : transposePerm(node, dims.size()))
    expanded.insert(expanded.end(), (*runs)[p].begin(), (*runs)[p].end());
  ValueBuilder vb = builderAt(builder, node, node.getName());
  const auto &result = node.result()->getType().dims;
  bool identity = true;
  for (size_t a = 0; a < expanded.size(); ++a)
    identity &= expanded[a] == int64_t(a);
  if (identity) // It moves unit dims only.
    return vb.reshape(reshape->operand(0), result);
  Value *squeezed = vb.reshape(reshape->operand(0), fixedDims(x), "runs");
  return vb.reshape(vb.op(OpKind::Transpose, {squeezed}, {{"perm", expanded}}), result);
}
