//===- PadDynamicShapes.cpp - Symbolic dims as masked bucket extents -------===//
//
// Algorithm: a graph whose symbolic dims will be bound to a bucket's extent
// (shape-infer with the bucket's bindings, after this pass) keeps the real
// extent of each dim D in a new i64[] input `dim.D` of kind `dim_size`,
// which the runtime writes before every replay. Every tensor then holds its
// real elements at the front of each symbolic axis and padding behind
// them, whatever its values (the caller's buffer beyond the real rows).
// Ops that keep element positions (elementwise, movement along other axes,
// products over static contractions, cumsum) carry the padding along and
// never mix it into real elements. Every op that would mix it in reads a
// masked operand instead, built from `iota < dim.D` along the axis:
//   - sum, mean (then divided by the real count), max, min and argmax over
//     a symbolic axis: padding becomes 0, -inf or +inf (the neutral value);
//   - softmax and log_softmax over a symbolic axis: padding becomes -inf;
//   - matmul contracting a symbolic K: both operands' padding becomes 0;
//   - mse_loss (mean, sum): the masked sum of squares over the real count;
//   - cross_entropy (mean, sum) over symbolic rows: padded rows take the
//     ignore_index (-100 when unset) and their logits 0;
// Indices in the padding of gather, embedding and one_hot need no mask:
// whatever they hold reads 0 or some row (out-of-range indices give 0),
// which lands in the padding of the result.
//   - attention over a symbolic key axis: k and v padding becomes 0 and the
//     keys' validity joins its mask;
//   - layernorm normalizing over a symbolic axis: written out as its masked
//     mean and variance over the real count (in f32), then the affine map;
// The caller's tensors hold their real elements packed (contiguous in the
// real shape's row-major order). Where that differs from the padded
// layout, an input or output with a symbolic dim after axis 0, the graph
// converts at its boundary: the input is read through a `pad_packed` of
// it and the output returned through a `pack_padded`, kernels that read
// the real extents on the device (axis 0 alone needs neither: its real
// rows come first either way).
// A reshape that only inserts or drops unit dims moves no element.
// Refused with a located error, saying why: a reshape that moves a
// symbolic axis (unit dims aside), a gather along a symbolic axis
// (negative and out-of-range indices would read padding), dropout of a tensor padded after axis 0 (its masks would
// differ from the unpadded tensor's), control flow and sync points over
// padded tensors.
// Requires: a verified graph, before shape-infer binds its dims.
// Guarantees: for every real extent within the bound, the real elements of
// every output equal those of the unpadded graph.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"
#include "passes/ValueBuilder.h"

#include "ir/TypeRules.h"

#include <limits>
#include <map>

using namespace cgc;

namespace {

class PadDynamicShapesPass : public Pass {
public:
  llvm::StringRef name() const override { return "pad-dynamic-shapes"; }
  llvm::StringRef summary() const override {
    return "keep the real extent of every symbolic dim on the device and "
           "mask the ops that would read padding";
  }
  bool run(Graph &graph, PassContext &ctx) override;

private:
  bool padded(Dim d) const {
    return !d.isStatic() && !g->dims().get(d.symbolIndex()).dataDependent;
  }
  bool anyPadded(const TensorType &t) const;
  bool anyPaddedAxis(const TensorType &t, llvm::ArrayRef<unsigned> axes) const;
  bool countKnown(const TensorType &t, llvm::ArrayRef<unsigned> axes) const;
  Value *convertLayout(Value *v, OpKind op);
  void convertBoundary();
  Value *validAlong(Dim d, unsigned axis, unsigned rank);
  Value *validMask(const TensorType &t, llvm::ArrayRef<unsigned> axes);
  Value *masked(Value *x, llvm::ArrayRef<unsigned> axes, double neutral);
  Value *realCount(const TensorType &t, llvm::ArrayRef<unsigned> axes,
                   DType dtype);
  bool rewrite(Node &n, std::string &why);
  bool rewriteReduction(Node &n);
  bool rewriteMseLoss(Node &n);
  void rewriteCrossEntropy(Node &n);
  void rewriteLayerNorm(Node &n, unsigned axis);
  bool reshapeKeepsAxes(const Node &n) const;
  bool rewriteAttention(Node &n, std::string &why);

