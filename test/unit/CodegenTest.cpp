//===- CodegenTest.cpp - NVRTC compiles and failures, without a GPU ---------===//
#include "driver/Compiler.h"
#include "codegen/Nvrtc.h"
#include "ir/JsonReader.h"

#include <gtest/gtest.h>

using namespace cgc;

namespace {
const char *Model = R"({"format_version": 1, "name": "m",
 "inputs": [{"name": "x", "dtype": "f32", "shape": [8]}],
 "nodes": [{"name": "a", "op": "exp", "inputs": ["x"]},
           {"name": "s", "op": "sum", "inputs": ["a"]},
           {"name": "t", "op": "reshape", "inputs": ["s"], "attrs": {"shape": [1]}},
           {"name": "y", "op": "neg", "inputs": ["t"], "loc": "model.py:7"}],
 "outputs": ["y"]})";

struct Lowering {
  std::string messages;
  llvm::raw_string_ostream os{messages};
  DiagnosticEngine diag{os};
  std::unique_ptr<Graph> graph;
  Compilation lowered;

  bool lower() {
    uint32_t id = diag.addBuffer(llvm::MemoryBuffer::getMemBufferCopy(Model, "m.json"));
    graph = readGraphBuffer(id, ".", diag, ReadOptions());
    return graph && lowerModel(*graph, CompileOptions(), lowered, diag);
  }
};
} // namespace

TEST(Nvrtc, CompilesTheGeneratedProgram) {
  Lowering l;
  ASSERT_TRUE(l.lower()) << l.os.str();
  DeviceCode code;
  ASSERT_TRUE(compileWithNvrtc(programSource(l.lowered.program), "sm_90", code))
      << code.log;
  EXPECT_GT(code.cubin.size(), 0u);
  EXPECT_NE(code.ptx.find(".target sm_90"), std::string::npos);
}

TEST(Nvrtc, FailureNamesTheIrNodeAndKeepsTheLog) {
  Lowering l;
  ASSERT_TRUE(l.lower()) << l.os.str();
  // Break the last kernel (the one of node 'y'), as a codegen bug would.
  Kernel &broken = l.lowered.program.kernels.back();
  ASSERT_EQ(broken.node->getName(), "y");
  ASSERT_FALSE(broken.body.empty());
  broken.body.insert(0, "  undeclared_helper();\n");
  std::string source = programSource(l.lowered.program);
  DeviceCode code;
  ASSERT_FALSE(compileWithNvrtc(source, "sm_90", code));
  EXPECT_NE(code.log.find("undeclared_helper"), std::string::npos) << code.log;
  reportNvrtcFailure(l.lowered.program, code.log, l.diag);
  std::string out = l.os.str();
  EXPECT_NE(out.find("m.json:6:12: error: node 'y' (neg): NVRTC failed to "
                     "compile kernel 'neg_y':"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("undeclared_helper"), std::string::npos) << out;
  EXPECT_NE(out.find("note: node 'y' comes from model.py:7"), std::string::npos)
      << out;
}
