//===- DerivativeRules.cpp - Vector-Jacobian products of IR ops -----------===//
//
// One rule per op: given the adjoint g of a node's result y, the adjoints
// of its operands, as IR ops that the later passes fuse like any other.
// Rules read the forward values they need (operands, and y where cheaper:
// exp, tanh, sigmoid, softmax read y); nothing is recomputed except what a
// rule states. Broadcasting is undone by summing over the broadcast axes
// (reduceTo). Ops without a rule are refused by name (docs/passes.md lists
// the covered ones).
//
//===----------------------------------------------------------------------===//
#include "passes/DerivativeRules.h"

#include "ir/OpAttrs.h"
#include "ir/TypeRules.h"

#include <cmath>
#include <numeric>

using namespace cgc;

namespace {

/// The rules, each filling `adj` (one entry per operand).
struct Rules {
  const Node &n;
  Value *g;
  ValueBuilder &gb;
  std::vector<Value *> &adj;

  Value *x(unsigned i = 0) const { return n.operand(i); }
  Value *y() const { return n.result(); }
  DType dtype() const { return y()->getType().dtype; }
  Value *k(double v) const { return gb.fill(v, dtype()); }
  void set(unsigned i, Value *v) { adj[i] = gb.reduceTo(v, x(i)->getType()); }

