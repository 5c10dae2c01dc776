//===- StubDriver.cpp - A CUDA driver without a GPU, for ThreadSanitizer --===//
//
// libcuda.so.1 for the runtime's host paths under ThreadSanitizer on a
// machine without a GPU (CUDA's own mappings defeat the sanitizer on a
// real one). It resolves every entry point the runtime asks
// cuGetProcAddress_v2 for: "device" memory is host memory (copies and
// memsets are memcpy and memset), a device of compute capability 9.0,
// graph objects and handles are host objects, and nothing executes
// (kernel launches and graph launches succeed and do nothing; events
// complete at once unless cgc_stub_events_pending says otherwise). The
// runtime's own locks, tables and per-context state are then exercised
// from many threads exactly as on a GPU. Thread-safe itself (every object
// is owned by the one call that makes it or by its graph).
//
//===----------------------------------------------------------------------===//
#include <cuda.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

/// A graph: owns its nodes' storage (conditional bodies included).
struct Graph {
  std::mutex mutex;
  std::vector<std::unique_ptr<Graph>> bodies;
  std::vector<std::unique_ptr<char[]>> nodes;
  std::vector<std::unique_ptr<CUgraph[]>> bodyLists;

  CUgraphNode node() {
    std::lock_guard<std::mutex> lock(mutex);
    nodes.emplace_back(new char[1]);
    return reinterpret_cast<CUgraphNode>(nodes.back().get());
  }
};

struct Handle {}; // libraries, kernels, functions, streams, events, execs
thread_local CUcontext tCurrent = nullptr;
int gPrimary = 0;

template <typename T> T fresh() { return reinterpret_cast<T>(new Handle); }
template <typename T> void release(T h) { delete reinterpret_cast<Handle *>(h); }

CUresult succeed() { return CUDA_SUCCESS; }

/// Set by cgc_stub_events_pending: events never complete (a stalled GPU).
std::atomic<bool> gEventsPending{false};
CUresult eventQuery(CUevent) {
  return gEventsPending ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

CUresult driverVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
CUresult errorName(CUresult, const char **s) { *s = "CUDA_STUB"; return CUDA_SUCCESS; }
CUresult errorString(CUresult, const char **s) { *s = "the stub driver"; return CUDA_SUCCESS; }
CUresult deviceCount(int *n) { *n = 1; return CUDA_SUCCESS; }
CUresult deviceGet(CUdevice *d, int) { *d = 0; return CUDA_SUCCESS; }
CUresult deviceAttribute(int *v, CUdevice_attribute a, CUdevice) {
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 50 << 20; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
  default: *v = 1; break;
  }
  return CUDA_SUCCESS;
}
CUresult deviceName(char *name, int length, CUdevice) {
  std::strncpy(name, "cgc stub device", size_t(length));
  if (length > 0)
    name[length - 1] = 0;
  return CUDA_SUCCESS;
}
CUresult primaryRetain(CUcontext *c, CUdevice) {
  *c = reinterpret_cast<CUcontext>(&gPrimary);
  return CUDA_SUCCESS;
}
CUresult ctxGetCurrent(CUcontext *c) { *c = tCurrent; return CUDA_SUCCESS; }
CUresult ctxSetCurrent(CUcontext c) { tCurrent = c; return CUDA_SUCCESS; }

CUresult memAlloc(CUdeviceptr *p, size_t bytes) {
  void *m = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (!m)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *p = reinterpret_cast<CUdeviceptr>(m);
  return CUDA_SUCCESS;
}
CUresult memFree(CUdeviceptr p) { std::free(reinterpret_cast<void *>(p)); return CUDA_SUCCESS; }
void *at(CUdeviceptr p) { return reinterpret_cast<void *>(p); }
CUresult htod(CUdeviceptr d, const void *s, size_t n) { std::memcpy(at(d), s, n); return CUDA_SUCCESS; }
CUresult dtoh(void *d, CUdeviceptr s, size_t n) { std::memcpy(d, at(s), n); return CUDA_SUCCESS; }
CUresult htodAsync(CUdeviceptr d, const void *s, size_t n, CUstream) { return htod(d, s, n); }
CUresult dtohAsync(void *d, CUdeviceptr s, size_t n, CUstream) { return dtoh(d, s, n); }
CUresult dtodAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream) {
  std::memmove(at(d), at(s), n);
  return CUDA_SUCCESS;
}
CUresult memset8(CUdeviceptr d, unsigned char v, size_t n) { std::memset(at(d), v, n); return CUDA_SUCCESS; }
CUresult memset8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream) { return memset8(d, v, n); }
CUresult memset32Async(CUdeviceptr d, unsigned v, size_t n, CUstream) {
  for (size_t i = 0; i < n; ++i)
    std::memcpy(static_cast<char *>(at(d)) + 4 * i, &v, 4);
  return CUDA_SUCCESS;
}

