// f16 (__half), in programs with f16 tensors: its header and cgc_elem<__half>
// (after prelude.cuh), the intrinsics through which cgc_ld and half.cuh's
// 16-bit helpers convert it. bf16.cuh is the same table for bf16.
#include <cuda_fp16.h>
template <> struct cgc_elem<__half> {
  typedef float compute;
  typedef __half2 pair; // two elements in 4 bytes
  static __device__ __forceinline__ float load(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half store(float v) { return __float2half(v); }
  static __device__ __forceinline__ float2 load2(__half2 v) { return __half22float2(v); }
};
