//===- DeadCodeElimination.cpp - Remove unused nodes -------------------------===//
//
// Algorithm: walk the nodes backwards; a node none of whose results has a
// use (graph outputs count as uses) is erased, which may free its operands
// for the nodes walked next. Regions are cleaned the same way first; then
// a `while`'s carried values that do nothing (passed through the body
// unchanged, read by neither region, their result unused: a weight the
// loop no longer reads) are removed, which may free their operands too.
// Requires: a verified graph. Guarantees: every remaining node has a used
// result and every carried value does something; outputs, inputs and side
// effects (none exist yet) are kept.
//
//===----------------------------------------------------------------------===//
#include "passes/CarriedValues.h"
#include "passes/Pass.h"

#include "llvm/ADT/DenseSet.h"

using namespace cgc;

namespace {
class DeadCodeEliminationPass : public Pass {
public:
  llvm::StringRef name() const override { return "dce"; }
  llvm::StringRef summary() const override {
    return "remove nodes whose results are never used";
  }
  bool run(Graph &graph, PassContext &) override {
    eliminate(graph);
    return true;
  }

private:
  static void eliminate(Graph &graph) {
    llvm::DenseSet<Value *> outputs;
    for (const GraphOutput &o : graph.outputs)
      outputs.insert(o.value);
    // Backwards: dropping a dead node's operands frees its producers.
    std::vector<Node *> dead;
    for (size_t i = graph.nodes().size(); i-- > 0;) {
      Node *node = graph.nodes()[i].get();
      bool used = false;
      for (unsigned r = 0; r < node->numResults(); ++r)
        used |= node->result(r)->hasUses() || outputs.count(node->result(r));
      if (!used) {
        node->dropOperands();
        dead.push_back(node);
        continue;
      }
      for (unsigned k = 0; k < node->numRegions(); ++k)
        eliminate(node->region(k));
      if (node->getOp() == OpKind::While)
        for (unsigned k = node->numOperands(); k-- > 0;)
          if (isDeadCarried(*node, k))
            eraseCarried(*node, k);
    }
    graph.erase(dead);
  }
};
} // namespace

std::unique_ptr<Pass> cgc::createDeadCodeEliminationPass() {
  return std::make_unique<DeadCodeEliminationPass>();
}
