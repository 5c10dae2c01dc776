//===- ProductTuning.cpp - Matrix product algorithms timed at engine load -===//
//
// cuBLASLt's heuristic ranks algorithms by a model of the GPU, and its first
// choice can be several times slower than its third (measured on an H200:
// BERT-base's f32 products at batch 1 get a split-K "largek" kernel that runs
// at a fraction of what a tiled one does). At engine load, after planning
// (ProductPlans.cpp), each product asks the heuristic for up to
// kCandidates algorithms, runs each on scratch operands of the product's
// layouts on a private stream (kWarmups launches, then kRepeats launches
// each timed alone with CUDA events, after a write of twice the L2 cache
// that evicts the operands) and keeps the algorithm of the lowest median.
// Cold operands are what a model's products see: its weights exceed the L2
// cache, and a product timed with warm operands favours other kernels
// (measured: Llama's f32 products ran 20% slower in the model when chosen
// warm). Products with the same shape, layouts, dtype, epilogue,
// alignments and workspace share one timing.
//
// Requires: the plans of planProducts (descriptors, layouts, preference).
// Guarantees: each plan's algorithm is one the heuristic offered for it
// (so within its workspace reserve and alignments) and the fastest of
// those measured, in this load or in an earlier one on this GPU model
// whose key (shape, layouts, dtype, epilogue, every operand's alignment,
// workspace) was the same; graph building runs nothing (the timing is
// done here).
// CGC_PRODUCT_TUNING=0 in the environment keeps the heuristic's first
// choice (deterministic across loads; the timing's choice may differ from
// one load to the next when two algorithms run equally fast);
// CGC_PRODUCT_CANDIDATES=N asks for N (1 to kMaxCandidates) instead of
// kCandidates. A product whose timing an earlier load on this GPU
// remembered (TuningMemory.h) takes that algorithm without timing, once
// cublasLtMatmulAlgoCheck accepts it; what is timed here is remembered.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

using cgc::format::ProductDesc;

