//===- ArtifactFormat.h - The .cgc artifact format --------------*- C++ -*-===//
//
// In-memory form of a compiled cgc artifact and its (de)serialization. The
// byte layout is documented in docs/artifact.md. Pure C++17: no CUDA here, so
// the compiler, the runtime and the tools all share this one definition.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_FORMAT_ARTIFACTFORMAT_H
#define CGC_FORMAT_ARTIFACTFORMAT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cgc {
namespace format {

constexpr char kArtifactMagic[4] = {'C', 'G', 'C', 'A'};
/// The newest format version. An artifact is written as the oldest version
/// that holds what it uses (formatVersionOf): 9 with a convolution's
/// derivative (a backward operation, which a runtime older than it would
/// run as a forward), else 8 with per-context state (state in region
/// "arena", which a version-7 runtime would read but never initialize),
/// else 7. This runtime reads all three.
constexpr uint32_t kArtifactFormatVersion = 9;
constexpr uint32_t kOldestFormatVersion = 7;
constexpr size_t kHeaderSize = 32;
constexpr size_t kBlobAlignment = 256;
/// Conventional blob names for device code.
constexpr const char *kCubinBlob = "cubin";
constexpr const char *kPtxBlob = "ptx";

/// Memory regions that pointers and tensors live in. The arena belongs to an
/// execution context; the persistent region belongs to the engine.
enum class Region { Arena, Persistent };

struct DimDesc {
  std::string name;
  int64_t min = 1;
  int64_t max = 1;
  std::vector<int64_t> buckets; ///< Sorted, each in [min, max].
};

struct BlobDesc {
  std::string name;
  uint64_t offset = 0; ///< Relative to the data section (256-aligned).
  uint64_t size = 0;
};

/// One kernel argument.
struct ParamDesc {
  /// Handle: the conditional handle `intValue` of the graph tree the
  /// kernel's node belongs to (a setter kernel of a conditional node).
  enum class Kind { Ptr, I32, I64, F32, U64, Handle };
  Kind kind = Kind::Ptr;
  // Ptr.
  Region region = Region::Arena;
  uint64_t offset = 0;
  std::string binding; ///< Graph input/output whose storage this points into.
  // Scalars.
  int64_t intValue = 0;   ///< I32, I64, Handle.
  uint64_t uintValue = 0; ///< U64.
  float floatValue = 0;   ///< F32.
  std::string dim; ///< I32/I64 only: value is the run-time value of this dim.
};

struct SourceRef {
  std::string node; ///< IR node id.
  std::string op;   ///< IR op name.
  std::string loc;  ///< Source location, "file:line:col" or empty.
};

/// Where a library call finds one operand: a region offset, or the caller's
/// bound buffer of a graph input or output.
struct PointerDesc {
  Region region = Region::Arena;
  uint64_t offset = 0;
  std::string binding;
};

/// A matrix product run by cuBLASLt, fixed at compile time in cuBLASLt's
/// column-major terms (docs/artifact.md gives the row-major mapping):
///   D[b] = epilogue(alpha * op(A[b]) * op(B[b]) + beta * C[b] + bias)
/// for b < batch, op(A) m x k, op(B) k x n, C and D m x n with leading
/// dimension ldc. The runtime picks the algorithm on the actual GPU.
struct ProductDesc {
  /// The cuBLASLt epilogue. Gelu* is the tanh form of GELU.
  enum class Epilogue { None, Relu, Bias, ReluBias, Gelu, GeluBias };
  static constexpr unsigned NumEpilogues = 6;
  std::string dtype;   ///< A, B, C and D: f32, f16 or bf16.
  bool allowTf32 = false; ///< f32 only: CUBLAS_COMPUTE_32F_FAST_TF32.
  bool transA = false, transB = false;
  int64_t m = 1, n = 1, k = 1;
  int64_t lda = 1, ldb = 1, ldc = 1;
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0; ///< Elements per batch.
  float alpha = 1, beta = 0;
  Epilogue epilogue = Epilogue::None;
  PointerDesc a, b, c, d, bias; ///< c: beta != 0 only; bias: *Bias only.
  PointerDesc workspace;        ///< Arena scratch (binding empty).
  uint64_t workspaceBytes = 0;
  SourceRef source;

