//===- ExpandConvolution.cpp - conv as window gathers and a product --------===//
//
// Algorithm: every `conv` node (in regions too), x [N, C, D1..Dd] and
// w [O, C / G, K1..Kd], is replaced, in its dtype, by
//   xp    = x with zeros concatenated before and after each padded dim
//   win   = xp gathered along each spatial dim a at the i64 constant
//           [Ka, Ea] of k * dilation + e * stride (the dim becomes Ka, Ea;
//           a dim whose kernel is 1 with stride 1 and no padding only
//           gains a unit Ka): [N, C, K1, E1, .., Kd, Ed]
//   cols  = win transposed to [N, C, K1..Kd, E1..Ed], reshaped to
//           [N, G, C / G * K1..Kd, E1..Ed]
//   y     = matmul(w as [G, O / G, C / G * K1..Kd], cols), the batch [G]
//           broadcast over [N, G]: [N, G, O / G, E1..Ed], reshaped to
//           [N, O, E1..Ed], plus the bias as [O, 1..1]
// ops the other passes and codegen know (an im2col whose index
// arithmetic is folded into constants). The driver runs it first, with
// expand-attention (driver/Compiler.cpp); it leads the default pipeline.
// Requires: a verified graph. Guarantees: no conv remains; each result
// equals the interpreter's conv but for the order of the f32 sums.
//
//===----------------------------------------------------------------------===//
#include "ir/ConvolutionShape.h"
#include "passes/Pass.h"
#include "passes/ValueBuilder.h"

using namespace cgc;

namespace {

int64_t product(const std::vector<int64_t> &values) {
  int64_t n = 1;
  for (int64_t v : values)
    n *= v;
  return n;
}

/// \p x with \p before and \p after zeros along \p axis.
Value *padAxis(ValueBuilder &vb, Value *x, unsigned axis, int64_t before, int64_t after) {
  std::vector<Value *> parts;
  auto zeros = [&](int64_t extent) {
    TensorType t = x->getType();
    t.dims[axis] = Dim::fixed(extent);
    return vb.zeros(t);
  };
  if (before)
    parts.push_back(zeros(before));
  parts.push_back(x);
  if (after)
    parts.push_back(zeros(after));
  if (parts.size() == 1)
    return x;
  return vb.op(OpKind::Concat, parts, {{"axis", int64_t(axis)}}, "pad");
}

/// The windows of spatial dim \p a (at \p axis of \p x): axis becomes
/// [kernel, out].
Value *windows(ValueBuilder &vb, Value *x, unsigned axis, const ConvolutionShape &s,
               size_t a) {
  int64_t k = s.kernel[a], e = s.out[a];
  if (k == 1 && s.strides[a] == 1 && s.before[a] == 0 && s.after[a] == 0) {
    std::vector<Dim> dims;
    for (unsigned i = 0; i < x->getType().rank(); ++i) {
      if (i == axis)
        dims.push_back(Dim::fixed(1));
      dims.push_back(x->getType().dims[i]);
    }
    return vb.reshape(x, dims, "unit");
  }
  std::vector<Number> at;
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < e; ++j)
      at.push_back(Number::ofInt(i * s.dilations[a] + j * s.strides[a]));
  Value *index = vb.op(OpKind::Constant, {},
                       {{"dtype", DType::I64},
                        {"shape", std::vector<Dim>{Dim::fixed(k), Dim::fixed(e)}},
                        {"value", at}},
                       "at");
  return vb.op(OpKind::Gather, {x, index}, {{"axis", int64_t(axis)}}, "windows");
}

Value *expand(ValueBuilder &vb, const Node &n, const ConvolutionShape &s) {
  Value *x = n.operand(0), *w = n.operand(1);
  size_t d = s.in.size();
  for (size_t a = 0; a < d; ++a)
    x = padAxis(vb, x, unsigned(a + 2), s.before[a], s.after[a]);
  for (size_t a = 0; a < d; ++a)
    x = windows(vb, x, unsigned(2 + 2 * a), s, a);
  if (!x)
    return nullptr;
  std::vector<int64_t> perm{0, 1};
  for (size_t a = 0; a < d; ++a)
    perm.push_back(int64_t(2 + 2 * a));
  for (size_t a = 0; a < d; ++a)
    perm.push_back(int64_t(3 + 2 * a));
  if (d > 1)
    x = vb.op(OpKind::Transpose, {x}, {{"perm", perm}}, "cols");
  Dim batch = n.operand(0)->getType().dims[0];
  int64_t g = s.groups, reduced = s.channels / g * product(s.kernel),
          positions = product(s.out);
  Value *cols = vb.reshape(x, {batch, Dim::fixed(g), Dim::fixed(reduced),
                               Dim::fixed(positions)}, "cols");
  Value *weights = vb.reshape(w, {Dim::fixed(g), Dim::fixed(s.outChannels / g),
                                  Dim::fixed(reduced)}, "weights");
  Value *y = vb.matmul(weights, cols, false, false);
  std::vector<Dim> result{batch, Dim::fixed(s.outChannels)};
  for (int64_t e : s.out)
    result.push_back(Dim::fixed(e));
  y = vb.reshape(y, result, "out");
  if (n.numOperands() == 3) {
    std::vector<Dim> column(d + 1, Dim::fixed(1));
    column[0] = Dim::fixed(s.outChannels);
    y = vb.add(y, vb.reshape(n.operand(2), column, "bias"));
  }
  return y;
}

class ExpandConvolutionPass : public Pass {
public:
  llvm::StringRef name() const override { return "expand-convolution"; }
  llvm::StringRef summary() const override {
    return "write every conv out as window gathers and a matrix product";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    return forEachGraphInnermostFirst(graph, [&](Graph &g) {
      std::vector<Node *> nodes;
      for (const auto &node : g.nodes())
        if (node->getOp() == OpKind::Conv)
          nodes.push_back(node.get());
      GraphBuilder builder(g, ctx.diag);
      ValueBuilder vb(builder);
      for (Node *n : nodes) {
        std::string why;
        auto shape = convolutionShape(*n, why);
        if (!shape) {
          ctx.diag.nodeError(*n, why);
          return false;
        }
        vb.setInsertionPoint(*n);
        vb.setOrigin(*n);
        vb.setBase(n->getName());
        Value *out = expand(vb, *n, *shape);
        if (!out)
          return false;
        g.replaceAllUsesWith(n->result(), out);
        n->dropOperands();
      }
      g.erase(nodes);
      return true;
    });
  }
};

} // namespace

std::unique_ptr<Pass> cgc::createExpandConvolutionPass() {
  return std::make_unique<ExpandConvolutionPass>();
}