namespace {

using namespace cgc::rt;

constexpr int kCandidates = 8, kMaxCandidates = 64;
constexpr int kWarmups = 2, kRepeats = 5;

bool tuningEnabled() {
  const char *value = std::getenv("CGC_PRODUCT_TUNING");
  return !value || std::strcmp(value, "0") != 0;
}

/// Bytes a (possibly strided-batched) column-major matrix of \p cols
/// columns with leading dimension \p ld spans.
uint64_t matrixBytes(const ProductDesc &p, int64_t ld, int64_t cols,
                     int64_t stride) {
  return uint64_t((p.batch - 1) * stride + ld * cols) *
         cgc::format::dtypeSize(p.dtype);
}

/// What makes two products time alike.
std::string timingKey(const cgc_engine_s &e, const ProductDesc &p) {
  const auto &m = e.artifact.manifest;
  std::string key = p.dtype + (p.allowTf32 ? "+tf32" : "");
  for (int64_t v : {int64_t(p.transA), int64_t(p.transB), p.m, p.n, p.k, p.lda,
                    p.ldb, p.ldc, p.batch, p.strideA, p.strideB, p.strideC,
                    int64_t(p.epilogue), int64_t(p.beta != 0),
                    int64_t(p.workspaceBytes),
                    int64_t(guaranteedAlignment(m, p.a)),
                    int64_t(guaranteedAlignment(m, p.b)),
                    int64_t(guaranteedAlignment(m, p.beta != 0 ? p.c : p.d)),
                    int64_t(guaranteedAlignment(m, p.d)),
                    int64_t(guaranteedAlignment(m, p.bias))})
    key += " " + std::to_string(v);
  return key;
}

/// Device scratch for the timing runs, freed when it goes out of scope.
struct Scratch {
  const Driver &drv;
  std::vector<CUdeviceptr> buffers;
  CUstream stream = nullptr;
  CUevent start = nullptr, stop = nullptr;
  CUdeviceptr evict = 0; ///< Twice the L2 cache, written before each timing.
  uint64_t evictBytes = 0;
  explicit Scratch(const Driver &drv) : drv(drv) {}
  ~Scratch() {
    releaseBuffers();
    if (start)
      drv.cuEventDestroy(start);
    if (stop)
      drv.cuEventDestroy(stop);
    if (stream)
      drv.cuStreamDestroy(stream);
    if (evict)
      drv.cuMemFree(evict);
  }
  /// Frees the operands of the product just timed.
  void releaseBuffers() {
    for (CUdeviceptr b : buffers)
      drv.cuMemFree(b);
    buffers.clear();
  }
  /// A zeroed buffer of at least \p bytes (256-aligned, as regions are).
  cgc_status allocate(uint64_t bytes, CUdeviceptr &out) {
    CGC_CHECK_CU(drv, cuMemAlloc(&out, std::max<uint64_t>(bytes, 256)));
    buffers.push_back(out);
    CGC_CHECK_CU(drv, cuMemsetD8(out, 0, std::max<uint64_t>(bytes, 256)));
    return CGC_OK;
  }
};

/// The operands of product \p p in \p s.
struct Operands {
  CUdeviceptr a = 0, b = 0, d = 0, bias = 0, workspace = 0;
};

cgc_status allocateOperands(const ProductDesc &p, Scratch &s, Operands &o) {
  int64_t colsA = p.transA ? p.m : p.k, colsB = p.transB ? p.k : p.n;
  if (cgc_status st = s.allocate(matrixBytes(p, p.lda, colsA, p.strideA), o.a))
    return st;
  if (cgc_status st = s.allocate(matrixBytes(p, p.ldb, colsB, p.strideB), o.b))
    return st;
  if (cgc_status st = s.allocate(matrixBytes(p, p.ldc, p.n, p.strideC), o.d))
    return st;
  if (p.hasBias())
    if (cgc_status st = s.allocate(uint64_t(std::max(p.m, p.n)) *
                                       cgc::format::dtypeSize(p.dtype),
                                   o.bias))
      return st;
  if (p.workspaceBytes)
    if (cgc_status st = s.allocate(p.workspaceBytes, o.workspace))
      return st;
  return CGC_OK;
}

/// Launches product \p index with \p algo \p count times on the scratch
/// stream; false if cuBLASLt refuses the algorithm for these operands.
bool launch(const cgc_engine_s &e, size_t index, const ProductPlan &plan,
            cublasLtMatmulDesc_t desc, const Operands &o,
            const cublasLtMatmulAlgo_t &algo, CUstream stream, int count) {
  const ProductDesc &p = e.artifact.manifest.products[index];
  void *d = reinterpret_cast<void *>(o.d);
  for (int i = 0; i < count; ++i)
    if (e.lt->cublasLtMatmul(e.ltHandle, desc, &p.alpha,
                             reinterpret_cast<void *>(o.a), plan.a,
                             reinterpret_cast<void *>(o.b), plan.b, &p.beta, d,
                             plan.c, d, plan.d, &algo,
                             reinterpret_cast<void *>(o.workspace),
                             p.workspaceBytes, stream) != CUBLAS_STATUS_SUCCESS)
      return false;
  return true;
}

/// The median time (ms) of one launch of \p algo on operands evicted from
/// the L2 cache, or a negative value if it fails.
float timeAlgorithm(const cgc_engine_s &e, size_t index, const ProductPlan &plan,
                    cublasLtMatmulDesc_t desc, const Operands &o, Scratch &s,
                    const cublasLtMatmulAlgo_t &algo) {
  const Driver &drv = *e.drv;
  if (!launch(e, index, plan, desc, o, algo, s.stream, kWarmups))
    return -1;
  float times[kRepeats];
  for (float &ms : times)
    if (drv.cuMemsetD8Async(s.evict, 0, s.evictBytes, s.stream) != CUDA_SUCCESS ||
        drv.cuEventRecord(s.start, s.stream) != CUDA_SUCCESS ||
        !launch(e, index, plan, desc, o, algo, s.stream, 1) ||
        drv.cuEventRecord(s.stop, s.stream) != CUDA_SUCCESS ||
        drv.cuEventSynchronize(s.stop) != CUDA_SUCCESS ||
        drv.cuEventElapsedTime(&ms, s.start, s.stop) != CUDA_SUCCESS)
      return -1;
  std::nth_element(times, times + kRepeats / 2, times + kRepeats);
  return times[kRepeats / 2];
}

/// What the tuning memory knows product \p p's choice by: the library's
/// version, the candidates asked for and what makes products time alike.
std::string memoryKey(const cgc_engine_s &e, const ProductDesc &p, int candidates) {
  return "cublasLt " + std::to_string(e.lt->cublasLtGetVersion()) + " candidates=" +
         std::to_string(candidates) + " product " + timingKey(e, p);
}

/// Takes the algorithm an earlier load timed for product \p index, if one
/// is remembered under \p key and cuBLASLt accepts it for the product's
/// descriptors within its workspace.
bool recallProduct(cgc_engine_s &e, size_t index, const std::string &key) {
  const std::string *value = e.tuning.recall(key);
  cublasLtMatmulAlgo_t algo;
  size_t needs = 0;
  if (!value || !fromHex(*value, &algo, sizeof algo) ||
      checkProductAlgorithm(e, index, algo, needs) != CUBLAS_STATUS_SUCCESS ||
      needs > e.artifact.manifest.products[index].workspaceBytes)
    return false;
  ProductPlan &plan = e.products[index];
  plan.algo = algo;
  plan.workspaceUsed = needs;
  plan.timed = plan.remembered = true;
  return true;
}

/// Times up to \p candidates of the heuristic's algorithms for product
/// \p index and keeps the fastest in its plan.
cgc_status tuneProduct(cgc_engine_s &e, size_t index, int candidates, Scratch &s) {
  ProductPlan &plan = e.products[index];
  const ProductDesc &p = e.artifact.manifest.products[index];
  std::string what = productLabel(e, index);
  cublasLtMatmulHeuristicResult_t results[kMaxCandidates];
  std::memset(results, 0, sizeof results);
  int found = 0;
  CGC_CHECK_LT(*e.lt, what,
               cublasLtMatmulAlgoGetHeuristic(e.ltHandle, plan.desc, plan.a,
                                              plan.b, plan.c, plan.d,
                                              plan.preference, candidates,
                                              results, &found));
  if (found < 2)
    return CGC_OK;
  Operands o;
  if (cgc_status st = allocateOperands(p, s, o))
    return st;
  cublasLtMatmulDesc_t desc = nullptr;
  cgc_status st = createMatmulDesc(e, index, o.bias, desc);
  float best = -1;
  for (int i = 0; st == CGC_OK && i < found; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS)
      continue;
    float ms = timeAlgorithm(e, index, plan, desc, o, s, results[i].algo);
    if (ms >= 0 && (best < 0 || ms < best)) {
      best = ms;
      plan.algo = results[i].algo;
      plan.workspaceUsed = results[i].workspaceSize;
      plan.timed = true;
    }
  }
  if (desc)
    e.lt->cublasLtMatmulDescDestroy(desc);
  s.releaseBuffers(); // the next product allocates its own
  return st;
}

} // namespace

