//===- Compiler.h - The compile driver: IR to .cgc artifact -----*- C++ -*-===//
//
// compileGraph() runs the default pipeline (verification after each pass,
// cse, dce, fuse-elementwise unless disabled, plan-memory), lowers the
// graph to kernels, compiles them with NVRTC and serializes the artifact.
// The tools stay thin: `cgc` and `cgc-opt` call these entry points.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_CODEGEN_COMPILER_H
#define CGC_CODEGEN_COMPILER_H

#include "codegen/GraphPlan.h"
#include "codegen/Kernel.h"
#include "codegen/Nvrtc.h"

#include <string>
#include <vector>

namespace cgc {

constexpr const char *kCompilerVersion = "cgc 0.1.0";

struct CompileOptions {
  std::string arch = "sm_90";
  bool fuse = true;
};

/// Everything between the IR and the bytes, for the tools to print.
struct Lowered {
  MemoryPlan memory;
  Program program;
  GraphPlan graph;
};

struct CompileResult {
  std::vector<uint8_t> bytes;
  size_t kernels = 0, graphNodes = 0;
  uint64_t arenaBytes = 0, persistentBytes = 0;
  double compileMs = 0;
};

/// Runs the default pass pipeline on \p graph.
bool runDefaultPipeline(Graph &graph, const CompileOptions &options,
                        DiagnosticEngine &diag);
/// Memory plan, kernels and graph plan of an already optimized graph.
bool lowerToProgram(Graph &graph, Lowered &out, DiagnosticEngine &diag);
/// Reports an NVRTC failure, with its log, at the IR node whose kernel the
/// log's first `cgc_kernels.cu(line)` falls in (\p kernelLines: each
/// kernel's first line, from programSource).
void reportNvrtcFailure(const Program &program,
                        const std::vector<unsigned> &kernelLines,
                        const std::string &log, DiagnosticEngine &diag);
/// The whole compile; \p result.bytes is the artifact.
bool compileGraph(Graph &graph, const CompileOptions &options,
                  DiagnosticEngine &diag, CompileResult &result);

/// Fills and serializes the manifest (ArtifactWriter.cpp).
bool writeArtifact(const Graph &graph, const Lowered &lowered,
                   const DeviceCode &code, const CompileOptions &options,
                   std::vector<uint8_t> &bytes, DiagnosticEngine &diag);

} // namespace cgc

#endif
