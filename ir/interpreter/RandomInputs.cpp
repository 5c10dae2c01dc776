//===- RandomInputs.cpp - Random inputs from each consumer's valid domain ----===//
//
// Used by `cgc-opt --check-equivalence`. Domains come from the direct uses
// of each input (followed into `if`, `while` and `fusion` regions, and
// through ops that move its values: gathers, reshapes, masked_select):
// positive values for log/sqrt/rsqrt and pow bases, divisors away from
// zero, indices within the indexed extent, [seed, offset] pairs for RNG
// operands; bools are true with a given density (masks that select none,
// some or all elements).
// Numbers come from the Philox stream, so the inputs are the same on every
// platform for a given seed.
//
//===----------------------------------------------------------------------===//
#include "ir/interpreter/Interpreter.h"

#include "ir/interpreter/Kernels.h"
#include "ir/Philox.h"

#include "llvm/Support/ErrorHandling.h"
#include <set>

using namespace cgc;
using namespace cgc::interp;

namespace {
struct Domain {
  bool positive = false;
  bool awayFromZero = false;
  bool rng = false;
  int64_t indexBound = -1; ///< Indices in [0, indexBound).
};

class Generator {
public:
  Generator(uint64_t seed) : seed(seed) {}
  double uniform() { return philoxUniform(seed, 0xC6C0ull, counter++); }
  int64_t integer(int64_t lo, int64_t hi) { // inclusive
    return lo + int64_t(uniform() * double(hi - lo + 1));
  }

private:
  uint64_t seed, counter = 0;
};
} // namespace

