// The tensor-core product kernel's body, for f16 and bf16 products of one
// batch, which `cgc --mma-products` asks for (codegen/MmaProductEmitter.cpp
// calls it; target/ProductRule.h says where it can run, and why the cost
// rule gives it no product). out[m, n] = sum_k x[m, k] w(k, n)
// with w stored [n, k] (TRANSB = 1, a linear's weight) or [k, n]
// (TRANSB = 0), then the caller's epilogue, called once per element with
// the f32 sum.
//   A block of 8 warps computes a 64 x BN tile of out: warps i and i + 4
// rows 16 i .. 16 i + 15, all BN columns (BN / 8 mma.sync.m16n8k16 per 16
// of k, f32 accumulators), warp i the first and third 16 of every 64 of
// k, warp i + 4 the second and fourth; at the end warp i + 4 hands its
// sums to warp i through shared memory. (Two warps per scheduler: with
// one, each waited on its own instructions' latency.) Such products are bound by latency, not
// work, so the block requests its whole weight slice (BN x K) at once into
// dynamic shared memory, one trip to memory, while x, which the previous
// kernel has just written to the L2 cache, streams through a ring of
// STAGES buffers of 64 x 64 that cp.async fills STAGES - 1 steps ahead
// (zero-filled past m, n and k: k is a multiple of 8, so each 16-byte
// chunk lies wholly inside or outside). ldmatrix reads the fragments (rows
// padded so that its eight row addresses hit distinct banks), .trans for a
// weight stored [k, n]. EARLY: the weight is constant while the graph
// runs, so it is requested before the kernel waits for its producers
// (programmatic dependent launch) and its latency hides behind the
// previous kernel's end; x is requested after the wait.
//   Fragment layout (PTX ISA, mma.m16n8k16): thread t holds the sums of
// rows t / 4 and t / 4 + 8 of its warp's 16, columns 2 (t % 4) + {0, 1} of
// each 8. Dynamic shared memory: SHARED bytes, what the launch gives
// (target/ProductRule.cpp's mmaProductSharedBytes), which the kernel
// asserts is cgc_mma_product_shared_bytes below, its own layout's.
#define CGC_MMA_PRODUCT_BK 64
#define CGC_MMA_PRODUCT_STAGES 4
// The weight slice in shared memory: k rounded up to 16 (zeros past k, so
// the last 16-wide step reads zeros there, never stale bytes), rows of
// WROW elements: a row stride of 4 (mod 8) words spreads ldmatrix's eight
// rows over all banks.
__host__ __device__ constexpr long long cgc_mma_product_k16(long long k) {
  return (k + 15) / 16 * 16;
}
__host__ __device__ constexpr long long cgc_mma_product_wrow(int transb, int bn, long long k) {
  return transb ? cgc_mma_product_k16(k) + 8 : bn + 8;
}
__host__ __device__ constexpr long long cgc_mma_product_shared_bytes(int transb, int bn,
                                                                     long long k) {
  return 2 * ((transb ? bn : cgc_mma_product_k16(k)) * cgc_mma_product_wrow(transb, bn, k) +
              CGC_MMA_PRODUCT_STAGES * 64 * (CGC_MMA_PRODUCT_BK + 8));
}
template <int BF, int TRANSB, int BN, int EARLY, long long M, long long N, long long K,
          long long SHARED, class Epilogue>
