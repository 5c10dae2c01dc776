// bf16 (__nv_bfloat16), in programs with bf16 tensors: its header and the
// bf16 overloads of cgc_ld, cgc_st and cgc_dot16 (after prelude.cuh).
#include <cuda_bf16.h>
__device__ __forceinline__ float cgc_ld(const __nv_bfloat16 *p, long long i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void cgc_st(__nv_bfloat16 *p, long long i, float v) { p[i] = __float2bfloat16(v); }
__device__ __forceinline__ float cgc_dot16(uint4 a, uint4 b, const __nv_bfloat16 *) {
  const __nv_bfloat162 *x = reinterpret_cast<const __nv_bfloat162 *>(&a), *y = reinterpret_cast<const __nv_bfloat162 *>(&b);
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) { float2 u = __bfloat1622float2(x[i]), v = __bfloat1622float2(y[i]); s += u.x * v.x + u.y * v.y; }
  return s;
}
