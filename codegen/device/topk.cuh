// argtopk (codegen/MovementEmitter.cpp gives the call): the indices of the
// k largest (or smallest) elements of each row, in rank order: a larger
// element first, of equal ones the lower index, a NaN the largest (-0 and
// +0 equal), as the interpreter ranks them.
//
// Each element becomes an unsigned key that orders as the element does
// (BITS of them; KeyOf(row, i) gives element i's, already inverted for the
// smallest). One block a row, in three steps:
// 1. the k-th largest key T by a radix select: a pass a byte from the top,
//    each counting in a 256-bin histogram the keys that share the digits
//    found so far, then finding the byte where the count from the top
//    reaches the ranks still to find;
// 2. the chosen, into shared memory: every key above T (k - left of them,
//    in any order), then the first `left` keys equal to T in index order
//    (their ranks from the block's prefix sum, cgc_block_scan, chunk by
//    chunk);
// 3. a bitonic sort of the KP2 (a power of two >= k) slots by rank, and
//    the first k indices written.
// It reads the row BITS / 8 + 1 times (the L2 holds it between passes).

/// An unsigned key ordered as the float \p v: a NaN the largest, -0 as +0.
__device__ __forceinline__ unsigned long long cgc_topk_float_key(float v) {
  if (v != v)
    return 0xFFFFFFFFull;
  if (v == 0.0f)
    v = 0.0f;
  unsigned u = __float_as_uint(v);
  return (u & 0x80000000u) ? (unsigned long long)(~u) : (unsigned long long)(u | 0x80000000u);
}

template <int BITS, int KP2, class KeyOf>
__device__ __forceinline__ void cgc_argtopk(long long rows, long long n, int k, KeyOf keyOf,
                                            long long *out) {
  __shared__ unsigned cgc_hist[256];
  __shared__ unsigned long long cgc_key[KP2];
  __shared__ long long cgc_idx[KP2];
  __shared__ unsigned long long cgc_found;
  __shared__ long long cgc_left;
  __shared__ int cgc_above;
  const int t = threadIdx.x, nt = blockDim.x;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    // 1. T, the k-th largest key, and `left`: how many keys equal to T
    //    are among the k.
    unsigned long long prefix = 0, mask = 0;
    long long left = k;
    for (int shift = BITS - 8; shift >= 0; shift -= 8) {
      for (int d = t; d < 256; d += nt)
        cgc_hist[d] = 0;
      __syncthreads();
      for (long long i = t; i < n; i += nt) {
        unsigned long long key = keyOf(row, i);
        if ((key & mask) == prefix)
          atomicAdd(&cgc_hist[(key >> shift) & 255u], 1u);
      }
      __syncthreads();
      if (t == 0) {
        long long above = 0;
        int d = 255;
        for (; d > 0; --d) {
          if (above + cgc_hist[d] >= left)
            break;
          above += cgc_hist[d];
        }
        cgc_found = prefix | ((unsigned long long)d << shift);
        cgc_left = left - above;
      }
      __syncthreads();
      prefix = cgc_found;
      left = cgc_left;
      mask |= 255ull << shift;
    }
    // 2. The k chosen: the keys above T, then the first `left` ties.
    const long long kAbove = k - left;
    if (t == 0)
      cgc_above = 0;
    __syncthreads();
    long long ties = 0; // equal to T, in the chunks before
    for (long long base = 0; base < n; base += nt) {
      long long i = base + t;
      unsigned long long key = i < n ? keyOf(row, i) : 0ull;
      bool above = i < n && key > prefix, tie = i < n && key == prefix;
      if (above) {
        int at = atomicAdd(&cgc_above, 1);
        cgc_key[at] = key;
        cgc_idx[at] = i;
      }
      int total;
      const long long rank = ties + cgc_block_scan((int)tie, total);
      if (tie && rank < left) {
        cgc_key[kAbove + rank] = key;
        cgc_idx[kAbove + rank] = i;
      }
      ties += total;
    }
    __syncthreads();
    // 3. By rank: a larger key first, then a lower index; the slots past
    //    k (key 0, the largest index) after every chosen one.
    for (int s = k + t; s < KP2; s += nt) {
      cgc_key[s] = 0ull;
      cgc_idx[s] = 0x7FFFFFFFFFFFFFFFll;
    }
    __syncthreads();
    for (int size = 2; size <= KP2; size <<= 1)
      for (int stride = size >> 1; stride > 0; stride >>= 1) {
        for (int a = t; a < KP2; a += nt) {
          int b = a ^ stride;
          if (b <= a)
            continue;
          unsigned long long ka = cgc_key[a], kb = cgc_key[b];
          long long ia = cgc_idx[a], ib = cgc_idx[b];
          bool bFirst = kb > ka || (kb == ka && ib < ia);
          if (bFirst == ((a & size) == 0)) {
            cgc_key[a] = kb;
            cgc_key[b] = ka;
            cgc_idx[a] = ib;
            cgc_idx[b] = ia;
          }
        }
        __syncthreads();
      }
    for (int r = t; r < k; r += nt)
      out[row * k + r] = cgc_idx[r];
    __syncthreads();
  }
}
