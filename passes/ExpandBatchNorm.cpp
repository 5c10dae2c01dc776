//===- ExpandBatchNorm.cpp - batch_norm as per-channel arithmetic ---------===//
//
// Algorithm: every `batch_norm` node (in regions too), x [N, C, S..] with
// weight w, bias b, running mean rm and variance rv, is replaced by
//   mean  = rm, or with training mean(x) over every axis but 1
//   var   = rv, or with training mean((x - mean)^2) over the same axes
//           (batch statistics in f32 for f16 and bf16 x, cast back)
//   scale = rsqrt(var + eps) * w
//   y     = (x - mean) * scale + b
// each per-channel operand reshaped to [C, 1..1] to broadcast against x:
// the chain the fusion passes fold into a convolution's epilogue
// (fuse-convolution-epilogue) or into one elementwise kernel. It runs
// first in the inference pipeline (driver/Compiler.cpp's prepareModel)
// and, with `cgc --train` or `--gradients`, after autodiff (which has
// batch_norm's own rule) and, for the eval graph, after eval-mode has
// cleared `training`.
// Requires: a verified graph with static shapes. Guarantees: no
// batch_norm remains; each result equals the interpreter's but for the
// rounding of intermediate values to x's dtype and the order of the sums.
//
//===----------------------------------------------------------------------===//
#include "passes/BatchNorm.h"
#include "passes/Pass.h"
#include "passes/ValueBuilder.h"

#include <tuple>

using namespace cgc;

std::pair<Value *, Value *> cgc::batchStatistics(ValueBuilder &vb, Value *x) {
  std::vector<int64_t> axes;
  for (unsigned a = 0; a < x->getType().rank(); ++a)
    if (a != 1)
      axes.push_back(a);
  AttrMap reduce{{"axes", axes}, {"keepdim", true}};
  Value *wide = vb.cast(x, DType::F32);
  Value *mean = vb.op(OpKind::Mean, {wide}, reduce, "mean");
  Value *centered = vb.sub(wide, mean);
  Value *var = vb.op(OpKind::Mean, {vb.mul(centered, centered)}, reduce, "var");
  return {mean, var};
}

namespace {

Value *expand(ValueBuilder &vb, const Node &n) {
  Value *x = n.operand(0);
  const TensorType &type = x->getType();
  std::vector<Dim> column(type.rank() - 1, Dim::fixed(1));
  column[0] = type.dims[1];
  auto perChannel = [&](Value *v) { return vb.reshape(v, column, "channel"); };
  Value *mean, *var;
  if (n.boolAttr("training", false)) {
    std::tie(mean, var) = batchStatistics(vb, x);
    mean = vb.cast(mean, type.dtype);
    var = vb.cast(var, type.dtype);
  } else {
    mean = perChannel(n.operand(3));
    var = perChannel(n.operand(4));
  }
  Value *eps = vb.fill(n.floatAttr("eps", 1e-5), type.dtype, "eps");
  Value *rstd = vb.op(OpKind::Rsqrt, {vb.add(var, eps)});
  Value *scale = vb.mul(rstd, perChannel(n.operand(1)));
  Value *normalized = vb.mul(vb.sub(x, mean), scale);
  return vb.add(normalized, perChannel(n.operand(2)));
}

class ExpandBatchNormPass : public Pass {
public:
  llvm::StringRef name() const override { return "expand-batch-norm"; }
  llvm::StringRef summary() const override {
    return "write every batch_norm out as per-channel arithmetic";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    return rewriteEach(
        graph, ctx.diag, [](const Node &n) { return n.getOp() == OpKind::BatchNorm; },
        expand);
  }
};

} // namespace

std::unique_ptr<Pass> cgc::createExpandBatchNormPass() {
  return std::make_unique<ExpandBatchNormPass>();
}
