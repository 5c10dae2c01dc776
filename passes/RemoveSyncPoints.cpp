//===- RemoveSyncPoints.cpp - Keep host reads and data-dependent shapes off the host ===//
//
// Algorithm: for each sync-point op (family SyncPoint in Ops.def), regions
// of `if` and `while` first, in node order:
//   - `item(x)`: nothing in a compiled graph reads a value on the host
//     (`if` and `while` predicates are device booleans, and outputs are
//     read by the caller after the replay), so the item becomes
//     `reshape(x)` to a scalar, which stays on the device.
//   - `masked_select(x, m)` whose result flows, through elementwise ops
//     whose other operands hold one element, into a `sum` or float `mean`
//     over all of it (no keepdim), each value read by the next node alone:
//     the elementwise chain runs over x's whole shape, and the reduction
//     becomes `sum(where(m, y, 0))`, divided for a mean by the device-side
//     count `sum(cast(m))` (0 / 0 = NaN for an empty selection, as the
//     mean of nothing is).
//   - anything else (a `nonzero`, or a selection that reaches another
//     op or an output) is refused with an error naming the op, why the
//     host would need it and the consumer that would.
// A `while` without max_iterations gets the PassContext's loopBound as its
// device bound (`cgc --max-loop-iterations`, 10^7 by default). With
// `report` set (`cgc --report`), a note says what became of each sync
// point and each such while.
// Requires: a verified graph. Guarantees: the same values; no item or
// masked_select is left (or the pass fails); the rewritten values have
// static shapes.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/Builder.h"
#include "ir/TypeRules.h"

using namespace cgc;

namespace {

/// The elementwise chain from a masked_select to the sum or mean that
/// consumes it.
struct SelectionChain {
  Node *select = nullptr;
  std::vector<Node *> ops; ///< Elementwise, each reading the one before.
  Node *reduction = nullptr;
};

/// The one node of \p g that reads \p v (maybe as several operands), if
/// \p v is not returned.
Node *soleUser(const Graph &g, Value *v) {
  if (g.isOutput(v) || v->uses().empty())
    return nullptr;
  Node *user = v->uses().begin()->user;
  for (const Use &u : v->uses())
    if (u.user != user)
      return nullptr;
  return user->getParent() == &g ? user : nullptr;
}

/// Whether elementwise \p n reads \p chained and otherwise only values of
/// one element.
bool continuesChain(const Node &n, const Value *chained) {
  if (!n.info().has(Elementwise))
    return false;
  for (const Value *v : n.getOperands())
    if (v != chained &&
        (!v->getType().isStatic() || v->getType().numElements() != 1))
      return false;
  return true;
}

/// Whether \p n sums (or, for floats, averages) all of its operand into a
/// scalar.
bool reducesAll(const Node &n) {
  if (n.getOp() != OpKind::Sum && n.getOp() != OpKind::Mean)
    return false;
  DType dtype = n.result()->getType().dtype;
  bool isFloat = dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
  return (n.getOp() == OpKind::Sum || isFloat) && n.result()->getType().rank() == 0;
}

/// The consumer that stops \p chain (null when the value is returned).
Node *chainFor(const Graph &g, Node &select, SelectionChain &chain) {
  chain.select = &select;
  Value *v = select.result();
  while (Node *user = soleUser(g, v)) {
    if (reducesAll(*user)) {
      chain.reduction = user;
      return user;
    }
    if (!continuesChain(*user, v))
      return user;
    chain.ops.push_back(user);
    v = user->result();
  }
  return v->uses().empty() ? nullptr : v->uses().begin()->user;
}

class RemoveSyncPointsPass : public Pass {
public:
  llvm::StringRef name() const override { return "remove-sync-points"; }
  llvm::StringRef summary() const override {
    return "keep item values on the device and turn masked selections "
           "into masked reductions; refuse what the host would need";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    return forEachGraphInnermostFirst(
        graph, [&](Graph &g) { return removeIn(g, ctx); });
  }

private:
  bool removeIn(Graph &graph, PassContext &ctx);
  Value *deviceItem(Node &item, GraphBuilder &builder);
  Value *maskedReduction(const SelectionChain &chain, GraphBuilder &builder);
  void refuse(Node &n, Node *consumer, PassContext &ctx);
};

} // namespace

Value *RemoveSyncPointsPass::deviceItem(Node &item, GraphBuilder &builder) {
  builder.setInsertionPoint(item);
  builder.setOrigin(item);
  Node *view = builder.create(OpKind::Reshape, item.getName() + ".device",
                              {item.operand(0)},
                              {{"shape", std::vector<Dim>()}});
  return view ? view->result() : nullptr;
}

