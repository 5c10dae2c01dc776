//===- ProdDerivativeTest.cpp - prod's gradient at zeros ------------------===//
//
// gradcheck (test/passes/autodiff/rules.json) draws random parameters, so
// it never meets a zero; here the parameter holds rows with no zero, one
// zero and two zeros, and autodiff's gradient of sum(prod(w, axis 1)) must
// be PyTorch's: the product of the other elements (y / w_i without zeros;
// at a row's one zero the product of the rest, 0 beside it; 0 with two).
//
//===----------------------------------------------------------------------===//
#include "InterpreterTesting.h"

using namespace cgc;
using namespace cgc::interp;

TEST(ProdDerivative, ExactAtZeros) {
  const char *model = R"({"format_version": 1, "name": "prod",
 "inputs": [{"name": "w", "kind": "parameter", "dtype": "f32", "shape": [3, 3], "init": {"dist": "ones"}}],
 "nodes": [{"name": "p", "op": "prod", "inputs": ["w"], "attrs": {"axes": [1]}},
           {"name": "loss", "op": "sum", "inputs": ["p"]}],
 "outputs": [{"name": "loss", "value": "loss", "kind": "loss"}]})";
  testsupport::TestGraph step;
  ASSERT_TRUE(step.read(model)) << step.messages;
  PassContext ctx{step.diag, {}};
  ASSERT_TRUE(step.runPasses("autodiff", ctx)) << step.messages;
  const double w[9] = {2, 3, 4,   // no zero
                       0, 5, 6,   // one zero
                       0, 7, 0};  // two zeros
  const double want[9] = {12, 8, 6, 30, 0, 0, 0, 0, 0};
  Tensor t(DType::F32, {3, 3});
  for (int i = 0; i < 9; ++i)
    t.setReal(i, w[i]);
  const Tensor grad = testsupport::named(step.run({{"w", t}}), "w.grad");
  ASSERT_EQ(grad.numel(), 9);
  for (int i = 0; i < 9; ++i)
    EXPECT_EQ(grad.real(i), want[i]) << "w[" << i << "]";
}