  bool hasBias() const {
    return epilogue == Epilogue::Bias || epilogue == Epilogue::ReluBias ||
           epilogue == Epilogue::GeluBias;
  }
};

/// One pointwise operation after a library convolution, on the running
/// value (the convolution's result, then each step's), computed in f32:
/// `running op operand`, or relu(running).
/// The most steps an epilogue holds (validated).
constexpr size_t kMaxConvolutionSteps = 8;

struct ConvolutionStep {
  enum class Op { Add, Sub, Mul, Div, Relu };
  static constexpr unsigned NumOps = 5;
  /// The second operand: none (relu); one value per output channel (O
  /// contiguous elements of the convolution's dtype, broadcast over the
  /// rest); or a tensor of y's dims and strides (a residual).
  enum class Operand { None, Channel, Full };
  static constexpr unsigned NumOperands = 3;
  Op op = Op::Relu;
  Operand operand = Operand::None;
  PointerDesc pointer; ///< Operand: Channel or Full only.
};

/// A convolution run by cuDNN, fixed at compile time in cuDNN's terms
/// (docs/artifact.md): its forward (the cross-correlation of PyTorch and
/// ONNX), then the pointwise steps of its epilogue,
///   y = step_n(... step_1(conv(x, w))),
/// or one of its two derivatives, which read the other two tensors and
/// write theirs: x from y and w (backward data, a conv_transpose), w from
/// x and y (backward filter, a conv_weight_grad). x [N, C, D...], w [O, C
/// / G, K...], y [N, O, E...] of rank 4 or 5 (a 1-D convolution is a 2-D
/// one with a unit first spatial dim), named by their roles in the
/// forward, each tensor's layout given by its strides in elements (NCHW or
/// NHWC); the group count G is C / w's dim 1. The runtime picks the engine
/// on the actual GPU.
struct ConvolutionDesc {
  enum class Operation { Forward, BackwardData, BackwardFilter };
  static constexpr unsigned NumOperations = 3;
  Operation operation = Operation::Forward; ///< Only a forward has an epilogue.
  std::string dtype;      ///< Every tensor: f32, f16 or bf16.
  bool allowTf32 = false; ///< f32 only: engines may use TF32 tensor cores.
  std::vector<int64_t> xDims, xStrides, wDims, wStrides, yDims, yStrides;
  /// One per spatial dim.
  std::vector<int64_t> prePadding, postPadding, strides, dilations;
  std::vector<ConvolutionStep> epilogue;
  PointerDesc x, w, y;
  PointerDesc workspace; ///< Arena scratch (binding empty).
  uint64_t workspaceBytes = 0;
  SourceRef source;
};

/// One bucket of all-reduces across the ranks of a data-parallel run, run
/// by NCCL as one group (ncclGroupStart, an ncclAllReduce per buffer,
/// ncclGroupEnd) on the communicator the caller gives the engine
/// (docs/distributed.md). Each buffer is reduced in place.
struct CollectiveDesc {
  /// ncclSum, or ncclAvg (the sum divided by the number of ranks).
  enum class Reduction { Sum, Mean };
  static constexpr unsigned NumReductions = 2;
  struct Buffer {
    std::string dtype; ///< f32, f16 or bf16.
    int64_t count = 0; ///< Elements.
    PointerDesc data;  ///< Sent and received in place.
  };
  Reduction reduction = Reduction::Sum;
  std::vector<Buffer> buffers;
  SourceRef source;
};

struct KernelDesc {
  std::string name; ///< extern "C" symbol in the device code.
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t sharedMem = 0;
  std::vector<ParamDesc> params;
  std::vector<SourceRef> sources;
};

/// A graph node, of a closed set of kinds (nodeKindName lists them).
struct NodeDesc {
  enum class Kind {
    Kernel, Memset, Memcpy, Conditional, Product, Convolution, Collective
  };
  static constexpr unsigned NumKinds = 7;
  /// Conditional: an IF runs bodies[0] when its handle is non-zero, else
  /// bodies[1] if present; a WHILE runs bodies[0] while it is non-zero.
  enum class Condition { If, While };
  Kind kind = Kind::Kernel;
  uint32_t kernel = 0; ///< Kernel: index into Manifest::kernels.
  uint32_t product = 0; ///< Product: index into Manifest::products.
  /// Convolution: index into Manifest::convolutions.
  uint32_t convolution = 0;
  /// Collective: index into Manifest::collectives.
  uint32_t collective = 0;
  // Memset: dst*, bytes, value. Memcpy: src*, dst*, bytes.
  Region dstRegion = Region::Arena;
  uint64_t dstOffset = 0;
  std::string dstBinding;
  Region srcRegion = Region::Arena;
  uint64_t srcOffset = 0;
  std::string srcBinding;
  uint64_t bytes = 0;
  uint8_t value = 0;
  // Conditional.
  Condition condition = Condition::If;
  uint32_t handle = 0;          ///< Index among the tree's handles.
  std::vector<uint32_t> bodies; ///< Indices into Manifest::bodies.
  /// The device bool the setter reads; eager runs read it on the host.
  Region predRegion = Region::Arena;
  uint64_t predOffset = 0;
  std::string predBinding;
  /// IF: the setter negates the predicate (the then arm is empty).
  bool invert = false;
  int64_t maxIterations = 0; ///< WHILE: the trip bound.
  /// WHILE: the IR node's name and its u32 trip counter in the arena (the
  /// caller reads it through cgc_context_loop_trips).
  std::string loop;
  uint64_t tripOffset = 0;
};

/// A top-level graph (Manifest::graphs, run by name) or a conditional
/// node's body (Manifest::bodies, unnamed).
struct GraphDesc {
  std::string name;
  /// Top level: the number of conditional handles of its tree (the graph
  /// and all bodies below it).
  uint32_t handles = 0;
  /// Top level: the dim values this graph is specialized to (one graph per
  /// `--bind-dim` value); a run must give exactly these, unless padded.
  std::vector<std::pair<std::string, int64_t>> dimValues;
  /// Top level: the dim values are buckets (pad-dynamic-shapes): a run may
  /// give any value up to each, whose real value the runtime writes into
  /// the `dim_size` input `dim.<name>` before the launch.
  bool padded = false;
  std::vector<NodeDesc> nodes;
  std::vector<std::pair<uint32_t, uint32_t>> edges; ///< (from, to).
  /// Per edge (or empty: none): the edge joins two kernels and may use
  /// programmatic dependent launch, where the device supports it.
  std::vector<uint8_t> programmatic;

