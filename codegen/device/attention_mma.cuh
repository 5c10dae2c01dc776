// The tensor-core attention kernel's body, for f16 and bf16
// (codegen/AttentionEmitter.cpp calls it with the node's constants;
// target/AttentionRule.h gives the rule). FlashAttention-2's scheme on
// mma.sync.m16n8k16 (f32 accumulators): each warp owns 16 query rows of
// one head and, unsplit (SPLIT = 1, below), needs no other warp (no shared
// memory, no barrier); a block holds W row warps over 16 * W consecutive
// rows (blockIdx.x is tile + tiles * head, head = outer index * hq + query
// head).
//   The warp keeps its rows of q as A fragments in registers, then walks
// the keys in tiles of 32, each tile's loads issued together first (k's
// and v's B fragments and the mask's values: one trip to memory per
// tile): S = q k^T from B fragments read straight from k (row-major k is
// the column-major B the instruction wants: two adjacent elements of a
// key per 32-bit load), then scale, soft-cap, mask, causal
// and window limits on S's accumulators (each thread holds rows g and g +
// 8 of the tile, g = lane / 4, at keys 2 * (lane % 4) + {0, 1} of each 8),
// then the online softmax (running max m and partial sum l per row; the
// row max over the quad of four lanes that share a row), then O += P v
// with P rounded to the input type and reused from S's accumulators as A
// fragments (their layouts coincide) and v's B fragments read as 16-bit
// pairs. At the end the quad sums l, and each row is O / l, 0 where every
// key was dropped, NaN where a score was NaN (the interpreter's rule, as
// the SIMT kernel in attention.cuh).
//   SPLIT > 1 splits the keys (FlashDecoding's split-K, within a block):
// the block holds W * SPLIT warps, SPLIT of them on each 16 rows, warp s
// of a row group taking key tiles s, s + SPLIT, ... (interleaved, so
// causal limits cut every warp alike). Each warp but the first of its
// group writes its running max, partial sums, NaN flags and O to shared
// memory; after one barrier the first rescales each part to the largest
// max and adds them (parts that kept no key weigh 0). Few query rows (a
// small batch, a short sequence) then still put several warps on every
// multiprocessor, and the critical path walks 1 / SPLIT of the keys.
//   BF: 1 bf16, 0 f16 (the tensors are read as raw 16-bit words).
// MASK: 0 none, 1 bool (true: kept), 2 additive, read at o * mo + h * mh +
// i * mr + j * mc. E: q and k width, a multiple of 16; EV: v width, a
// multiple of 8.
#define CGC_MMA_KEYS 32
// The key split's combine (SPLIT > 1, above): every warp of a row group
// but the first stores its part (this lane's m, l, NaN flags and O, each
// value a row of 32 lanes, so no bank conflict), one barrier, and the
// first adds the parts into its own, each weighed by exp(its max - the
// largest). True in the first warp of each group, which then finishes
// the rows as without a split.
template <int NV, int W, int SPLIT>
__device__ __forceinline__ bool cgc_attention_combine(float (&acc)[NV][4], float (&m)[2],
                                                      float (&l)[2], bool (&nan)[2],
                                                      int warp, int slice, int lane) {
  constexpr int VALUES = NV * 4 + 6;
  __shared__ float part[W * (SPLIT - 1)][VALUES][32];
  if (slice > 0) {
    float(*mine)[32] = part[warp / SPLIT * (SPLIT - 1) + slice - 1];
#pragma unroll
    for (int n = 0; n < NV; ++n)
#pragma unroll
      for (int x = 0; x < 4; ++x) mine[n * 4 + x][lane] = acc[n][x];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mine[NV * 4 + r][lane] = m[r];
      mine[NV * 4 + 2 + r][lane] = l[r];
      mine[NV * 4 + 4 + r][lane] = nan[r] ? 1.0f : 0.0f;
    }
  }
  __syncthreads();
  if (slice > 0) return false;
