//===- CommonSubexpressionElimination.cpp - Merge identical nodes ------------===//
//
// Algorithm: walk the nodes in order, keyed by (op, operands, attributes);
// a node whose key was seen before has its results replaced by the earlier
// node's, and the duplicates are erased together at the end (linear
// time). Nodes with regions and random or data-dependent ops are never
// merged. Requires: a verified graph. Guarantees: no two
// remaining region-free, deterministic nodes compute the same thing.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/Printer.h"

#include <map>

using namespace cgc;

namespace {
class CommonSubexpressionEliminationPass : public Pass {
public:
  llvm::StringRef name() const override { return "cse"; }
  llvm::StringRef summary() const override {
    return "merge nodes that compute the same value";
  }
  bool run(Graph &graph, PassContext &) override {
    eliminate(graph);
    return true;
  }

private:
  static bool mergeable(const Node &n) {
    return !n.numRegions() && !n.info().has(Random) &&
           !n.info().has(SyncPoint);
  }

  static std::string key(const Node &n) {
    std::string k = mnemonic(n.getOp()).str() + "(";
    for (Value *v : n.getOperands())
      k += std::to_string(reinterpret_cast<uintptr_t>(v)) + ",";
    return k + ")" + formatAttrs(n);
  }

  static void eliminate(Graph &graph) {
    std::map<std::string, Node *> seen;
    std::vector<Node *> duplicates;
    for (const auto &owned : graph.nodes()) {
      Node *node = owned.get();
      for (unsigned k = 0; k < node->numRegions(); ++k)
        eliminate(node->region(k));
      if (!mergeable(*node))
        continue;
      auto [it, inserted] = seen.try_emplace(key(*node), node);
      if (inserted)
        continue;
      for (unsigned r = 0; r < node->numResults(); ++r)
        graph.replaceAllUsesWith(node->result(r), it->second->result(r));
      duplicates.push_back(node);
    }
    graph.erase(duplicates);
  }
};
} // namespace

std::unique_ptr<Pass> cgc::createCommonSubexpressionEliminationPass() {
  return std::make_unique<CommonSubexpressionEliminationPass>();
}
