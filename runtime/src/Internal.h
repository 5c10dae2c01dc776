//===- Internal.h - Engine and context internals ----------------*- C++ -*-===//
//
// The structures behind the opaque cgc_engine / cgc_context handles and the
// error helpers shared by the C API implementation files.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_RUNTIME_INTERNAL_H
#define CGC_RUNTIME_INTERNAL_H

#include "format/ArtifactFormat.h"
#include "CublasLt.h"
#include "Cudnn.h"
#include "Driver.h"
#include "TuningMemory.h"
#include "cgc/cgc_runtime.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cgc {
namespace rt {

struct Ranks;

/// Records \p message as this thread's last error and returns \p status.
cgc_status fail(cgc_status status, const std::string &message);
/// Maps a driver failure to a status, naming the API in the message.
cgc_status failDriver(const Driver &drv, const char *api, CUresult r);
/// Loads the driver or fails with CGC_ERROR_NO_DEVICE.
cgc_status requireDriver(const Driver *&drv);
/// Maps a cuBLASLt failure to a status; \p what names the product.
cgc_status failCublasLt(const CublasLt &lt, const std::string &what,
                        const char *api, cublasStatus_t s);
int32_t dtypeCode(const std::string &dtype);

/// Maps a cuDNN failure to a status; \p what names the convolution.
cgc_status failCudnn(const Cudnn &dnn, const std::string &what, const char *api,
                     cudnnStatus_t s);

#define CGC_CHECK_CU(drv, call)                                                \
  do {                                                                         \
    CUresult cgcR = (drv).call;                                                \
    if (cgcR != CUDA_SUCCESS)                                                  \
      return ::cgc::rt::failDriver((drv), #call, cgcR);                        \
  } while (0)

#define CGC_CHECK_LT(lt, what, call)                                           \
  do {                                                                         \
    cublasStatus_t cgcS = (lt).call;                                           \
    if (cgcS != CUBLAS_STATUS_SUCCESS)                                         \
      return ::cgc::rt::failCublasLt((lt), (what), #call, cgcS);               \
  } while (0)

#define CGC_CHECK_DNN(dnn, what, call)                                         \
  do {                                                                         \
    cudnnStatus_t cgcS = (dnn).call;                                           \
    if (cgcS != CUDNN_STATUS_SUCCESS)                                          \
      return ::cgc::rt::failCudnn((dnn), (what), #call, cgcS);                 \
  } while (0)

/// One matrix product as planned at engine load: its cuBLASLt descriptors
/// and the algorithm every context of the engine captures.
struct ProductPlan {
  /// Bias pointer set to a stand-in address with the alignment the real one
  /// is guaranteed (heuristics and checks read only its alignment); each
  /// context runs with a copy that holds its real bias address.
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspaceUsed = 0; ///< What the algorithm needs (<= the reserve).
  bool timed = false;  ///< Chosen by timing candidates (ProductTuning.cpp).
  bool remembered = false; ///< Timed by an earlier load (TuningMemory.h).
  bool pinned = false; ///< Set by cgc_engine_pin_product_algorithm.
};

// Matrix products at engine load (ProductPlans.cpp; the C API in
// ProductApi.cpp).
/// Loads cuBLASLt and plans every product of the artifact; does nothing
/// (and loads nothing) for an artifact without products.
cgc_status planProducts(cgc_engine_s &e);
/// Destroys the plans and the cuBLASLt handle.
void releaseProducts(cgc_engine_s &e);
/// Creates product \p index's matmul descriptor with bias address \p bias.
/// \p desc is set as soon as it exists, so its owner destroys it on failure.
cgc_status createMatmulDesc(const cgc_engine_s &e, size_t index,
                            CUdeviceptr bias, cublasLtMatmulDesc_t &desc);
/// The alignment an operand's address always has: region bases are
/// 256-aligned (cuMemAlloc, and a caller arena must be); a buffer bound to
/// an input or output is only required to be 16-aligned, and the operand
/// keeps its offset from that tensor's start.
uint32_t guaranteedAlignment(const format::Manifest &m,
                             const format::PointerDesc &p);
/// Times the heuristic's candidate algorithms of every product on scratch
/// operands and keeps the fastest (ProductTuning.cpp); nothing with
/// CGC_PRODUCT_TUNING=0 in the environment.
cgc_status tuneProducts(cgc_engine_s &e);
/// cublasLtMatmulAlgoCheck of \p algo against product \p index's
/// descriptors on this GPU: success, with the workspace it needs in \p needs
/// (which the caller compares with the reserve), or why not.
cublasStatus_t checkProductAlgorithm(const cgc_engine_s &e, size_t index,
                                     const cublasLtMatmulAlgo_t &algo,
                                     size_t &needs);
/// "product 2 (node 'mm1', f16 m=64 n=32 k=128 ...)", for messages.
std::string productLabel(const cgc_engine_s &e, size_t index);

/// One usable cuDNN engine configuration of a convolution: finalized into
/// an execution plan within the reserved workspace, with numerical notes
/// the convolution allows.
struct ConvolutionCandidate {
  cudnnBackendDescriptor_t config = nullptr; ///< An engine configuration.
  cudnnBackendDescriptor_t plan = nullptr;   ///< Its execution plan.
  int64_t engineId = -1; ///< CUDNN_ATTR_ENGINE_GLOBAL_INDEX.
  int64_t workspace = 0; ///< CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE.
  std::string tag;       ///< "eng<id>_k<knob>=<value>...".
};

/// One convolution as planned at engine load: its cuDNN operation graph
/// (the convolution, then the epilogue's pointwise operations) and the
/// execution plan every context of the engine captures. Convolutions with
/// the same shapes, layouts, dtype, epilogue, alignments and workspace
/// share the plan of the first of them (its owner).
struct ConvolutionPlan {
  /// The convolution whose descriptors this one uses (itself if it owns).
  size_t owner = 0;
  /// Owner only: the tensors, operations and operation graph, destroyed
  /// with the engine (in reverse), and the usable candidates in the
  /// heuristic's order; after tuning only the chosen one is left.
  std::vector<cudnnBackendDescriptor_t> graph;
  std::vector<ConvolutionCandidate> candidates;
  // The chosen candidate (copied from the owner's).
  cudnnBackendDescriptor_t plan = nullptr;
  int64_t engineId = -1;
  int64_t workspaceUsed = 0;
  std::string tag;
  int32_t usable = 0; ///< Usable candidates found (at most the limit).
  bool timed = false; ///< Chosen by timing (ConvolutionTuning.cpp).
  bool remembered = false; ///< Timed by an earlier load (TuningMemory.h).
  /// Owner only: what the tuning memory knows its choice by.
  std::string memoryKey;
};

/// Where one run of a convolution finds its tensors (null when unused).
struct ConvolutionOperands {
  void *x = nullptr, *w = nullptr, *y = nullptr;
  /// Each epilogue step's operand (null for relu).
  void *steps[cgc::format::kMaxConvolutionSteps] = {};
  void *workspace = nullptr;
};

// Convolutions at engine load (ConvolutionPlans.cpp; timing in
// ConvolutionTuning.cpp; the C API in ConvolutionApi.cpp).
/// Loads cuDNN and plans every convolution of the artifact; does nothing
/// (and loads nothing) for an artifact without convolutions.
cgc_status planConvolutions(cgc_engine_s &e);
/// Times each convolution's candidates and keeps the fastest (the first
/// with CGC_CONVOLUTION_TUNING=0), then destroys the others.
cgc_status tuneConvolutions(cgc_engine_s &e);
/// Makes each owner's first candidate the plan of the convolutions that
/// use it (planning's choice, then tuning's).
void adoptCandidates(cgc_engine_s &e);
/// Destroys the plans, the operation graphs and the cuDNN handle.
void releaseConvolutions(cgc_engine_s &e);
/// False when CGC_CONVOLUTION_TUNING=0 is in the environment.
bool convolutionTuningEnabled();
/// The count in environment variable \p name, clamped to [1, \p most];
/// \p fallback when it is unset, empty or not a whole number.
inline long envCount(const char *name, long fallback, long most) {
  const char *value = std::getenv(name);
  if (!value || !*value)
    return fallback;
  char *end = nullptr;
  long n = std::strtol(value, &end, 10);
  return *end ? fallback : std::clamp(n, 1L, most);
}
/// Points the engine's cuDNN handle at \p stream while it lives, under the
/// engine's cuDNN lock, and back at the default stream when it ends. The
/// handle's stream is shared state, and cudnnSetStream must never replace a
/// stream that another thread is capturing (on an H200 with cuDNN 9.19 it
/// then failed with CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH): so the handle
/// rests on the default stream, and a capture points it at the capture
/// stream before the capture begins and away after it ends.
class ConvolutionStream {
public:
  ConvolutionStream(const cgc_engine_s &e, CUstream stream);
  ~ConvolutionStream();
  ConvolutionStream(const ConvolutionStream &) = delete;
  ConvolutionStream &operator=(const ConvolutionStream &) = delete;
  /// cudnnSetStream's status.
  cudnnStatus_t status() const { return status_; }

private:
  const cgc_engine_s &e_;
  std::lock_guard<std::mutex> lock_;
  cudnnStatus_t status_;
};
/// Runs execution plan \p plan of convolution \p index once with the
/// tensors at \p o on the stream a live ConvolutionStream points the handle
/// at: builds the variant pack (as many allocations as cuDNN makes),
/// cudnnBackendExecute, destroys the pack. On failure returns cuDNN's
/// status and names the call in \p api.
cudnnStatus_t executeConvolution(const cgc_engine_s &e, size_t index,
                                 cudnnBackendDescriptor_t plan,
                                 const ConvolutionOperands &o,
                                 const char *&api);
/// "convolution 2 (node 'conv1', forward bf16 x 1,64,56,56 w 64,64,3,3 ...)", for
/// messages.
std::string convolutionLabel(const cgc_engine_s &e, size_t index);

} // namespace rt
} // namespace cgc

struct cgc_engine_s {
  const cgc::rt::Driver *drv = nullptr;
  CUdevice device = 0;
  CUcontext cuContext = nullptr;
  cgc::format::Artifact artifact;
  CUlibrary library = nullptr;
  std::vector<CUkernel> kernels;
  std::vector<CUfunction> functions; ///< In the primary context (eager).
  CUdeviceptr persistent = 0;
  /// Programmatic dependent launch needs compute capability 9.0 or newer.
  bool programmaticEdges = false;
  /// Matrix products (ProductPlans.cpp): set only if the artifact has some.
  const cgc::rt::CublasLt *lt = nullptr;
  cublasLtHandle_t ltHandle = nullptr;
  std::vector<cgc::rt::ProductPlan> products;
  /// Convolutions (ConvolutionPlans.cpp): set only if the artifact has some.
  const cgc::rt::Cudnn *dnn = nullptr;
  cudnnHandle_t dnnHandle = nullptr;
  std::vector<cgc::rt::ConvolutionPlan> convolutions;
  /// Held while the handle points at a stream (ConvolutionStream): by
  /// graph building, rebinding and eager runs of convolutions, never by
  /// replays, which do not call cuDNN.
  mutable std::mutex dnnMutex;
  /// Contexts alive on this engine (pinning an algorithm refuses while any
  /// exists, since they captured the old one).
  std::atomic<size_t> contexts{0};
  /// While loading: the tuning choices of earlier loads on this GPU
  /// (TuningMemory.h), saved with this load's when tuning is done.
  cgc::rt::TuningMemory tuning;
  /// The ranks of a data-parallel run (cgc_engine_join; Ranks.h): set only
  /// for an artifact with collectives, once joined.
  std::unique_ptr<cgc::rt::Ranks> ranks;

  ~cgc_engine_s();
  /// Makes the engine's primary context current on this thread.
  cgc_status makeCurrent() const;
  CUdeviceptr regionBase(cgc::format::Region r, CUdeviceptr arena) const {
    return r == cgc::format::Region::Arena ? arena : persistent;
  }
};

namespace cgc {
namespace rt {

/// Per graph node: its handle and, for kernels, argument storage (8 bytes
/// per parameter) and the pointers cuGraphAddKernelNode/cuLaunchKernel take.
struct NodeState {
  CUgraphNode node = nullptr;
  std::vector<uint64_t> storage;
  std::vector<void *> args;
  bool usesDims = false;
  /// A kernel that sets a conditional handle (skipped by eager runs, which
  /// read the predicate on the host instead).
  bool setsCondition = false;
};

/// One manifest graph as built in a context: a top-level graph (index <
/// manifest graphs) or a conditional body (graphs.size() + body index).
struct GraphState {
  const format::GraphDesc *desc = nullptr;
  uint32_t tree = 0; ///< The top-level graph whose exec holds it.
  CUgraph graph = nullptr; ///< Owned by the context only at the top level.
  std::vector<uint32_t> order; ///< Topological order of node indices.
  std::vector<NodeState> nodes;
};

/// One top-level graph with every body below it: one instantiation.
struct TreeState {
  CUgraphExec exec = nullptr;
  std::vector<CUgraphConditionalHandle> handles;
  std::vector<uint32_t> members; ///< GraphState indices, the top first.
  std::vector<int64_t> dims;     ///< Dim values baked into exec.
  /// Per manifest dim: the value the graph is specialized to, or -1.
  std::vector<int64_t> bound;
  bool usesDims = false;
};

/// Live view of an input or output for cgc_context_input/output.
struct TensorView {
  const format::TensorDesc *desc = nullptr;
  CUdeviceptr bound = 0; ///< Caller pointer, or 0 for the arena slice.
  std::vector<int64_t> shape, strides;
  /// Per axis: the manifest dim it follows, or -1 (resolved at creation so
  /// runs compare no names).
  std::vector<int32_t> dimOfAxis;
};

} // namespace rt
} // namespace cgc

namespace cgc::rt {
/// Sets every per-context state tensor of \p ctx (region "arena") to its
/// initial value, on \p stream (ContextState.cpp).
cgc_status resetContextState(cgc_context_s &ctx, CUstream stream);
/// The state tensor \p name of \p e, which must be held in \p region
/// (Persistent: the engine's; Arena: per context), in \p t (Engine.cpp).
cgc_status findState(const cgc_engine_s &e, const char *name,
                     cgc::format::Region region, const cgc::format::TensorDesc *&t);
/// Copies state \p t, at \p base + its offset, to or from \p host
/// (synchronous; \p bytes must be its size).
cgc_status copyState(const cgc_engine_s &e, const cgc::format::TensorDesc &t,
                     CUdeviceptr base, void *host, size_t bytes, bool toDevice);
} // namespace cgc::rt

struct cgc_context_s {
  cgc_engine_s *engine = nullptr;
  CUdeviceptr arena = 0;
  bool ownsArena = false;
  std::vector<cgc::rt::GraphState> graphs; ///< Top-level, then bodies.
  std::vector<cgc::rt::TreeState> trees;   ///< One per top-level graph.
  std::vector<cgc::rt::TensorView> views;  ///< Inputs, then outputs.
  std::vector<int64_t> dims;               ///< Dims of the last run.
  std::vector<int64_t> scratchDims;        ///< Preallocated for cgc_run.
  /// Padded artifacts: one 64-bit stream write per `dim_size` input (its
  /// address set at creation; cgc_run fills in the value of dim
  /// `dimWriteDims[k]` when the dims changed).
  std::vector<CUstreamBatchMemOpParams> dimWrites;
  std::vector<size_t> dimWriteDims;
  /// The dims the dim_size inputs hold (-1: not written yet).
  std::vector<int64_t> writtenDims;
  /// Per manifest product: this context's matmul descriptor (its own bias
  /// address); and the stream product calls are captured on, made lazily.
  std::vector<cublasLtMatmulDesc_t> productDescs;
  CUstream captureStream = nullptr;
  cgc_counters counters{};

  ~cgc_context_s();
  cgc::rt::TensorView *findView(const char *name);
  /// Device address of (region, offset) honouring caller bindings.
  CUdeviceptr address(cgc::format::Region r, uint64_t offset,
                      const std::string &binding) const;
  const cgc::format::GraphDesc &bodyDesc(uint32_t body) const {
    return engine->artifact.manifest.bodies[body];
  }
  /// The GraphState index of conditional body \p body.
  uint32_t bodyState(uint32_t body) const {
    return uint32_t(engine->artifact.manifest.graphs.size()) + body;
  }
};

#endif // CGC_RUNTIME_INTERNAL_H
