//===- Autocast.cpp - Mixed precision as casts, PyTorch autocast's rules --===//
//
// Algorithm: with ctx.autocast a 16-bit float dtype L (bf16 or f16), walk
// the nodes in order (regions first) and give each op its operands in the
// dtype PyTorch's CUDA autocast would, inserting `cast` nodes (one per
// value and dtype in a graph, before its first user), then recompute the
// node's result types:
//   lower     matmul, linear, conv, conv_transpose, attention: f32 and
//             other 16-bit operands cast to L (the result is L);
//   f32       exp, log, rsqrt, pow, sum, prod, cumsum, softmax,
//             log_softmax, layernorm, mse_loss, cross_entropy (autocast's
//             float32 list) and batch_norm (a deviation: PyTorch runs it
//             in its input's dtype): 16-bit operands cast to f32;
//   promote   the other elementwise binary and ternary ops, concat,
//             index_copy and index_add: PyTorch's promotion (an f32 tensor makes L
//             tensors f32; a 0-dim f32, a Python number, follows an L
//             tensor down to L);
//   keep      everything else runs in its operands' dtype (relu, gelu,
//             dropout, reshapes, gathers, pooling, mean ...);
//   fixed     if, while and fused nodes, whose regions declare their input
//             types, and all_reduce: operands back in their own dtypes
//             (a fused node's body is left as it is).
// Graph and region outputs are cast back to the dtypes they had, so the
// model's signature (a loss in f32) is unchanged; parameters stay f32
// (master weights: autodiff's cast rule returns their gradients in f32).
// Requires: a verified graph, before autodiff, padding and fusion.
// Guarantees: every value typed by its op's rule; each output's type as
// before; with no ctx.autocast, nothing changes.
//
//===----------------------------------------------------------------------===//
#include "ir/ConvolutionShape.h"
#include "passes/Pass.h"
#include "passes/ValueBuilder.h"

#include "ir/TypeRules.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/ErrorHandling.h"

using namespace cgc;

