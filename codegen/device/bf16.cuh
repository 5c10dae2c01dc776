// bf16 (__nv_bfloat16), in programs with bf16 tensors: its header and
// cgc_elem<__nv_bfloat16> (after prelude.cuh), the intrinsics through which
// cgc_ld and half.cuh's 16-bit helpers convert it. f16.cuh is the same table
// for f16.
#include <cuda_bf16.h>
template <> struct cgc_elem<__nv_bfloat16> {
  typedef float compute;
  typedef __nv_bfloat162 pair; // two elements in 4 bytes
  static __device__ __forceinline__ float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 store(float v) { return __float2bfloat16(v); }
  static __device__ __forceinline__ float2 load2(__nv_bfloat162 v) { return __bfloat1622float2(v); }
};
