//===- Program.h - The lowered program: kernels and step graphs -*- C++ -*-===//
//
// Lowering turns the IR into a Program: the generated kernels (one extern
// "C" CUDA function each, shared where bodies are equal) and step graphs.
// A step is one future CUDA graph node, of a closed set of kinds; each step
// declares the byte ranges it reads and writes, so the dependency planner
// (GraphPlan.cpp) derives edges without knowing the kinds. A conditional
// step (an `if` or a `while`) owns body step graphs, which are built into
// the conditional node's body graphs. The top-level step graphs are the
// artifact's named graphs; the bodies are listed apart.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_CODEGEN_PROGRAM_H
#define CGC_CODEGEN_PROGRAM_H

#include "format/ArtifactFormat.h"
#include "ir/Diagnostics.h"
#include "ir/Graph.h"
#include "passes/MemoryPlan.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include <map>
#include <string>
#include <vector>

namespace cgc {

/// One kernel argument: a pointer to a value's or a scratch buffer's bytes,
/// a conditional handle of the graph, or an integer.
struct KernelParam {
  enum class Kind : uint8_t { Pointer, Handle, U32 };
  Kind kind = Kind::Pointer;
  const Value *value = nullptr; ///< Pointer: the value (null for scratch).
  bool written = false;         ///< Pointer: the kernel writes through it.
  Storage storage;              ///< Pointer: resolved by lowering.
  std::string scratchType;      ///< Pointer without a value: its C type.
  uint32_t number = 0;          ///< Handle: its index; U32: the value.
};

/// A grid-stride kernel run by a batch for a range of the batch's blocks
/// (KernelBatching.cpp): its parameters are the batch's [firstParam,
/// firstParam + numParams), its blocks [firstBlock, firstBlock + grid).
struct BatchMember {
  const Node *node = nullptr;
  std::string name; ///< The kernel it was: names its device function.
  std::string body;
  uint32_t firstParam = 0, numParams = 0;
  uint32_t firstBlock = 0, grid = 0;
};

/// A generated kernel as the emitters describe it: parameters, launch and
/// body. Its CUDA text is rendered last, from the description
/// (KernelText.cpp); kernels share one function, and grid-stride ones run
/// batched, by their structure (kernelKey), never by comparing text.
struct Kernel {
  std::string name;
  const Node *node = nullptr;
  std::vector<KernelParam> params;
  uint32_t grid[3] = {1, 1, 1};
  /// block[0] is also the function's __launch_bounds__.
  uint32_t block[3] = {1, 1, 1};
  uint32_t sharedMem = 0;
  /// Where the kernel waits for the kernels it depends on (programmatic
  /// dependent launch, GraphPlan.cpp): before its body, or where the body
  /// says (kWaitForProducers: products load their weights first).
  enum class Wait : uint8_t { First, InBody };
  Wait wait = Wait::First;
  /// The function's statements. Parameters are p0, p1...; the body names
  /// no kernel and no IR node, so equal bodies do equal work.
  std::string body;
  /// A grid-stride kernel (pointwise, movement): its body is one loop over
  /// the block index `bx` of `gx` blocks, so that a batch can run it for a
  /// range of its own blocks.
  bool gridStride = false;
  /// A setter of a conditional handle, defined in the prelude (no body).
  bool inPrelude = false;
  /// An earlier kernel of the program has the same key: this one launches
  /// that kernel's function, under its name, and renders nothing.
  bool shared = false;
  /// A batch: the grid-stride kernels it runs, in block order (node is the
  /// first one's).
  std::vector<BatchMember> members;
};

/// What makes two kernels one function: launch bounds, where they wait,
/// parameter types, body (and a batch's members). Names, nodes, grids and
/// storage are not part of it.
std::string kernelKey(const Kernel &kernel);
/// The IR nodes \p kernel computes: a batch's members, or its node.
std::vector<const Node *> nodesOf(const Kernel &kernel);

/// One cuBLASLt call: the call in cuBLASLt's column-major terms (its
/// pointers are left empty) and the storage of each operand.
struct LibraryProduct {
  const Node *node = nullptr;
  format::ProductDesc desc;
  Storage a, b, c, d, bias, workspace;
};

/// One cuDNN convolution: the call in cuDNN's terms (its pointers are left
/// empty) and the storage of each tensor it reads or writes.
struct LibraryConvolution {
  const Node *node = nullptr;
  format::ConvolutionDesc desc;
  Storage x, w, y, workspace;
  std::vector<Storage> steps; ///< Each epilogue step's operand (relu: none).
};

/// One bucket of all-reduces (NCCL, in place): its description (pointers
/// left empty) and the storage of each buffer.
struct LibraryCollective {
  const Node *node = nullptr;
  format::CollectiveDesc desc;
  std::vector<Storage> buffers;
};

struct ByteRange {
  Storage::Region region;
  uint64_t begin, end;
};

/// One node of a CUDA graph to be.
struct Step {
  enum class Kind : uint8_t {
    Kernel, Memset, Memcpy, Conditional, Product, Convolution, Collective
  };
  static constexpr unsigned NumKinds = 7;
  enum class Condition : uint8_t { If, While };