  Graph *g = nullptr;
  ValueBuilder *gb = nullptr;
  std::map<unsigned, Value *> dimInputs; ///< By symbol index.
  /// bool[D] `iota < dim.D` per symbol index, built once at the top.
  std::map<unsigned, Value *> validIndices;
  std::vector<Node *> replaced;
};

} // namespace

bool PadDynamicShapesPass::anyPadded(const TensorType &t) const {
  return llvm::any_of(t.dims, [&](Dim d) { return padded(d); });
}

bool PadDynamicShapesPass::anyPaddedAxis(const TensorType &t,
                                         llvm::ArrayRef<unsigned> axes) const {
  return llvm::any_of(axes, [&](unsigned a) { return padded(t.dims[a]); });
}

/// Whether realCount can count \p axes: each static or padded (a
/// data-dependent dim's count lives elsewhere).
bool PadDynamicShapesPass::countKnown(const TensorType &t,
                                      llvm::ArrayRef<unsigned> axes) const {
  return llvm::all_of(axes, [&](unsigned a) {
    return t.dims[a].isStatic() || padded(t.dims[a]);
  });
}

/// The lowest (or highest) value of \p dtype, as a double.
static double lowest(DType dtype, bool highest) {
  double inf = std::numeric_limits<double>::infinity();
  switch (dtype) {
  case DType::F32: case DType::F16: case DType::BF16: return highest ? inf : -inf;
  case DType::I32: return highest ? 2147483647.0 : -2147483648.0;
  case DType::I64: return highest ? 9223372036854775807.0 : -9223372036854775808.0;
  case DType::Bool: return highest ? 1.0 : 0.0;
  }
  llvm_unreachable("a DType value");
}

/// \p op (pad_packed or pack_padded) of \p v over its padded axes.
Value *PadDynamicShapesPass::convertLayout(Value *v, OpKind op) {
  const TensorType &t = v->getType();
  std::vector<Value *> operands{v};
  std::vector<int64_t> axes;
  for (unsigned a = 0; a < t.rank(); ++a)
    if (padded(t.dims[a])) {
      axes.push_back(a);
      operands.push_back(dimInputs.at(t.dims[a].symbolIndex()));
    }
  return gb->op(op, operands, {{"axes", axes}});
}

/// Inputs read through pad_packed (after the masks' iotas, at the top),
/// outputs returned through pack_padded (at the end).
void PadDynamicShapesPass::convertBoundary() {
  for (const GraphInput &in : g->inputs()) {
    Value *v = in.value;
    if (in.kind == InputKind::DimSize || !crossesPacked(v->getType(), g->dims()) ||
        !v->hasUses())
      continue;
    llvm::SmallVector<Use, 4> uses(v->uses().begin(), v->uses().end());
    gb->setBase(v->getName() + ".padded");
    Value *p = convertLayout(v, OpKind::PadPacked);
    for (const Use &u : uses)
      u.user->setOperand(u.operandIndex, p);
  }
  gb->builder().setInsertionPointToEnd(*g);
  for (GraphOutput &o : g->outputs)
    if (crossesPacked(o.value->getType(), g->dims()) && o.value->getDef()) {
      // (A returned input is packed already.)
      gb->setBase(o.name + ".packed");
      o.value = convertLayout(o.value, OpKind::PackPadded);
    }
}

/// bool[1, .., D, .., 1] (D at \p axis): whether an index along it is real.
Value *PadDynamicShapesPass::validAlong(Dim d, unsigned axis, unsigned rank) {
  Value *valid = validIndices.at(d.symbolIndex());
  std::vector<Dim> shape(rank, Dim::fixed(1));
  shape[axis] = d;
  return rank == 1 ? valid : gb->reshape(valid, shape);
}

/// Whether an element of \p t is real along every padded axis of \p axes
/// (null when none is padded).
Value *PadDynamicShapesPass::validMask(const TensorType &t,
                                       llvm::ArrayRef<unsigned> axes) {
  Value *mask = nullptr;
  for (unsigned a : axes) {
    if (!padded(t.dims[a]))
      continue;
    Value *m = validAlong(t.dims[a], a, t.rank());
    mask = mask ? gb->op(OpKind::LogicalAnd, {mask, m}) : m;
  }
  return mask;
}

