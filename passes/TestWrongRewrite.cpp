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

#include "ir/Builder.h"

using namespace cgc;

namespace {
class TestWrongRewritePass : public Pass {
public:
  llvm::StringRef name() const override { return "test-wrong-rewrite"; }
  llvm::StringRef summary() const override {
    return "test only: wrongly rewrites the first add into sub";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    for (const auto &owned : graph.nodes()) {
      Node *node = owned.get();
      if (node->getOp() != OpKind::Add)
        continue;
      GraphBuilder builder(graph, ctx.diag);
      builder.setInsertionPoint(*node);
      builder.setOrigin(*node);
      Node *sub = builder.create(OpKind::Sub, node->getName(),
                                 node->getOperands(), node->attrs());
      if (!sub)
        return false;
      builder.replace(*node, *sub);
      return true;
    }
    return true;
  }
};
} // namespace

std::unique_ptr<Pass> cgc::createTestWrongRewritePass() {
  return std::make_unique<TestWrongRewritePass>();
}
