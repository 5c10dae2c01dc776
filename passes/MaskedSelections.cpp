//===- MaskedSelections.cpp - Data-dependent selections as masked tensors ===//
//
// A selection is a value whose leading extent depends on data:
//   - Elements: `masked_select(x, m)`, the elements of x where m holds;
//   - Indices: `nonzero(m)` of a rank-1 mask, i64[n,1], and its column
//     `gather(nz, 0, axis = 1)`, i64[n];
//   - Rows: `gather(data, indices, axis = 0)` by such indices, with
//     data[N, ...] and N the mask's length: the rows where m holds.
// Algorithm: one walk in node order marks every value computed from a
// selection. Each reader of a selection is classified:
//   - it propagates when it treats each selected element (or row) alone:
//     elementwise ops whose other operands do not span the selected axis,
//     and, over rows, linear/matmul (the rows as the left operand),
//     softmax, log_softmax, layernorm, reductions, argmax and cumsum away
//     from axis 0, gather away from axis 0, embedding and one_hot of
//     selected indices, and cross_entropy with reduction "none";
//   - it ends the selection when it reduces over the selected axis: `sum`
//     (and, for floats, `mean`) over axes that include it, and
//     cross_entropy with reduction "mean" or "sum";
//   - anything else (another op, an output, two different selections
//     combined) refuses the selection's root, naming that reader.
// Then every marked node is cloned over fixed shapes: the ops run over all
// N rows (all elements) of the tensors the selection was taken from, and
// each end keeps the selected ones: `sum(where(mask, y, 0))`, a mean
// divided by the device-side count `sum(cast(mask, f32))` times the other
// reduced extents (summed and divided in f32, rounded once), and
// cross_entropy with the unselected rows' targets set to its ignore_index.
// A `nonzero` with `max_count = K` (fewer than N) runs over K rows
// instead: the gathers take rows `first position where cumsum(m) > j`
// for j < K (N, which gathers zeros, past the last selected row), and
// the mask is `row < N`. This is the fixed-size gather of MLPerf BERT.
// Requires: a verified graph. Guarantees: the same values (the interpreter
// defines them, max_count included); no masked_select or nonzero is left
// unless an error was reported.
//
//===----------------------------------------------------------------------===//
#include "ir/RowFusion.h"
#include "passes/MaskedSelections.h"

#include "passes/ValueBuilder.h"
#include "ir/TypeRules.h"

#include "llvm/ADT/DenseSet.h"

using namespace cgc;

namespace {

enum class Shape { Elements, Rows, Indices };

struct Selection {
  Node *root = nullptr;
  Shape shape = Shape::Rows;
};

/// What a rewritten root gives the nodes after it.
struct RootRewrite {
  Value *mask = nullptr;     ///< Elements: x's shape; rows: [M].
  Value *rowIndex = nullptr; ///< With max_count: the K source rows.
  int64_t rows = 0;          ///< M: N, or K with max_count.
  std::vector<const Node *> ends;
};

enum class Role { Refuse, Propagate, End };

struct Verdict {
  Role role;
  Shape shape = Shape::Rows;
  std::string reason; ///< Why a refusal.
};

Verdict propagate(Shape shape) { return {Role::Propagate, shape, ""}; }
Verdict end() { return {Role::End, Shape::Rows, ""}; }
Verdict refusal(std::string reason) {
  return {Role::Refuse, Shape::Rows, std::move(reason)};
}

/// Whether \p v is a one-element constant or fill of value 0.
bool isZeroScalar(const Value *v) {
  const Node *def = v->getDef();
  if (!def || !v->getType().isStatic() || v->getType().numElements() != 1)
    return false;
  const Attribute *value = def->attr("value");
  if (!value)
    return false;
  if (const auto *values = std::get_if<std::vector<Number>>(value))
    return values->size() == 1 && (*values)[0].real() == 0;
  if (const auto *scalar = std::get_if<Number>(value))
    return scalar->real() == 0;
  return false;
}

bool isFloatMean(const Node &n) {
  return n.getOp() == OpKind::Mean && isFloat(n.result()->getType().dtype);
}

class SelectionRewriter {
public:
  SelectionRewriter(Graph &graph, PassContext &ctx)
      : graph(graph), ctx(ctx), builder(graph, ctx.diag), vb(builder) {}
  bool run();

private:
  void analyze();
  void visit(Node &n);
  Verdict classify(const Node &n, Shape shape) const;
  Verdict classifyIndices(const Node &n) const;
  Verdict classifyRows(const Node &n) const;
  Verdict elementwise(const Node &n, Shape shape) const;
  Verdict reduction(const Node &n, Shape shape) const;
  bool isSelected(const Value *v) const { return selected.count(v); }
  void refuse(Node *root, const Node *consumer, const std::string &reason);