  bool isProgrammatic(size_t edge) const {
    return edge < programmatic.size() && programmatic[edge];
  }
};

/// An input, output or state tensor.
struct TensorDesc {
  std::string name;
  std::string kind;  ///< "user_input", "parameter", "output", "loss", ...
  std::string dtype; ///< f32, f16, bf16, i32, i64, bool.
  std::vector<int64_t> shape;          ///< Static (maximum) shape.
  std::vector<std::string> shapeDims;  ///< Per axis: dim name or "" (static).
  Region region = Region::Arena;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  std::string initBlob; ///< State only: initial value blob, or empty.
  /// Where the initial value starts: in initBlob, or (initTensor) the
  /// absolute byte offset in the weights file; `bytes` bytes long.
  uint64_t initOffset = 0;
  /// State only: the tensor of the weights file (Manifest::weightsFile)
  /// that holds the initial value, or empty. At most one of initBlob and
  /// initTensor is set.
  std::string initTensor;
  /// Inputs and outputs: the name in the model an importer read, where the
  /// IR's name rules renamed it (informative; empty otherwise).
  std::string sourceName;
  /// initTensor only: the tensor is the file's tensor transposed, its axis
  /// i the file tensor's axis initPermutation[i] (format/Permutation.h);
  /// the runtime permutes it as it uploads it. Empty: as stored.
  std::vector<int64_t> initPermutation;
};

/// The safetensors file an artifact keeps its weights in, beside it
/// (format/WeightsFile.h): path relative to the artifact's folder, the
/// file's size and content hash (ContentHash) when it was compiled.
struct WeightsFileDesc {
  std::string path; ///< Empty: the artifact carries all its state.
  uint64_t size = 0;
  uint64_t checksum = 0;
};

struct Manifest {
  std::string compilerVersion;
  std::string targetArch = "sm_90";
  int64_t minDriverVersion = 12000;
  uint64_t arenaSize = 0;
  uint64_t persistentSize = 0;
  std::vector<DimDesc> dims;
  std::vector<BlobDesc> blobs;
  std::vector<KernelDesc> kernels;
  /// Library matrix products, run by Product nodes.
  std::vector<ProductDesc> products;
  /// Library convolutions, run by Convolution nodes.
  std::vector<ConvolutionDesc> convolutions;
  /// All-reduce buckets, run by Collective nodes in every rank's graph.
  std::vector<CollectiveDesc> collectives;
  std::vector<GraphDesc> graphs;
  /// Bodies of conditional nodes; each belongs to exactly one node.
  std::vector<GraphDesc> bodies;
  std::vector<TensorDesc> inputs;
  std::vector<TensorDesc> outputs;
  std::vector<TensorDesc> state;
  /// Weights beside the artifact; state tensors with an initTensor read it.
  WeightsFileDesc weightsFile;
};

struct ArtifactHeader {
  uint32_t formatVersion = 0;
  uint64_t manifestSize = 0;
  uint64_t fileSize = 0;
  uint64_t checksum = 0;
};

/// A parsed, fully validated artifact; owns a copy of the file bytes.
struct Artifact {
  ArtifactHeader header;
  Manifest manifest;
  std::vector<uint8_t> bytes;
  uint64_t dataStart = 0; ///< File offset of the data section.

