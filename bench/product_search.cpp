//===- product_search.cpp - How fast can cuBLASLt run a few-row product? ---===//
//
// A measurement, not part of cgc: for each product shape given on the
// command line it times, inside a CUDA graph, what cgc's engine load can
// choose from (the heuristic's candidates under cgc's workspace rule), the
// heuristic's candidates under a 32 MiB workspace, and every split-K
// variant of those candidates that cublasLtMatmulAlgoCheck accepts. Each
// timing is one graph of kLaunches products that read distinct weights (so
// the weights come from memory, as in a model whose weights exceed the L2
// cache) replayed back to back: the time per product includes the gap
// between dependent kernels in a graph, which is what a model pays.
//
// Shapes are cgc's (column-major, cuBLASLt's terms): M,N,K for
// D[M,N] = op(A)[M,K] * B[K,N] + bias[M] with A transposed (a linear
// layer: M output features, N tokens, K input features), in bf16.
//
// Build (GPU machine): g++ -O2 -std=c++17 bench/product_search.cpp
//   -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcublasLt -lcudart
//   -o product_search
// Run: ./product_search 768,128,768 2304,128,768 3072,128,768 768,128,3072
//
//===----------------------------------------------------------------------===//
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kLaunches = 48, kRepeats = 5, kCandidates = 64;

#define CHECK_CUDA(x)                                                          \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                  \
                   cudaGetErrorString(e_));                                    \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)
#define CHECK_LT(x)                                                            \
  do {                                                                         \
    cublasStatus_t s_ = (x);                                                   \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                         \
      std::fprintf(stderr, "%s:%d: cublasLt status %d\n", __FILE__, __LINE__,  \
                   int(s_));                                                   \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

struct Shape {
  int64_t m, n, k;
};

struct Problem {
  Shape s;
  cublasLtHandle_t handle;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, d;
  std::vector<void *> weights; // kLaunches copies of A
  void *activation, *output, *bias, *workspace;
  size_t workspaceBytes;
  cudaStream_t stream;
};

uint64_t cgcWorkspace(const Shape &s) {
  uint64_t bytes = 4 * uint64_t(s.m) * uint64_t(s.n);
  return std::clamp<uint64_t>(bytes, 1 << 20, 32 << 20);
}

void *deviceZeros(size_t bytes) {
  void *p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, bytes));
  CHECK_CUDA(cudaMemset(p, 0, bytes));
  return p;
}

Problem makeProblem(cublasLtHandle_t handle, const Shape &s, cudaStream_t stream) {
  Problem p{};
  p.s = s;
  p.handle = handle;
  p.stream = stream;
  CHECK_LT(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
  CHECK_LT(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
  CHECK_LT(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n));
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  CHECK_LT(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                          sizeof epilogue));
  p.bias = deviceZeros(s.m * 2);
  CHECK_LT(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias,
                                          sizeof p.bias));
  CHECK_LT(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, s.k, s.m, s.k));
  CHECK_LT(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, s.k, s.n, s.k));
  CHECK_LT(cublasLtMatrixLayoutCreate(&p.d, CUDA_R_16BF, s.m, s.n, s.m));
  for (int i = 0; i < kLaunches; ++i)
    p.weights.push_back(deviceZeros(s.m * s.k * 2));
  p.activation = deviceZeros(s.k * s.n * 2);
  p.output = deviceZeros(s.m * s.n * 2);
  p.workspaceBytes = 32 << 20;
  p.workspace = deviceZeros(p.workspaceBytes);
  return p;
}

/// Heuristic candidates under a workspace of \p bytes.
std::vector<cublasLtMatmulHeuristicResult_t> heuristic(const Problem &p, uint64_t bytes) {
  cublasLtMatmulPreference_t pref;
  CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
  CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &bytes, sizeof bytes));
  std::vector<cublasLtMatmulHeuristicResult_t> results(kCandidates);
  int found = 0;
  CHECK_LT(cublasLtMatmulAlgoGetHeuristic(p.handle, p.desc, p.a, p.b, p.d, p.d, pref,
                                          kCandidates, results.data(), &found));
  cublasLtMatmulPreferenceDestroy(pref);
  results.resize(found);
  return results;
}

