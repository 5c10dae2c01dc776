//===- KernelText.cpp - CUDA text, rendered last from kernel descriptions ----===//
//
// Emitters describe kernels (Program.h: parameters, launch, body); this file
// alone turns descriptions into CUDA C++. A plain kernel is its signature
// (launch bounds from block[0]), the wait for its producers unless the body
// places it, then its body. A grid-stride kernel reads its block index and
// grid size as `bx` and `gx`; alone it sets them from blockIdx.x and
// gridDim.x, and in a batch each member's body becomes a device function
// (one per distinct member key) that the batch calls for its range of
// blocks with bx and gx made the member's own. Kernels that share a key
// render once. Each function follows `#line 1 "<function>"`, so NVRTC's
// diagnostics name the function, which kernelOfDiagnostic() maps back to
// its kernel without counting lines.
//
//===----------------------------------------------------------------------===//
#include "codegen/CudaText.h"
#include "codegen/Program.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/ErrorHandling.h"

using namespace cgc;

/// The C type of parameter \p p as the function declares it.
static std::string paramType(const KernelParam &p) {
  switch (p.kind) {
  case KernelParam::Kind::Pointer:
    return std::string(p.written ? "" : "const ") +
           (p.value ? storageType(p.value->getType().dtype) : p.scratchType) +
           " *";
  case KernelParam::Kind::Handle: return "cudaGraphConditionalHandle ";
  case KernelParam::Kind::U32: return "unsigned ";
  }
  llvm_unreachable("a KernelParam kind");
}

/// `T0 p0, T1 p1, ...` for params [from, from + count), numbered from 0.
static std::string paramList(const Kernel &k, size_t from, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i)
    out += (i ? ", " : "") + paramType(k.params[from + i]) + "p" +
           std::to_string(i);
  return out;
}

static std::string memberKey(const Kernel &batch, const BatchMember &m) {
  std::string key;
  for (size_t i = 0; i < m.numParams; ++i)
    key += paramType(batch.params[m.firstParam + i]) + ",";
  return key + "\n" + m.body;
}

std::string cgc::kernelKey(const Kernel &k) {
  std::string key = std::to_string(k.block[0]) +
                    (k.wait == Kernel::Wait::First ? " first " : " in-body ") +
                    (k.gridStride ? "grid-stride(" : "(");
  for (const KernelParam &p : k.params)
    key += paramType(p) + ",";
  key += ")\n" + k.body;
  for (const BatchMember &m : k.members)
    key += "\nmember " + std::to_string(m.firstParam) + " " +
           std::to_string(m.firstBlock) + " " + std::to_string(m.grid) + " " +
           memberKey(k, m);
  return key;
}

std::vector<const Node *> cgc::nodesOf(const Kernel &k) {
  if (k.members.empty())
    return {k.node};
  std::vector<const Node *> nodes;
  for (const BatchMember &m : k.members)
    nodes.push_back(m.node);
  return nodes;
}

/// `// node 'x' (op)` for each node the kernel computes, with the members
/// of a fusion.
static std::string nodeComment(const Kernel &k) {
  std::string out;
  for (const Node *n : nodesOf(k)) {
    out += "// node '" + n->getName() + "' (" + mnemonic(n->getOp()).str();
    if (n->info().has(Fused) && n->numRegions()) {
      std::string members;
      for (const auto &m : n->region(0).nodes())
        members += (members.empty() ? ": " : ", ") + m->getName();
      out += members;
    }
    out += ")\n";
  }
  return out;
}

static std::string lineDirective(const std::string &function) {
  return "#line 1 \"" + function + "\"\n";
}

static std::string signature(const Kernel &k) {
  return "extern \"C\" __global__ void __launch_bounds__(" +
         std::to_string(k.block[0]) + ") " + k.name + "(" +
         paramList(k, 0, k.params.size()) + ") {\n";
}

static const char *kGridStrideIndex =
    "  const unsigned bx = blockIdx.x, gx = gridDim.x;\n";

/// A batch: a device function per distinct member (\p functions maps
/// member keys to the functions already rendered), then the kernel.
static std::string renderBatch(const Kernel &k,
                               llvm::StringMap<std::string> &functions) {
  std::string text, calls;
  for (const BatchMember &m : k.members) {
    auto [it, fresh] = functions.try_emplace(memberKey(k, m), m.name + "_body");
    if (fresh)
      text += lineDirective(it->second) +
              "static __device__ __forceinline__ void " + it->second + "(" +
              paramList(k, m.firstParam, m.numParams) +
              (m.numParams ? ", " : "") +
              "const unsigned bx, const unsigned gx) {\n" + m.body + "}\n";
    std::string args;
    for (size_t i = 0; i < m.numParams; ++i)
      args += "p" + std::to_string(m.firstParam + i) + ", ";
    calls += std::string(m.firstBlock ? "  else " : "  ") + "if (blockIdx.x < " +
             std::to_string(m.firstBlock + m.grid) + "u) " + it->second + "(" +
             args + "blockIdx.x - " + std::to_string(m.firstBlock) + "u, " +
             std::to_string(m.grid) + "u);\n";
  }
  return text + lineDirective(k.name) + nodeComment(k) + signature(k) +
         kWaitForProducers + calls + "}\n";
}

static std::string renderKernel(const Kernel &k) {
  std::string text = lineDirective(k.name) + nodeComment(k) + signature(k);
  if (k.wait == Kernel::Wait::First)
    text += kWaitForProducers;
  if (k.gridStride)
    text += kGridStrideIndex;
  return text + k.body + "}\n";
}

std::string cgc::programSource(const Program &program) {
  std::string text = cudaPrelude(program.usesHalf, program.usesBFloat16,
                                 program.usesConditionals, program.usesAttention,
                                 program.usesMmaProduct, program.usesArgTopK);
  llvm::StringMap<std::string> memberFunctions;
  for (const Kernel &k : program.kernels) {
    if (k.shared || k.inPrelude)
      continue; // An earlier kernel's function, or the prelude's.
    text += "\n" + (k.members.empty() ? renderKernel(k)
                                      : renderBatch(k, memberFunctions));
  }
  return text;
}

const Kernel *cgc::kernelOfDiagnostic(const Program &program,
                                      const std::string &log) {
  // NVRTC writes `<file>(<line>): error: ...`; the files are functions.
  llvm::StringMap<const Kernel *> byFunction;
  for (const Kernel &k : program.kernels) {
    if (k.shared || k.inPrelude)
      continue;
    byFunction.try_emplace(k.name, &k);
    for (const BatchMember &m : k.members)
      byFunction.try_emplace(m.name + "_body", &k);
  }
  for (size_t at = log.find("): error"); at != std::string::npos;
       at = log.find("): error", at + 1)) {
    size_t open = log.rfind('(', at), start = log.rfind('\n', open);
    std::string file =
        log.substr(start == std::string::npos ? 0 : start + 1,
                   open - (start == std::string::npos ? 0 : start + 1));
    auto it = byFunction.find(file);
    if (it != byFunction.end())
      return it->second;
  }
  return nullptr;
}
