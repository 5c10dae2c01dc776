//===- GraphTest.cpp - Use lists and indices after graph edits -------------===//
#include "IrTesting.h"
#include "ir/Diagnostics.h"
#include "ir/Verifier.h"

#include "llvm/Support/raw_ostream.h"
#include <gtest/gtest.h>

using namespace cgc;

namespace {

static size_t usesBy(const Value *v, const Node *user) {
  size_t n = 0;
  for (const Use &u : v->uses())
    n += u.user == user;
  return n;
}

TEST(GraphTest, UseListsAfterBuilding) {
  SmallGraph s;
  EXPECT_EQ(s.x->uses().size(), 2u);
  EXPECT_EQ(usesBy(s.x, s.a), 1u);
  EXPECT_EQ(usesBy(s.x, s.b), 1u);
  ASSERT_EQ(s.a->result()->uses().size(), 1u);
  EXPECT_EQ(s.a->result()->uses()[0].operandIndex, 0u);
  EXPECT_EQ(s.x->getDef(), nullptr);
  EXPECT_EQ(s.a->result()->getDef(), s.a);
  EXPECT_EQ(s.g.lookupValue("b"), s.b->result());
  EXPECT_EQ(s.g.lookupValue("zz"), nullptr);
  EXPECT_EQ(s.g.indexOf(s.b), 1u);
  std::string errors;
  llvm::raw_string_ostream os(errors);
  DiagnosticEngine diag(os);
  EXPECT_TRUE(verifyGraph(s.g, diag)) << os.str();
}

TEST(GraphTest, ReplaceAllUsesWithThenErase) {
  SmallGraph s;
  // b = add(a, x) becomes add(x, x); a is then dead and erased.
  s.a->result()->replaceAllUsesWith(s.x);
  EXPECT_FALSE(s.a->result()->hasUses());
  EXPECT_EQ(s.b->operand(0), s.x);
  EXPECT_EQ(s.x->uses().size(), 3u);
  EXPECT_EQ(usesBy(s.x, s.b), 2u);
  s.g.erase(s.a);
  EXPECT_EQ(s.g.nodes().size(), 1u);
  // Erasing a dropped a's use of x.
  EXPECT_EQ(s.x->uses().size(), 2u);
  EXPECT_EQ(usesBy(s.x, s.b), 2u);
  std::string errors;
  llvm::raw_string_ostream os(errors);
  DiagnosticEngine diag(os);
  EXPECT_TRUE(verifyGraph(s.g, diag)) << os.str();
}

TEST(GraphTest, SetOperandMovesOneUse) {
  SmallGraph s;
  s.b->setOperand(1, s.a->result());
  EXPECT_EQ(usesBy(s.x, s.b), 0u);
  EXPECT_EQ(usesBy(s.a->result(), s.b), 2u);
  s.b->dropOperands();
  EXPECT_EQ(s.b->numOperands(), 0u);
  EXPECT_FALSE(s.a->result()->hasUses());
  EXPECT_EQ(s.x->uses().size(), 1u);
}

TEST(GraphTest, InsertBeforeKeepsOrder) {
  SmallGraph s;
  TensorType t(DType::F32, {Dim::fixed(4)});
  Node *n = s.g.insertBefore(
      s.b, std::make_unique<Node>(OpKind::Exp, "e", Location()));
  n->addOperand(s.a->result());
  n->addResult("e", t);
  EXPECT_EQ(s.g.indexOf(n), 1u);
  EXPECT_EQ(s.g.indexOf(s.b), 2u);
  EXPECT_EQ(n->getParent(), &s.g);
}

TEST(GraphTest, EraseManyAtOnce) {
  SmallGraph s;
  // a and b use each other's values: erasing both at once is safe in any
  // order, and x keeps no use.
  s.g.outputs.clear();
  std::vector<Node *> both = {s.a, s.b};
  s.g.erase(both);
  EXPECT_TRUE(s.g.nodes().empty());
  EXPECT_FALSE(s.x->hasUses());
}

TEST(GraphTest, EraseOperandResultAndInputRenumber) {
  SmallGraph s;
  TensorType t(DType::F32, {Dim::fixed(4)});
  Value *y = s.g.addInput("y", t);
  Value *z = s.g.addInput("z", t);
  // b = add(a, x) reads x at 1; erasing operand 0 moves x to 0.
  s.b->eraseOperand(0);
  ASSERT_EQ(s.b->numOperands(), 1u);
  EXPECT_EQ(s.b->operand(0), s.x);
  EXPECT_EQ(usesBy(s.a->result(), s.b), 0u);
  ASSERT_EQ(usesBy(s.x, s.b), 1u);
  for (const Use &u : s.x->uses()) {
    if (u.user == s.b) {
      EXPECT_EQ(u.operandIndex, 0u);
    }
  }
  // Inputs after an erased one move down and keep their index.
  s.g.eraseInput(1);
  ASSERT_EQ(s.g.inputs().size(), 2u);
  EXPECT_EQ(s.g.inputs()[1].value, z);
  EXPECT_EQ(z->getResultIndex(), 1u);
  (void)y;
  // Results likewise.
  Node *two = s.g.append(std::make_unique<Node>(OpKind::While, "w", Location()));
  two->addResult("r0", t);
  Value *r1 = two->addResult("r1", t);
  two->eraseResult(0);
  ASSERT_EQ(two->numResults(), 1u);
  EXPECT_EQ(two->result(0), r1);
  EXPECT_EQ(r1->getResultIndex(), 0u);
}

} // namespace
