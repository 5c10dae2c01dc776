// f16 (__half), in programs with f16 tensors: its header and the f16
// overloads of cgc_ld, cgc_st and cgc_dot16 (after prelude.cuh).
#include <cuda_fp16.h>
__device__ __forceinline__ float cgc_ld(const __half *p, long long i) { return __half2float(p[i]); }
__device__ __forceinline__ void cgc_st(__half *p, long long i, float v) { p[i] = __float2half(v); }
__device__ __forceinline__ float cgc_dot16(uint4 a, uint4 b, const __half *) {
  const __half2 *x = reinterpret_cast<const __half2 *>(&a), *y = reinterpret_cast<const __half2 *>(&b);
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) { float2 u = __half22float2(x[i]), v = __half22float2(y[i]); s += u.x * v.x + u.y * v.y; }
  return s;
}