  bool rewrite();
  bool rewriteRoot(Node &root);
  bool boundedRows(Node &nonzero, Value *m, int64_t count, RootRewrite &r);
  Value *fullValue(Node &gather, const RootRewrite &r);
  Value *cloneOver(Node &n, const RootRewrite &r);
  Value *keptTarget(Node &crossEntropy, Value *target, const RootRewrite &r);
  Value *maskFor(const Selection &s, unsigned rank);
  Value *maskedReduction(Node &n, const Selection &s);
  void report(const Node &root, const RootRewrite &r);

  Graph &graph;
  PassContext &ctx;
  GraphBuilder builder;
  ValueBuilder vb;
  llvm::DenseMap<const Value *, Selection> selected;
  std::vector<Node *> order; ///< Roots, propagating nodes and ends.
  llvm::DenseSet<const Node *> ends;
  llvm::DenseSet<const Node *> refused;
  std::vector<Node *> roots;
  llvm::DenseMap<const Node *, RootRewrite> rewrites;
  llvm::DenseMap<const Value *, Value *> full;
};

} // namespace

//===----------------------------------------------------------------------===//
// Analysis
//===----------------------------------------------------------------------===//

void SelectionRewriter::refuse(Node *root, const Node *consumer,
                               const std::string &reason) {
  if (!refused.insert(root).second)
    return;
  std::string what = root->getOp() == OpKind::NonZero
                         ? "its result has a data-dependent number of rows"
                         : "its result has a data-dependent length";
  std::string who = "an output";
  if (consumer)
    who = "node '" + consumer->getName() + "' (" +
          mnemonic(consumer->getOp()).str() + ")";
  ctx.diag.nodeError(*root, what + " that reaches " + who +
                                ": the host would need its size; " + reason);
}

Verdict SelectionRewriter::elementwise(const Node &n, Shape shape) const {
  unsigned rank = n.result()->getType().rank();
  for (const Value *v : n.getOperands()) {
    const TensorType &type = v->getType();
    if (isSelected(v) ? type.rank() != rank
                      : type.rank() == rank &&
                            type.dims[0] != Dim::fixed(1))
      return refusal("it broadcasts the selection against another tensor's "
                     "leading axis");
  }
  return propagate(shape);
}

Verdict SelectionRewriter::reduction(const Node &n, Shape shape) const {
  const TensorType &in = n.operand(0)->getType();
  auto axes = reductionAxes(n, in.rank());
  if (!llvm::is_contained(axes, 0u))
    return shape == Shape::Rows ? propagate(Shape::Rows)
                                : refusal("it does not reduce all of it");
  if (n.getOp() != OpKind::Sum && !isFloatMean(n))
    return refusal("only sum and float mean over the selected axis are "
                   "rewritten (as masked sums)");
  if (shape == Shape::Elements && n.result()->getType().rank() != 0)
    return refusal("a keepdim reduction of a masked_select is not rewritten");
  for (unsigned axis : axes)
    if (!in.dims[axis].isStatic() && axis != 0)
      return refusal("a mean over a symbolic extent is not rewritten");
  return end();
}