/// Microseconds per product in a graph of kLaunches products, or -1.
double timeAlgorithm(const Problem &p, const cublasLtMatmulAlgo_t &algo) {
  const float alpha = 1, beta = 0;
  cudaGraph_t graph;
  CHECK_CUDA(cudaStreamBeginCapture(p.stream, cudaStreamCaptureModeThreadLocal));
  bool ok = true;
  for (int i = 0; i < kLaunches && ok; ++i)
    ok = cublasLtMatmul(p.handle, p.desc, &alpha, p.weights[i], p.a, p.activation, p.b, &beta,
                        p.output, p.d, p.output, p.d, &algo, p.workspace, p.workspaceBytes,
                        p.stream) == CUBLAS_STATUS_SUCCESS;
  CHECK_CUDA(cudaStreamEndCapture(p.stream, &graph));
  if (!ok) {
    cudaGraphDestroy(graph);
    return -1;
  }
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (int i = 0; i < 2; ++i)
    CHECK_CUDA(cudaGraphLaunch(exec, p.stream));
  std::vector<float> times;
  for (int r = 0; r < kRepeats; ++r) {
    float ms = 0;
    CHECK_CUDA(cudaEventRecord(start, p.stream));
    CHECK_CUDA(cudaGraphLaunch(exec, p.stream));
    CHECK_CUDA(cudaEventRecord(stop, p.stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return 1000.0 * times[kRepeats / 2] / kLaunches;
}

uint32_t config(const cublasLtMatmulAlgo_t &algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  uint32_t value = 0;
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof value, &written);
  return value;
}

std::string describe(const cublasLtMatmulAlgo_t &algo) {
  char text[160];
  std::snprintf(text, sizeof text, "algo=%u tile=%u stages=%u splitk=%u reduction=%u custom=%u",
                config(algo, CUBLASLT_ALGO_CONFIG_ID), config(algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
                config(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID),
                config(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                config(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME),
                config(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION));
  return text;
}

/// Split-K variants of \p algo that cublasLtMatmulAlgoCheck accepts.
std::vector<cublasLtMatmulAlgo_t> splitVariants(const Problem &p, cublasLtMatmulAlgo_t algo) {
  std::vector<cublasLtMatmulAlgo_t> out;
  int32_t splitSupport = 0;
  uint32_t schemes = 0;
  size_t written = 0;
  cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &splitSupport,
                                    sizeof splitSupport, &written);
  cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &schemes,
                                    sizeof schemes, &written);
  if (!splitSupport)
    return out;
  for (uint32_t splits : {2u, 3u, 4u, 6u, 8u, 12u, 16u})
    for (uint32_t scheme : {1u, 2u, 4u}) {
      if (!(schemes & scheme))
        continue;
      cublasLtMatmulAlgo_t v = algo;
      cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                           sizeof splits);
      cublasLtMatmulAlgoConfigSetAttribute(&v, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
                                           sizeof scheme);
      cublasLtMatmulHeuristicResult_t check{};
      if (cublasLtMatmulAlgoCheck(p.handle, p.desc, p.a, p.b, p.d, p.d, &v, &check) ==
              CUBLAS_STATUS_SUCCESS &&
          check.workspaceSize <= p.workspaceBytes)
        out.push_back(v);
    }
  return out;
}

struct Best {
  double us = -1;
  std::string what;
  void offer(double t, const cublasLtMatmulAlgo_t &algo) {
    if (t > 0 && (us < 0 || t < us)) {
      us = t;
      what = describe(algo);
    }
  }
};

void search(cublasLtHandle_t handle, const Shape &s, cudaStream_t stream) {
  Problem p = makeProblem(handle, s, stream);
  auto cgcList = heuristic(p, cgcWorkspace(s));
  auto wideList = heuristic(p, 32 << 20);
  Best first, cgcBest, wideBest, splitBest;
  if (!cgcList.empty())
    first.offer(timeAlgorithm(p, cgcList[0].algo), cgcList[0].algo);
  for (size_t i = 0; i < cgcList.size() && i < 8; ++i)
    cgcBest.offer(timeAlgorithm(p, cgcList[i].algo), cgcList[i].algo);
  for (const auto &r : wideList)
    wideBest.offer(timeAlgorithm(p, r.algo), r.algo);
  int variants = 0;
  for (const auto &r : wideList)
    for (const auto &v : splitVariants(p, r.algo)) {
      ++variants;
      splitBest.offer(timeAlgorithm(p, v), v);
    }
  double floorUs = double(s.m * s.k * 2) / 3.0e6; // bytes at 3 TB/s, in microseconds
  std::printf("shape M=%ld N=%ld K=%ld bf16 (weights %.2f MB, read at 3 TB/s %.2f us)\n", s.m,
              s.n, s.k, s.m * s.k * 2 / 1e6, floorUs);
  std::printf("  heuristic first (cgc workspace %lu): %.2f us  %s\n", cgcWorkspace(s), first.us,
              first.what.c_str());
  std::printf("  best of 8 (cgc's default tuning):    %.2f us  %s\n", cgcBest.us,
              cgcBest.what.c_str());
  std::printf("  best of %zu, 32 MiB workspace:       %.2f us  %s\n", wideList.size(),
              wideBest.us, wideBest.what.c_str());
  std::printf("  best of %d split-K variants:         %.2f us  %s\n", variants, splitBest.us,
              splitBest.what.c_str());
  std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
  cublasLtHandle_t handle;
  CHECK_LT(cublasLtCreate(&handle));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, cuBLASLt %zu, %d launches per graph, median of %d\n", prop.name,
              cublasLtGetVersion(), kLaunches, kRepeats);
  for (int i = 1; i < argc; ++i) {
    Shape s{};
    if (std::sscanf(argv[i], "%ld,%ld,%ld", &s.m, &s.n, &s.k) != 3) {
      std::fprintf(stderr, "product_search: '%s' is not M,N,K\n", argv[i]);
      return 2;
    }
    search(handle, s, stream);
  }
  return 0;
}
