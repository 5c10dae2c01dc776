//===- Schedule.cpp - Record how every heavy node runs -----------------------===//
//
// Algorithm: walk every graph, regions first; give each heavy node
// (target/Scheduler.h: a static matrix product, a row or column kernel)
// without a record the one the scheduling library computes for the
// context's target, and check a record that is already there (hand-written
// in the JSON, or kept from an earlier run) against the node.
// Requires: fusion done (a record belongs to the node that runs; the
// fusion passes asked the same library before fusing). Runs before
// plan-memory, which reserves each record's scratch.
// Guarantees: every heavy node carries a record that can run it; a node
// no strategy can run, or a record that cannot run its node, is a located
// error naming both. Records depend on the node and the target alone, so
// the same IR gets the same records (and bytes) every time.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"
#include "target/Scheduler.h"

using namespace cgc;

namespace {
class SchedulePass : public Pass {
public:
  llvm::StringRef name() const override { return "schedule"; }
  llvm::StringRef summary() const override {
    return "record how every matrix product, row and column kernel runs";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    bool ok = true;
    forEachGraphInnermostFirst(graph, [&](Graph &g) {
      for (const auto &node : g.nodes())
        ok = scheduleNode(*node, ctx) && ok;
      return true;
    });
    return ok;
  }

private:
  static bool scheduleNode(Node &node, PassContext &ctx) {
    const Schedule *record = node.schedule();
    if (!needsSchedule(node)) {
      if (!record)
        return true;
      ctx.diag.nodeError(node, "has a schedule record, but '" +
                                   mnemonic(node.getOp()).str() +
                                   "' here takes none (only static matrix "
                                   "products and row or column kernels do)");
      return false;
    }
    std::string why;
    if (record) {
      why = checkSchedule(node, *record, ctx.target);
      if (why.empty())
        return true;
      ctx.diag.nodeError(node, "schedule " + formatSchedule(*record) +
                                   " cannot run it: " + why);
      return false;
    }
    if (auto computed = scheduleOf(node, ctx.target, why)) {
      node.setSchedule(std::move(*computed));
      return true;
    }
    ctx.diag.nodeError(node, why);
    return false;
  }
};
} // namespace

std::unique_ptr<Pass> cgc::createSchedulePass() {
  return std::make_unique<SchedulePass>();
}
