//===- ValueBuilder.cpp - IR ops one value at a time, null after a failure ===//
#include "passes/ValueBuilder.h"

#include "ir/Initializers.h"
#include "passes/Pass.h"

using namespace cgc;

Value *ValueBuilder::op(OpKind kind, std::vector<Value *> operands,
                        const AttrMap &attrs, llvm::StringRef suffix) {
  if (failed || llvm::is_contained(operands, nullptr))
    return nullptr;
  Node *n = b.create(kind, suffix.empty() ? base : base + "." + suffix.str(),
                     operands, attrs);
  failed |= !n;
  return n ? n->result() : nullptr;
}

Value *ValueBuilder::clone(const Node &node, llvm::ArrayRef<Value *> operands) {
  if (failed || llvm::is_contained(operands, nullptr))
    return nullptr;
  Node *n = b.clone(node, operands);
  failed |= !n;
  return n ? n->result() : nullptr;
}

Value *ValueBuilder::fill(double value, DType dtype, llvm::StringRef suffix) {
  return op(OpKind::Fill, {},
            {{"dtype", dtype},
             {"shape", std::vector<Dim>()},
             {"value", isFloat(dtype) ? Number::ofReal(value)
                                      : numberOf(dtype, elementOf(dtype, value))}},
            suffix);
}

Value *ValueBuilder::zeros(const TensorType &type) {
  return op(OpKind::Fill, {},
            {{"dtype", type.dtype},
             {"shape", std::vector<Dim>(type.dims.begin(), type.dims.end())},
             {"value", numberOf(type.dtype, Element())}});
}

Value *ValueBuilder::scale(Value *x, double k) {
  return x ? mul(x, fill(k, x->getType().dtype)) : nullptr;
}

Value *ValueBuilder::cast(Value *x, DType dtype, llvm::StringRef suffix) {
  if (!x || x->getType().dtype == dtype)
    return x;
  return op(OpKind::Cast, {x}, {{"dtype", dtype}}, suffix);
}

Value *ValueBuilder::slice(Value *x, unsigned axis, int64_t start, int64_t end,
                           llvm::StringRef suffix) {
  return op(OpKind::Slice, {x},
            {{"starts", std::vector<int64_t>{start}},
             {"ends", std::vector<int64_t>{end}},
             {"axes", std::vector<int64_t>{int64_t(axis)}}},
            suffix);
}

Value *ValueBuilder::gatherAt(Value *x, unsigned axis, const std::vector<int64_t> &at,
                              llvm::ArrayRef<Dim> shape, llvm::StringRef indexName,
                              llvm::StringRef resultName) {
  std::vector<Number> values;
  for (int64_t i : at)
    values.push_back(Number::ofInt(i));
  std::vector<Dim> dims(shape.begin(), shape.end());
  Value *index = op(OpKind::Constant, {},
                    {{"dtype", DType::I64}, {"shape", dims}, {"value", values}}, indexName);
  return op(OpKind::Gather, {x, index}, {{"axis", int64_t(axis)}}, resultName);
}

Value *ValueBuilder::unitAfter(Value *x, unsigned axis, llvm::StringRef suffix) {
  if (!x)
    return nullptr;
  std::vector<Dim> dims;
  for (unsigned i = 0; i < x->getType().rank(); ++i) {
    dims.push_back(x->getType().dims[i]);
    if (i == axis)
      dims.push_back(Dim::fixed(1));
  }
  return reshape(x, dims, suffix);
}

Value *ValueBuilder::reshape(Value *x, llvm::ArrayRef<Dim> dims,
                             llvm::StringRef suffix) {
  if (x && llvm::ArrayRef<Dim>(x->getType().dims) == dims)
    return x;
  return op(OpKind::Reshape, {x},
            {{"shape", std::vector<Dim>(dims.begin(), dims.end())}}, suffix);
}

Value *ValueBuilder::sum(Value *x, std::vector<int64_t> axes, bool keepdim) {
  if (axes.empty())
    return x;
  return op(OpKind::Sum, {x}, {{"axes", axes}, {"keepdim", keepdim}});
}

Value *ValueBuilder::matmul(Value *x, Value *y, bool transposeA, bool transposeB) {
  return op(OpKind::MatMul, {x, y},
            {{"transpose_a", transposeA}, {"transpose_b", transposeB}});
}

Value *ValueBuilder::reduceTo(Value *g, const TensorType &to) {
  if (!g)
    return nullptr;
  const TensorType &from = g->getType();
  unsigned extra = from.rank() - to.rank();
  std::vector<int64_t> leading, ones;
  for (unsigned d = 0; d < extra; ++d)
    leading.push_back(d);
  for (unsigned d = 0; d < to.rank(); ++d)
    if (to.dims[d] == Dim::fixed(1) && from.dims[d + extra] != Dim::fixed(1))
      ones.push_back(d + extra);
  Value *r = sum(g, ones, /*keepdim=*/true);
  r = sum(r, leading, /*keepdim=*/false);
  return reshape(r, to.dims);
}

Value *ValueBuilder::expandFrom(Value *g, const TensorType &in,
                               llvm::ArrayRef<unsigned> axes, bool keepdim) {
  if (!g)
    return nullptr;
  std::vector<Dim> kept(in.dims.begin(), in.dims.end());
  for (unsigned a : axes)
    kept[a] = Dim::fixed(1);
  Value *r = keepdim ? g : reshape(g, kept);
  return op(OpKind::BroadcastTo, {r},
            {{"shape", std::vector<Dim>(in.dims.begin(), in.dims.end())}});
}

bool cgc::rewriteEach(Graph &graph, DiagnosticEngine &diag,
                      llvm::function_ref<bool(const Node &)> selected,
                      llvm::function_ref<Value *(ValueBuilder &, const Node &)> rewrite) {
  return forEachGraphInnermostFirst(graph, [&](Graph &g) {
    std::vector<Node *> nodes;
    for (const auto &node : g.nodes())
      if (selected(*node))
        nodes.push_back(node.get());
    GraphBuilder builder(g, diag);
    ValueBuilder vb(builder);
    for (Node *n : nodes) {
      vb.setInsertionPoint(*n);
      vb.setOrigin(*n);
      vb.setBase(n->getName());
      Value *out = rewrite(vb, *n);
      if (!out)
        return false;
      g.replaceAllUsesWith(n->result(), out);
      n->dropOperands();
    }
    g.erase(nodes);
    return true;
  });
}

Value *cgc::addOptimizerState(Graph &graph, const std::string &name,
                              const TensorType &type, double init, const Location &loc) {
  Value *v = graph.addInput(name, type);
  GraphInput &in = graph.input(graph.inputs().size() - 1);
  in.kind = InputKind::OptimizerState;
  in.init.source = init == 0 ? Initializer::Source::Zeros : Initializer::Source::Constant;
  in.init.a = init;
  in.loc = loc;
  return v;
}