  /// Returns the blob's bytes, or {nullptr, 0} if there is no such blob.
  std::pair<const uint8_t *, size_t> blob(const std::string &name) const;
  const TensorDesc *findTensor(const std::string &name) const;
};

using BlobList = std::vector<std::pair<std::string, std::vector<uint8_t>>>;

/// The format version serializeArtifact writes for \p m.
uint32_t formatVersionOf(const Manifest &m);

/// Serializes \p manifest and \p blobs into .cgc bytes. The blob table of the
/// manifest is replaced by one computed from \p blobs (in the given order).
std::vector<uint8_t> serializeArtifact(const Manifest &manifest,
                                       const BlobList &blobs);

/// Parses and validates a .cgc image. Never crashes on corrupt input; on
/// failure returns false with a one-line reason in \p error. Without
/// \p verifyChecksum the checksum is not recomputed (for the writer's own
/// check of an image serializeArtifact has just summed).
bool parseArtifact(const uint8_t *data, size_t size, Artifact &out,
                   std::string &error, bool verifyChecksum = true);
/// The same, taking \p bytes as the artifact's own (no copy).
bool parseArtifact(std::vector<uint8_t> &&bytes, Artifact &out, std::string &error);
/// The same checks without keeping a copy of the image: its \p manifest
/// (and, where asked for, its header and the data section's offset). The
/// compile cache verifies an entry with it.
bool parseArtifactManifest(const uint8_t *data, size_t size, Manifest &manifest,
                           std::string &error, bool verifyChecksum = true,
                           ArtifactHeader *header = nullptr,
                           uint64_t *dataStart = nullptr);

/// Reads a file and parses it.
bool loadArtifactFile(const std::string &path, Artifact &out,
                      std::string &error);

/// Validates a manifest on its own (used by parseArtifact; blob sizes are
/// checked against the blob table only).
bool validateManifest(const Manifest &m, std::string &error);

/// Human-readable, deterministic summary (for `cgc --dump-artifact`).
std::string dumpManifest(const Artifact &artifact);

/// The header's checksum of a .cgc image of \p size >= kHeaderSize bytes:
/// the content hash of WeightsFile.h (cgc-hash64, several GB/s) over the
/// first 24 header bytes and everything after the header. (Format 5 and
/// earlier used FNV-1a byte by byte: 4.9 s per GiB, paid at every write
/// and every load of an artifact that carries its weights.)
uint64_t artifactChecksum(const uint8_t *data, size_t size);

/// FNV-1a 64-bit hash, continuing from \p seed.
uint64_t fnv1a64(const uint8_t *data, size_t size,
                 uint64_t seed = 0xcbf29ce484222325ull);

/// The first top-level graph that runs \p dims (one value per manifest
/// dim, in order): one with no dim value for a dim, or the same value (a
/// padded graph: a value up to its own).
/// Returns false, with the graphs there are in \p error, when none does.
bool findGraphForDims(const Manifest &m, const std::vector<int64_t> &dims,
                      size_t &index, std::string &error);

/// Every `while` node of \p m, top-level graphs first, then bodies (each
/// names its IR loop and trip counter).
std::vector<const NodeDesc *> whileNodes(const Manifest &m);

/// Size in bytes of one element of a manifest dtype, or 0 if unknown.
size_t dtypeSize(const std::string &dtype);

const char *regionName(Region r);
const char *paramKindName(ParamDesc::Kind k);
const char *nodeKindName(NodeDesc::Kind k);
const char *conditionName(NodeDesc::Condition c);
const char *epilogueName(ProductDesc::Epilogue e);
const char *stepOpName(ConvolutionStep::Op op);
const char *convolutionOperationName(ConvolutionDesc::Operation operation);
const char *stepOperandName(ConvolutionStep::Operand operand);
const char *reductionName(CollectiveDesc::Reduction r);

// Manifest <-> JSON text (ManifestJson.cpp).
std::string manifestToJson(const Manifest &m);
bool manifestFromJson(const char *text, size_t size, Manifest &out,
                      std::string &error);

} // namespace format
} // namespace cgc

#endif // CGC_FORMAT_ARTIFACTFORMAT_H