namespace {

enum class Policy { Lower, Float32, Promote, Keep, Fixed };

Policy elementwisePolicy(OpKind op) {
  switch (op) {
  case OpKind::Exp: case OpKind::Log: case OpKind::Rsqrt: case OpKind::Pow:
    return Policy::Float32;
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div:
  case OpKind::Fmod: case OpKind::Maximum: case OpKind::Minimum:
  case OpKind::Eq: case OpKind::Ne: case OpKind::Lt: case OpKind::Le:
  case OpKind::Gt: case OpKind::Ge: case OpKind::Where:
    return Policy::Promote;
  case OpKind::Neg: case OpKind::Abs: case OpKind::Sqrt: case OpKind::Tanh:
  case OpKind::Sigmoid: case OpKind::Relu: case OpKind::Gelu: case OpKind::GeluTanh:
  case OpKind::Erf: case OpKind::Sin: case OpKind::Cos: case OpKind::Floor:
  case OpKind::Ceil: case OpKind::Round: case OpKind::LogicalNot:
  case OpKind::BitwiseNot: case OpKind::LogicalAnd: case OpKind::LogicalOr:
  case OpKind::BitwiseAnd: case OpKind::BitwiseOr: case OpKind::BitwiseXor:
  case OpKind::Cast:
    return Policy::Keep;
#define CGC_ELEMENTWISE_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not an elementwise op");
}

/// What autocast does with \p n's operands.
Policy policyOf(const Node &n) {
  OpKind op = n.getOp();
  switch (n.info().family) {
  case Elementwise: return elementwisePolicy(op);
  case Reduction:
    return op == OpKind::Sum || op == OpKind::Prod ? Policy::Float32 : Policy::Keep;
  case Scan: case Normalization: case Loss: return Policy::Float32;
  case MatMul: case Attention: return Policy::Lower;
  case Convolution:
    return isWeightedConvolution(op) ? Policy::Lower : Policy::Keep;
  case Movement:
    return op == OpKind::Concat || op == OpKind::IndexCopy || op == OpKind::IndexAdd
               ? Policy::Promote
               : Policy::Keep;
  case Source: case Random: case SyncPoint: return Policy::Keep;
  case Collective: case ControlFlow: case Fused: return Policy::Fixed;
  }
  llvm_unreachable("an OpFamily value");
}

class AutocastPass : public Pass {
public:
  llvm::StringRef name() const override { return "autocast"; }
  llvm::StringRef summary() const override {
    return "mixed precision: products in bf16 or f16, PyTorch autocast's "
           "float32 ops in f32, as casts (cgc --autocast)";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    if (ctx.autocast == DType::F32)
      return true;
    low = ctx.autocast;
    llvm::DenseMap<const Value *, DType> declared;
    record(graph, declared);
    return castGraph(graph, declared, ctx.diag);
  }

private:
  /// Every value's dtype before the pass (regions included).
  static void record(const Graph &g, llvm::DenseMap<const Value *, DType> &declared);
  bool castGraph(Graph &g, const llvm::DenseMap<const Value *, DType> &declared,
                 DiagnosticEngine &diag);
  /// The dtype \p n's operand \p k should have under its policy.
  DType wanted(const Node &n, unsigned k, Policy policy,
               const llvm::DenseMap<const Value *, DType> &declared) const;

  DType low = DType::F32;
};

} // namespace

void AutocastPass::record(const Graph &g, llvm::DenseMap<const Value *, DType> &declared) {
  for (const GraphInput &in : g.inputs())
    declared[in.value] = in.value->getType().dtype;
  for (const auto &n : g.nodes()) {
    for (unsigned r = 0; r < n->numRegions(); ++r)
      record(n->region(r), declared);
    for (unsigned r = 0; r < n->numResults(); ++r)
      declared[n->result(r)] = n->result(r)->getType().dtype;
  }
}

DType AutocastPass::wanted(const Node &n, unsigned k, Policy policy,
                           const llvm::DenseMap<const Value *, DType> &declared) const {
  const TensorType &type = n.operand(k)->getType();
  DType now = type.dtype;
  if (!isFloat(now))
    return now;
  switch (policy) {
  case Policy::Lower: return now == DType::F32 || dtypeSize(now) == 2 ? low : now;
  case Policy::Float32: return dtypeSize(now) == 2 ? DType::F32 : now;
  case Policy::Promote: {
    // PyTorch's promotion: tensors decide, a 0-dim operand only where
    // every tensor operand is 0-dim (a Python number beside a bf16 tensor
    // keeps it bf16).
    bool wideTensor = false, lowTensor = false;
    for (Value *other : n.getOperands()) {
      const TensorType &t = other->getType();
      wideTensor |= t.rank() > 0 && t.dtype == DType::F32;
      lowTensor |= t.rank() > 0 && t.dtype == low;
    }
    if (wideTensor)
      return now == low ? DType::F32 : now;
    if (lowTensor && type.rank() == 0 && now == DType::F32)
      return low;
    if (!lowTensor && now == low)
      for (Value *other : n.getOperands())
        if (other->getType().dtype == DType::F32)
          return DType::F32; // Only 0-dim operands: the widest wins.
    return now;
  }
  case Policy::Keep: return now;
  case Policy::Fixed: return declared.lookup(n.operand(k));
  }
  llvm_unreachable("a Policy value");
}

bool AutocastPass::castGraph(Graph &g, const llvm::DenseMap<const Value *, DType> &declared,
                             DiagnosticEngine &diag) {
  GraphBuilder b(g, diag);
  ValueBuilder vb(b);
  llvm::DenseMap<std::pair<const Value *, int>, Value *> casts;
  auto castOf = [&](Value *v, DType to) {
    Value *&c = casts[{v, int(to)}];
    if (!c) {
      vb.setBase(v->getName() + ".autocast");
      c = vb.cast(v, to, dtypeName(to));
    }
    return c;
  };
  std::vector<Node *> order;
  for (const auto &n : g.nodes())
    order.push_back(n.get());
  for (Node *n : order) {
    // A fused node's body has structural rules: its operands keep their
    // dtypes (Fixed) and the body stays as it is.
    if (!n->info().has(Fused))
      for (unsigned r = 0; r < n->numRegions(); ++r)
        if (!castGraph(n->region(r), declared, diag))
          return false;
    Policy policy = policyOf(*n);
    b.setInsertionPoint(*n);
    b.setOrigin(*n);
    for (unsigned k = 0; k < n->numOperands(); ++k) {
      DType to = wanted(*n, k, policy, declared);
      if (to != n->operand(k)->getType().dtype)
        n->setOperand(k, castOf(n->operand(k), to));
    }
    llvm::SmallVector<TensorType, 2> types;
    if (vb.hasFailed() || !inferResultTypes(*n, types, diag))
      return false;
    for (unsigned r = 0; r < types.size(); ++r)
      n->result(r)->setType(types[r]);
  }
  b.setInsertionPointToEnd(g);
  for (GraphOutput &o : g.outputs) {
    DType was = declared.lookup(o.value);
    if (o.value->getType().dtype != was)
      o.value = castOf(o.value, was);
  }
  return !vb.hasFailed();
}

std::unique_ptr<Pass> cgc::createAutocastPass() {
  return std::make_unique<AutocastPass>();
}
