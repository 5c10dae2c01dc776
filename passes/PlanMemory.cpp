//===- PlanMemory.cpp - Check that the graph has a memory plan ---------------===//
//
// Algorithm: runs computeMemoryPlan() (passes/MemoryPlan.cpp: liveness over
// one numbering of the nodes of the graph and its regions, first-fit offsets
// in one 256-byte-aligned arena, in-place reuse for elementwise nodes whose
// operand dies there, shared slots for `if` results and `while` carried
// values, scratch for loop counters, a separate persistent region for state
// and constant data) and reports its errors. The graph is not changed; the
// plan is left in the PassContext, where codegen and `cgc-opt
// --print-memory-plan` take it (the next pass drops it).
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
    auto plan = std::make_unique<MemoryPlan>();
    if (!computeMemoryPlan(graph, *plan, ctx.diag, ctx.layout))
      return false;
    ctx.memoryPlan = std::move(plan);
    return true;
  }
};
} // namespace

std::unique_ptr<Pass> cgc::createPlanMemoryPass() {
  return std::make_unique<PlanMemoryPass>();
}