  Kind kind = Kind::Kernel;
  std::string label; ///< Kernel name, "memset", "memcpy", "if", "cublasLt", "cudnn"...
  const Node *node = nullptr; ///< The IR node it comes from, if any.
  unsigned kernel = 0;       ///< Kernel: index into Program::kernels.
  unsigned product = 0;      ///< Product: index into Program::products.
  unsigned convolution = 0;  ///< Convolution: index into Program::convolutions.
  unsigned collective = 0;   ///< Collective: index into Program::collectives.
  Storage dst, src;          ///< Memset: dst (zeroed). Memcpy: src -> dst.
  // Conditional.
  Condition condition = Condition::If;
  unsigned handle = 0;             ///< Index among its graph's handles.
  std::vector<unsigned> bodies;    ///< If: then, else. While: body.
  Storage predicate;               ///< The bool the setter kernel reads.
  bool invert = false;             ///< If: bodies[0] runs when it is false.
  int64_t maxIterations = 0;       ///< While: the device-enforced bound.
  Storage trips;                   ///< While: its u32 trip counter.
  /// What the node reads and writes (a conditional: its bodies' union).
  std::vector<ByteRange> reads, writes;
  /// Conditional handles the node sets (setter kernels) and reads (a
  /// conditional node, before it runs): a setter precedes its node.
  std::vector<unsigned> handlesSet, handlesRead;
};

/// Steps in program order and the edges between them.
struct StepGraph {
  std::string name; ///< Top-level graphs only.
  /// Top-level graphs of a multi-graph artifact: the dims they are
  /// specialized to.
  std::map<std::string, int64_t> dims;
  /// Top-level graphs of a padded artifact: dims are buckets.
  bool padded = false;
  unsigned handles = 0; ///< Top level: conditional handles of the tree.
  std::vector<Step> steps;
  std::vector<std::pair<unsigned, unsigned>> edges; ///< Sorted (from, to).
  /// Per edge: may use programmatic dependent launch (GraphPlan.h).
  std::vector<uint8_t> programmatic;
};

/// Which kernel-to-kernel edges (in top-level graphs and conditional
/// bodies alike) may use programmatic dependent launch: those the rule in
/// codegen/GraphPlan.h picks, none (`cgc --programmatic-edges=none`), or
/// every one (`=all`); the last two are how the rule is measured.
enum class ProgrammaticEdges { Rule, None, All };

struct Program {
  std::vector<Kernel> kernels;
  std::vector<LibraryProduct> products;
  std::vector<LibraryConvolution> convolutions;
  std::vector<LibraryCollective> collectives;
  std::vector<StepGraph> graphs;
  std::vector<StepGraph> bodies;
  bool usesHalf = false;
  bool usesBFloat16 = false;
  bool usesConditionals = false;
  /// The fused attention kernel's body (codegen/device/attention.cuh).
  bool usesAttention = false;
  /// An argtopk kernel: the prelude holds codegen/device/topk.cuh.
  bool usesArgTopK = false;
  /// The tensor-core product's body (codegen/device/product_mma.cuh).
  bool usesMmaProduct = false;
  /// f32 library products may use TF32 tensor cores (`cgc --allow-tf32`).
  bool allowTf32 = false;
  /// Independent small pointwise kernels run as one (KernelBatching.cpp);
  /// off with `cgc --no-fuse`, which keeps one kernel per op.
  bool batchKernels = true;
  /// The target's multiprocessors (target/Target.h): grid-stride
  /// kernels launch one wave of them.
  unsigned multiprocessors = 132;
  /// Which kernel-to-kernel edges may use programmatic dependent launch
  /// (codegen/GraphPlan.h).
  ProgrammaticEdges programmaticEdges = ProgrammaticEdges::Rule;
  /// Kernel names in use, and the first kernel name of each kernelKey.
  llvm::StringSet<> kernelNames;
  llvm::StringMap<std::string> functions;

  size_t numSteps() const;
};

/// Lowers \p graph (planned by \p plan) into a new top-level step graph
/// \p name of \p program, with its bodies and edges. Unsupported ops get a
/// located error and make the result false.
bool lowerGraph(const Graph &graph, const MemoryPlan &plan,
                const std::string &name, Program &program,
                DiagnosticEngine &diag);

/// Drops the kernels no step launches (the members of batches,
/// KernelBatching.cpp), once every graph of the program is lowered (a
/// later graph may share a function that a batch of an earlier one
/// absorbed).
void dropUnusedKernels(Program &program);

/// The NVRTC translation unit: the prelude, then every kernel rendered
/// from its description (KernelText.cpp). Each function follows a `#line`
/// that names it as a file, so NVRTC's diagnostics name the function.
std::string programSource(const Program &program);
/// The kernel whose function NVRTC's \p log names first; null when the log
/// names none of the program's (the prelude, or no location).
const Kernel *kernelOfDiagnostic(const Program &program,
                                 const std::string &log);

} // namespace cgc

#endif
