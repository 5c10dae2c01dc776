//===- TestWrongRewrite.cpp - A deliberately wrong pass, for tests -----------===//
//
// Algorithm: rewrites the first `add` of the top-level graph into a `sub`
// (same operands, attributes and result). Requires: a verified graph.
// Guarantees: a valid graph that computes something else whenever the add's
// second operand is nonzero. Exists only so the tests can show that
// `cgc-opt --check-equivalence` catches a miscompiling pass.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

using namespace cgc;

namespace {
class TestWrongRewritePass : public Pass {
public:
  llvm::StringRef name() const override { return "test-wrong-rewrite"; }
  llvm::StringRef summary() const override {
    return "test only: wrongly rewrites the first add into sub";
  }
  bool run(Graph &graph, PassContext &) override {
    for (const auto &owned : graph.nodes()) {
      Node *node = owned.get();
      if (node->getOp() != OpKind::Add)
        continue;
      auto sub = std::make_unique<Node>(OpKind::Sub, node->getName(),
                                        node->getLoc());
      sub->setSourceLoc(node->getSourceLoc());
      for (Value *v : node->getOperands())
        sub->addOperand(v);
      for (const auto &[key, value] : node->attrs())
        sub->setAttr(key, value);
      Value *result = sub->addResult(node->result()->getName() + ".wrong",
                                     node->result()->getType());
      graph.insertBefore(node, std::move(sub));
      graph.replaceAllUsesWith(node->result(), result);
      std::string name = node->result()->getName();
      graph.erase(node);
      result->setName(name);
      return true;
    }
    return true;
  }
};
} // namespace

std::unique_ptr<Pass> cgc::createTestWrongRewritePass() {
  return std::make_unique<TestWrongRewritePass>();
}
