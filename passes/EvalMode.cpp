//===- EvalMode.cpp - A model's inference form ----------------------------===//
//
// Algorithm: every `dropout` (regions of `if` and `while` included) is
// replaced by its input and erased, as `module.eval()` makes PyTorch's
// dropout the identity, and every `batch_norm` loses its `training`
// attribute, so that it normalizes by the running statistics. They are
// the only ops of the IR that train and infer differently. `cgc --train`
// compiles its `eval` graph from the forward graph through this pass
// (driver/Compiler.cpp), which also makes each buffer_mutation output (a
// running-statistics update) its target unchanged.
// Requires: a verified graph. Guarantees: no dropout and no training
// batch_norm remains; every other node, input and output is kept (an
// rng_state input no node reads any more stays, so both graphs of a
// training artifact share their state).
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

using namespace cgc;

namespace {
class EvalModePass : public Pass {
public:
  llvm::StringRef name() const override { return "eval-mode"; }
  llvm::StringRef summary() const override {
    return "make every dropout the identity and every batch_norm use its running "
           "statistics (the inference form)";
  }
  bool run(Graph &graph, PassContext &) override {
    return forEachGraphInnermostFirst(graph, [](Graph &g) {
      std::vector<Node *> dropouts;
      for (const auto &node : g.nodes())
        if (node->getOp() == OpKind::BatchNorm && node->boolAttr("training", false))
          node->setAttr("training", false);
        else if (node->getOp() == OpKind::Dropout) {
          g.replaceAllUsesWith(node->result(), node->operand(0));
          dropouts.push_back(node.get());
        }
      g.erase(dropouts);
      return true;
    });
  }
};
} // namespace

std::unique_ptr<Pass> cgc::createEvalModePass() {
  return std::make_unique<EvalModePass>();
}
