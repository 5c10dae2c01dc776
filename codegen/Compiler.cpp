//===- Compiler.cpp - The compile driver: IR to .cgc artifact ----------------===//
#include "codegen/Compiler.h"

#include "passes/Pass.h"

#include <chrono>
#include <cstdlib>

using namespace cgc;

bool cgc::runDefaultPipeline(Graph &graph, const CompileOptions &options,
                             DiagnosticEngine &diag) {
  PassManager pm;
  std::string pipeline = "shape-infer,canonicalize,cse,dce";
  if (options.fuse)
    pipeline += ",fuse-elementwise";
  pipeline += ",plan-memory";
  if (!pm.addPipeline(pipeline, diag))
    return false;
  PassContext ctx{diag, {}};
  return pm.run(graph, ctx, llvm::nulls());
}

bool cgc::lowerToProgram(Graph &graph, Lowered &out, DiagnosticEngine &diag) {
  if (!computeMemoryPlan(graph, out.memory, diag) ||
      !lowerGraph(graph, out.memory, out.program, diag))
    return false;
  out.graph = buildGraphPlan(out.program, out.memory);
  return true;
}

void cgc::reportNvrtcFailure(const Program &program,
                               const std::vector<unsigned> &lines,
                               const std::string &log, DiagnosticEngine &diag) {
  const Kernel *culprit = nullptr;
  size_t at = log.find("cgc_kernels.cu(");
  if (at != std::string::npos) {
    unsigned line = std::strtoul(log.c_str() + at + 15, nullptr, 10);
    for (size_t k = 0; k < lines.size(); ++k)
      if (lines[k] <= line)
        culprit = &program.kernels[k];
  }
  if (culprit) {
    diag.nodeError(*culprit->node, "NVRTC failed to compile kernel '" +
                                       culprit->name + "':\n" + log);
    return;
  }
  diag.error({}, "NVRTC failed to compile the generated program:\n" + log);
}

bool cgc::compileGraph(Graph &graph, const CompileOptions &options,
                       DiagnosticEngine &diag, CompileResult &result) {
  auto start = std::chrono::steady_clock::now();
  Lowered lowered;
  if (!runDefaultPipeline(graph, options, diag) ||
      !lowerToProgram(graph, lowered, diag))
    return false;
  std::vector<unsigned> lines;
  std::string source = programSource(lowered.program, &lines);
  DeviceCode code;
  if (!compileWithNvrtc(source, options.arch, code)) {
    reportNvrtcFailure(lowered.program, lines, code.log, diag);
    return false;
  }
  if (!writeArtifact(graph, lowered, code, options, result.bytes, diag))
    return false;
  result.kernels = lowered.program.kernels.size();
  result.graphNodes = lowered.graph.nodes.size();
  result.arenaBytes = lowered.memory.arenaSize;
  result.persistentBytes = lowered.memory.persistentSize;
  result.compileMs = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  return true;
}
