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
#include "Driver.h"
#include "cgc/cgc_runtime.h"

#include <atomic>
#include <string>
#include <vector>

namespace cgc {
namespace rt {

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
/// "product 2 (node 'mm1', f16 m=64 n=32 k=128 ...)", for messages.
std::string productLabel(const cgc_engine_s &e, size_t index);

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
  /// Contexts alive on this engine (pinning an algorithm refuses while any
  /// exists, since they captured the old one).
  std::atomic<size_t> contexts{0};

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
