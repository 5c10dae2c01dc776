//===- IndexDerivatives.cpp - Vector-Jacobian products of index ops -----===//
//
// Part of autodiff's rules (DerivativeRules.h), for the ops that pick or
// place slices by index: gather and embedding (the adjoint summed into the
// picked rows by a product with their one_hot) and index_copy (x's
// adjoint with the overwritten slices zeroed, the source's a masked
// gather). Both read indices as the ops do: a negative one counts from the
// end once, an out-of-range one picks or writes nothing. Static shapes only.
//
//===----------------------------------------------------------------------===//
#include "ir/OpAttrs.h"
#include "passes/DerivativeRules.h"

using namespace cgc;

/// The most one_hot elements gather's rule makes (1 GiB of f32).
constexpr int64_t kMaxOneHotElements = int64_t(1) << 28;

/// \p idx flattened, a negative index counted from the end of an axis of
/// \p extent (once: one still negative stays out of range).
static Value *wrappedIndices(ValueBuilder &gb, Value *idx, int64_t extent) {
  DType type = idx->getType().dtype;
  Value *flat = gb.reshape(idx, {Dim::fixed(idx->getType().numElements())});
  return gb.where(gb.op(OpKind::Lt, {flat, gb.fill(0, type)}),
                  gb.add(flat, gb.fill(double(extent), type)), flat);
}

/// gather (numpy.take along an axis) and embedding (axis 0): the data's
/// adjoint sums g's rows into the rows the indices took, as a product
/// with their one_hot: d[pre, v, post] = sum_j [idx_j == v] g[pre, j, post]
/// (deterministic: a matrix product, no atomics; negative indices wrapped
/// once, out-of-range ones contribute nothing, as they read zeros; an
/// embedding's padding_idx row gets none, as in PyTorch).
bool cgc::gatherAdjoints(const Node &n, Value *g, ValueBuilder &gb,
                         std::vector<Value *> &adjoints, std::string &why) {
  Value *data = n.operand(0), *idx = n.operand(1);
  const TensorType &dt = data->getType(), &it = idx->getType();
  if (!dt.isStatic() || !it.isStatic()) {
    why = "no derivative rule for a gather over symbolic dims yet";
    return false;
  }
  unsigned axis = n.getOp() == OpKind::Embedding
                      ? 0
                      : *normalizeAxis(n.intAttr("axis", 0), dt.rank());
  int64_t rows = dt.dims[axis].extent(), picks = it.numElements(), pre = 1, post = 1;
  for (unsigned d = 0; d < dt.rank(); ++d)
    (d < axis ? pre : post) *= d == axis ? 1 : dt.dims[d].extent();
  if (picks * rows > kMaxOneHotElements) {
    why = "the derivative of this gather would make a one_hot of " +
          std::to_string(picks) + " x " + std::to_string(rows) +
          " elements (at most 2^28)";
    return false;
  }
  DType index = it.dtype;
  Value *wrapped = wrappedIndices(gb, idx, rows);
  if (n.getOp() == OpKind::Embedding && n.attr("padding_idx")) { // -1: no row.
    Value *pad = gb.fill(double(n.intAttr("padding_idx", -1)), index);
    wrapped = gb.where(gb.op(OpKind::Eq, {wrapped, pad}), gb.fill(-1, index), wrapped);
  }
  Value *hot = gb.op(OpKind::OneHot, {wrapped},
                     {{"num_classes", rows}, {"dtype", n.result()->getType().dtype}});
  Value *gj = gb.reshape(g, {Dim::fixed(pre), Dim::fixed(picks), Dim::fixed(post)});
  if (pre != 1)
    gj = gb.op(OpKind::Transpose, {gj}, {{"perm", std::vector<int64_t>{1, 0, 2}}});
  gj = gb.reshape(gj, {Dim::fixed(picks), Dim::fixed(pre * post)});
  Value *d = gb.matmul(hot, gj, true, false); // [rows, pre * post]
  if (pre != 1) {
    d = gb.reshape(d, {Dim::fixed(rows), Dim::fixed(pre), Dim::fixed(post)});
    d = gb.op(OpKind::Transpose, {d}, {{"perm", std::vector<int64_t>{1, 0, 2}}});
  }
  adjoints[0] = gb.reshape(d, dt.dims);
  return true;
}

/// index_copy: x's slices that a source slice overwrites get no gradient
/// (g with those slices zeroed: the same index_copy of zeros), and source
/// slice j gets g's slice at index[j] where j is the one that writes there
/// (in range, and no later j' with the same index: the last wins), zeros
/// elsewhere (a gather of g, masked).
bool cgc::indexCopyAdjoints(const Node &n, Value *g, ValueBuilder &gb,
                            std::vector<Value *> &adjoints, std::string &why) {
  Value *idx = n.operand(1), *source = n.operand(2);
  const TensorType &xt = n.operand(0)->getType(), &st = source->getType();
  if (!xt.isStatic() || !st.isStatic()) {
    why = "no derivative rule for an index_copy over symbolic dims yet";
    return false;
  }
  unsigned axis = *normalizeAxis(n.intAttr("axis", 0), xt.rank());
  adjoints[0] = gb.op(OpKind::IndexCopy, {g, idx, gb.zeros(st)}, {{"axis", int64_t(axis)}});
  int64_t extent = xt.dims[axis].extent(), count = idx->getType().numElements();
  if (count == 0) {
    adjoints[2] = gb.zeros(st);
    return true;
  }
  DType it = idx->getType().dtype;
  Value *wrapped = wrappedIndices(gb, idx, extent);
  Value *inRange = gb.op(OpKind::LogicalAnd,
                         {gb.op(OpKind::Ge, {wrapped, gb.fill(0, it)}),
                          gb.op(OpKind::Lt, {wrapped, gb.fill(double(extent), it)})});
  std::vector<Number> order;
  for (int64_t j = 0; j < count; ++j)
    order.push_back(Number::ofInt(j));
  Value *position = gb.op(OpKind::Constant, {},
                          {{"dtype", DType::I64},
                           {"shape", std::vector<Dim>{Dim::fixed(count)}},
                           {"value", order}});
  auto column = [&](Value *v) { return gb.reshape(v, {Dim::fixed(count), Dim::fixed(1)}); };
  auto row = [&](Value *v) { return gb.reshape(v, {Dim::fixed(1), Dim::fixed(count)}); };
  Value *laterSame = gb.op(OpKind::LogicalAnd,
                           {gb.op(OpKind::Eq, {column(wrapped), row(wrapped)}),
                            gb.op(OpKind::Gt, {row(position), column(position)})});
  Value *shadowed = gb.op(OpKind::Gt, {gb.sum(gb.cast(laterSame, DType::F32), {1}, false),
                                       gb.fill(0, DType::F32)});
  Value *writes = gb.op(OpKind::LogicalAnd,
                        {inRange, gb.op(OpKind::LogicalNot, {shadowed})});
  Value *picked = gb.op(OpKind::Gather, {g, gb.where(inRange, wrapped, gb.fill(0, it))},
                        {{"axis", int64_t(axis)}});
  std::vector<Dim> along(st.rank(), Dim::fixed(1));
  along[axis] = Dim::fixed(count);
  adjoints[2] = gb.where(gb.reshape(writes, along), picked, gb.zeros(st));
  return true;
}