__device__ __forceinline__ void cgc_product_mma(const unsigned short *__restrict__ x,
                                                const unsigned short *__restrict__ w,
                                                Epilogue epilogue) {
  constexpr int BK = CGC_MMA_PRODUCT_BK, STAGES = CGC_MMA_PRODUCT_STAGES, THREADS = 256;
  constexpr int XROW = BK + 8; // x's ring: STAGES x 64 x XROW
  constexpr int K16 = int(cgc_mma_product_k16(K)), WROW = int(cgc_mma_product_wrow(TRANSB, BN, K));
  constexpr int STEPS = int((K + BK - 1) / BK);
  static_assert(BN % 16 == 0, "B fragments come in pairs of 8-column tiles");
  static_assert(SHARED == cgc_mma_product_shared_bytes(TRANSB, BN, K),
                "the launch's shared memory is this layout's");
  static_assert(BN * 256 <= STAGES * 64 * XROW * 2,
                "the second half's sums fit in x's ring");
  extern __shared__ __align__(16) unsigned short cgc_dynamic_shared[];
  // Shared addresses (32-bit) and per-thread offsets, computed once: the
  // loop below only adds constants to them.
  const unsigned ws = (unsigned)__cvta_generic_to_shared(cgc_dynamic_shared);
  const unsigned xs = ws + 2u * (TRANSB ? BN : K16) * WROW;
  const int tid = threadIdx.x, lane = tid & 31, warp = (tid >> 5) & 3, half = tid >> 7;
  const long long row0 = (long long)blockIdx.y * 64, col0 = (long long)blockIdx.x * BN;
  // x: thread t copies chunk t % 8 (8 elements) of rows t / 8 + 32 i.
  const int xr = tid / (BK / 8), xk = (tid % (BK / 8)) * 8;
  const unsigned short *xg[64 / (THREADS / (BK / 8))];
  bool xin[64 / (THREADS / (BK / 8))];
#pragma unroll
  for (int i = 0; i < 64 / (THREADS / (BK / 8)); ++i) {
    const long long m = row0 + xr + (THREADS / (BK / 8)) * i;
    xin[i] = m < M;
    xg[i] = x + (xin[i] ? m * K : 0) + xk;
  }
  auto loadX = [&](int stage, int k0) {
#pragma unroll
    for (int i = 0; i < 64 / (THREADS / (BK / 8)); ++i) {
      const bool in = xin[i] && xk + k0 < K;
      cgc_cp_async16s(xs + 2u * ((stage * 64 + xr + (THREADS / (BK / 8)) * i) * XROW + xk),
                      in ? xg[i] + k0 : x, in);
    }
  };
  auto loadW = [&]() {
    if constexpr (TRANSB) {
      constexpr int PER_ROW = K16 / 8;
#pragma unroll 4
      for (int c = tid; c < BN * PER_ROW; c += THREADS) {
        const int r = c / PER_ROW, kc = (c % PER_ROW) * 8;
        const long long n = col0 + r;
        const bool in = n < N && kc < K;
        cgc_cp_async16s(ws + 2u * (r * WROW + kc), in ? w + n * K + kc : w, in);
      }
    } else {
      constexpr int PER_ROW = BN / 8;
#pragma unroll 4
      for (int c = tid; c < K16 * PER_ROW; c += THREADS) {
        const int k = c / PER_ROW, nc = (c % PER_ROW) * 8;
        const long long n = col0 + nc;
        const bool in = k < K && n < N;
        cgc_cp_async16s(ws + 2u * (k * WROW + nc), in ? w + k * N + n : w, in);
      }
    }
  };
  // The weight joins the first commit group; then one group per x step.
  if constexpr (EARLY) loadW();
  cgc_wait_for_producers();
  if constexpr (!EARLY) loadW();
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < STEPS) loadX(s, s * BK);
    cgc_cp_async_commit();
  }
  float acc[BN / 8][4];
#pragma unroll
  for (int t = 0; t < BN / 8; ++t)
    acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
  // Fragment addresses: x's 16 rows of this warp; the weight's rows (n or
  // k) of the first two 8-column tiles.
  const unsigned aBase = xs + 2u * ((warp * 16 + (lane & 15)) * XROW + (lane >> 4) * 8);
  const unsigned bBase =
      TRANSB ? ws + 2u * (((lane >> 4) * 8 + (lane & 7)) * WROW + ((lane >> 3) & 1) * 8)
             : ws + 2u * ((((lane >> 3) & 1) * 8 + (lane & 7)) * WROW + (lane >> 4) * 8);
  for (int step = 0; step < STEPS; ++step) {
    cgc_cp_async_wait<STAGES - 2>();
    __syncthreads();
    if (step + STAGES - 1 < STEPS) loadX((step + STAGES - 1) % STAGES, (step + STAGES - 1) * BK);
    cgc_cp_async_commit();
    const unsigned a0 = aBase + 2u * (step % STAGES) * 64 * XROW;
    const int k0 = step * BK;
#pragma unroll
    for (int i = 0; i < BK / 32; ++i) {
      const int kk = 32 * i + 16 * half;
      if (K % BK != 0 && k0 + kk >= K) break; // past k: nothing was loaded there
      unsigned a[4];
      cgc_ldmatrix4s<0>(a, a0 + 2u * kk);
#pragma unroll
      for (int j = 0; j < BN / 16; ++j) {
        unsigned b[4];
        if constexpr (TRANSB)
          cgc_ldmatrix4s<0>(b, bBase + 2u * (16 * j * WROW + k0 + kk));
        else
          cgc_ldmatrix4s<1>(b, bBase + 2u * ((k0 + kk) * WROW + 16 * j));
        cgc_mma16816<BF>(acc[2 * j], a, b[0], b[1]);
        cgc_mma16816<BF>(acc[2 * j + 1], a, b[2], b[3]);
      }
    }
  }
  cgc_cp_async_wait<0>();
  // The second half's sums to the first, through x's ring (free now).
  float *parts = reinterpret_cast<float *>(cgc_dynamic_shared + (TRANSB ? BN : K16) * WROW);
  __syncthreads();
  if (half) {
#pragma unroll
    for (int t = 0; t < BN / 8; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) parts[((t * 4 + e) * 128) + (tid & 127)] = acc[t][e];
  }
  __syncthreads();
  if (half) return;
#pragma unroll
  for (int t = 0; t < BN / 8; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[t][e] += parts[((t * 4 + e) * 128) + tid];
  const long long r = row0 + warp * 16 + (lane >> 2);
#pragma unroll
  for (int t = 0; t < BN / 8; ++t) {
    const long long c = col0 + 8 * t + 2 * (lane & 3);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const long long m = r + (e >> 1) * 8, n = c + (e & 1);
      if (m < M && n < N) epilogue(m, n, acc[t][e]);
    }
  }
}
