//===- IndexDerivatives.cpp - Vector-Jacobian products of index ops -----===//
//
// Part of autodiff's rules (DerivativeRules.h), for the ops that pick or
// place slices by index: gather and embedding (the adjoint summed into the
// picked rows by an index_add), index_add (x's adjoint g, the source's a
// masked gather) and index_copy (x's adjoint with the overwritten slices
// zeroed, the source's a masked gather). Both read indices as the ops do: a negative one counts from the
// end once, an out-of-range one picks or writes nothing. Static shapes only.
//
//===----------------------------------------------------------------------===//
#include "ir/OpAttrs.h"
#include "passes/DerivativeRules.h"

using namespace cgc;

/// \p idx flattened, a negative index counted from the end of an axis of
/// \p extent (once: one still negative stays out of range).
static Value *wrappedIndices(ValueBuilder &gb, Value *idx, int64_t extent) {
  DType type = idx->getType().dtype;
  Value *flat = gb.reshape(idx, {Dim::fixed(idx->getType().numElements())});
  return gb.where(gb.op(OpKind::Lt, {flat, gb.fill(0, type)}),
                  gb.add(flat, gb.fill(double(extent), type)), flat);
}

/// Whether each of the \p wrapped indices is inside [0, \p extent).
static Value *inRange(ValueBuilder &gb, Value *wrapped, int64_t extent) {
  DType type = wrapped->getType().dtype;
  return gb.op(OpKind::LogicalAnd, {gb.op(OpKind::Ge, {wrapped, gb.fill(0, type)}),
                                    gb.op(OpKind::Lt, {wrapped, gb.fill(double(extent), type)})});
}

/// The slices of \p g (along \p axis) at the \p wrapped indices where
/// \p keep holds, zeros elsewhere: a gather at the kept indices (0 at the
/// others), masked; of type \p st (g's shape with the indices' count along
/// the axis).
static Value *keptSlices(ValueBuilder &gb, Value *g, Value *wrapped, Value *keep,
                         unsigned axis, const TensorType &st) {
  DType it = wrapped->getType().dtype;
  Value *picked = gb.op(OpKind::Gather, {g, gb.where(keep, wrapped, gb.fill(0, it))},
                        {{"axis", int64_t(axis)}});
  std::vector<Dim> along(st.rank(), Dim::fixed(1));
  along[axis] = st.dims[axis];
  return gb.where(gb.reshape(keep, along), picked, gb.zeros(st));
}

/// gather (numpy.take along an axis) and embedding (axis 0): the data's
/// adjoint sums g's slices into the slices the indices took, an
/// index_add into zeros: d[pre, v, post] = sum_j [idx_j == v] g[pre, j, post]
/// in the order of j (deterministic; negative indices wrap once as
/// gather's do, index_add's own wrap, out-of-range ones contribute nothing,
/// as they read zeros; an embedding's padding_idx row gets none, as in
/// PyTorch). A 16-bit table's adjoint is summed in f32 and rounded once,
/// as PyTorch's embedding backward accumulates.
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
  int64_t rows = dt.dims[axis].extent();
  Value *flat = gb.reshape(idx, {Dim::fixed(it.numElements())});
  if (n.getOp() == OpKind::Embedding && n.attr("padding_idx")) { // `rows`: no row.
    Value *pad = gb.fill(double(n.intAttr("padding_idx", -1)), it.dtype);
    flat = gb.where(gb.op(OpKind::Eq, {wrappedIndices(gb, idx, rows), pad}),
                    gb.fill(double(rows), it.dtype), flat);
  }
  std::vector<Dim> slices(dt.dims.begin(), dt.dims.end());
  slices[axis] = Dim::fixed(it.numElements());
  bool half = dt.dtype == DType::F16 || dt.dtype == DType::BF16;
  Value *source = gb.reshape(g, slices);
  if (half)
    source = gb.cast(source, DType::F32);
  Value *sum = gb.op(OpKind::IndexAdd,
                     {gb.zeros(TensorType(source->getType().dtype, dt.dims)), flat, source},
                     {{"axis", int64_t(axis)}});
  adjoints[0] = half ? gb.cast(sum, dt.dtype) : sum;
  return true;
}

/// index_add: x's adjoint is g; source slice j's is g's slice at index[j]
/// (zeros where the index is out of range: it added nothing).
bool cgc::indexAddAdjoints(const Node &n, Value *g, ValueBuilder &gb,
                           std::vector<Value *> &adjoints, std::string &why) {
  Value *idx = n.operand(1), *source = n.operand(2);
  const TensorType &xt = n.operand(0)->getType(), &st = source->getType();
  if (!xt.isStatic() || !st.isStatic()) {
    why = "no derivative rule for an index_add over symbolic dims yet";
    return false;
  }
  unsigned axis = *normalizeAxis(n.intAttr("axis", 0), xt.rank());
  int64_t extent = xt.dims[axis].extent();
  adjoints[0] = g;
  if (idx->getType().numElements() == 0) {
    adjoints[2] = gb.zeros(st);
    return true;
  }
  Value *wrapped = wrappedIndices(gb, idx, extent);
  adjoints[2] = keptSlices(gb, g, wrapped, inRange(gb, wrapped, extent), axis, st);
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
  Value *wrapped = wrappedIndices(gb, idx, extent);
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
                        {inRange(gb, wrapped, extent), gb.op(OpKind::LogicalNot, {shadowed})});
  adjoints[2] = keptSlices(gb, g, wrapped, writes, axis, st);
  return true;
}