/// \p x with its padding along \p axes replaced by \p neutral.
Value *PadDynamicShapesPass::masked(Value *x, llvm::ArrayRef<unsigned> axes,
                                    double neutral) {
  Value *mask = validMask(x->getType(), axes);
  if (!mask)
    return x;
  return gb->where(mask, x, gb->fill(neutral, x->getType().dtype));
}

/// The real number of elements of \p t along \p axes, as a \p dtype scalar.
Value *PadDynamicShapesPass::realCount(const TensorType &t,
                                       llvm::ArrayRef<unsigned> axes,
                                       DType dtype) {
  double fixed = 1;
  Value *count = nullptr;
  for (unsigned a : axes) {
    if (!padded(t.dims[a])) {
      fixed *= double(t.dims[a].extent());
      continue;
    }
    Value *n = gb->op(OpKind::Cast, {dimInputs.at(t.dims[a].symbolIndex())},
                      {{"dtype", dtype}});
    count = count ? gb->mul(count, n) : n;
  }
  Value *k = gb->fill(fixed, dtype);
  return count ? gb->mul(count, k) : k;
}

bool PadDynamicShapesPass::rewriteReduction(Node &n) {
  const TensorType &in = n.operand(0)->getType();
  llvm::SmallVector<unsigned, 4> axes = reducedAxes(n, in.rank());
  if (!anyPaddedAxis(in, axes))
    return false;
  switch (n.getOp()) {
  case OpKind::Sum: n.setOperand(0, masked(n.operand(0), axes, 0.0)); return true;
  case OpKind::Prod: n.setOperand(0, masked(n.operand(0), axes, 1.0)); return true;
  case OpKind::Max: case OpKind::ArgMax:
    n.setOperand(0, masked(n.operand(0), axes, lowest(in.dtype, false)));
    return true;
  case OpKind::Min:
    n.setOperand(0, masked(n.operand(0), axes, lowest(in.dtype, true)));
    return true;
  case OpKind::Mean: {
    // Summed and divided in f32 (a half sum could overflow before the
    // division), as the unpadded mean computes.
    DType dtype = n.result()->getType().dtype;
    Value *x = masked(n.operand(0), axes, 0.0);
    if (dtype != DType::F32)
      x = gb->op(OpKind::Cast, {x}, {{"dtype", DType::F32}});
    Value *sum = gb->op(OpKind::Sum, {x}, n.attrs());
    Value *mean = gb->div(sum, realCount(in, axes, DType::F32));
    if (mean && dtype != DType::F32)
      mean = gb->op(OpKind::Cast, {mean}, {{"dtype", dtype}});
    if (!mean)
      return true;
    g->replaceAllUsesWith(n.result(), mean);
    replaced.push_back(&n);
    return true;
  }
#define CGC_REDUCTION_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("a reduction");
}

bool PadDynamicShapesPass::rewriteMseLoss(Node &n) {
  std::string reduction = n.strAttr("reduction", "mean");
  const TensorType &t = n.operand(0)->getType();
  std::vector<unsigned> all(t.rank());
  for (unsigned a = 0; a < t.rank(); ++a)
    all[a] = a;
  if (reduction == "none" || !anyPaddedAxis(t, all))
    return false;
  Value *d = gb->sub(n.operand(0), n.operand(1));
  Value *sq = masked(gb->mul(d, d), all, 0.0);
  if (t.dtype != DType::F32) // Summed in f32, as mse_loss computes.
    sq = gb->op(OpKind::Cast, {sq}, {{"dtype", DType::F32}});
  Value *sum = gb->op(OpKind::Sum, {sq});
  Value *loss = reduction == "sum" ? sum : gb->div(sum, realCount(t, all, DType::F32));
  if (loss && t.dtype != DType::F32)
    loss = gb->op(OpKind::Cast, {loss}, {{"dtype", t.dtype}});
  if (loss) {
    g->replaceAllUsesWith(n.result(), loss);
    replaced.push_back(&n);
  }
  return true;
}

void PadDynamicShapesPass::rewriteCrossEntropy(Node &n) {
  if (n.strAttr("reduction", "mean") == "none")
    return;
  int64_t ignore = n.intAttr("ignore_index", -100);
  n.setAttr("ignore_index", ignore);
  n.setOperand(0, masked(n.operand(0), {0}, 0.0));
  n.setOperand(1, masked(n.operand(1), {0}, double(ignore)));
}

/// y = (x - mean) * rsqrt(var + eps) * weight + bias over the axes from
/// \p axis on, the mean and variance over the real elements only (an
/// rms_norm: mean 0, no bias).
void PadDynamicShapesPass::rewriteLayerNorm(Node &n, unsigned axis) {
  const TensorType &t = n.operand(0)->getType();
  auto f32 = [&](Value *v) {
    return v->getType().dtype == DType::F32
               ? v : gb->op(OpKind::Cast, {v}, {{"dtype", DType::F32}});
  };
  std::vector<unsigned> axes;
  std::vector<int64_t> sumAxes;
  for (unsigned a = axis; a < t.rank(); ++a)
    axes.push_back(a), sumAxes.push_back(a);
  Value *count = realCount(t, axes, DType::F32);
  Value *x = f32(n.operand(0));
  Value *d = x;
  if (n.getOp() == OpKind::LayerNorm)
    d = gb->sub(x, gb->div(gb->sum(masked(x, axes, 0.0), sumAxes, true), count));
  Value *var = gb->div(gb->sum(masked(gb->mul(d, d), axes, 0.0), sumAxes, true),
                       count);
  Value *eps = gb->fill(n.floatAttr("eps", 1e-5), DType::F32);
  Value *y = gb->mul(d, gb->op(OpKind::Rsqrt, {gb->add(var, eps)}));
  if (n.numOperands() > 1)
    y = gb->mul(y, f32(n.operand(1)));
  if (n.numOperands() > 2)
    y = gb->add(y, f32(n.operand(2)));
  if (y && t.dtype != DType::F32)
    y = gb->op(OpKind::Cast, {y}, {{"dtype", t.dtype}});
  if (!y)
    return;
  g->replaceAllUsesWith(n.result(), y);
  replaced.push_back(&n);
}

/// attention over a padded key axis keeps only the real keys: k and v
/// read zeros in their padding, and the keys' validity becomes the mask,
/// or is and-ed into a bool mask, or makes an additive mask -inf there. Padded query rows give padded
/// result rows; a padded contracted width is refused.
bool PadDynamicShapesPass::rewriteAttention(Node &n, std::string &why) {
  const TensorType &q = n.operand(0)->getType(), &k = n.operand(1)->getType();
  unsigned rank = q.rank();
  if (padded(q.dims[rank - 1]))
    return why = "attention over a symbolic width (the padding would enter "
                 "every score)",
           false;
  Dim keys = k.dims[rank - 2];
  if (!padded(keys))
    return true;
  // Zero padded keys and values: the poison there would reach the real
  // rows through NaN scores and 0 * NaN.
  n.setOperand(1, masked(n.operand(1), {rank - 2}, 0));
  n.setOperand(2, masked(n.operand(2), {rank - 2}, 0));
  Value *valid = validAlong(keys, rank - 1, rank);
  if (n.numOperands() < 4) {
    n.addOperand(valid);
    return true;
  }
  Value *mask = n.operand(3);
  n.setOperand(3, mask->getType().dtype == DType::Bool
                      ? gb->op(OpKind::LogicalAnd, {mask, valid})
                      : gb->where(valid, mask,
                                  gb->fill(-INFINITY, mask->getType().dtype)));
  return true;
}

/// A reshape keeps every padded axis where it was: unit dims aside, the
/// dims up to the last symbolic one are the same before and after.
bool PadDynamicShapesPass::reshapeKeepsAxes(const Node &n) const {
  // Unit dims place no element: the shapes compare without them.
  auto withoutUnits = [](const TensorType &t) {
    std::vector<Dim> dims;
    for (Dim d : t.dims)
      if (!d.isStatic() || d.extent() != 1)
        dims.push_back(d);
    return dims;
  };
  std::vector<Dim> in = withoutUnits(n.operand(0)->getType()),
                   out = withoutUnits(n.result()->getType());
  unsigned last = 0;
  bool any = false;
  for (unsigned a = 0; a < in.size(); ++a)
    if (padded(in[a]))
      last = a, any = true;
  if (!any)
    return true;
  if (out.size() <= last)
    return false;
  for (unsigned a = 0; a <= last; ++a)
    if (in[a] != out[a])
      return false;
  return true;
}

/// Masks what \p n would read of the padding; false with \p why when it
/// cannot.
bool PadDynamicShapesPass::rewrite(Node &n, std::string &why) {
  bool paddedOperand = false;
  for (Value *v : n.getOperands())
    paddedOperand |= anyPadded(v->getType());
  if (!paddedOperand)
    return true;
  gb->setInsertionPoint(n);
  gb->setOrigin(n);
  gb->setBase(n.getName() + ".pad");
  const TensorType &x = n.operand(0)->getType();
  switch (n.info().family) {
  case Elementwise: case Source: case Scan: return true;
  case Reduction:
    if (n.getOp() == OpKind::Mean &&
        !countKnown(x, reductionAxes(n, x.rank())) &&
        anyPaddedAxis(x, reductionAxes(n, x.rank())))
      return why = "a mean over a padded dim and a data-dependent one (the "
                   "data-dependent dim's count is not known to this pass)",
             false;
    rewriteReduction(n);
    return true;
  case MatMul: {
    const TensorType &b = n.operand(1)->getType();
    switch (n.getOp()) {
    case OpKind::Linear: { // x[..., K] and weight[N, K]
      unsigned k = x.rank() - 1;
      if (padded(x.dims[k]) || padded(b.dims[1])) {
        n.setOperand(0, masked(n.operand(0), {k}, 0.0));
        n.setOperand(1, masked(n.operand(1), {1}, 0.0));
      }
      return true;
    }
    case OpKind::MatMul: {
      unsigned ka = n.boolAttr("transpose_a", false) ? x.rank() - 2 : x.rank() - 1;
      unsigned kb = n.boolAttr("transpose_b", false) ? b.rank() - 1 : b.rank() - 2;
      if (padded(x.dims[ka]) || padded(b.dims[kb])) {
        n.setOperand(0, masked(n.operand(0), {ka}, 0.0));
        n.setOperand(1, masked(n.operand(1), {kb}, 0.0));
      }
      return true;
    }
#define CGC_MATMUL_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
      break;
    }
    llvm_unreachable("not a product");
  }
  case Normalization: {
    unsigned axis = *normalizeAxis(n.intAttr("axis", -1), x.rank());
    switch (n.getOp()) {
    case OpKind::LayerNorm: case OpKind::RmsNorm: {
      std::vector<unsigned> axes;
      for (unsigned a = axis; a < x.rank(); ++a)
        axes.push_back(a);
      if (!anyPaddedAxis(x, axes))
        return true;
      if (!countKnown(x, axes))
        return why = n.info().mnemonic.str() + " over a padded dim and a data-dependent one",
               false;
      return rewriteLayerNorm(n, axis), true;
    }
    case OpKind::Softmax: case OpKind::LogSoftmax:
      n.setOperand(0, masked(n.operand(0), {axis}, lowest(x.dtype, false)));
      return true;
    case OpKind::BatchNorm: // The driver writes it out before padding.
      why = "batch_norm (expand-batch-norm writes it out first)";
      return false;
#define CGC_NORMALIZATION_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
      break;
    }
    llvm_unreachable("not a normalization");
  }
  case Loss:
    switch (n.getOp()) {
    case OpKind::MseLoss: {
      std::vector<unsigned> all(x.rank());
      for (unsigned a = 0; a < x.rank(); ++a)
        all[a] = a;
      if (!countKnown(x, all) && anyPaddedAxis(x, all))
        return why = "mse_loss over a padded dim and a data-dependent one", false;
      rewriteMseLoss(n);
      return true;
    }
    case OpKind::CrossEntropy:
      if (padded(x.dims[1]))
        return why = "cross_entropy over a symbolic number of classes", false;
      rewriteCrossEntropy(n);
      return true;
#define CGC_LOSS_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
      break;
    }
    llvm_unreachable("not a loss");
  case Movement:
    switch (n.getOp()) {
    case OpKind::Gather:
      if (padded(x.dims[*normalizeAxis(n.intAttr("axis", 0), x.rank())]))
        return why = "gather along a symbolic axis (negative and "
                     "out-of-range indices would read padding)",
               false;
      return true; // Indices in the padding read 0 or a row: padding.
    case OpKind::IndexCopy: case OpKind::IndexAdd: {
      const Dim &along = x.dims[*normalizeAxis(n.intAttr("axis", 0), x.rank())];
      if (padded(along))
        return why = mnemonic(n.getOp()).str() + " along a symbolic axis (negative "
                     "indices would count from the padding's end)",
               false;
      // A symbolic count of slices: an index in its padding becomes the
      // axis's extent, out of range, so it writes or adds nothing.
      if (padded(n.operand(1)->getType().dims[0]))
        n.setOperand(1, masked(n.operand(1), {0}, double(along.extent())));
      return true; // Sources' padding along other axes lands in x's padding.
    }
    case OpKind::Reshape:
      if (!reshapeKeepsAxes(n))
        return why = "a reshape that moves a symbolic axis (the padding "
                     "would interleave with real elements)",
               false;
      return true;
    case OpKind::Embedding: case OpKind::OneHot:
      return true; // Their padded indices give padding.
    case OpKind::ArgTopK: // Its type rule takes a static last axis only.
      return true; // Padded rows rank padding.
    case OpKind::Transpose: case OpKind::BroadcastTo: case OpKind::Slice:
    case OpKind::Concat:
      return true; // Of static dims only (their type rules).
    case OpKind::PadPacked: case OpKind::PackPadded:
      return true; // This pass's own layout changes.
#define CGC_MOVEMENT_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
      break;
    }
    llvm_unreachable("not a movement op");
  case Random:
    for (unsigned a = 1; a < x.rank(); ++a)
      if (padded(x.dims[a]))
        return why = "dropout of a tensor with a symbolic dim after axis 0 "
                     "(its masks would differ from the unpadded tensor's)",
               false;
    return true;
  case Attention:
    return rewriteAttention(n, why);
  case Convolution: // The driver writes it out before padding.
    why = mnemonic(n.getOp()).str() + " (expand-convolution writes it out first)";
    return false;
  case SyncPoint: case Collective: case ControlFlow: case Fused:
    why = mnemonic(n.getOp()).str() + " of a tensor with a symbolic dim";
    return false;
  }
  llvm_unreachable("an op family");
}

bool PadDynamicShapesPass::run(Graph &graph, PassContext &ctx) {
  g = &graph;
  dimInputs.clear();
  replaced.clear();
  std::vector<unsigned> used;
  for (unsigned i = 0; i < graph.dims().size(); ++i)
    if (!graph.dims().get(i).dataDependent)
      used.push_back(i);
  if (used.empty())
    return true;
  for (unsigned i : used) {
    std::string name = "dim." + graph.dims().get(i).name;
    if (graph.lookupValue(name)) {
      ctx.diag.error({}, "pad-dynamic-shapes: the graph already has a value "
                         "named '" + name + "', which holds the real extent "
                         "of dim '" + graph.dims().get(i).name + "'");
      return false;
    }
    Value *v = graph.addInput(name, TensorType::scalar(DType::I64));
    graph.input(graph.inputs().size() - 1).kind = InputKind::DimSize;
    dimInputs[i] = v;
  }
  GraphBuilder builder(graph, ctx.diag);
  ValueBuilder values(builder);
  gb = &values;
  // Every dim's `iota < dim.D` first, the iotas together, then the
  // comparisons: kernel batching runs each group as one kernel (dce drops
  // those no mask reads).
  validIndices.clear();
  if (!graph.nodes().empty())
    gb->setInsertionPoint(*graph.nodes().front());
  else
    builder.setInsertionPointToEnd(graph);
  std::map<unsigned, Value *> iotas;
  for (unsigned i : used) {
    gb->setBase("dim." + graph.dims().get(i).name + ".index");
    iotas[i] = gb->op(OpKind::Iota, {},
                      {{"dtype", DType::I64},
                       {"shape", std::vector<Dim>{Dim::symbol(i)}},
                       {"axis", int64_t(0)}});
  }
  for (unsigned i : used) {
    gb->setBase("dim." + graph.dims().get(i).name + ".valid");
    validIndices[i] = gb->op(OpKind::Lt, {iotas[i], dimInputs[i]});
  }
  convertBoundary();
  std::vector<Node *> nodes;
  for (const auto &n : graph.nodes())
    nodes.push_back(n.get());
  bool ok = true;
  for (Node *n : nodes) {
    std::string why;
    if (!rewrite(*n, why)) {
      ctx.diag.nodeError(*n, "cannot pad: " + why);
      ok = false;
    }
  }
  graph.erase(replaced);
  return ok && !values.hasFailed();
}

std::unique_ptr<Pass> cgc::createPadDynamicShapesPass() {
  return std::make_unique<PadDynamicShapesPass>();
}
