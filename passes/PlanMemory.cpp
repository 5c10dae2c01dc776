//===- PlanMemory.cpp - Check that the graph has a memory plan ---------------===//
//
// Algorithm: runs computeMemoryPlan() (passes/MemoryPlan.cpp: liveness over
// the ordered top-level nodes, first-fit offsets in one 256-byte-aligned
// arena, in-place reuse for elementwise nodes whose operand dies there, a
// separate persistent region for state and constant data) and reports its
// errors. The graph is not changed; `cgc-opt --print-memory-plan` and the
// code generator recompute the same deterministic plan.
// Requires: a verified, topologically ordered graph. Guarantees: every
// update and mutation names a persistent input, no state tensor is
// updated twice (both would write its one storage); the plan exists.
//
//===----------------------------------------------------------------------===//
#include "passes/MemoryPlan.h"
#include "passes/Pass.h"

using namespace cgc;

namespace {
class PlanMemoryPass : public Pass {
public:
  llvm::StringRef name() const override { return "plan-memory"; }
  llvm::StringRef summary() const override {
    return "assign arena and persistent offsets to every value";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    MemoryPlan plan;
    return computeMemoryPlan(graph, plan, ctx.diag);
  }
};
} // namespace

std::unique_ptr<Pass> cgc::createPlanMemoryPass() {
  return std::make_unique<PlanMemoryPass>();
}