Verdict SelectionRewriter::classifyIndices(const Node &n) const {
  if (n.getOp() != OpKind::Gather)
    return refusal("the indices of a nonzero are rewritten only as gather "
                   "indices");
  const TensorType &data = n.operand(0)->getType();
  auto axis = normalizeAxis(n.intAttr("axis", 0), data.rank());
  if (isSelected(n.operand(0))) { // The column of nonzero(m): nz[:, 0].
    if (isSelected(n.operand(1)) || data.rank() != 2 || axis != 1u ||
        !isZeroScalar(n.operand(1)))
      return refusal("only column 0 of a nonzero is rewritten");
    return propagate(Shape::Indices);
  }
  const Node *root = selected.lookup(n.operand(1)).root;
  if (axis != 0u || data.dims[0] != root->operand(0)->getType().dims[0])
    return refusal("a gather by a nonzero's indices is rewritten on axis 0 "
                   "of a tensor with the mask's length");
  return propagate(Shape::Rows);
}

Verdict SelectionRewriter::classifyRows(const Node &n) const {
  unsigned rank = n.operand(0)->getType().rank();
  auto firstOnly = [&]() {
    for (unsigned i = 1; i < n.numOperands(); ++i)
      if (isSelected(n.operand(i)))
        return false;
    return isSelected(n.operand(0));
  };
  auto awayFromRows = [&](int64_t rawAxis) {
    auto axis = normalizeAxis(rawAxis, rank);
    return firstOnly() && axis && *axis != 0;
  };
  const char *notRowWise = "it mixes the selected rows";
  auto rowWise = [&](bool ok) {
    return ok ? propagate(Shape::Rows) : refusal(notRowWise);
  };
  OpKind op = n.getOp();
  if (op == OpKind::Linear)
    return rowWise(firstOnly() && rank >= 2);
  if (op == OpKind::MatMul)
    return rowWise(firstOnly() && rank >= 2 &&
                   !n.boolAttr("transpose_a", false) &&
                   n.operand(1)->getType().rank() <= 2);
  if (op == OpKind::Softmax || op == OpKind::LogSoftmax ||
      isRowNorm(n) || op == OpKind::CumSum)
    return rowWise(awayFromRows(n.intAttr("axis", -1)));
  if (op == OpKind::ArgMax || op == OpKind::Gather)
    return rowWise(awayFromRows(n.intAttr("axis", 0)));
  if (op == OpKind::Embedding)
    return rowWise(!isSelected(n.operand(0)));
  if (op == OpKind::OneHot)
    return propagate(Shape::Rows);
  if (op == OpKind::CrossEntropy) {
    if (!isSelected(n.operand(0)) || !isSelected(n.operand(1)))
      return refusal("its logits and targets must both be selected");
    return n.strAttr("reduction", "mean") == "none" ? propagate(Shape::Rows)
                                                    : end();
  }
  if (op == OpKind::Sum || op == OpKind::Mean || op == OpKind::Max ||
      op == OpKind::Min || op == OpKind::Prod)
    return reduction(n, Shape::Rows);
  if (n.info().has(Elementwise))
    return elementwise(n, Shape::Rows);
  return refusal("a fixed shape with a mask is carried through elementwise "
                 "and row-wise ops into sum, mean and cross_entropy, not "
                 "through " + mnemonic(n.getOp()).str());
}

Verdict SelectionRewriter::classify(const Node &n, Shape shape) const {
  switch (shape) {
  case Shape::Indices:
    return classifyIndices(n);
  case Shape::Rows:
    return classifyRows(n);
  case Shape::Elements:
    if (n.getOp() == OpKind::Sum || n.getOp() == OpKind::Mean)
      return reduction(n, Shape::Elements);
    if (n.info().has(Elementwise))
      return elementwise(n, Shape::Elements);
    return refusal("a masked_select is carried through elementwise ops into "
                   "sum and mean, not through " + mnemonic(n.getOp()).str());
  }
  llvm_unreachable("invalid selection shape");
}

