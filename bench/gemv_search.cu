//===- gemv_search.cu - How fast can a few-row bf16 product read its weight? ===//
//
// A measurement, not part of cgc: for each weight shape N,K given on the
// command line (out[m, n] = sum_k x[m, k] * w[n, k], bf16, f32 sums) it
// times shapes of a generated few-row kernel, to pick the one cgc's
// generated_product should emit for decoding steps:
//   C  output columns per warp (the x chunk is loaded once for all C),
//   G  warps that split one column group's k range (summed in shared
//      memory), W warps per block,
//   grid: one block per column group (blocks = N / (C * W / G)), or a fixed
//      number of blocks per multiprocessor looping over the groups,
//   pdl: a programmatic edge from the previous product, the block's first
//      group's weight rows prefetched into L2 (cp.async.bulk.prefetch)
//      before griddepcontrol.wait.
// Each timing is one graph of kLaunches products that read distinct
// weights (as a decoder's layers do; together larger than the L2 cache),
// replayed back to back, median of kRepeats: the time per product includes
// the gap between dependent kernels, which is what a decoding step pays.
// The floor columns: a device-to-device copy of the weight (bytes read and
// written over time) and a kernel that only reads it (no x, no output).
//
// Build (GPU machine): nvcc -O3 -std=c++17 -arch=sm_90 bench/gemv_search.cu
//   -o gemv_search
// Run: ./gemv_search 2048,2048 6144,2048 11264,2048 2048,5632 32000,2048
//
//===----------------------------------------------------------------------===//
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK_CUDA(x)                                                          \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                  \
                   cudaGetErrorString(e_));                                    \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

namespace {

constexpr int kLaunches = 48, kRepeats = 5;

__device__ __forceinline__ float dot8(uint4 a, uint4 b) {
  const __nv_bfloat162 *x = reinterpret_cast<const __nv_bfloat162 *>(&a);
  const __nv_bfloat162 *y = reinterpret_cast<const __nv_bfloat162 *>(&b);
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 u = __bfloat1622float2(x[i]), v = __bfloat1622float2(y[i]);
    s += u.x * v.x + u.y * v.y;
  }
  return s;
}

__device__ __forceinline__ void prefetchL2(const void *p, unsigned bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

__device__ __forceinline__ void waitForProducers() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;");
}

/// out[M, N] = x[M, K] . w[N, K]^T. Groups of G warps take C columns each.
template <int M, int C, int G>
__global__ void gemv(const __nv_bfloat16 *__restrict__ x,
                     const __nv_bfloat16 *__restrict__ w,
                     __nv_bfloat16 *__restrict__ out, int n, int k, int pdl) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5, groupsPerBlock = warps / G;
  const int part = warp % G, chunks = k / 8;
  const int tasks = n / C;
  int task = blockIdx.x * groupsPerBlock + warp / G;
  const int stride = gridDim.x * groupsPerBlock;
  if (pdl) {
    // This warp's first group's rows (its part of them) into L2.
    if (lane == 0 && task < tasks)
      for (int c = 0; c < C; ++c) {
        const char *row = reinterpret_cast<const char *>(w + size_t(task * C + c) * k);
        unsigned bytes = unsigned(k) * 2 / G;
        prefetchL2(row + part * bytes, bytes);
      }
    waitForProducers();
  }
  __shared__ float partial[32][M * C];
  for (; task - (warp / G) < tasks; task += stride) {
    float acc[M][C];
#pragma unroll
    for (int m = 0; m < M; ++m)
#pragma unroll
      for (int c = 0; c < C; ++c) acc[m][c] = 0.0f;
    const bool live = task < tasks;
    if (live) {
      const uint4 *wrow = reinterpret_cast<const uint4 *>(w + size_t(task) * C * k);
      const uint4 *xv = reinterpret_cast<const uint4 *>(x);
#pragma unroll 4
      for (int j = part * 32 + lane; j < chunks; j += G * 32) {
        uint4 wv[C];
#pragma unroll
        for (int c = 0; c < C; ++c) wv[c] = __ldg(wrow + size_t(c) * chunks + j);
#pragma unroll
        for (int m = 0; m < M; ++m) {
          uint4 xm = __ldg(xv + m * chunks + j);
#pragma unroll
          for (int c = 0; c < C; ++c) acc[m][c] += dot8(wv[c], xm);
        }
      }
    }
#pragma unroll
    for (int m = 0; m < M; ++m)
#pragma unroll
      for (int c = 0; c < C; ++c)
        for (int o = 16; o > 0; o >>= 1)
          acc[m][c] += __shfl_xor_sync(0xffffffffu, acc[m][c], o);
    if (G > 1) {
      if (lane == 0)
#pragma unroll
        for (int m = 0; m < M; ++m)
#pragma unroll
          for (int c = 0; c < C; ++c) partial[warp][m * C + c] = acc[m][c];
      __syncthreads();
      if (part == 0 && live && lane < M * C) {
        float s = 0.0f;
        for (int g = 0; g < G; ++g) s += partial[warp + g][lane];
        out[(lane / C) * size_t(n) + task * C + lane % C] = __float2bfloat16(s);
      }
      __syncthreads();
    } else if (live && lane == 0) {
#pragma unroll
      for (int m = 0; m < M; ++m)
#pragma unroll
        for (int c = 0; c < C; ++c)
          out[m * size_t(n) + task * C + c] = __float2bfloat16(acc[m][c]);
    }
  }
}

