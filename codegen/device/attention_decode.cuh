// The decode-shaped attention kernel (decode_attention records:
// target/AttentionRule.h gives the rule, codegen/AttentionEmitter.cpp the
// call). Few query rows per head (a decoding step's one, or a few
// speculated ones), many keys (a KV cache): the work is reading the keys
// and values once, so every block takes all the query rows that share one
// kv head and a chunk of its keys.
//
// Block b = split + SPLIT * (chunk + chunks * g), g = outer index * hkv +
// kv head: the rows chunk * R .. chunk * R + R - 1 of the group's
// `group * sq` query rows (row r: query head g's r / sq, its row r % sq)
// over keys [split * span, split * span + span). Its 4 warps take keys in
// turn, 4 at a time: each lane holds elements lane, lane + 32, ... of a
// key's row, the warp sums the R dot products by shuffles, and keeps per
// row a running max m, sum l and output acc (online softmax, as the fused
// kernel). Keys every row drops (mask, causal, window) are not read, so
// a cache's unwritten tail, masked off, costs only its mask. The warps'
// (m, l, acc) meet in shared memory; with SPLIT == 1 the block writes
// the result, else its partial (m, l, acc[EV]) to `part`, and
// cgc_attention_decode_combine merges each row's SPLIT partials. A row
// whose every key is dropped gives 0, one whose scores hold a NaN gives
// NaN (the interpreter's rule; a NaN row's l is NaN in its partials).
// MASK and the mask's strides as cgc_attention takes them.
#define CGC_DECODE_WARPS 4
#define CGC_DECODE_UNROLL 4
template <class T, class M, int MASK, int E, int EV, int R, int SPLIT>
__device__ __forceinline__ void cgc_attention_decode(
    const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
    const M *__restrict__ mask, T *__restrict__ out, float *__restrict__ part, int hq,
    int group, int sq, int sk, int chunks, int span, float scale, float softcap,
    bool causal, int window, long long mo, long long mh, long long mr, long long mc,
    CgcAttentionLayout L) {
  constexpr int CE = (E + 31) / 32, CV = (EV + 31) / 32, W = CGC_DECODE_WARPS;
  constexpr int U = CGC_DECODE_UNROLL;
  __shared__ float accs[W][R][CV * 32];
  __shared__ float ms[W][R], ls[W][R];
  const int split = int(blockIdx.x % SPLIT);
  const long long rest = blockIdx.x / SPLIT;
  const int chunk = int(rest % chunks);
  const long long g = rest / chunks;
  const int hkv = hq / group;
  const long long o = g / hkv;
  const int kvh = int(g % hkv);
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  const int rows = group * sq;
  // Row r of the block: query head h[r], row i[r]; valid when r0 + r < rows.
  const int r0 = chunk * R;
  float qv[R][CE];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int x = r0 + r < rows ? r0 + r : rows - 1;
    const int h = kvh * group + x / sq, i = x % sq;
#pragma unroll
    for (int c = 0; c < CE; ++c) {
      const int t = c * 32 + lane;
      qv[r][c] = t < E ? float(cgc_ld(q, o * L.qo + h * L.qh + i * L.qr + t)) : 0.0f;
    }
  }
  float m[R], l[R], acc[R][CV];
  bool nan[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    m[r] = -CGC_INF;
    l[r] = 0.0f;
    nan[r] = false;
#pragma unroll
    for (int c = 0; c < CV; ++c) acc[r][c] = 0.0f;
  }
  const T *kh = k + o * L.ko + kvh * L.kh, *vh = v + o * L.vo + kvh * L.vh;
  const int begin = split * span, end = begin + span < sk ? begin + span : sk;
  // Whether row r keeps key j (before the score's own NaN test), and its
  // additive mask term.
  auto kept = [&](int r, int j, float &bias) {
    bias = 0.0f;
    const int x = r0 + r;
    if (x >= rows) return false;
    const int h = kvh * group + x / sq, i = x % sq;
    if ((causal && j > i) || (window > 0 && j <= i - window)) return false;
    if constexpr (MASK != 0) {
      const long long at = o * mo + h * mh + (long long)i * mr + (long long)j * mc;
      if constexpr (MASK == 1) return bool(cgc_ld(mask, at));
      else bias = float(cgc_ld(mask, at));
    }
    return true;
  };
  for (int j0 = begin + warp * U; j0 < end; j0 += W * U) {
    float kv[U][CE], vv[U][CV];
    bool any[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int j = j0 + u;
      any[u] = false;
      float unused;
#pragma unroll
      for (int r = 0; r < R; ++r) any[u] |= j < end && kept(r, j, unused);
#pragma unroll
      for (int c = 0; c < CE; ++c) {
        const int t = c * 32 + lane;
        kv[u][c] = any[u] && t < E ? float(cgc_ld(kh, j * L.kr + t)) : 0.0f;
      }
#pragma unroll
      for (int c = 0; c < CV; ++c) {
        const int t = c * 32 + lane;
        vv[u][c] = any[u] && t < EV ? float(cgc_ld(vh, j * L.vr + t)) : 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (!any[u]) continue;  // Uniform over the warp.
      const int j = j0 + u;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float d = 0.0f;
#pragma unroll
        for (int c = 0; c < CE; ++c) d += qv[r][c] * kv[u][c];
#pragma unroll
        for (int s = 16; s > 0; s >>= 1) d += __shfl_xor_sync(0xffffffffu, d, s);
        float bias;
        if (!kept(r, j, bias)) continue;
        float x = d * scale;
        if (softcap > 0.0f) x = softcap * tanhf(x / softcap);
        x += bias;
        if (x != x) {
          nan[r] = true;
          continue;
        }
        if (x == -CGC_INF) continue;
        if (x > m[r]) {
          const float rescale = expf(m[r] - x);  // 0 from -inf.
          l[r] *= rescale;
#pragma unroll
          for (int c = 0; c < CV; ++c) acc[r][c] *= rescale;
          m[r] = x;
        }
        const float p = expf(x - m[r]);
        l[r] += p;
#pragma unroll
        for (int c = 0; c < CV; ++c) acc[r][c] += p * vv[u][c];
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int c = 0; c < CV; ++c) accs[warp][r][c * 32 + lane] = acc[r][c];
    if (lane == 0) {
      ms[warp][r] = m[r];
      ls[warp][r] = nan[r] ? __int_as_float(0x7fffffff) : l[r];
    }
  }
  __syncthreads();
  for (int x = threadIdx.x; x < R * EV; x += 32 * W) {
    const int r = x / EV, t = x % EV;
    if (r0 + r >= rows) continue;
    float top = -CGC_INF;
#pragma unroll
    for (int w = 0; w < W; ++w) top = fmaxf(top, ms[w][r]);
    float sum = 0.0f, a = 0.0f;
#pragma unroll
    for (int w = 0; w < W; ++w) {
      const float e = ms[w][r] == -CGC_INF ? 0.0f : expf(ms[w][r] - top);
      const float lw = ls[w][r];
      sum += lw != lw ? lw : lw * e;  // A NaN row stays NaN.
      a += accs[w][r][t] * e;
    }
    if (SPLIT == 1) {
      const int h = kvh * group + (r0 + r) / sq, i = (r0 + r) % sq;
      cgc_st(out, o * L.oo + h * L.oh + i * L.orow + t,
             sum != sum ? sum : sum == 0.0f ? 0.0f : a / sum);
    } else {
      float *p = part + ((rest * SPLIT + split) * R + r) * (EV + 2);
      if (t == 0) {
        p[0] = top;
        p[1] = sum;
      }
      p[2 + t] = a;
    }
  }
}