namespace cgc {
namespace rt {

cgc_status tuneProducts(cgc_engine_s &e) {
  if (e.products.empty() || !tuningEnabled())
    return CGC_OK;
  const Driver &drv = *e.drv;
  Scratch s(drv);
  CGC_CHECK_CU(drv, cuStreamCreate(&s.stream, CU_STREAM_NON_BLOCKING));
  CGC_CHECK_CU(drv, cuEventCreate(&s.start, CU_EVENT_DEFAULT));
  CGC_CHECK_CU(drv, cuEventCreate(&s.stop, CU_EVENT_DEFAULT));
  int l2 = 0;
  CGC_CHECK_CU(drv, cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                                         e.device));
  s.evictBytes = 2 * uint64_t(std::max(l2, 1 << 20));
  CGC_CHECK_CU(drv, cuMemAlloc(&s.evict, s.evictBytes));
  const int candidates =
      int(envCount("CGC_PRODUCT_CANDIDATES", kCandidates, kMaxCandidates));
  std::map<std::string, size_t> timed; // key -> the product timed for it
  for (size_t i = 0; i < e.products.size(); ++i) {
    const ProductDesc &p = e.artifact.manifest.products[i];
    auto [it, fresh] = timed.emplace(timingKey(e, p), i);
    if (!fresh) {
      const ProductPlan &first = e.products[it->second];
      e.products[i].algo = first.algo;
      e.products[i].workspaceUsed = first.workspaceUsed;
      e.products[i].timed = first.timed;
      e.products[i].remembered = first.remembered;
      continue;
    }
    std::string key = memoryKey(e, p, candidates);
    if (recallProduct(e, i, key))
      continue;
    if (cgc_status st = tuneProduct(e, i, candidates, s))
      return st;
    if (e.products[i].timed)
      e.tuning.remember(key, toHex(&e.products[i].algo, sizeof e.products[i].algo));
  }
  return CGC_OK;
}

} // namespace rt
} // namespace cgc