  bool prod();
  bool cumsum(std::string &why);
  Value *spreadStrided(Value *d, unsigned axis, int64_t extent, SliceRange range,
                       int64_t step);
  bool binary();
  Value *sign();
  Value *geluSlope();
  bool reduction();
  bool extremum();
  Value *geluTanhSlope();
  bool pow();
  bool pick(OpKind wins);
  bool slice(std::string &why);
  bool concat();
  bool product();
  bool normalization();
  bool layerNorm();
  bool loss();
};

/// y = a op b, broadcast: each operand's share, summed back to its shape.
bool Rules::binary() {
  Value *a = x(0), *b = x(1);
  OpKind op = n.getOp();
  if (op == OpKind::Add || op == OpKind::Sub) {
    set(0, g);
    set(1, op == OpKind::Add ? g : gb.neg(g));
  } else if (op == OpKind::Mul) {
    set(0, gb.mul(g, b));
    set(1, gb.mul(g, a));
  } else { // div: y = a / b, so db = -g y / b
    set(0, gb.div(g, b));
    set(1, gb.neg(gb.div(gb.mul(g, y()), b)));
  }
  return true;
}

/// d|a| = sign(a), 0 at 0.
Value *Rules::sign() {
  Value *a = x(), *zero = k(0);
  auto indicator = [&](OpKind cmp) {
    return gb.op(OpKind::Cast, {gb.op(cmp, {a, zero})}, {{"dtype", dtype()}});
  };
  return gb.sub(indicator(OpKind::Gt), indicator(OpKind::Lt));
}

/// d(a Phi(a)) = Phi(a) + a phi(a), with Phi the normal CDF.
Value *Rules::geluSlope() {
  Value *a = x();
  Value *cdf = gb.scale(gb.add(k(1), gb.op(OpKind::Erf, {gb.scale(a, M_SQRT1_2)})), 0.5);
  Value *pdf = gb.scale(gb.op(OpKind::Exp, {gb.scale(gb.mul(a, a), -0.5)}),
                        0.5 * M_2_SQRTPI * M_SQRT1_2);
  return gb.add(cdf, gb.mul(a, pdf));
}

bool Rules::reduction() {
  const TensorType &in = x()->getType();
  auto axes = reductionAxes(n, in.rank());
  bool keepdim = n.boolAttr("keepdim", false);
  if (n.getOp() == OpKind::Sum) {
    adj[0] = gb.expandFrom(g, in, axes, keepdim);
    return true;
  }
  if (n.getOp() == OpKind::Mean) {
    int64_t count = 1;
    for (unsigned a : axes) {
      if (!in.dims[a].isStatic())
        return false;
      count *= in.dims[a].extent();
    }
    adj[0] = gb.expandFrom(gb.scale(g, 1.0 / double(count)), in, axes, keepdim);
    return true;
  }
  return false;
}

/// max or min over axes: g to the elements equal to the result, split
/// evenly among ties (PyTorch's amax/amin).
bool Rules::extremum() {
  const TensorType &in = x()->getType();
  auto axes = reductionAxes(n, in.rank());
  bool keepdim = n.boolAttr("keepdim", false);
  std::vector<int64_t> ax(axes.begin(), axes.end());
  Value *at = gb.op(OpKind::Cast, {gb.op(OpKind::Eq, {x(), gb.expandFrom(y(), in, axes, keepdim)})},
                    {{"dtype", dtype()}});
  Value *ties = gb.expandFrom(gb.sum(at, ax, true), in, axes, true);
  adj[0] = gb.div(gb.mul(at, gb.expandFrom(g, in, axes, keepdim)), ties);
  return true;
}

/// prod over axes: dx_i = g times the product of the other elements of
/// its group; with no zero there, y / x_i; with one zero, the product of
/// the nonzero ones at the zero and 0 elsewhere; with more, 0 (PyTorch's
/// prod_backward, exact at zeros where y / x would not be).
bool Rules::prod() {
  const TensorType &in = x()->getType();
  auto axes = reductionAxes(n, in.rank());
  bool keepdim = n.boolAttr("keepdim", false);
  std::vector<int64_t> ax(axes.begin(), axes.end());
  Value *isZero = gb.op(OpKind::Eq, {x(), k(0)});
  Value *zeros = gb.expandFrom(
      gb.sum(gb.op(OpKind::Cast, {isZero}, {{"dtype", dtype()}}), ax, true), in, axes, true);
  Value *safe = gb.where(isZero, k(1), x());
  Value *others = gb.expandFrom(gb.op(OpKind::Prod, {safe}, {{"axes", ax}, {"keepdim", true}}),
                                in, axes, true);
  Value *none = gb.op(OpKind::Eq, {zeros, k(0)});
  Value *one = gb.op(OpKind::LogicalAnd, {gb.op(OpKind::Eq, {zeros, k(1)}), isZero});
  Value *slope = gb.where(none, gb.div(others, safe), gb.where(one, others, k(0)));
  adj[0] = gb.mul(slope, gb.expandFrom(g, in, axes, keepdim));
  return true;
}

/// d(0.5 a (1 + tanh(u))) with u = c (a + 0.044715 a^3), c = sqrt(2/pi):
/// 0.5 (1 + t) + 0.5 a (1 - t^2) c (1 + 3 * 0.044715 a^2).
Value *Rules::geluTanhSlope() {
  Value *a = x(), *a2 = gb.mul(x(), x());
  double c = M_2_SQRTPI * M_SQRT1_2;
  Value *t = gb.op(OpKind::Tanh, {gb.scale(gb.add(a, gb.scale(gb.mul(a2, a), 0.044715)), c)});
  Value *du = gb.scale(gb.add(k(1), gb.scale(a2, 3 * 0.044715)), c);
  Value *half = gb.scale(gb.add(k(1), t), 0.5);
  return gb.add(half, gb.mul(gb.scale(a, 0.5), gb.mul(gb.sub(k(1), gb.mul(t, t)), du)));
}

/// y = a^b: da = g b a^(b-1), db = g y log(a).
bool Rules::pow() {
  Value *a = x(0), *b = x(1);
  set(0, gb.mul(g, gb.mul(b, gb.op(OpKind::Pow, {a, gb.sub(b, k(1))}))));
  set(1, gb.mul(g, gb.mul(y(), gb.op(OpKind::Log, {a}))));
  return true;
}

/// maximum (wins = Gt) or minimum (Lt): g to the winner, half to each of
/// a tie (PyTorch's).
bool Rules::pick(OpKind wins) {
  Value *a = x(0), *b = x(1);
  Value *half = gb.scale(g, 0.5), *zero = k(0);
  Value *tie = gb.op(OpKind::Eq, {a, b});
  set(0, gb.where(gb.op(wins, {a, b}), g, gb.where(tie, half, zero)));
  set(1, gb.where(gb.op(wins, {b, a}), g, gb.where(tie, half, zero)));
  return true;
}

/// g put back where the slice took it from: zeros before and after along
/// each sliced axis (concat). Steps of 1 over static axes.
bool Rules::slice(std::string &why) {
  const TensorType &in = x()->getType();
  auto [starts, ends, axes, steps] = sliceParams(n);
  Value *d = g;
  for (size_t i = 0; i < starts.size(); ++i) {
    unsigned axis = *normalizeAxis(axes[i], in.rank());
    if (!in.dims[axis].isStatic()) {
      why = "no derivative rule for a slice over a symbolic dim yet";
      return false;
    }
    int64_t extent = in.dims[axis].extent();
    if (steps[i] != 1) {
      d = spreadStrided(d, axis, extent, sliceRange(starts[i], ends[i], steps[i], extent),
                        steps[i]);
      continue;
    }
    SliceRange range = sliceRange(starts[i], ends[i], 1, extent);
    std::vector<Value *> parts;
    auto zeros = [&](int64_t count) {
      TensorType t = d->getType();
      t.dims[axis] = Dim::fixed(count);
      parts.push_back(gb.zeros(t));
    };
    if (range.begin > 0)
      zeros(range.begin);
    parts.push_back(d);
    if (range.begin + range.extent < extent)
      zeros(extent - range.begin - range.extent);
    if (parts.size() > 1)
      d = gb.op(OpKind::Concat, parts, {{"axis", int64_t(axis)}});
  }
  adj[0] = d;
  return true;
}

/// \p d (a strided slice's adjoint along \p axis) written at the positions
/// begin, begin + step, ... of zeros \p extent long there.
Value *Rules::spreadStrided(Value *d, unsigned axis, int64_t extent, SliceRange range,
                            int64_t step) {
  TensorType full = d->getType();
  full.dims[axis] = Dim::fixed(extent);
  if (range.extent == 0)
    return gb.zeros(full);
  // One element: the step never counts (it may be past the axis).
  if (range.extent == 1)
    step = 1;
  // Index moves and zeros only, which fuse-views reads through: each
  // element followed by step - 1 zeros ([.., E, 1, ..] beside zeros
  // [.., E, step - 1, ..], merged), cut or padded to what follows begin.
  auto withAxis = [&](Value *v, int64_t at, int64_t n) {
    TensorType t = v->getType();
    t.dims[at] = Dim::fixed(n);
    return t;
  };
  Value *spread = d;
  if (step > 1) {
    Value *column = gb.unitAfter(d, axis);
    spread = gb.op(OpKind::Concat, {column, gb.zeros(withAxis(column, axis + 1, step - 1))},
                   {{"axis", int64_t(axis + 1)}});
    std::vector<Dim> merged(d->getType().dims.begin(), d->getType().dims.end());
    merged[axis] = Dim::fixed(range.extent * step);
    spread = gb.reshape(spread, merged);
  }
  int64_t room = extent - range.begin;
  if (range.extent * step > room)
    spread = gb.slice(spread, axis, 0, room);
  std::vector<Value *> parts;
  if (range.begin > 0)
    parts.push_back(gb.zeros(withAxis(spread, axis, range.begin)));
  parts.push_back(spread);
  if (range.extent * step < room)
    parts.push_back(gb.zeros(withAxis(spread, axis, room - range.extent * step)));
  return parts.size() == 1 ? parts.front()
                           : gb.op(OpKind::Concat, parts, {{"axis", int64_t(axis)}});
}

/// cumsum: x_i reaches every y_j with j >= i, so dx is the running sum
/// of g from the end: g reversed along the axis (a gather at n-1..0),
/// cumsum, reversed back (summed in that order, as PyTorch does, not as
/// sum(g) - cumsum(g) + g, which loses small tails beside large heads).
bool Rules::cumsum(std::string &why) {
  const TensorType &in = x()->getType();
  unsigned axis = *normalizeAxis(n.intAttr("axis", 0), in.rank());
  if (!in.dims[axis].isStatic()) {
    why = "no derivative rule for a cumsum over a symbolic dim yet";
    return false;
  }
  int64_t extent = in.dims[axis].extent();
  std::vector<Number> backwards;
  for (int64_t i = extent; i-- > 0;)
    backwards.push_back(Number::ofInt(i));
  Value *index = gb.op(OpKind::Constant, {},
                       {{"dtype", DType::I64},
                        {"shape", std::vector<Dim>{Dim::fixed(extent)}},
                        {"value", backwards}});
  AttrMap along = {{"axis", int64_t(axis)}};
  Value *reversed = gb.op(OpKind::Gather, {g, index}, along);
  Value *running = gb.op(OpKind::CumSum, {reversed}, along);
  set(0, gb.op(OpKind::Gather, {running, index}, along));
  return true;
}

/// Each operand's part of g along the axis.
bool Rules::concat() {
  unsigned axis = *normalizeAxis(n.intAttr("axis", 0), y()->getType().rank());
  int64_t offset = 0;
  for (unsigned i = 0; i < n.numOperands(); ++i) {
    int64_t extent = x(i)->getType().dims[axis].extent();
    adj[i] = gb.slice(g, axis, offset, offset + extent);
    offset += extent;
  }
  return true;
}

bool Rules::product() {
  Value *a = x(0), *b = x(1);
  if (n.getOp() == OpKind::Linear) { // y = a w^T + bias
    // Leading dims of a (static) merged into rows: [M, K] and g [M, N].
    const TensorType &ta = a->getType();
    Value *a2 = a, *g2 = g;
    if (ta.rank() != 2) {
      if (!ta.isStatic())
        return false;
      int64_t rows = ta.numElements() / ta.dims.back().extent();
      a2 = gb.reshape(a, {Dim::fixed(rows), ta.dims.back()});
      g2 = gb.reshape(g, {Dim::fixed(rows), g->getType().dims.back()});
    }
    adj[0] = gb.reshape(gb.matmul(g2, b, false, false), ta.dims);
    adj[1] = gb.matmul(g2, a2, true, false);
    if (n.numOperands() == 3)
      adj[2] = gb.sum(g2, {0}, false);
    return true;
  }
  bool ta = n.boolAttr("transpose_a", false), tb = n.boolAttr("transpose_b", false);
  // y = A' B' with A' = ta ? a^T : a: dA' = g B'^T, dB' = A'^T g; batch
  // dims that broadcast are summed back (set).
  set(0, ta ? gb.matmul(b, g, tb, true) : gb.matmul(g, b, false, !tb));
  set(1, tb ? gb.matmul(g, a, true, ta) : gb.matmul(a, g, !ta, false));
  return true;
}

/// softmax: y (g - sum(g y)); log_softmax: g - exp(y) sum(g); both over
/// the op's axis.
bool Rules::normalization() {
  const TensorType &in = x()->getType();
  auto axis = normalizeAxis(n.intAttr("axis", -1), in.rank());
  if (!axis)
    return false;
  std::vector<int64_t> ax = {int64_t(*axis)};
  if (n.getOp() == OpKind::Softmax)
    adj[0] = gb.mul(y(), gb.sub(g, gb.sum(gb.mul(g, y()), ax, true)));
  else
    adj[0] = gb.sub(g, gb.mul(gb.op(OpKind::Exp, {y()}), gb.sum(g, ax, true)));
  return true;
}

/// y = x^ w + b with x^ = (x - mean) rstd over dims axis..rank-1, the
/// statistics recomputed from x: dx = rstd (g^ - mean(g^) - x^ mean(g^ x^))
/// with g^ = g w; dw = sum of g x^ and db = sum of g over the leading dims.
bool Rules::layerNorm() {
  const TensorType &in = x()->getType();
  auto axis = normalizeAxis(n.intAttr("axis", -1), in.rank());
  if (!axis)
    return false;
  std::vector<int64_t> norm, leading;
  for (unsigned d = 0; d < in.rank(); ++d)
    (d < *axis ? leading : norm).push_back(d);
  auto mean = [&](Value *v) {
    return gb.op(OpKind::Mean, {v}, {{"axes", norm}, {"keepdim", true}});
  };
  // rms_norm: not centered (the terms of the mean drop out).
  bool rms = n.getOp() == OpKind::RmsNorm;
  Value *centered = rms ? x() : gb.sub(x(), mean(x()));
  Value *variance = mean(gb.mul(centered, centered));
  Value *rstd = gb.op(OpKind::Rsqrt, {gb.add(variance, k(n.floatAttr("eps", 1e-5)))});
  Value *normalized = gb.mul(centered, rstd);
  Value *gHat = n.numOperands() > 1 ? gb.mul(g, x(1)) : g;
  adj[0] = gb.mul(rstd, gb.sub(rms ? gHat : gb.sub(gHat, mean(gHat)),
                               gb.mul(normalized, mean(gb.mul(gHat, normalized)))));
  if (n.numOperands() > 1)
    adj[1] = gb.sum(gb.mul(g, normalized), leading, false);
  if (n.numOperands() > 2)
    adj[2] = gb.sum(g, leading, false);
  return true;
}

bool Rules::loss() {
  Value *p = x(0), *t = x(1);
  std::string reduction = n.strAttr("reduction", "mean");
  if (n.getOp() == OpKind::MseLoss) {
    if (reduction == "mean" && !p->getType().isStatic())
      return false; // The count would be a device value.
    Value *d = gb.scale(gb.sub(p, t), 2.0);
    if (reduction == "mean")
      d = gb.scale(d, 1.0 / double(p->getType().numElements()));
    Value *dp = gb.mul(d, g);
    adj[0] = dp;
    adj[1] = gb.neg(dp);
    return true;
  }
  // cross_entropy: (softmax(l) - one_hot(t)) over the rows not ignored,
  // divided by their count for a mean (0 when none is left).
  const TensorType &lt = p->getType();
  if (lt.rank() != 2 || !lt.dims[1].isStatic())
    return false;
  int64_t classes = lt.dims[1].extent();
  DType it = t->getType().dtype;
  Value *keep = gb.op(OpKind::Cast,
                      {gb.op(OpKind::Ne, {t, gb.fill(double(n.intAttr("ignore_index", -100)), it)})},
                      {{"dtype", dtype()}});
  Value *onehot = gb.op(OpKind::OneHot, {t}, {{"num_classes", classes}, {"dtype", dtype()}});
  Value *diff = gb.sub(gb.op(OpKind::Softmax, {p}), onehot);
  Value *rowScale = keep;
  if (reduction == "mean")
    rowScale = gb.div(gb.mul(keep, g),
                      gb.op(OpKind::Maximum, {gb.sum(keep, {0}, false), k(1)}));
  else
    rowScale = gb.mul(keep, g);
  adj[0] = gb.mul(diff, gb.reshape(rowScale, {lt.dims[0], Dim::fixed(1)}));
  return true;
}

} // namespace

