//===- ExpandAttention.cpp - attention as products and a softmax ----------===//
//
// Algorithm: every `attention` node (in regions too) that the fused
// kernel will not run (target/Scheduler.h's attentionRunsFused: a width
// past 128, a partly broadcast mask, a dtype or length where the products
// measured faster, unless the node carries a schedule record; or the
// target's policy is Expand, as for training) is
// replaced, in its operands' dtype, by
//   K, V    = k, v with each head repeated Hq / Hkv times (reshape,
//             broadcast_to, reshape), when Hq != Hkv
//   s       = matmul(q, K, transpose_b) * scale
//   s       = softcap * tanh(s / softcap)           when softcap > 0
//   s       = where(mask, s, -inf) or s + mask      a bool or additive mask
//   s       = where(keep, s, -inf)                  causal (col <= row) and
//             window (row - col < w), from iotas over [Sq, Sk]
//   p       = softmax(s, -1), 0 in a row whose every score is -inf
//             (a max over the row says so; only with a mask or window,
//             without which a row always keeps a key)
//   result  = matmul(p, V)
// the ops the fusion passes, pad-dynamic-shapes and autodiff know. The
// driver runs it first of all (driver/Compiler.cpp); it leads the
// default pipeline too, where it finds nothing left to expand.
// Requires: a verified graph. Guarantees: every attention left runs fused
// on the context's target (none under AttentionPolicy::Expand); each
// expanded result equals the interpreter's attention but for the rounding
// of the intermediate scores and probabilities to the dtype.
//
//===----------------------------------------------------------------------===//
#include "ir/OpAttrs.h"
#include "passes/Pass.h"
#include "passes/ValueBuilder.h"
#include "target/Scheduler.h"

#include <cmath>

using namespace cgc;

namespace {

/// \p kv [..., H, S, E] with each head repeated \p groups times in turn:
/// [..., H * groups, S, E].
Value *repeatHeads(ValueBuilder &vb, Value *kv, int64_t groups) {
  if (!kv || groups == 1)
    return kv;
  const auto &shape = kv->getType().dims;
  std::vector<Dim> dims(shape.begin(), shape.end());
  size_t heads = dims.size() - 3;
  std::vector<Dim> split = dims, broadcast = dims, merged = dims;
  split.insert(split.begin() + heads + 1, Dim::fixed(1));
  broadcast.insert(broadcast.begin() + heads + 1, Dim::fixed(groups));
  merged[heads] = Dim::fixed(dims[heads].extent() * groups);
  Value *out = vb.reshape(kv, split, "split");
  out = vb.op(OpKind::BroadcastTo, {out}, {{"shape", broadcast}}, "repeat");
  return vb.reshape(out, merged, "heads");
}

/// bool[Sq, Sk]: the keys the causal and window limits keep, or null
/// when there are none.
Value *keptByLimits(ValueBuilder &vb, const Node &n, Dim rows, Dim keys) {
  bool causal = n.boolAttr("causal", false);
  int64_t window = n.intAttr("window", 0);
  if (!causal && window == 0)
    return nullptr;
  std::vector<Dim> shape{rows, keys};
  auto iota = [&](int64_t axis) {
    return vb.op(OpKind::Iota, {},
                 {{"dtype", DType::I64}, {"shape", shape}, {"axis", axis}},
                 axis ? "col" : "row");
  };
  Value *row = iota(0), *col = iota(1), *keep = nullptr;
  if (causal)
    keep = vb.op(OpKind::Ge, {row, col}, {}, "causal");
  if (window > 0) {
    Value *near = vb.op(OpKind::Lt, {vb.sub(row, col), vb.fill(double(window), DType::I64)},
                        {}, "window");
    keep = keep ? vb.op(OpKind::LogicalAnd, {keep, near}) : near;
  }
  return keep;
}

Value *expand(ValueBuilder &vb, const Node &n) {
  Value *q = n.operand(0), *k = n.operand(1), *v = n.operand(2);
  const TensorType &qt = q->getType(), &kt = k->getType();
  size_t rank = qt.rank();
  DType dtype = qt.dtype;
  Dim qHeads = qt.dims[rank - 3], kvHeads = kt.dims[rank - 3];
  int64_t groups = qHeads == kvHeads ? 1 : qHeads.extent() / kvHeads.extent();
  Value *keys = repeatHeads(vb, k, groups), *values = repeatHeads(vb, v, groups);
  double scale = attentionScale(n);
  Value *s = vb.scale(vb.matmul(q, keys, false, true), scale);
  if (double cap = n.floatAttr("softcap", 0); cap > 0)
    s = vb.scale(vb.op(OpKind::Tanh, {vb.scale(s, 1 / cap)}), cap);
  auto drop = [&](Value *keep, Value *scores) {
    return vb.where(keep, scores, vb.fill(-INFINITY, dtype, "dropped"));
  };
  if (n.numOperands() == 4) {
    Value *mask = n.operand(3);
    s = mask->getType().dtype == DType::Bool ? drop(mask, s) : vb.add(s, mask);
  }
  if (Value *keep = keptByLimits(vb, n, qt.dims[rank - 2], kt.dims[rank - 2]))
    s = drop(keep, s);
  Value *p = vb.op(OpKind::Softmax, {s}, {{"axis", int64_t(-1)}}, "weights");
  if (n.numOperands() == 4 || n.intAttr("window", 0) > 0) {
    // A row that keeps no key weighs every value 0 (softmax would give NaN).
    Value *top = vb.op(OpKind::Max, {s},
                       {{"axes", std::vector<int64_t>{-1}}, {"keepdim", true}}, "top");
    Value *empty = vb.op(OpKind::Eq, {top, vb.fill(-INFINITY, dtype, "dropped")});
    p = vb.where(empty, vb.fill(0, dtype, "zero"), p);
  }
  return vb.matmul(p, values, false, false);
}

class ExpandAttentionPass : public Pass {
public:
  llvm::StringRef name() const override { return "expand-attention"; }
  llvm::StringRef summary() const override {
    return "write attention the fused kernel does not run as products and a softmax";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    return rewriteEach(
        graph, ctx.diag,
        [&](const Node &n) {
          return n.getOp() == OpKind::Attention && !attentionRunsFused(n, ctx.target);
        },
        [](ValueBuilder &vb, const Node &n) { return expand(vb, n); });
  }
};

} // namespace

std::unique_ptr<Pass> cgc::createExpandAttentionPass() {
  return std::make_unique<ExpandAttentionPass>();
}
