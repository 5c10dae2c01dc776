//===- ProdDerivativeTest.cpp - prod's gradient at zeros ------------------===//
//
// gradcheck (test/passes/autodiff/rules.json) draws random parameters, so
// it never meets a zero; here the parameter holds rows with no zero, one
// zero and two zeros, and autodiff's gradient of sum(prod(w, axis 1)) must
// be PyTorch's: the product of the other elements (y / w_i without zeros;
// at a row's one zero the product of the rest, 0 beside it; 0 with two).
//
//===----------------------------------------------------------------------===//
#include "ir/Diagnostics.h"
#include "ir/JsonReader.h"
#include "ir/Verifier.h"
#include "ir/interpreter/Interpreter.h"
#include "passes/Pass.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace cgc;
using namespace cgc::interp;

TEST(ProdDerivative, ExactAtZeros) {
  const char *model = R"({"format_version": 1, "name": "prod",
 "inputs": [{"name": "w", "kind": "parameter", "dtype": "f32", "shape": [3, 3], "init": {"dist": "ones"}}],
 "nodes": [{"name": "p", "op": "prod", "inputs": ["w"], "attrs": {"axes": [1]}},
           {"name": "loss", "op": "sum", "inputs": ["p"]}],
 "outputs": [{"name": "loss", "value": "loss", "kind": "loss"}]})";
  std::string messages;
  llvm::raw_string_ostream os(messages);
  DiagnosticEngine diag(os);
  uint32_t id = diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(model, "prod.json"));
  std::unique_ptr<Graph> graph = readGraphBuffer(id, ".", diag, ReadOptions());
  ASSERT_TRUE(graph && verifyGraph(*graph, diag)) << os.str();
  PassManager pm;
  PassContext ctx{diag, {}};
  ASSERT_TRUE(pm.addPipeline("autodiff", diag) && pm.run(*graph, ctx, llvm::nulls()))
      << os.str();
  const double w[9] = {2, 3, 4,   // no zero
                       0, 5, 6,   // one zero
                       0, 7, 0};  // two zeros
  const double want[9] = {12, 8, 6, 30, 0, 0, 0, 0, 0};
  Tensor t(DType::F32, {3, 3});
  for (int i = 0; i < 9; ++i)
    t.setReal(i, w[i]);
  NamedTensors out;
  RunError e;
  ASSERT_TRUE(runGraph(*graph, {{"w", t}}, out, e)) << e.message;
  const Tensor *grad = nullptr;
  for (const auto &[name, value] : out)
    if (name == "w.grad")
      grad = &value;
  ASSERT_TRUE(grad);
  for (int i = 0; i < 9; ++i)
    EXPECT_EQ(grad->real(i), want[i]) << "w[" << i << "]";
}
