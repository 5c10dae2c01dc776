//===- ExpandMseLoss.cpp - mse_loss as a difference and a reduction -------===//
//
// Algorithm: every `mse_loss` node (in regions too) of prediction a and
// target t is replaced by
//   d     = a - t                  (in f32: f16 and bf16 operands are cast
//                                   first, as the op computes)
//   e     = d * d
//   loss  = mean(e) or sum(e) over every axis, or e for reduction none,
//           cast back to the operands' dtype
// so that the reduction gets the reduction schedules (target/ReductionRule.h:
// a long input is split over many blocks, a short one fused with the
// difference into one row kernel) instead of one block for the whole
// tensor (measured: 1119 us for mlp_train_large's 655,360-element loss on
// an H100, 78% of the step). It runs in the default pipeline after
// pad-dynamic-shapes, so it sees static shapes; autodiff runs before it and
// keeps mse_loss's own rule.
// Requires: a verified graph. Guarantees: no mse_loss remains; each result
// equals the interpreter's but for the rounding of d and e to f32 and the
// order of the sum.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"
#include "passes/ValueBuilder.h"

using namespace cgc;

namespace {

Value *expand(ValueBuilder &vb, const Node &n) {
  DType dtype = n.operand(0)->getType().dtype;
  Value *a = vb.cast(n.operand(0), DType::F32, "f32");
  Value *t = vb.cast(n.operand(1), DType::F32, "f32");
  Value *d = vb.sub(a, t);
  Value *loss = vb.mul(d, d);
  std::string reduction = n.strAttr("reduction", "mean");
  if (reduction == "mean")
    loss = vb.op(OpKind::Mean, {loss}, {}, "mean");
  else if (reduction == "sum")
    loss = vb.op(OpKind::Sum, {loss}, {}, "sum");
  return vb.cast(loss, dtype);
}

class ExpandMseLossPass : public Pass {
public:
  llvm::StringRef name() const override { return "expand-mse-loss"; }
  llvm::StringRef summary() const override {
    return "write every mse_loss out as a difference, a square and a reduction";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    return rewriteEach(
        graph, ctx.diag, [](const Node &n) { return n.getOp() == OpKind::MseLoss; },
        expand);
  }
};

} // namespace

std::unique_ptr<Pass> cgc::createExpandMseLossPass() {
  return std::make_unique<ExpandMseLossPass>();
}
