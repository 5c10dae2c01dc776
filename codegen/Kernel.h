//===- Kernel.h - Generated kernels and the lowered program -----*- C++ -*-===//
//
// A Kernel is one extern "C" CUDA function generated for a fusion node or a
// single op, with its launch configuration and its pointer parameters (each
// the storage of one IR value). A Program is the ordered list of steps the
// CUDA graph runs: kernels, memsets (zero fills) and memcpys (final copies).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_CODEGEN_KERNEL_H
#define CGC_CODEGEN_KERNEL_H

#include "ir/Diagnostics.h"
#include "ir/Graph.h"
#include "passes/MemoryPlan.h"

#include <string>
#include <vector>

namespace cgc {

struct KernelParam {
  const Value *value;
  bool written;
};

struct Kernel {
  std::string name;
  std::string source; ///< The function definition, without the prelude.
  const Node *node = nullptr;
  std::vector<KernelParam> params;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t sharedMem = 0;
};

struct Step {
  enum class Kind : uint8_t { Kernel, Memset, Memcpy };
  Kind kind = Kind::Kernel;
  unsigned kernel = 0;          ///< Kernel: index into Program::kernels.
  const Value *value = nullptr; ///< Memset: the zeroed value.
  unsigned copy = 0;            ///< Memcpy: index into MemoryPlan::copies.
};

struct Program {
  std::vector<Kernel> kernels;
  std::vector<Step> steps;
  bool usesHalf = false;
  bool usesBFloat16 = false;
};

/// Generates one kernel per fusion node or remaining op, in node order;
/// unsupported ops get a located error and make the result false.
bool lowerGraph(const Graph &graph, const MemoryPlan &plan, Program &program,
                DiagnosticEngine &diag);

/// The NVRTC translation unit: prelude plus every kernel. \p kernelLines
/// receives each kernel's first line (1-based) in the text.
std::string programSource(const Program &program,
                          std::vector<unsigned> *kernelLines = nullptr);

} // namespace cgc

#endif