void SelectionRewriter::visit(Node &n) {
  if (n.getOp() == OpKind::MaskedSelect) {
    selected[n.result()] = {&n, Shape::Elements};
    order.push_back(&n);
    roots.push_back(&n);
    return;
  }
  if (n.getOp() == OpKind::NonZero) {
    roots.push_back(&n);
    const Node *reader =
        n.result()->hasUses() ? n.result()->uses()[0].user : nullptr;
    if (n.operand(0)->getType().rank() != 1)
      return refuse(&n, reader,
                    "only a nonzero of a rank-1 mask (row indices) is "
                    "rewritten");
    if (n.attr("max_count") && !n.operand(0)->getType().dims[0].isStatic())
      return refuse(&n, reader,
                    "a max_count needs a mask of static length (bind its "
                    "dim with --bind-dim)");
    selected[n.result()] = {&n, Shape::Indices};
    order.push_back(&n);
    return;
  }
  Selection first;
  for (const Value *v : n.getOperands()) {
    auto it = selected.find(v);
    if (it == selected.end())
      continue;
    // Two data-dependent dims never broadcast: one root, two shapes.
    if (first.root && it->second.shape != first.shape) {
      refuse(first.root, &n, "it combines the selected rows with their "
                             "indices");
      return;
    }
    first = it->second;
  }
  if (!first.root || refused.count(first.root))
    return;
  Verdict v = classify(n, first.shape);
  switch (v.role) {
  case Role::Refuse:
    refuse(first.root, &n, v.reason);
    return;
  case Role::Propagate:
    selected[n.result()] = {first.root, v.shape};
    order.push_back(&n);
    return;
  case Role::End:
    ends.insert(&n);
    order.push_back(&n);
    rewrites[first.root].ends.push_back(&n);
    return;
  }
}

void SelectionRewriter::analyze() {
  for (const auto &owned : graph.nodes())
    visit(*owned);
  for (const GraphOutput &o : graph.outputs)
    if (auto it = selected.find(o.value); it != selected.end())
      refuse(it->second.root, nullptr,
             "the caller would need the shape of the output '" + o.name + "'");
}

//===----------------------------------------------------------------------===//
// Rewrite
//===----------------------------------------------------------------------===//

/// The rows of a `nonzero(m, max_count = K)`: row j of the result gathers
/// source row `#{i : cumsum(m)[i] <= j}`, the position of the (j+1)-th
/// selected row (N past the last one).
bool SelectionRewriter::boundedRows(Node &nonzero, Value *m, int64_t count,
                                    RootRewrite &r) {
  Dim n = m->getType().dims[0];
  vb.setBase(nonzero.getName());
  Value *ones = vb.op(OpKind::Cast, {m}, {{"dtype", DType::I32}}, "ones");
  Value *running = vb.op(OpKind::CumSum, {ones}, {{"axis", int64_t(0)}}, "running");
  Value *row = vb.reshape(running, {Dim::fixed(1), n}, "running_row");
  Value *slots = vb.op(OpKind::Iota, {},
                       {{"dtype", DType::I32},
                        {"shape", std::vector<Dim>{Dim::fixed(count), Dim::fixed(1)}},
                        {"axis", int64_t(0)}},
                       "slots");
  Value *before = vb.op(OpKind::Le, {row, slots}, {}, "before");
  Value *counted = vb.op(OpKind::Cast, {before}, {{"dtype", DType::I32}}, "before_i32");
  Value *index = vb.op(OpKind::Sum, {counted}, {{"axes", std::vector<int64_t>{1}}}, "rows");
  Value *limit = vb.fill(double(n.extent()), DType::I32, "limit");
  Value *valid = vb.op(OpKind::Lt, {index, limit}, {}, "valid");
  if (!valid)
    return false;
  r.rowIndex = index;
  r.mask = valid;
  r.rows = count;
  return true;
}

bool SelectionRewriter::rewriteRoot(Node &root) {
  RootRewrite &r = rewrites[&root];
  builder.setInsertionPoint(root);
  builder.setOrigin(root);
  switch (root.getOp()) {
  case OpKind::MaskedSelect:
    r.mask = root.operand(1);
    full[root.result()] = root.operand(0);
    return true;
  case OpKind::NonZero:
    break;
  case OpKind::Item: // Not a selection (visit).
#define CGC_SYNC_POINT_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("not a masked_select or nonzero");
  }
  const TensorType &mask = root.operand(0)->getType();
  Value *selects = root.operand(0); // Nonzero elements, as a bool mask.
  if (mask.dtype != DType::Bool) {
    vb.setBase(root.getName());
    selects = vb.op(OpKind::Ne, {selects, vb.fill(0, mask.dtype, "zero")}, {}, "mask");
    if (!selects)
      return false;
  }
  int64_t maxCount = root.intAttr("max_count", INT64_MAX);
  if (mask.dims[0].isStatic() && maxCount < mask.dims[0].extent())
    return boundedRows(root, selects, maxCount, r);
  r.mask = selects;
  r.rows = mask.dims[0].isStatic() ? mask.dims[0].extent() : -1;
  return true;
}