#pragma unroll
  for (int p = 0; p < SPLIT - 1; ++p) {
    float(*other)[32] = part[warp / SPLIT * (SPLIT - 1) + p];
    float own[2], its[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float theirs = other[NV * 4 + r][lane], top = fmaxf(m[r], theirs);
      own[r] = m[r] == -CGC_INF ? 0.0f : expf(m[r] - top);
      its[r] = theirs == -CGC_INF ? 0.0f : expf(theirs - top);
      m[r] = top;
      l[r] = l[r] * own[r] + other[NV * 4 + 2 + r][lane] * its[r];
      nan[r] |= other[NV * 4 + 4 + r][lane] != 0.0f;
    }
#pragma unroll
    for (int n = 0; n < NV; ++n)
#pragma unroll
      for (int x = 0; x < 4; ++x)
        acc[n][x] = acc[n][x] * own[x >> 1] + other[n * 4 + x][lane] * its[x >> 1];
  }
  return true;
}
template <int BF, class M, int MASK, int E, int EV, int W, int SPLIT>
__device__ __forceinline__ void cgc_attention_mma(
    const unsigned short *__restrict__ q, const unsigned short *__restrict__ k,
    const unsigned short *__restrict__ v, const M *__restrict__ mask,
    unsigned short *__restrict__ out, int hq, int group, int sq, int sk, int tiles,
    float scale, float softcap, bool causal, int window, long long mo, long long mh,
    long long mr, long long mc, CgcAttentionLayout L) {
  constexpr int KS = E / 16, NV = EV / 8, KT = CGC_MMA_KEYS, NT = KT / 8;
  const int tile = int(blockIdx.x % unsigned(tiles));
  const long long head = blockIdx.x / unsigned(tiles);
  const long long o = head / hq;
  const int h = int(head % hq);
  const int lane = int(threadIdx.x & 31), g = lane >> 2, t = lane & 3;
  const int warp = int(threadIdx.x >> 5), slice = warp % SPLIT;
  const int first = (tile * W + warp / SPLIT) * 16;
  if (SPLIT == 1 && first >= sq) return;  // with SPLIT > 1, every warp meets the barrier
  const int rows[2] = {first + g, first + g + 8};
  // q's A fragments: rows g and g + 8, columns 2t, 2t + 1 and 8 more.
  unsigned qa[KS][4];
#pragma unroll
  for (int s = 0; s < KS; ++s)
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const int i = rows[x & 1], col = s * 16 + 2 * t + (x >> 1) * 8;
      qa[s][x] = i < sq ? *reinterpret_cast<const unsigned *>(q + o * L.qo + h * L.qh + i * L.qr + col) : 0u;
    }
  float acc[NV][4], m[2] = {-CGC_INF, -CGC_INF}, l[2] = {0.0f, 0.0f};
  bool nan[2] = {false, false};
#pragma unroll
  for (int n = 0; n < NV; ++n)
#pragma unroll
    for (int x = 0; x < 4; ++x) acc[n][x] = 0.0f;
  const int last = (first + 16 < sq ? first + 16 : sq) - 1;
  const int end = first >= sq ? 0 : causal && last + 1 < sk ? last + 1 : sk;
  const int begin = (window > 0 && first - window + 1 > 0 ? (first - window + 1) / KT * KT : 0) +
                    slice * KT;
  const unsigned short *kh = k + o * L.ko + (h / group) * L.kh;
  const unsigned short *vh = v + o * L.vo + (h / group) * L.vh;
  for (int kt = begin; kt < end; kt += KT * SPLIT) {
    // The tile's loads first, all in flight together: k's and v's B
    // fragments and the mask's values at this thread's scores.
    unsigned kb[NT][KS][2], vb[NT / 2][NV][2];
    float mv[NT][4];
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      const int j = kt + n * 8 + g;  // the key this lane's k fragments read
#pragma unroll
      for (int e = 0; e < KS; ++e) {
        const unsigned *row = reinterpret_cast<const unsigned *>(kh + j * L.kr + e * 16 + 2 * t);
        kb[n][e][0] = j < sk ? row[0] : 0u;
        kb[n][e][1] = j < sk ? row[4] : 0u;
      }
    }