/// Reads every 16 bytes of w once (the read floor): a grid-stride sum.
__global__ void readOnly(const uint4 *__restrict__ w, size_t vectors, float *sink) {
  unsigned s = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < vectors;
       i += size_t(gridDim.x) * blockDim.x) {
    uint4 v = __ldg(w + i);
    s ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (s == 0x12345678u) *sink = float(s);
}

using Kernel = void (*)(const __nv_bfloat16 *, const __nv_bfloat16 *,
                        __nv_bfloat16 *, int, int, int);

struct Variant {
  int c, g, warps, blocksPerSm; // blocksPerSm 0: one block per group
  bool pdl;
};

template <int M> Kernel kernelFor(int c, int g) {
  static const Kernel table[3][4] = {
      {gemv<M, 1, 1>, gemv<M, 1, 2>, gemv<M, 1, 4>, gemv<M, 1, 8>},
      {gemv<M, 2, 1>, gemv<M, 2, 2>, gemv<M, 2, 4>, gemv<M, 2, 8>},
      {gemv<M, 4, 1>, gemv<M, 4, 2>, gemv<M, 4, 4>, gemv<M, 4, 8>}};
  int ci = c == 1 ? 0 : c == 2 ? 1 : 2;
  int gi = g == 1 ? 0 : g == 2 ? 1 : g == 4 ? 2 : 3;
  return table[ci][gi];
}

Kernel kernelFor(int m, int c, int g) {
  switch (m) {
  case 1: return kernelFor<1>(c, g);
  case 2: return kernelFor<2>(c, g);
  case 4: return kernelFor<4>(c, g);
  case 8: return kernelFor<8>(c, g);
  }
  std::fprintf(stderr, "no kernel for m=%d\n", m);
  std::exit(1);
}

/// The median over kRepeats of one replay of \p graph, in microseconds.
float timeGraph(cudaGraph_t graph, cudaStream_t stream) {
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  std::vector<float> us;
  for (int r = 0; r < kRepeats; ++r) {
    float ms = 0;
    CHECK_CUDA(cudaEventRecord(start, stream));
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    us.push_back(ms * 1000.0f);
  }
  std::sort(us.begin(), us.end());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaGraphExecDestroy(exec);
  return us[kRepeats / 2];
}

struct Buffers {
  std::vector<__nv_bfloat16 *> weights, outs;
  __nv_bfloat16 *x = nullptr;
  float *sink = nullptr;
};

/// Launches \p v over launch i's weight, with a programmatic edge if asked.
void launch(const Variant &v, int m, int n, int k, int sms, const Buffers &b,
            int i, cudaStream_t stream) {
  int groupsPerBlock = v.warps / v.g;
  int groups = n / v.c;
  int blocks = v.blocksPerSm ? v.blocksPerSm * sms
                             : (groups + groupsPerBlock - 1) / groupsPerBlock;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(v.warps * 32);
  config.stream = stream;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attr;
  config.numAttrs = v.pdl ? 1 : 0;
  int pdl = v.pdl ? 1 : 0;
  CHECK_CUDA(cudaLaunchKernelEx(&config, kernelFor(m, v.c, v.g),
                                (const __nv_bfloat16 *)b.x,
                                (const __nv_bfloat16 *)b.weights[i], b.outs[i], n, k, pdl));
}

/// Checks launch 0's output of \p v against a host product.
bool check(const Variant &v, int m, int n, int k, int sms, const Buffers &b,
           cudaStream_t stream) {
  CHECK_CUDA(cudaMemsetAsync(b.outs[0], 0, size_t(m) * n * 2, stream));
  launch(v, m, n, k, sms, b, 0, stream);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<__nv_bfloat16> w(size_t(n) * k), x(size_t(m) * k), out(size_t(m) * n);
  CHECK_CUDA(cudaMemcpy(w.data(), b.weights[0], w.size() * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(x.data(), b.x, x.size() * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(out.data(), b.outs[0], out.size() * 2, cudaMemcpyDeviceToHost));
  for (int r = 0; r < m; ++r)
    for (int col = 0; col < n; col += 97) {
      double s = 0;
      for (int j = 0; j < k; ++j)
        s += double(__bfloat162float(w[size_t(col) * k + j])) *
             double(__bfloat162float(x[size_t(r) * k + j]));
      double got = __bfloat162float(out[size_t(r) * n + col]);
      if (std::abs(got - s) > 0.02 * std::abs(s) + 0.05)
        return false;
    }
  return true;
}

__global__ void fill(__nv_bfloat16 *p, size_t count, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = __float2bfloat16(float(h & 0xffff) / 65536.0f - 0.5f);
  }
}

} // namespace

