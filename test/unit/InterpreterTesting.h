//===- InterpreterTesting.h - Graphs from text, tensors, outputs -*- C++ -*-===//
//
// What the unit tests that run the reference interpreter share: a graph
// read from JSON text with its diagnostics kept, random tensors, and an
// output looked up by name.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TEST_UNIT_INTERPRETERTESTING_H
#define CGC_TEST_UNIT_INTERPRETERTESTING_H

#include "ir/Diagnostics.h"
#include "ir/JsonReader.h"
#include "ir/Verifier.h"
#include "ir/interpreter/Interpreter.h"
#include "passes/Pass.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>
#include <memory>
#include <random>
#include <string>

namespace cgc::testsupport {

/// A graph read from JSON text; `messages` holds every diagnostic.
struct TestGraph {
  std::string messages;
  llvm::raw_string_ostream os{messages};
  DiagnosticEngine diag{os};
  std::unique_ptr<Graph> graph;

  /// Reads and verifies \p json; false (diagnostics in messages) if not.
  bool read(const std::string &json) {
    uint32_t id = diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(json, "test.json"));
    graph = readGraphBuffer(id, ".", diag, ReadOptions());
    return graph && verifyGraph(*graph, diag);
  }
  /// Runs \p pipeline on the graph with \p ctx (whose diag is this one's).
  bool runPasses(const std::string &pipeline, PassContext &ctx) {
    PassManager pm;
    return pm.addPipeline(pipeline, diag) && pm.run(*graph, ctx, llvm::nulls());
  }
  /// The interpreter's outputs on \p inputs (a failed run fails the test).
  interp::NamedTensors run(const std::map<std::string, interp::Tensor> &inputs) {
    interp::NamedTensors out;
    interp::RunError e;
    EXPECT_TRUE(interp::runGraph(*graph, inputs, out, e)) << e.message;
    return out;
  }
};

/// An f32 tensor of \p shape, uniform in [-1, 1).
inline interp::Tensor randomTensor(interp::Shape shape, std::mt19937 &rng) {
  interp::Tensor t(DType::F32, std::move(shape));
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.setReal(i, u(rng));
  return t;
}

/// The output named \p name (a failure of the test if there is none).
inline const interp::Tensor &named(const interp::NamedTensors &outputs,
                                   const std::string &name) {
  for (const auto &[n, t] : outputs)
    if (n == name)
      return t;
  ADD_FAILURE() << "no output " << name;
  static interp::Tensor none;
  return none;
}

} // namespace cgc::testsupport

#endif
