// The fused attention kernel's body (codegen/AttentionEmitter.cpp calls it
// with the node's constants; target/AttentionRule.h gives the rule). A
// block of 128 threads takes 4 * R query rows of one head (blockIdx.x is
// tile + tiles * head, head = outer index * hq + query head); warp w owns
// rows w * R .. w * R + R - 1. Keys come in tiles of 32 through shared
// memory, as float: lane j scores key j of the tile against the warp's R
// rows, the warp takes the tile's max and updates each row's running max
// m, sum l and output acc (online softmax: acc and l are rescaled by
// exp(m_old - m_new)), then adds p_j * v_j for the tile's keys, lane c
// owning output columns c, c + 32, ... . Dropped scores (mask, causal,
// window, keys past sk) are -inf; a row whose every key is dropped gives
// 0 and one whose scores hold a NaN gives NaN (the interpreter's rule). Causal
// and window limits also skip the key tiles no row of the block keeps.
// The next tile's loads are issued before the current tile is scored.
// MASK: 0 none, 1 bool (true: kept), 2 additive; the mask is read at
// o * mo + h * mh + i * mr + j * mc (0 where it broadcasts).
// Where q, k, v and the result live (both kernels): element strides over
// (outer index, head, row) of each, every row contiguous; the attention
// emitter gives them (target/AttentionLayout.h: [.., heads, rows, width]
// tensors, or the projections a head split views in place).
struct CgcAttentionLayout {
  long long qo, qh, qr, ko, kh, kr, vo, vh, vr, oo, oh, orow;
};
#define CGC_ATTENTION_KEYS 32
template <class T, class M, int MASK, int E, int EV, int R>
__device__ __forceinline__ void cgc_attention(
    const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
    const M *__restrict__ mask, T *__restrict__ out, int hq, int group, int sq, int sk,
    int tiles, float scale, float softcap, bool causal, int window, long long mo,
    long long mh, long long mr, long long mc, CgcAttentionLayout L) {
  constexpr int ROWS = 4 * R, C = (EV + 31) / 32, KT = CGC_ATTENTION_KEYS;
  __shared__ float qs[ROWS][E];
  __shared__ float ks[KT][E + 1];
  __shared__ float vs[KT][EV];
  const int tile = int(blockIdx.x % unsigned(tiles));
  const long long head = blockIdx.x / unsigned(tiles);
  const long long o = head / hq;
  const int h = int(head % hq);
  const T *kh = k + o * L.ko + (h / group) * L.kh, *vh = v + o * L.vo + (h / group) * L.vh;
  const int first = tile * ROWS, warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  for (int x = threadIdx.x; x < ROWS * E; x += 128) {
    const int r = x / E, t = x % E;
    qs[r][t] = first + r < sq
                   ? float(cgc_ld(q, o * L.qo + h * L.qh + (first + r) * L.qr + t))
                   : 0.0f;
  }
  float m[R], l[R], acc[R][C];
  bool nan[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    m[r] = -CGC_INF;
    l[r] = 0.0f;
    nan[r] = false;
#pragma unroll
    for (int c = 0; c < C; ++c) acc[r][c] = 0.0f;
  }
  const int last = (first + ROWS < sq ? first + ROWS : sq) - 1;
  const int end = causal && last + 1 < sk ? last + 1 : sk;
  const int begin = window > 0 && first - window + 1 > 0 ? (first - window + 1) / KT * KT : 0;
  // Software pipelining: the next tile's keys and values are loaded into
  // registers while the warps score the current one from shared memory.
  constexpr int KL = (KT * E + 127) / 128, VL = (KT * EV + 127) / 128;
  float kr[KL], vr[VL];
  auto fetch = [&](int kt) {
#pragma unroll
    for (int u = 0; u < KL; ++u) {
      const int x = threadIdx.x + u * 128, j = x / E, t = x % E;
      kr[u] = x < KT * E && kt + j < sk ? float(cgc_ld(kh, (kt + j) * L.kr + t)) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < VL; ++u) {
      const int x = threadIdx.x + u * 128, j = x / EV, t = x % EV;
      vr[u] = x < KT * EV && kt + j < sk ? float(cgc_ld(vh, (kt + j) * L.vr + t)) : 0.0f;
    }
  };
  if (begin < end) fetch(begin);
  for (int kt = begin; kt < end; kt += KT) {
    __syncthreads();
#pragma unroll
    for (int u = 0; u < KL; ++u) {
      const int x = threadIdx.x + u * 128;
      if (x < KT * E) ks[x / E][x % E] = kr[u];
    }
#pragma unroll
    for (int u = 0; u < VL; ++u) {
      const int x = threadIdx.x + u * 128;
      if (x < KT * EV) vs[x / EV][x % EV] = vr[u];
    }
    __syncthreads();
    if (kt + KT < end) fetch(kt + KT);
    const int j = kt + lane;
    // P independent partial sums per row (at least 4 chains in all).
    constexpr int P = R >= 4 ? 1 : 4 / R;
    float part[R][P];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int u = 0; u < P; ++u) part[r][u] = 0.0f;
#pragma unroll 4
    for (int t = 0; t < E; t += P) {
#pragma unroll
      for (int u = 0; u < P; ++u) {
        if (t + u >= E) break;
        const float key = ks[lane][t + u];
#pragma unroll
        for (int r = 0; r < R; ++r) part[r][u] += qs[warp * R + r][t + u] * key;
      }
    }
    float s[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      s[r] = part[r][0];
#pragma unroll
      for (int u = 1; u < P; ++u) s[r] += part[r][u];
    }
    float p[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int i = first + warp * R + r;
      float x = s[r] * scale;
      if (softcap > 0.0f) x = softcap * tanhf(x / softcap);
      bool dropped = j >= sk || (causal && j > i) || (window > 0 && j <= i - window);
      if constexpr (MASK != 0) {
        if (!dropped && i < sq) {
          const long long at = o * mo + h * mh + (long long)i * mr + (long long)j * mc;
          if constexpr (MASK == 1) dropped = !cgc_ld(mask, at);
          else x += float(cgc_ld(mask, at));
        }
      }
      x = dropped ? -CGC_INF : x;
      nan[r] |= __any_sync(0xffffffffu, x != x) != 0;
      float top = x != x ? -CGC_INF : x;
#pragma unroll
      for (int d = 16; d > 0; d >>= 1) top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, d));
      const float next = fmaxf(m[r], top);
      p[r] = 0.0f;
      if (next == -CGC_INF) continue;  // Every key so far dropped (the whole warp).
      const float rescale = expf(m[r] - next);
      p[r] = expf(x - next);
      float sum = p[r];
#pragma unroll
      for (int d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, d);
      l[r] = l[r] * rescale + sum;
      m[r] = next;
#pragma unroll
      for (int c = 0; c < C; ++c) acc[r][c] *= rescale;
    }
#pragma unroll 4
    for (int jj = 0; jj < KT; ++jj) {
      float value[C];
#pragma unroll
      for (int c = 0; c < C; ++c) value[c] = c * 32 + lane < EV ? vs[jj][c * 32 + lane] : 0.0f;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float pj = __shfl_sync(0xffffffffu, p[r], jj);
#pragma unroll
        for (int c = 0; c < C; ++c) acc[r][c] += pj * value[c];
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int i = first + warp * R + r;
    if (i >= sq) continue;
    const bool none = l[r] == 0.0f; // Every key dropped.
#pragma unroll
    for (int c = 0; c < C; ++c)
      if (c * 32 + lane < EV)
        cgc_st(out, o * L.oo + h * L.oh + i * L.orow + c * 32 + lane,
               nan[r] ? __int_as_float(0x7fffffff) : none ? 0.0f : acc[r][c] / l[r]);
  }
}