CUresult libraryLoad(CUlibrary *l, const void *, CUjit_option *, void **, unsigned,
                     CUlibraryOption *, void **, unsigned) {
  *l = fresh<CUlibrary>();
  return CUDA_SUCCESS;
}
CUresult libraryUnload(CUlibrary l) { release(l); return CUDA_SUCCESS; }
// Kernels and functions live as long as the process (the runtime keeps them
// per engine; a handful per artifact).
CUresult libraryGetKernel(CUkernel *k, CUlibrary, const char *) { *k = fresh<CUkernel>(); return CUDA_SUCCESS; }
CUresult kernelGetFunction(CUfunction *f, CUkernel) { *f = fresh<CUfunction>(); return CUDA_SUCCESS; }

CUresult graphCreate(CUgraph *g, unsigned) {
  *g = reinterpret_cast<CUgraph>(new Graph);
  return CUDA_SUCCESS;
}
CUresult graphDestroy(CUgraph g) { delete reinterpret_cast<Graph *>(g); return CUDA_SUCCESS; }
Graph &graphOf(CUgraph g) { return *reinterpret_cast<Graph *>(g); }
CUresult addKernelNode(CUgraphNode *n, CUgraph g, const CUgraphNode *, size_t,
                       const CUDA_KERNEL_NODE_PARAMS *) {
  *n = graphOf(g).node();
  return CUDA_SUCCESS;
}
CUresult addMemsetNode(CUgraphNode *n, CUgraph g, const CUgraphNode *, size_t,
                       const CUDA_MEMSET_NODE_PARAMS *, CUcontext) {
  *n = graphOf(g).node();
  return CUDA_SUCCESS;
}
CUresult addMemcpyNode(CUgraphNode *n, CUgraph g, const CUgraphNode *, size_t,
                       const CUDA_MEMCPY3D *, CUcontext) {
  *n = graphOf(g).node();
  return CUDA_SUCCESS;
}
CUresult addChildNode(CUgraphNode *n, CUgraph g, const CUgraphNode *, size_t, CUgraph) {
  *n = graphOf(g).node();
  return CUDA_SUCCESS;
}
/// A conditional node's bodies are graphs the node owns.
CUresult addNode(CUgraphNode *n, CUgraph g, const CUgraphNode *, const CUgraphEdgeData *,
                 size_t, CUgraphNodeParams *p) {
  Graph &graph = graphOf(g);
  *n = graph.node();
  if (p->type != CU_GRAPH_NODE_TYPE_CONDITIONAL)
    return CUDA_SUCCESS;
  std::lock_guard<std::mutex> lock(graph.mutex);
  graph.bodyLists.emplace_back(new CUgraph[p->conditional.size]);
  for (unsigned b = 0; b < p->conditional.size; ++b) {
    graph.bodies.emplace_back(new Graph);
    graph.bodyLists.back()[b] = reinterpret_cast<CUgraph>(graph.bodies.back().get());
  }
  p->conditional.phGraph_out = graph.bodyLists.back().get();
  return CUDA_SUCCESS;
}
CUresult conditionalHandle(CUgraphConditionalHandle *h, CUgraph, CUcontext, unsigned, unsigned) {
  static std::mutex mutex;
  static unsigned long long next = 1;
  std::lock_guard<std::mutex> lock(mutex);
  *h = next++;
  return CUDA_SUCCESS;
}
CUresult instantiate(CUgraphExec *e, CUgraph, unsigned long long) {
  *e = fresh<CUgraphExec>();
  return CUDA_SUCCESS;
}
CUresult execDestroy(CUgraphExec e) { release(e); return CUDA_SUCCESS; }
CUresult streamCreate(CUstream *s, unsigned) { *s = fresh<CUstream>(); return CUDA_SUCCESS; }
CUresult streamDestroy(CUstream s) { release(s); return CUDA_SUCCESS; }
CUresult endCapture(CUstream, CUgraph *g) { return graphCreate(g, 0); }
CUresult eventCreate(CUevent *e, unsigned) { *e = fresh<CUevent>(); return CUDA_SUCCESS; }
CUresult eventDestroy(CUevent e) { release(e); return CUDA_SUCCESS; }
CUresult elapsed(float *ms, CUevent, CUevent) { *ms = 1.0f; return CUDA_SUCCESS; }

struct Entry {
  const char *name;
  void *fn;
};

