// The helpers of the 16-bit floats, f16 and bf16, as one set of templates
// over the storage type H, in programs with either. They follow prelude.cuh
// and f16.cuh or bf16.cuh: the types whose cgc_elem<H> has a pair type take
// part. Loads need nothing here: prelude.cuh's cgc_ld converts through
// cgc_elem<H>::load, to float.
//
// Stores a float, rounded to nearest even. More specialized than
// prelude.cuh's cgc_st, this overload takes the float values; a value of
// another type matches that one exactly and is cast, (H)v.
template <class H, class = typename cgc_elem<H>::pair>
__device__ __forceinline__ void cgc_st(H *p, long long i, float v) { p[i] = cgc_elem<H>::store(v); }
// The dot product of two 16-byte vectors of eight H, in float.
template <class H, class P = typename cgc_elem<H>::pair>
__device__ __forceinline__ float cgc_dot16(uint4 a, uint4 b, const H *) {
  const P *x = reinterpret_cast<const P *>(&a), *y = reinterpret_cast<const P *>(&b);
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) { float2 u = cgc_elem<H>::load2(x[i]), v = cgc_elem<H>::load2(y[i]); s += u.x * v.x + u.y * v.y; }
  return s;
}