int main(int argc, char **argv) {
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  int sms = prop.multiProcessorCount;
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::printf("%s, %d SMs, %d launches per graph (distinct weights), median of %d\n",
              prop.name, sms, kLaunches, kRepeats);
  std::vector<Variant> variants;
  for (bool pdl : {false, true}) {
    for (int c : {1, 2, 4})
      for (int g : {1, 2, 4, 8})
        for (int warps : {4, 8})
          if (g <= warps)
            variants.push_back({c, g, warps, 0, pdl});
    for (int c : {1, 2, 4})
      for (int g : {1, 4})
        for (int per : {1, 2, 4})
          variants.push_back({c, g, 8, per, pdl});
  }
  std::vector<int> rows = {1, 8};
  for (int a = 1; a < argc; ++a) {
    int n = 0, k = 0;
    if (std::sscanf(argv[a], "%d,%d", &n, &k) != 2 || n % 4 || k % 64) {
      std::fprintf(stderr, "bad shape %s (N,K; N a multiple of 4, K of 64)\n", argv[a]);
      return 1;
    }
    size_t bytes = size_t(n) * k * 2;
    Buffers b;
    for (int i = 0; i < kLaunches; ++i) {
      __nv_bfloat16 *w, *o;
      CHECK_CUDA(cudaMalloc(&w, bytes));
      CHECK_CUDA(cudaMalloc(&o, size_t(8) * n * 2));
      fill<<<1024, 256, 0, stream>>>(w, size_t(n) * k, 17u + i);
      b.weights.push_back(w);
      b.outs.push_back(o);
    }
    CHECK_CUDA(cudaMalloc(&b.x, size_t(8) * k * 2));
    CHECK_CUDA(cudaMalloc(&b.sink, 4));
    fill<<<64, 256, 0, stream>>>(b.x, size_t(8) * k, 5u);
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::printf("\n== N=%d K=%d: %.1f MB per product\n", n, k, bytes / 1e6);
    // Floors: a copy of the weight, and a read-only kernel.
    {
      cudaGraph_t graph;
      CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
      for (int i = 0; i < kLaunches; ++i)
        CHECK_CUDA(cudaMemcpyAsync(b.weights[(i + 1) % kLaunches], b.weights[i],
                                   bytes / 2, cudaMemcpyDeviceToDevice, stream));
      CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
      float us = timeGraph(graph, stream) / kLaunches;
      std::printf("copy of half the weight: %.2f us, %.0f GB/s (read + written)\n", us,
                  bytes / (us * 1e3));
      cudaGraphDestroy(graph);
      for (int per : {1, 2, 4, 8}) {
        CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        for (int i = 0; i < kLaunches; ++i)
          readOnly<<<per * sms, 256, 0, stream>>>(
              reinterpret_cast<const uint4 *>(b.weights[i]), bytes / 16, b.sink);
        CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
        us = timeGraph(graph, stream) / kLaunches;
        std::printf("read-only kernel, %d blocks/SM: %.2f us, %.0f GB/s\n", per, us,
                    bytes / (us * 1e3));
        cudaGraphDestroy(graph);
      }
    }
    for (int m : rows) {
      std::printf("-- m=%d\n", m);
      std::vector<std::pair<float, std::string>> results;
      for (const Variant &v : variants) {
        if (n % (v.c * (v.warps / v.g)) && !v.blocksPerSm)
          continue;
        std::string name = "C" + std::to_string(v.c) + " G" + std::to_string(v.g) +
                           " W" + std::to_string(v.warps) + " grid=" +
                           (v.blocksPerSm ? std::to_string(v.blocksPerSm) + "/SM" : "groups") +
                           (v.pdl ? " pdl" : "");
        if (!check(v, m, n, k, sms, b, stream)) {
          std::printf("%-32s WRONG\n", name.c_str());
          continue;
        }
        cudaGraph_t graph;
        CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        for (int i = 0; i < kLaunches; ++i)
          launch(v, m, n, k, sms, b, i, stream);
        CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
        float us = timeGraph(graph, stream) / kLaunches;
        cudaGraphDestroy(graph);
        results.push_back({us, name});
        std::printf("%-32s %7.2f us %6.0f GB/s\n", name.c_str(), us, bytes / (us * 1e3));
      }
      std::sort(results.begin(), results.end());
      std::printf("best m=%d: %s %.2f us %.0f GB/s\n", m, results[0].second.c_str(),
                  results[0].first, bytes / (results[0].first * 1e3));
    }
    for (int i = 0; i < kLaunches; ++i) {
      cudaFree(b.weights[i]);
      cudaFree(b.outs[i]);
    }
    cudaFree(b.x);
    cudaFree(b.sink);
  }
  return 0;
}