#pragma unroll
    for (int c = 0; c < NT / 2; ++c) {
      const int j = kt + c * 16 + 2 * t;  // v's fragments: keys j, j + 1, j + 8, j + 9
#pragma unroll
      for (int n = 0; n < NV; ++n) {
        const unsigned short *col = vh + n * 8 + g;
        const unsigned v0 = j < sk ? col[j * L.vr] : 0u;
        const unsigned v1 = j + 1 < sk ? col[(j + 1) * L.vr] : 0u;
        const unsigned v8 = j + 8 < sk ? col[(j + 8) * L.vr] : 0u;
        const unsigned v9 = j + 9 < sk ? col[(j + 9) * L.vr] : 0u;
        vb[c][n][0] = v0 | (v1 << 16);
        vb[c][n][1] = v8 | (v9 << 16);
      }
    }
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int i = rows[x >> 1], j = kt + n * 8 + 2 * t + (x & 1);
        mv[n][x] = 0.0f;
        if constexpr (MASK != 0) {
          if (i < sq && j < sk) {
            const long long at = o * mo + h * mh + (long long)i * mr + (long long)j * mc;
            mv[n][x] = MASK == 1 ? (cgc_ld(mask, at) ? 1.0f : 0.0f) : float(cgc_ld(mask, at));
          }
        }
      }
    float s[NT][4];
#pragma unroll
    for (int n = 0; n < NT; ++n) {
#pragma unroll
      for (int x = 0; x < 4; ++x) s[n][x] = 0.0f;
#pragma unroll
      for (int e = 0; e < KS; ++e) cgc_mma16816<BF>(s[n], qa[e], kb[n][e][0], kb[n][e][1]);
    }
    // Scores: limits, mask, the tile's row max.
    float top[2] = {-CGC_INF, -CGC_INF};
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int i = rows[x >> 1], j = kt + n * 8 + 2 * t + (x & 1);
        float y = s[n][x] * scale;
        if (softcap > 0.0f) y = softcap * tanhf(y / softcap);
        bool dropped = j >= sk || (causal && j > i) || (window > 0 && j <= i - window);
        if constexpr (MASK == 1) dropped |= i < sq && mv[n][x] == 0.0f;
        if constexpr (MASK == 2) y += mv[n][x];
        y = dropped ? -CGC_INF : y;
        nan[x >> 1] |= y != y;
        s[n][x] = y;
        top[x >> 1] = fmaxf(top[x >> 1], y != y ? -CGC_INF : y);
      }
    float rescale[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      top[r] = fmaxf(top[r], __shfl_xor_sync(0xffffffffu, top[r], 1));
      top[r] = fmaxf(top[r], __shfl_xor_sync(0xffffffffu, top[r], 2));
      const float next = fmaxf(m[r], top[r]);
      rescale[r] = next == -CGC_INF ? 1.0f : expf(m[r] - next);
      m[r] = next;
      l[r] *= rescale[r];
    }
#pragma unroll
    for (int n = 0; n < NV; ++n)
#pragma unroll
      for (int x = 0; x < 4; ++x) acc[n][x] *= rescale[x >> 1];
    // P = exp(s - m), rounded to the input type as O's A fragments.
    unsigned pa[NT / 2][4];
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      float p[4];
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const float mm = m[x >> 1];
        p[x] = mm == -CGC_INF ? 0.0f : expf(s[n][x] - mm);
        l[x >> 1] += p[x];
      }
      pa[n / 2][(n & 1) * 2] = cgc_pack2<BF>(p[0], p[1]);
      pa[n / 2][(n & 1) * 2 + 1] = cgc_pack2<BF>(p[2], p[3]);
    }
    // O += P v.
#pragma unroll
    for (int c = 0; c < NT / 2; ++c)
#pragma unroll
      for (int n = 0; n < NV; ++n) cgc_mma16816<BF>(acc[n], pa[c], vb[c][n][0], vb[c][n][1]);
  }
  if constexpr (SPLIT > 1) {
    if (!cgc_attention_combine<NV, W, SPLIT>(acc, m, l, nan, warp, slice, lane)) return;
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    nan[r] = __shfl_xor_sync(0xffffffffu, int(nan[r]), 1) | nan[r];
    nan[r] = __shfl_xor_sync(0xffffffffu, int(nan[r]), 2) | nan[r];
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = rows[r];
    if (i >= sq) continue;
    const float inv = 1.0f / l[r];
#pragma unroll
    for (int n = 0; n < NV; ++n) {
      float lo = acc[n][2 * r] * inv, hi = acc[n][2 * r + 1] * inv;
      // Every key dropped: 0, even where a dropped key's v was inf or NaN
      // (acc took 0 * v).
      if (l[r] == 0.0f) lo = hi = 0.0f;
      if (nan[r]) lo = hi = __int_as_float(0x7fffffff);
      *reinterpret_cast<unsigned *>(out + o * L.oo + h * L.oh + i * L.orow + n * 8 + 2 * t) =
          cgc_pack2<BF>(lo, hi);
    }
  }
}
