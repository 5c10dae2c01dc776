//===- RemoveSyncPoints.cpp - Keep host reads and data-dependent shapes off the host ===//
//
// Algorithm: for each graph, regions of `if` and `while` first, in node
// order:
//   - `item(x)`: nothing in a compiled graph reads a value on the host
//     (`if` and `while` predicates are device booleans, and outputs are
//     read by the caller after the replay), so the item becomes
//     `reshape(x)` to a scalar, which stays on the device.
//   - `masked_select` and `nonzero` (with the gathers by its indices)
//     become fixed-shape tensors with a mask where their results flow
//     into sums, means and losses; the rest is refused with an error
//     naming the op, why the host would need it and the consumer that
//     would (MaskedSelections.cpp states the rule).
// A `while` without max_iterations gets the PassContext's loopBound as its
// device bound (`cgc --max-loop-iterations`, 10^7 by default). With
// `report` set (`cgc --report`), a note says what became of each sync
// point and each such while.
// Requires: a verified graph. Guarantees: the same values; no item,
// masked_select or nonzero is left (or the pass fails); the rewritten
// values have static shapes.
//
//===----------------------------------------------------------------------===//
#include "passes/MaskedSelections.h"

#include "ir/Builder.h"

using namespace cgc;

namespace {

class RemoveSyncPointsPass : public Pass {
public:
  llvm::StringRef name() const override { return "remove-sync-points"; }
  llvm::StringRef summary() const override {
    return "keep item values on the device and turn data-dependent "
           "selections into masked fixed shapes; refuse what the host "
           "would need";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    return forEachGraphInnermostFirst(
        graph, [&](Graph &g) { return removeIn(g, ctx); });
  }

private:
  bool removeIn(Graph &graph, PassContext &ctx);
  Value *deviceItem(Node &item, GraphBuilder &builder);
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

/// Gives \p loop the context's trip bound if it has none.
static void boundLoop(Node &loop, PassContext &ctx) {
  if (loop.attr("max_iterations"))
    return;
  loop.setAttr("max_iterations", ctx.loopBound);
  if (ctx.report)
    ctx.diag.note(loop.getLoc(), "node '" + loop.getName() +
                                     "' (while): no max_iterations; the "
                                     "device bounds it at " +
                                     std::to_string(ctx.loopBound) +
                                     " trips (--max-loop-iterations)");
}

bool RemoveSyncPointsPass::removeIn(Graph &graph, PassContext &ctx) {
  GraphBuilder builder(graph, ctx.diag);
  // The rewrites insert nodes: collect first.
  std::vector<Node *> items;
  for (const auto &owned : graph.nodes()) {
    if (owned->getOp() == OpKind::While)
      boundLoop(*owned, ctx);
    if (owned->getOp() == OpKind::Item)
      items.push_back(owned.get());
  }
  for (Node *item : items) {
    Value *device = deviceItem(*item, builder);
    if (!device)
      return false;
    graph.replaceAllUsesWith(item->result(), device);
    if (ctx.report)
      ctx.diag.note(item->getLoc(), "node '" + item->getName() +
                                        "' (item): removed; its value stays "
                                        "on the device as a scalar");
    item->dropOperands();
  }
  graph.erase(items);
  return rewriteSelections(graph, ctx);
}

std::unique_ptr<Pass> cgc::createRemoveSyncPointsPass() {
  return std::make_unique<RemoveSyncPointsPass>();
}