Value *RemoveSyncPointsPass::maskedReduction(const SelectionChain &chain,
                                             GraphBuilder &builder) {
  Node &reduction = *chain.reduction;
  builder.setInsertionPoint(reduction);
  builder.setOrigin(*chain.select);
  Value *x = chain.select->operand(0), *mask = chain.select->operand(1);
  Value *y = x;
  for (Node *op : chain.ops) {
    llvm::SmallVector<Value *, 3> operands;
    for (Value *v : op->getOperands())
      operands.push_back(v->getDef() && (v->getDef() == chain.select ||
                                         llvm::is_contained(chain.ops, v->getDef()))
                             ? y
                             : v);
    Node *full = builder.clone(*op, operands);
    if (!full)
      return nullptr;
    y = full->result();
  }
  DType dtype = y->getType().dtype;
  std::string base = chain.select->getName();
  bool mean = reduction.getOp() == OpKind::Mean;
  // A mean sums and counts in f32 (an f16 sum rounded before the division
  // would round twice; f16 counts only to 2048 exactly), then rounds once.
  auto toF32 = [&](Value *v, const char *suffix) -> Value * {
    if (v->getType().dtype == DType::F32)
      return v;
    Node *c = builder.create(OpKind::Cast, base + suffix, {v},
                             {{"dtype", DType::F32}});
    return c ? c->result() : nullptr;
  };
  Value *summed = mean ? toF32(y, ".f32") : y;
  Node *zero = summed ? builder.create(OpKind::Fill, base + ".zero", {},
                                       {{"dtype", summed->getType().dtype},
                                        {"shape", std::vector<Dim>()},
                                        {"value", 0.0}})
                      : nullptr;
  Node *kept = zero ? builder.create(OpKind::Where, base + ".kept",
                                     {mask, summed, zero->result()})
                    : nullptr;
  Node *total = kept ? builder.create(OpKind::Sum, base + ".total",
                                      {kept->result()})
                     : nullptr;
  if (!total || !mean)
    return total ? total->result() : nullptr;
  Value *ones = toF32(mask, ".ones");
  Node *count = ones ? builder.create(OpKind::Sum, base + ".count", {ones})
                     : nullptr;
  Node *quotient = count ? builder.create(OpKind::Div, base + ".mean",
                                          {total->result(), count->result()})
                         : nullptr;
  if (!quotient || dtype == DType::F32)
    return quotient ? quotient->result() : nullptr;
  Node *back = builder.create(OpKind::Cast, base + ".mean_" + dtypeName(dtype).str(),
                              {quotient->result()}, {{"dtype", dtype}});
  return back ? back->result() : nullptr;
}

void RemoveSyncPointsPass::refuse(Node &n, Node *consumer,
                                  PassContext &ctx) {
  std::string why =
      n.getOp() == OpKind::NonZero
          ? "its result has a data-dependent number of rows"
          : "its result has a data-dependent length";
  std::string who = "an output";
  if (consumer)
    who = "node '" + consumer->getName() + "' (" +
          mnemonic(consumer->getOp()).str() + ")";
  ctx.diag.nodeError(n, why + " that reaches " + who + ": the host would need its " +
                            "size; a fixed shape for it is not supported yet " +
                            "(only a masked_select feeding elementwise ops " +
                            "into a sum or mean is rewritten)");
}

bool RemoveSyncPointsPass::removeIn(Graph &graph, PassContext &ctx) {
  GraphBuilder builder(graph, ctx.diag);
  std::vector<Node *> dead;
  bool ok = true;
  // The rewrites insert nodes: collect first.
  std::vector<Node *> syncPoints;
  for (const auto &owned : graph.nodes()) {
    Node &n = *owned;
    if (n.getOp() == OpKind::While && !n.attr("max_iterations")) {
      n.setAttr("max_iterations", ctx.loopBound);
      if (ctx.report)
        ctx.diag.note(n.getLoc(), "node '" + n.getName() +
                                      "' (while): no max_iterations; the "
                                      "device bounds it at " +
                                      std::to_string(ctx.loopBound) +
                                      " trips (--max-loop-iterations)");
    }
    if (n.info().has(SyncPoint))
      syncPoints.push_back(&n);
  }
  for (Node *point : syncPoints) {
    Node &n = *point;
    if (n.getOp() == OpKind::Item) {
      Value *device = deviceItem(n, builder);
      if (!device)
        return false;
      graph.replaceAllUsesWith(n.result(), device);
      dead.push_back(&n);
      if (ctx.report)
        ctx.diag.note(n.getLoc(), "node '" + n.getName() +
                                      "' (item): removed; its value stays on "
                                      "the device as a scalar");
      continue;
    }
    SelectionChain chain;
    Node *consumer = n.getOp() == OpKind::MaskedSelect
                         ? chainFor(graph, n, chain)
                         : soleUser(graph, n.result());
    if (!chain.reduction) {
      if (n.getOp() == OpKind::NonZero && !consumer && !n.result()->uses().empty())
        consumer = n.result()->uses().begin()->user;
      refuse(n, consumer, ctx);
      ok = false;
      continue;
    }
    Value *masked = maskedReduction(chain, builder);
    if (!masked)
      return false;
    graph.replaceAllUsesWith(chain.reduction->result(), masked);
    dead.push_back(chain.reduction);
    for (Node *op : llvm::reverse(chain.ops))
      dead.push_back(op);
    dead.push_back(&n);
    if (ctx.report)
      ctx.diag.note(n.getLoc(), "node '" + n.getName() +
                                    "' (masked_select): removed; '" +
                                    chain.reduction->getName() + "' (" +
                                    mnemonic(chain.reduction->getOp()).str() +
                                    ") runs over the whole tensor with the "
                                    "mask" +
                                    (chain.reduction->getOp() == OpKind::Mean
                                         ? " and divides by its device-side count"
                                         : ""));
  }
  for (Node *d : dead)
    d->dropOperands();
  graph.erase(dead);
  return ok;
}

std::unique_ptr<Pass> cgc::createRemoveSyncPointsPass() {
  return std::make_unique<RemoveSyncPointsPass>();
}