#define CGC_STUB(name, fn) {#name, reinterpret_cast<void *>(&fn)}
// The entry points that only succeed (launches, uploads, attribute and
// parameter setters, synchronizations) share `succeed`, which takes no
// arguments: the x86-64 calling convention lets a caller pass any.
const Entry kEntries[] = {
    CGC_STUB(cuInit, succeed),
    CGC_STUB(cuDriverGetVersion, driverVersion),
    CGC_STUB(cuGetErrorName, errorName),
    CGC_STUB(cuGetErrorString, errorString),
    CGC_STUB(cuDeviceGetCount, deviceCount),
    CGC_STUB(cuDeviceGet, deviceGet),
    CGC_STUB(cuDeviceGetAttribute, deviceAttribute),
    CGC_STUB(cuDeviceGetName, deviceName),
    CGC_STUB(cuDevicePrimaryCtxRetain, primaryRetain),
    CGC_STUB(cuDevicePrimaryCtxRelease, succeed),
    CGC_STUB(cuDevicePrimaryCtxReset, succeed),
    CGC_STUB(cuCtxGetCurrent, ctxGetCurrent),
    CGC_STUB(cuCtxSetCurrent, ctxSetCurrent),
    CGC_STUB(cuCtxSynchronize, succeed),
    CGC_STUB(cuMemAlloc, memAlloc),
    CGC_STUB(cuMemFree, memFree),
    CGC_STUB(cuMemcpyHtoD, htod),
    CGC_STUB(cuMemcpyDtoH, dtoh),
    CGC_STUB(cuMemcpyHtoDAsync, htodAsync),
    CGC_STUB(cuMemcpyDtoHAsync, dtohAsync),
    CGC_STUB(cuMemcpyDtoDAsync, dtodAsync),
    CGC_STUB(cuMemsetD8, memset8),
    CGC_STUB(cuMemsetD8Async, memset8Async),
    CGC_STUB(cuMemsetD32Async, memset32Async),
    CGC_STUB(cuLibraryLoadData, libraryLoad),
    CGC_STUB(cuLibraryUnload, libraryUnload),
    CGC_STUB(cuLibraryGetKernel, libraryGetKernel),
    CGC_STUB(cuKernelGetFunction, kernelGetFunction),
    CGC_STUB(cuKernelSetAttribute, succeed),
    CGC_STUB(cuLaunchKernel, succeed),
    CGC_STUB(cuGraphCreate, graphCreate),
    CGC_STUB(cuGraphDestroy, graphDestroy),
    CGC_STUB(cuGraphAddKernelNode, addKernelNode),
    CGC_STUB(cuGraphAddMemsetNode, addMemsetNode),
    CGC_STUB(cuGraphAddMemcpyNode, addMemcpyNode),
    CGC_STUB(cuGraphAddDependencies, succeed),
    CGC_STUB(cuGraphAddNode, addNode),
    CGC_STUB(cuGraphAddChildGraphNode, addChildNode),
    CGC_STUB(cuGraphConditionalHandleCreate, conditionalHandle),
    CGC_STUB(cuGraphInstantiateWithFlags, instantiate),
    CGC_STUB(cuGraphUpload, succeed),
    CGC_STUB(cuGraphLaunch, succeed),
    CGC_STUB(cuGraphExecDestroy, execDestroy),
    CGC_STUB(cuGraphExecKernelNodeSetParams, succeed),
    CGC_STUB(cuGraphExecMemsetNodeSetParams, succeed),
    CGC_STUB(cuGraphExecMemcpyNodeSetParams, succeed),
    CGC_STUB(cuGraphExecChildGraphNodeSetParams, succeed),
    CGC_STUB(cuStreamCreate, streamCreate),
    CGC_STUB(cuStreamDestroy, streamDestroy),
    CGC_STUB(cuStreamSynchronize, succeed),
    CGC_STUB(cuStreamQuery, succeed),
    CGC_STUB(cuStreamBatchMemOp, succeed),
    CGC_STUB(cuStreamBeginCapture, succeed),
    CGC_STUB(cuStreamEndCapture, endCapture),
    CGC_STUB(cuEventCreate, eventCreate),
    CGC_STUB(cuEventDestroy, eventDestroy),
    CGC_STUB(cuEventRecord, succeed),
    CGC_STUB(cuEventSynchronize, succeed),
    CGC_STUB(cuEventQuery, eventQuery),
    CGC_STUB(cuEventElapsedTime, elapsed),
};
#undef CGC_STUB

} // namespace

extern "C" __attribute__((visibility("default"))) CUresult
cuGetProcAddress_v2(const char *symbol, void **fn, int, cuuint64_t,
                    CUdriverProcAddressQueryResult *status) {
  for (const Entry &e : kEntries)
    if (std::strcmp(e.name, symbol) == 0) {
      *fn = e.fn;
      if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  *fn = nullptr;
  if (status)
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

/// Test hook: from now on every event is pending (true) or complete.
extern "C" __attribute__((visibility("default"))) void
cgc_stub_events_pending(int pending) {
  gEventsPending = pending != 0;
}