/// The fixed-shape counterpart of a gather by a nonzero's indices: the data
/// itself, or its K gathered rows; [M, 1, ...] for indices of shape [n, 1].
Value *SelectionRewriter::fullValue(Node &gather, const RootRewrite &r) {
  Value *data = gather.operand(0);
  vb.setBase(gather.getName());
  if (r.rowIndex)
    data = vb.op(OpKind::Gather, {data, r.rowIndex}, {{"axis", int64_t(0)}}, "fixed");
  if (!data || gather.operand(1)->getType().rank() == 1)
    return data;
  const auto &rowDims = data->getType().dims;
  std::vector<Dim> dims = {rowDims[0], Dim::fixed(1)};
  dims.insert(dims.end(), rowDims.begin() + 1, rowDims.end());
  return vb.reshape(data, dims, "column");
}

/// The target of a cross_entropy over all rows: the selected rows' targets,
/// ignore_index elsewhere.
Value *SelectionRewriter::keptTarget(Node &crossEntropy, Value *target,
                                     const RootRewrite &r) {
  vb.setBase(crossEntropy.getName());
  Value *ignored = vb.fill(double(crossEntropy.intAttr("ignore_index", -100)),
                           target->getType().dtype, "ignored");
  return vb.op(OpKind::Where, {r.mask, target, ignored}, {}, "target");
}

Value *SelectionRewriter::cloneOver(Node &n, const RootRewrite &r) {
  llvm::SmallVector<Value *, 3> operands;
  for (Value *v : n.getOperands())
    operands.push_back(isSelected(v) ? full.lookup(v) : v);
  if (n.getOp() == OpKind::CrossEntropy)
    operands[1] = keptTarget(n, operands[1], r);
  return vb.clone(n, operands);
}

/// The mask of selection \p s, shaped to broadcast over a fixed-shape value
/// of rank \p rank.
Value *SelectionRewriter::maskFor(const Selection &s, unsigned rank) {
  Value *mask = rewrites[s.root].mask;
  if (s.shape == Shape::Elements || rank == 1)
    return mask;
  std::vector<Dim> dims(rank, Dim::fixed(1));
  dims[0] = mask->getType().dims[0];
  vb.setBase(mask->getName());
  return vb.reshape(mask, dims, "rows");
}

/// `sum(where(mask, y, 0))` with \p n's axes, divided for a mean by the
/// count of selected elements; means sum and divide in f32.
Value *SelectionRewriter::maskedReduction(Node &n, const Selection &s) {
  const TensorType &in = n.operand(0)->getType();
  DType dtype = n.result()->getType().dtype;
  bool mean = false;
  switch (n.getOp()) {
  case OpKind::Mean: mean = true; break;
  case OpKind::Sum: break;
  case OpKind::Max: case OpKind::Min: case OpKind::Prod: case OpKind::ArgMax:
#define CGC_REDUCTION_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("the ends reduced with a mask are sums and means "
                     "(reduction)");
  }
  auto toF32 = [&](Value *v, const char *suffix) -> Value * {
    if (!v || v->getType().dtype == DType::F32)
      return v;
    return vb.op(OpKind::Cast, {v}, {{"dtype", DType::F32}}, suffix);
  };
  vb.setBase(n.getName());
  Value *y = full.lookup(n.operand(0));
  Value *summed = mean ? toF32(y, "f32") : y;
  Value *mask = summed ? maskFor(s, summed->getType().rank()) : nullptr;
  vb.setBase(n.getName());
  Value *zero = summed ? vb.fill(0, summed->getType().dtype, "zero") : nullptr;
  Value *kept = vb.op(OpKind::Where, {mask, summed, zero}, {}, "kept");
  AttrMap attrs; // Elements: every axis of x (the end gives a scalar).
  for (const char *key : {"axes", "keepdim"})
    if (const Attribute *a = n.attr(key); a && s.shape == Shape::Rows)
      attrs[key] = *a;
  Value *total = vb.op(OpKind::Sum, {kept}, attrs, "total");
  if (!total || !mean)
    return total;
  Value *count = vb.op(OpKind::Sum, {toF32(rewrites[s.root].mask, "ones")}, {}, "count");
  int64_t perRow = 1;
  for (unsigned axis : reductionAxes(n, in.rank()))
    if (axis != 0)
      perRow *= in.dims[axis].extent();
  if (perRow != 1)
    count = vb.op(OpKind::Mul, {count, vb.fill(double(perRow), DType::F32, "per_row")},
                  {}, "elements");
  Value *quotient = vb.op(OpKind::Div, {total, count}, {}, "mean");
  if (!quotient || dtype == DType::F32)
    return quotient;
  return vb.op(OpKind::Cast, {quotient}, {{"dtype", dtype}},
               "mean_" + dtypeName(dtype).str());
}

