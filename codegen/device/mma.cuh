// Tensor-core primitives of the generated kernels that use mma.sync (the
// attention kernel of attention_mma.cuh, the product kernel of
// product_mma.cuh): the m16n8k16 multiply-add with f32 accumulators,
// 16-bit packing, ldmatrix and cp.async (sm_80 and newer).
template <int BF>
__device__ __forceinline__ void cgc_mma16816(float (&d)[4], const unsigned (&a)[4],
                                             unsigned b0, unsigned b1) {
  if constexpr (BF)
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Two floats as one 32-bit pair of the 16-bit type, lo in the low half
// (rounded to nearest even).
template <int BF> __device__ __forceinline__ unsigned cgc_pack2(float lo, float hi) {
  unsigned r;
  if constexpr (BF) asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  else asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
// 16 bytes from global memory to shared address \p s (zeros when not
// \p inside).
__device__ __forceinline__ void cgc_cp_async16s(unsigned s, const void *global, bool inside) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(global),
               "r"(inside ? 16 : 0));
}
__device__ __forceinline__ void cgc_cp_async_commit() {
  asm volatile("cp.async.commit_group;");
}
template <int N> __device__ __forceinline__ void cgc_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}
// Four 8 x 8 matrices of 16-bit elements from shared address \p s.
template <int TRANS>
__device__ __forceinline__ void cgc_ldmatrix4s(unsigned (&r)[4], unsigned s) {
  if constexpr (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}