/// Narrows \p dom for operand #\p k of the elementwise op \p op.
static void elementwiseDomain(OpKind op, unsigned k, Domain &dom) {
  switch (op) {
  case OpKind::Log: case OpKind::Sqrt: case OpKind::Rsqrt:
    dom.positive = true;
    return;
  case OpKind::Pow:
    dom.positive |= k == 0;
    return;
  case OpKind::Div: case OpKind::Fmod:
    dom.awayFromZero |= k == 1;
    return;
  case OpKind::Neg: case OpKind::Abs: case OpKind::Exp: case OpKind::Tanh:
  case OpKind::Sigmoid: case OpKind::Relu: case OpKind::Gelu:
  case OpKind::GeluTanh: case OpKind::Erf: case OpKind::Sin:
  case OpKind::Cos: case OpKind::Floor: case OpKind::Ceil: case OpKind::Round:
  case OpKind::LogicalNot: case OpKind::Add:
  case OpKind::Sub: case OpKind::Mul: case OpKind::Maximum:
  case OpKind::Minimum: case OpKind::Eq: case OpKind::Ne: case OpKind::Lt:
  case OpKind::Le: case OpKind::Gt: case OpKind::Ge: case OpKind::LogicalAnd:
  case OpKind::LogicalOr: case OpKind::Where: case OpKind::Cast:
  case OpKind::BitwiseNot: case OpKind::BitwiseAnd: case OpKind::BitwiseOr:
  case OpKind::BitwiseXor:
    return; // Defined everywhere.
#define CGC_ELEMENTWISE_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not an elementwise op");
}

/// The extent that operand #\p k of the movement op \p n indexes, or -1
/// when it holds no indices.
static int64_t indexBound(const Node &n, unsigned k, const DimEnv &env) {
  const TensorType &data = n.operand(0)->getType();
  switch (n.getOp()) {
  case OpKind::Gather: {
    if (k != 1)
      return -1;
    unsigned axis = *normalizeAxis(n.intAttr("axis", 0), data.rank());
    return env.resolve(data.dims[axis]);
  }
  case OpKind::Embedding:
    return k == 1 ? env.resolve(data.dims[0]) : -1;
  case OpKind::IndexCopy: case OpKind::IndexAdd: {
    if (k != 1)
      return -1;
    unsigned axis = *normalizeAxis(n.intAttr("axis", 0), data.rank());
    return env.resolve(data.dims[axis]);
  }
  case OpKind::OneHot:
    return n.intAttr("num_classes", 1);
  case OpKind::PadPacked: case OpKind::PackPadded: // Real extents: [0, dim].
    return k == 0 ? -1 : env.resolve(data.dims[size_t(n.intsAttr("axes")[k - 1])]) + 1;
  case OpKind::Transpose: case OpKind::Reshape: case OpKind::BroadcastTo:
  case OpKind::Concat: case OpKind::Slice: case OpKind::ArgTopK:
    return -1;
#define CGC_MOVEMENT_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not a movement op");
}

/// Whether operand #\p k of the movement op \p n is copied into its result.
static bool movesData(const Node &n, unsigned k) {
  switch (n.getOp()) {
  case OpKind::Gather: case OpKind::PadPacked: case OpKind::PackPadded:
    return k == 0;
  case OpKind::IndexCopy:
    return k != 1;
  case OpKind::Embedding: case OpKind::OneHot:
  case OpKind::IndexAdd: // Sums, not copies.
  case OpKind::ArgTopK:  // Positions, not elements.
    return false;
  case OpKind::Transpose: case OpKind::Reshape: case OpKind::BroadcastTo:
  case OpKind::Concat: case OpKind::Slice:
    return true;
#define CGC_MOVEMENT_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not a movement op");
}

/// The region inputs that operand #\p k of \p n (if, while, fusion) binds.
static llvm::SmallVector<const Value *, 2> boundInputs(const Node &n,
                                                       unsigned k) {
  switch (n.getOp()) {
  case OpKind::If: // Operand 0 is the condition.
    if (k == 0)
      return {};
    return {n.region(0).inputs()[k - 1].value,
            n.region(1).inputs()[k - 1].value};
  case OpKind::While:
    return {n.region(0).inputs()[k].value, n.region(1).inputs()[k].value};
  case OpKind::Fusion:
  case OpKind::ProductFusion:
  case OpKind::RowFusion:
  case OpKind::ConvolutionFusion:
    return {n.region(0).inputs()[k].value};
#define CGC_CONTROL_FLOW_OP(...)
#define CGC_FUSED_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not an op with regions");
}

static void collect(const Value *v, const DimEnv &env, Domain &dom,
                    std::set<const Value *> &seen) {
  if (!seen.insert(v).second)
    return;
  for (const Use &use : v->uses()) {
    const Node &n = *use.user;
    unsigned k = use.operandIndex;
    switch (n.info().family) {
    case Elementwise:
      elementwiseDomain(n.getOp(), k, dom);
      break;
    case Movement:
      if (int64_t bound = indexBound(n, k, env); bound >= 0)
        dom.indexBound = bound;
      else if (movesData(n, k)) // The result's readers see these values.
        collect(n.result(), env, dom, seen);
      break;
    case Loss:
      switch (n.getOp()) {
      case OpKind::CrossEntropy: // Its targets index the classes.
        if (k == 1)
          dom.indexBound = env.resolve(n.operand(0)->getType().dims[1]);
        break;
      case OpKind::MseLoss:
        break;
#define CGC_LOSS_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
        llvm_unreachable("not a loss");
      }
      break;
    case Random: // dropout's operand #1 is the RNG state.
      dom.rng |= k == 1;
      break;
    case ControlFlow: case Fused:
      for (const Value *input : boundInputs(n, k))
        collect(input, env, dom, seen);
      break;
    case SyncPoint:
      switch (n.getOp()) {
      case OpKind::MaskedSelect: // Its result holds elements of operand #0.
        if (k == 0)
          collect(n.result(), env, dom, seen);
        break;
      case OpKind::NonZero: case OpKind::Item:
        break;
#define CGC_SYNC_POINT_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
        llvm_unreachable("not a sync point");
      }
      break;
    case Collective: // Result k is operand k's sum over the ranks.
      collect(n.result(k), env, dom, seen);
      break;
    case Source: case Reduction: case Scan: case Normalization: case MatMul:
    case Attention: case Convolution:
      break; // Defined everywhere.
    }
  }
}

static void fillRandomInputs(const Graph &graph, uint64_t seed,
                             std::map<std::string, Tensor> &inputs,
                             double boolDensity) {
  Generator gen(seed);
  DimEnv env(graph.dims());
  // Sizes for the declared symbolic dims first, up to 64 past the min (a
  // padded graph's first buckets; the interpreter's time stays small).
  for (unsigned s = 0; s < graph.dims().size(); ++s) {
    const SymbolicDim &d = graph.dims().get(s);
    if (d.dataDependent)
      continue;
    int64_t hi = std::min(d.max, d.min + 64);
    int64_t size = gen.integer(d.min, hi);
    env.bind({Dim::symbol(s)}, {size}, "dim");
  }
  for (const GraphInput &in : graph.inputs()) {
    if (isPersistent(in.kind) && in.init.source != Initializer::Source::None)
      continue;
    const TensorType &type = in.value->getType();
    Tensor t(type.dtype, env.resolve(type.dims));
    Domain dom;
    std::set<const Value *> seen;
    collect(in.value, env, dom, seen);
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v;
      if (dom.rng)
        v = double(gen.integer(0, 1 << 20));
      else if (type.dtype == DType::Bool)
        v = gen.uniform() < 1.0 - boolDensity ? 0 : 1;
      else if (dom.indexBound >= 0)
        v = double(gen.integer(0, std::max<int64_t>(dom.indexBound - 1, 0)));
      else if (isInteger(type.dtype))
        v = double(gen.integer(dom.positive ? 1 : -8, 8));
      else if (dom.positive)
        v = 0.1 + 2.9 * gen.uniform();
      else if (dom.awayFromZero)
        v = (0.5 + 1.5 * gen.uniform()) * (gen.uniform() < 0.5 ? -1 : 1);
      else
        v = -2.0 + 4.0 * gen.uniform();
      t.data[i] = elementOf(type.dtype, v);
    }
    inputs[in.value->getName()] = std::move(t);
  }
}

bool interp::randomInputs(const Graph &graph, uint64_t seed,
                          std::map<std::string, Tensor> &inputs,
                          std::string &error, const Limits &limits,
                          double boolDensity) {
  BudgetScope budget(limits.memoryBytes);
  inputs.clear();
  try {
    fillRandomInputs(graph, seed, inputs, boolDensity);
  } catch (const EvalError &e) {
    inputs.clear();
    error = std::string("random inputs: ") + e.what();
    return false;
  }
  return true;
}