void SelectionRewriter::report(const Node &root, const RootRewrite &r) {
  std::string how;
  if (root.getOp() == OpKind::MaskedSelect)
    how = "the ops after it run over the whole tensor";
  else if (r.rowIndex)
    how = "its gathers take a fixed " + std::to_string(r.rows) +
          " rows (max_count), the ops after them run over those";
  else
    how = "the ops after its gathers run over all " +
          (r.rows >= 0 ? std::to_string(r.rows) + " " : std::string()) +
          "rows";
  std::string kept;
  bool divides = false;
  for (const Node *e : r.ends) {
    kept += (kept.empty() ? "'" : ", '") + e->getName() + "' (" +
            mnemonic(e->getOp()).str() + ")";
    divides |= e->getOp() == OpKind::Mean ||
               (e->getOp() == OpKind::CrossEntropy &&
                e->strAttr("reduction", "mean") == "mean");
  }
  std::string verb = r.ends.size() == 1 ? "s" : "";
  ctx.diag.note(root.getLoc(),
                "node '" + root.getName() + "' (" +
                    mnemonic(root.getOp()).str() + "): removed; " + how +
                    ", and " + kept + " keep" + verb +
                    " the selected ones with the mask" +
                    (divides ? " and divide" + verb +
                                   " by their device-side count"
                             : ""));
}

bool SelectionRewriter::rewrite() {
  for (Node *n : order) {
    auto it = selected.find(n->result());
    Selection s = it != selected.end() ? it->second : Selection();
    if (n->info().has(SyncPoint)) {
      if (!rewriteRoot(*n))
        return false;
      continue;
    }
    if (!s.root) { // An end: find its selection through an operand.
      for (const Value *v : n->getOperands())
        if (isSelected(v))
          s = selected.lookup(v);
    }
    const RootRewrite &r = rewrites[s.root];
    builder.setInsertionPoint(*n);
    builder.setOrigin(*n);
    if (s.shape == Shape::Indices)
      continue; // The column of a nonzero: its gathers read the root.
    bool isRoot = n->getOp() == OpKind::Gather && isSelected(n->operand(1)) &&
                  selected.lookup(n->operand(1)).shape == Shape::Indices;
    Value *value = nullptr;
    if (isRoot)
      value = fullValue(*n, r);
    else if (ends.count(n) && n->getOp() != OpKind::CrossEntropy)
      value = maskedReduction(*n, s);
    else
      value = cloneOver(*n, r);
    if (!value)
      return false;
    if (ends.count(n))
      graph.replaceAllUsesWith(n->result(), value);
    else
      full[n->result()] = value;
  }
  return true;
}

bool SelectionRewriter::run() {
  analyze();
  if (!refused.empty())
    return false;
  if (order.empty())
    return true;
  if (!rewrite())
    return false;
  if (ctx.report)
    for (Node *root : roots)
      report(*root, rewrites[root]);
  std::vector<Node *> dead(order.rbegin(), order.rend());
  for (Node *d : dead)
    d->dropOperands();
  graph.erase(dead);
  return true;
}

bool cgc::rewriteSelections(Graph &graph, PassContext &ctx) {
  return SelectionRewriter(graph, ctx).run();
}
