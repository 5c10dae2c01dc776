//===- BatchNormDerivatives.cpp - batch_norm's vector-Jacobian product ----===//
//
// Part of autodiff's rules (DerivativeRules.h). For y = batch_norm(x, w,
// b, rm, rv) over x [N, C, S..], given g = dL/dy, with sums over every
// axis but 1 (M elements per channel), invstd = rsqrt(var + eps) and
// xhat = (x - mean) invstd:
//   training (the batch's mean and biased variance, batchStatistics):
//     db = sum(g), dw = sum(g xhat),
//     dx = w invstd (g - db / M) - (x - mean) w invstd^2 dw / M
//   (PyTorch's batch_norm_backward: the mean's and the variance's paths
//   folded into the two sums; rm and rv get none, y does not read them);
//   inference (rm and rv): db and dw as above, dx = g w invstd,
//   drm = -db w invstd, drv = -dw w invstd^2 / 2.
// Written out by the elementwise ops the fusion passes know, in f32 for
// f16 and bf16 (rounded once to each operand's dtype), reading x - mean
// (for f32 x the forward's value after cse; for f16 and bf16 the f32
// one the statistics compute) rather than xhat. Each sum is over the
// spatial axes first, then over the batch (fuse-rows folds both spatial
// sums into one row kernel, g (x - mean) a prologue, then a column each),
// where autodiff of the expanded op made six reductions and as many
// elementwise kernels per batch norm. In training static shapes only (M is a constant).
//
//===----------------------------------------------------------------------===//
#include "passes/BatchNorm.h"
#include "passes/DerivativeRules.h"

using namespace cgc;

namespace {

/// \p v [N, C, S..] summed over S.. and then N, kept as [1, C, 1..1].
Value *channelSum(ValueBuilder &gb, Value *v) {
  std::vector<int64_t> spatial;
  for (unsigned a = 2; a < v->getType().rank(); ++a)
    spatial.push_back(a);
  return gb.sum(gb.sum(v, spatial, /*keepdim=*/true), {0}, /*keepdim=*/true);
}

} // namespace

bool cgc::batchNormAdjoints(const Node &n, Value *g, ValueBuilder &gb,
                            std::vector<Value *> &adjoints, std::string &why) {
  const TensorType &type = n.operand(0)->getType();
  bool training = n.boolAttr("training", false);
  if (training && !type.isStatic()) {
    why = "no derivative rule for a batch_norm in training over symbolic dims yet";
    return false;
  }
  std::vector<Dim> column(type.rank(), Dim::fixed(1));
  column[1] = type.dims[1];
  auto wide = [&](Value *v) { return gb.cast(v, DType::F32); };
  auto asColumn = [&](unsigned i) { return gb.reshape(wide(n.operand(i)), column); };
  // Back to operand i's dtype and shape.
  auto adjointOf = [&](unsigned i, Value *v) {
    const TensorType &t = n.operand(i)->getType();
    adjoints[i] = gb.cast(gb.reshape(v, t.dims), t.dtype);
  };
  Value *x = wide(n.operand(0)), *dy = wide(g);
  Value *mean, *var;
  if (training)
    std::tie(mean, var) = batchStatistics(gb, n.operand(0));
  else
    mean = asColumn(3), var = asColumn(4);
  Value *invstd = gb.op(OpKind::Rsqrt, {gb.add(var, gb.fill(n.floatAttr("eps", 1e-5),
                                                            DType::F32, "eps"))});
  // xhat is centered invstd; the kernels read centered (f32 x: the
  // forward's own value) and scale per channel rather than write xhat out.
  Value *centered = gb.sub(x, mean);
  Value *db = channelSum(gb, dy);
  Value *dw = gb.mul(channelSum(gb, gb.mul(dy, centered)), invstd);
  Value *scale = gb.mul(asColumn(1), invstd);
  if (training) {
    int64_t perChannel = type.numElements() / type.dims[1].extent();
    Value *m = gb.fill(double(perChannel), DType::F32, "count");
    Value *slope = gb.div(gb.mul(dw, gb.mul(scale, invstd)), m);
    adjointOf(0, gb.sub(gb.mul(scale, gb.sub(dy, gb.div(db, m))), gb.mul(centered, slope)));
  } else {
    adjointOf(0, gb.mul(dy, scale));
    adjointOf(3, gb.neg(gb.mul(db, scale)));
    adjointOf(4, gb.mul(gb.mul(dw, gb.mul(scale, invstd)), gb.fill(-0.5, DType::F32)));
  }
  adjointOf(1, dw);
  adjointOf(2, db);
  return true;
}
