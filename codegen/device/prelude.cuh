// The device helpers every program cgc generates starts with: typed loads
// and stores, NaN-propagating min/max, wrapping integer arithmetic,
// activations, Philox, block and group reductions, 16-byte vector accesses.
// cgc embeds the text of this file at build time (embed.cmake) and puts it
// after the banner of every program (cudaPrelude, codegen/CudaText.cpp).
#define CGC_INF __int_as_float(0x7f800000)
// cgc_elem<T>: an element stored as T is computed as T itself; the 16-bit
// floats specialize it (f16.cuh, bf16.cuh) to be computed in float.
template <class T> struct cgc_elem {
  typedef T compute;
  static __device__ __forceinline__ T load(T v) { return v; }
};
template <class T> __device__ __forceinline__ typename cgc_elem<T>::compute cgc_ld(const T *p, long long i) {
  return cgc_elem<T>::load(p[i]);
}
template <class T, class V> __device__ __forceinline__ void cgc_st(T *p, long long i, V v) { p[i] = (T)v; }
__device__ __forceinline__ float cgc_max(float a, float b) { return (a != a || a > b) ? a : b; }
__device__ __forceinline__ float cgc_min(float a, float b) { return (a != a || a < b) ? a : b; }
template <class T> __device__ __forceinline__ T cgc_max(T a, T b) { return a > b ? a : b; }
template <class T> __device__ __forceinline__ T cgc_min(T a, T b) { return a < b ? a : b; }
// Integer add, sub, mul, neg and div wrap in two's complement (signed
// overflow would be undefined, and NVVM optimizes on that); div by 0 gives 0.
template <class T> struct cgc_unsigned;
template <> struct cgc_unsigned<int> { typedef unsigned type; };
template <> struct cgc_unsigned<long long> { typedef unsigned long long type; };
#define CGC_WRAP(T, a) ((typename cgc_unsigned<T>::type)(a))
template <class T> __device__ __forceinline__ T cgc_iadd(T a, T b) { return (T)(CGC_WRAP(T, a) + CGC_WRAP(T, b)); }
template <class T> __device__ __forceinline__ T cgc_isub(T a, T b) { return (T)(CGC_WRAP(T, a) - CGC_WRAP(T, b)); }
template <class T> __device__ __forceinline__ T cgc_imul(T a, T b) { return (T)(CGC_WRAP(T, a) * CGC_WRAP(T, b)); }
template <class T> __device__ __forceinline__ T cgc_ineg(T a) { return (T)(0 - CGC_WRAP(T, a)); }
template <class T> __device__ __forceinline__ T cgc_iabs(T a) { return a < 0 ? cgc_ineg(a) : a; }
template <class T> __device__ __forceinline__ T cgc_idiv(T a, T b) { return b == 0 ? (T)0 : b == -1 ? cgc_ineg(a) : (T)(a / b); }
#undef CGC_WRAP
// __frcp_rn(y) is 1.0f / y correctly rounded, the same bits as the
// division, without the general division's instructions.
// sigmoid takes expf of a non-positive argument only, so a large negative
// x gives e^x (down to the subnormals) instead of 1/inf = 0.
__device__ __forceinline__ float cgc_sigmoid(float x) {
  if (x >= 0.0f) return __frcp_rn(1.0f + expf(-x));
  float e = expf(x);
  return e / (1.0f + e);
}
// gelu as x/2 * erfc(-x/sqrt 2): 1 + erf(x/sqrt 2) cancels to 0 below about
// x = -6, erfc keeps the tiny result.
__device__ __forceinline__ float cgc_gelu(float x) { return 0.5f * x * erfcf(x * -0.70710678118654752f); }
// sinf and cosf inline a large slow path (Payne-Hanek reduction) at every
// use; out of line it is compiled once per program (a chain of 100 sines
// took 1.2 s in NVRTC inlined, 0.3 s out of line).
__device__ __noinline__ float cgc_sin(float x) { return sinf(x); }
__device__ __noinline__ float cgc_cos(float x) { return cosf(x); }
__device__ __forceinline__ float cgc_gelu_tanh(float x) {
  return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
}
// Philox4x32-10, bit-identical to ir/Philox.h: element i of the stream
// (seed, offset) is word i%4 of philox(counter={i/4, offset}, key=seed).
__device__ __forceinline__ uint4 cgc_philox_block(unsigned long long seed, unsigned long long offset,
                                                  unsigned long long block) {
  unsigned c0 = (unsigned)block, c1 = (unsigned)(block >> 32);
  unsigned c2 = (unsigned)offset, c3 = (unsigned)(offset >> 32);
  unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
    unsigned n0 = (unsigned)(p1 >> 32) ^ c1 ^ k0, n2 = (unsigned)(p0 >> 32) ^ c3 ^ k1;
    c0 = n0; c1 = (unsigned)p1; c2 = n2; c3 = (unsigned)p0;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
  return make_uint4(c0, c1, c2, c3);
}
__device__ __forceinline__ unsigned cgc_philox(unsigned long long seed, unsigned long long offset,
                                               unsigned long long index) {
  const uint4 b = cgc_philox_block(seed, offset, index >> 2);
  unsigned w = (unsigned)(index & 3);
  return w == 0 ? b.x : w == 1 ? b.y : w == 2 ? b.z : b.w;
}
// Words index .. index + N - 1 of the stream, for index and N multiples of
// 4: one block per four words.
template <int N> __device__ __forceinline__ void cgc_philox_words(unsigned long long seed,
                                                                  unsigned long long offset,
                                                                  unsigned long long index,
                                                                  unsigned *words) {
#pragma unroll
  for (int b = 0; b < N / 4; ++b) {
    const uint4 r = cgc_philox_block(seed, offset, (index >> 2) + b);
    words[4 * b] = r.x; words[4 * b + 1] = r.y; words[4 * b + 2] = r.z; words[4 * b + 3] = r.w;
  }
}
// Programmatic dependent launch: a kernel may start while the kernels it
// depends on finish; it waits here until their writes are visible, then
// lets its own dependents start launching. Without programmatic edges
// (eager launches, older GPUs) both are no-ops.
__device__ __forceinline__ void cgc_wait_for_producers() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}
// Dot products of 16-byte vectors (generated products); the last argument
// picks the element type.
__device__ __forceinline__ float cgc_dot16(uint4 a, uint4 b, const float *) {
  return __uint_as_float(a.x) * __uint_as_float(b.x) + __uint_as_float(a.y) * __uint_as_float(b.y) +
         __uint_as_float(a.z) * __uint_as_float(b.z) + __uint_as_float(a.w) * __uint_as_float(b.w);
}
// Reduces over the block; every thread gets the result.
template <class T, class F> __device__ __forceinline__ T cgc_block_reduce(T v, F f) {
  __shared__ T partial[32];
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
  __syncthreads();
  T r = partial[0];
  for (unsigned w = 1; w < (blockDim.x + 31) / 32; ++w) r = f(r, partial[w]);
  return r;
}
// The exclusive prefix sum of v over the block (every thread takes part,
// blockDim.x a multiple of 32); total gets the block's sum.
template <class T> __device__ __forceinline__ T cgc_block_scan(T v, T &total) {
  __shared__ T warps[32];
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  T x = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    T y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= unsigned(o)) x += y;
  }
  __syncthreads(); // warps[] of the previous call has been read
  if (lane == 31) warps[warp] = x;
  __syncthreads();
  T before = 0;
  total = 0;
  for (unsigned w = 0; w < blockDim.x / 32; ++w) {
    before += w < warp ? warps[w] : T(0);
    total += warps[w];
  }
  return before + x - v;
}
__device__ __forceinline__ float cgc_block_sum(float v) {
  return cgc_block_reduce(v, [](float a, float b) { return a + b; });
}
__device__ __forceinline__ float cgc_block_max(float v) {
  return cgc_block_reduce(v, [](float a, float b) { return cgc_max(a, b); });
}
// Reduces over groups of LANES adjacent threads (a power of two up to 32:
// every thread of the warp takes part) or, above 32, over the block.
template <int LANES, class T, class F> __device__ __forceinline__ T cgc_group_reduce(T v, F f) {
  if constexpr (LANES <= 32) {
#pragma unroll
    for (int o = LANES / 2; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
  } else {
    return cgc_block_reduce(v, f);
  }
}
// Merges running (max, sum of exp(x - max)) pairs over groups of LANES
// threads as cgc_group_reduce does; every thread gets the merged pair.
__device__ __forceinline__ void cgc_lse_merge(float &m, float &s, float om, float os) {
  const float nm = cgc_max(m, om);
  s = (m == -CGC_INF ? 0.0f : s * expf(m - nm)) + (om == -CGC_INF ? 0.0f : os * expf(om - nm));
  m = nm;
}
template <int LANES> __device__ __forceinline__ void cgc_group_lse(float &m, float &s) {
#pragma unroll
  for (int o = (LANES < 32 ? LANES : 32) / 2; o > 0; o >>= 1)
    cgc_lse_merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  if constexpr (LANES > 32) {
    __shared__ float pm[32], ps[32];
    __syncthreads();
    if ((threadIdx.x & 31) == 0) { pm[threadIdx.x >> 5] = m; ps[threadIdx.x >> 5] = s; }
    __syncthreads();
    m = pm[0]; s = ps[0];
    for (unsigned w = 1; w < LANES / 32; ++w) cgc_lse_merge(m, s, pm[w], ps[w]);
  }
}
// V elements from index i (a multiple of V) in one access of V * sizeof(T)
// bytes, converted to C; and the store the other way.
template <int B> struct cgc_word;
template <> struct cgc_word<2> { typedef unsigned short type; };
template <> struct cgc_word<4> { typedef unsigned type; };
template <> struct cgc_word<8> { typedef uint2 type; };
template <> struct cgc_word<16> { typedef uint4 type; };
template <int V, class C, class T> __device__ __forceinline__ void cgc_ldv(const T *p, long long i, C *out) {
  if constexpr (V == 1) {
    out[0] = (C)cgc_ld(p, i);
  } else {
    typedef typename cgc_word<sizeof(T) * V>::type W;
    const W w = *reinterpret_cast<const W *>(p + i);
    const T *e = reinterpret_cast<const T *>(&w);
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = (C)cgc_ld(e, k);
  }
}
template <int V, class T, class C> __device__ __forceinline__ void cgc_stv(T *p, long long i, const C *in) {
  if constexpr (V == 1) {
    cgc_st(p, i, in[0]);
  } else {
    typedef typename cgc_word<sizeof(T) * V>::type W;
    W w;
    T *e = reinterpret_cast<T *>(&w);
#pragma unroll
    for (int k = 0; k < V; ++k) cgc_st(e, k, in[k]);
    *reinterpret_cast<W *>(p + i) = w;
  }
}
// Arg-max over the block: the largest value, the first index among ties; a
// NaN beats every number (the first NaN wins, as in the interpreter). V is
// double for floating inputs and long long for integers (exact past 2^53).
template <typename V>
__device__ __forceinline__ bool cgc_argmax_better(V ov, long long oi, V v, long long i) {
  bool onan = ov != ov, nan = v != v;
  if (onan || nan) return onan && (!nan || oi < i);
  return ov > v || (ov == v && oi < i);
}
template <typename V>
__device__ __forceinline__ long long cgc_block_argmax(V v, long long i) {
  __shared__ V pv[32];
  __shared__ long long pi[32];
  for (int o = 16; o > 0; o >>= 1) {
    V ov = __shfl_xor_sync(0xffffffffu, v, o);
    long long oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (cgc_argmax_better(ov, oi, v, i)) { v = ov; i = oi; }
  }
  __syncthreads();
  if ((threadIdx.x & 31) == 0) { pv[threadIdx.x >> 5] = v; pi[threadIdx.x >> 5] = i; }
  __syncthreads();
  v = pv[0]; i = pi[0];
  for (unsigned w = 1; w < (blockDim.x + 31) / 32; ++w)
    if (cgc_argmax_better(pv[w], pi[w], v, i)) { v = pv[w]; i = pi[w]; }
  return i;
}