// Merges the SPLIT partials of cgc_attention_decode's rows: one block of
// 128 threads per (group, chunk), thread x over (row, element).
template <class T, int EV, int R, int SPLIT>
__device__ __forceinline__ void cgc_attention_decode_combine(
    const float *__restrict__ part, T *__restrict__ out, int hq, int group, int sq,
    int chunks, CgcAttentionLayout L) {
  const long long rest = blockIdx.x;
  const int chunk = int(rest % chunks);
  const long long g = rest / chunks;
  const int hkv = hq / group;
  const long long o = g / hkv;
  const int kvh = int(g % hkv);
  const int rows = group * sq, r0 = chunk * R;
  for (int x = threadIdx.x; x < R * EV; x += 128) {
    const int r = x / EV, t = x % EV;
    if (r0 + r >= rows) continue;
    const float *p = part + (rest * SPLIT * R + r) * (EV + 2);
    constexpr long long S = (long long)R * (EV + 2);  // Between splits.
    float top = -CGC_INF;
    for (int s = 0; s < SPLIT; ++s) top = fmaxf(top, p[s * S]);
    float sum = 0.0f, a = 0.0f;
    for (int s = 0; s < SPLIT; ++s) {
      const float ms = p[s * S], e = ms == -CGC_INF ? 0.0f : expf(ms - top);
      const float ls = p[s * S + 1];
      sum += ls != ls ? ls : ls * e;
      a += p[s * S + 2 + t] * e;
    }
    const int h = kvh * group + (r0 + r) / sq, i = (r0 + r) % sq;
    cgc_st(out, o * L.oo + h * L.oh + i * L.orow + t,
           sum != sum ? sum : sum == 0.0f ? 0.0f : a / sum);
  }
}