bool cgc::operandAdjoints(const Node &n, Value *g, ValueBuilder &gb,
                          std::vector<Value *> &adjoints, std::string &why) {
  adjoints.assign(n.numOperands(), nullptr);
  gb.setBase(n.getName() + ".bwd");
  Rules r{n, g, gb, adjoints};
  bool ok = false;
  switch (n.getOp()) {
  case OpKind::Neg: r.set(0, gb.neg(g)); return true;
  case OpKind::Exp: r.set(0, gb.mul(g, r.y())); return true;
  case OpKind::Log: r.set(0, gb.div(g, r.x())); return true;
  case OpKind::Sqrt: r.set(0, gb.div(gb.scale(g, 0.5), r.y())); return true;
  case OpKind::Rsqrt: // d(a^-1/2) = -y^3 / 2
    r.set(0, gb.mul(gb.scale(g, -0.5), gb.mul(r.y(), gb.mul(r.y(), r.y()))));
    return true;
  case OpKind::Tanh:
    r.set(0, gb.mul(g, gb.sub(r.k(1), gb.mul(r.y(), r.y()))));
    return true;
  case OpKind::Sigmoid:
    r.set(0, gb.mul(g, gb.mul(r.y(), gb.sub(r.k(1), r.y()))));
    return true;
  case OpKind::Relu:
    r.set(0, gb.where(gb.op(OpKind::Gt, {r.x(), r.k(0)}), g, r.k(0)));
    return true;
  case OpKind::Abs: r.set(0, gb.mul(g, r.sign())); return true;
  case OpKind::Gelu: r.set(0, gb.mul(g, r.geluSlope())); return true;
  case OpKind::Erf: // 2/sqrt(pi) exp(-a^2)
    r.set(0, gb.mul(gb.scale(g, M_2_SQRTPI),
                    gb.op(OpKind::Exp, {gb.neg(gb.mul(r.x(), r.x()))})));
    return true;
  case OpKind::Sin: r.set(0, gb.mul(g, gb.op(OpKind::Cos, {r.x()}))); return true;
  case OpKind::Cos:
    r.set(0, gb.neg(gb.mul(g, gb.op(OpKind::Sin, {r.x()}))));
    return true;
  case OpKind::Cast:
    if (isFloat(r.x()->getType().dtype))
      r.set(0, gb.op(OpKind::Cast, {g}, {{"dtype", r.x()->getType().dtype}}));
    return true;
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div:
    return r.binary();
  case OpKind::Where:
    r.set(1, gb.where(r.x(0), g, r.k(0)));
    r.set(2, gb.where(r.x(0), r.k(0), g));
    return true;
  case OpKind::Sum: case OpKind::Mean:
    ok = r.reduction();
    break;
  case OpKind::MatMul: case OpKind::Linear:
    ok = r.product();
    break;
  case OpKind::Softmax: case OpKind::LogSoftmax:
    ok = r.normalization();
    break;
  case OpKind::LayerNorm: case OpKind::RmsNorm:
    ok = r.layerNorm();
    break;
  case OpKind::Dropout: { // The same mask: dropout of g at the same offset.
    std::vector<Value *> operands(n.getOperands().begin(), n.getOperands().end());
    operands[0] = g;
    adjoints[0] = gb.op(OpKind::Dropout, operands, n.attrs());
    return true;
  }
  case OpKind::MseLoss: case OpKind::CrossEntropy:
    ok = r.loss();
    break;
  case OpKind::Reshape:
    adjoints[0] = gb.reshape(g, n.operand(0)->getType().dims);
    ok = true;
    break;
  case OpKind::Transpose: {
    std::vector<int64_t> perm = n.intsAttr("perm"), inverse(perm.size());
    unsigned rank = n.operand(0)->getType().rank();
    if (perm.empty())
      for (unsigned i = 0; i < rank; ++i)
        perm.push_back(rank - 1 - i);
    inverse.resize(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inverse[perm[i]] = int64_t(i);
    adjoints[0] = gb.op(OpKind::Transpose, {g}, {{"perm", inverse}});
    ok = true;
    break;
  }
  case OpKind::BroadcastTo:
    adjoints[0] = gb.reduceTo(g, n.operand(0)->getType());
    ok = true;
    break;
  case OpKind::GeluTanh: r.set(0, gb.mul(g, r.geluTanhSlope())); return true;
  case OpKind::Pow: return r.pow();
  case OpKind::Maximum: return r.pick(OpKind::Gt);
  case OpKind::Minimum: return r.pick(OpKind::Lt);
  case OpKind::Max: case OpKind::Min: return r.extremum();
  case OpKind::Slice: return r.slice(why);
  case OpKind::Concat: return r.concat();
  case OpKind::Gather: case OpKind::Embedding: return gatherAdjoints(n, g, gb, adjoints, why);
  case OpKind::Conv: case OpKind::ConvTranspose:
    return convolutionAdjoints(n, g, gb, adjoints, why);
  case OpKind::BatchNorm: return batchNormAdjoints(n, g, gb, adjoints, why);
  case OpKind::CumSum: return r.cumsum(why);
  case OpKind::Prod: return r.prod();
  case OpKind::Fmod: { // a - trunc(a / b) b: da = g, db = -g trunc(a / b).
    Value *q = gb.div(r.x(0), r.x(1));
    Value *trunc = gb.where(gb.op(OpKind::Ge, {q, r.k(0)}), gb.op(OpKind::Floor, {q}),
                            gb.op(OpKind::Ceil, {q}));
    r.set(0, g);
    r.set(1, gb.neg(gb.mul(g, trunc)));
    return true;
  }
  case OpKind::IndexCopy: return indexCopyAdjoints(n, g, gb, adjoints, why);
  case OpKind::IndexAdd: return indexAddAdjoints(n, g, gb, adjoints, why);
  case OpKind::PadPacked:
  case OpKind::PackPadded: case OpKind::If: case OpKind::While: case OpKind::Fusion:
  case OpKind::ProductFusion: case OpKind::RowFusion: case OpKind::ConvolutionFusion:
  case OpKind::NonZero: case OpKind::MaskedSelect: case OpKind::Item:
  case OpKind::Attention: // expand-attention writes it out before autodiff.
  case OpKind::MaxPool: case OpKind::AvgPool: case OpKind::Interpolate:
    // expand-convolution writes them out first.
  case OpKind::ConvWeightGrad: // Made by conv's rule; no second derivatives.
  case OpKind::AllReduce: // data-parallel adds it after autodiff.
    why = "no derivative rule for " + mnemonic(n.getOp()).str() + " yet";
    return false;
  case OpKind::LogicalNot: case OpKind::Eq: case OpKind::Ne: case OpKind::Lt:
  case OpKind::Le: case OpKind::Gt: case OpKind::Ge: case OpKind::LogicalAnd:
  case OpKind::LogicalOr: case OpKind::Constant: case OpKind::Fill:
  case OpKind::BitwiseNot: case OpKind::BitwiseAnd: case OpKind::BitwiseOr:
  case OpKind::BitwiseXor:
  case OpKind::Iota: case OpKind::ArgMax: case OpKind::ArgTopK: case OpKind::OneHot:
  case OpKind::Floor: case OpKind::Ceil: case OpKind::Round:
    return true; // Results that carry no gradient (zero almost everywhere).
  }
  if (!ok && why.empty())
    why = "no derivative rule for this form of " + mnemonic(n.getOp()).str() +
          " yet";
  return ok;
}
