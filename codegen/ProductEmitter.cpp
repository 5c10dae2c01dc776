//===- ProductEmitter.cpp - The generated kernel of a small product ---------===//
//
// For products with few rows (ProductRule.h): out[m, n] = sum_k x[m, k] *
// w[n, k], then the epilogue. One warp per output column n: its lanes read
// the weight row w[n, :] once, 16 bytes per load (4 f32 or 8 f16/bf16
// elements) when rows are 16-byte aligned, and the M <= 16 rows of x (hot in
// L1, shared by all warps) alongside, keeping one f32 accumulator per row
// in registers. A butterfly of shuffles sums the lanes; lane m then adds
// the bias and the residual, applies the activation and stores row m.
// Eight warps (256 threads) per block, ceil(n / 8) blocks.
//
//===----------------------------------------------------------------------===//
#include "codegen/CudaText.h"
#include "codegen/Emitters.h"
#include "codegen/Product.h"

#include "llvm/Support/ErrorHandling.h"

using namespace cgc;

static const unsigned Block = 256;
static const unsigned WarpsPerBlock = Block / 32;

static std::string activationExpr(llvm::Optional<OpKind> act,
                                  const std::string &v) {
  if (!act)
    return v;
  if (*act == OpKind::Relu)
    return "cgc_max(" + v + ", 0.0f)";
  if (*act == OpKind::Gelu)
    return "cgc_gelu(" + v + ")";
  if (*act == OpKind::GeluTanh)
    return "cgc_gelu_tanh(" + v + ")";
  llvm_unreachable("fuse-epilogue fuses relu, gelu and gelu_tanh only");
}

/// Elements per 16-byte load, or 1 when rows are not 16-byte aligned.
static int64_t vectorWidth(const ProductProblem &p) {
  int64_t elem = dtypeSize(p.dtype);
  return (p.k * elem) % 16 == 0 ? 16 / elem : 1;
}

static std::string dotLoop(const ProductProblem &p, const std::string &x,
                           const std::string &w) {
  std::string K = std::to_string(p.k) + "LL", M = std::to_string(p.m);
  int64_t v = vectorWidth(p);
  if (v == 1)
    return "  for (long long k = lane; k < " + K + "; k += 32) {\n"
           "    float wk = cgc_ld(wrow, k);\n"
           "#pragma unroll\n    for (int m = 0; m < " + M + "; ++m)\n"
           "      acc[m] += wk * cgc_ld(" + x + ", m * " + K + " + k);\n  }\n";
  std::string V = std::to_string(v);
  return "#pragma unroll 4\n  for (long long k = lane * " + V + "; k < " + K +
         "; k += 32 * " + V + ") {\n"
         "    uint4 wv = __ldg(reinterpret_cast<const uint4 *>(wrow + k));\n"
         "#pragma unroll\n    for (int m = 0; m < " + M + "; ++m)\n"
         "      acc[m] += cgc_dot16(wv, *reinterpret_cast<const uint4 *>(" +
         x + " + m * " + K + " + k), " + w + ");\n  }\n";
}

namespace {
/// The kernel's parameters, by role.
struct Params {
  std::string x, w, bias, res, gamma, beta, out;
};

Params addParams(const ProductParts &parts, Kernel &kernel) {
  Params p;
  p.x = addParam(kernel, parts.a, false);
  p.w = addParam(kernel, parts.b, false);
  if (parts.bias)
    p.bias = addParam(kernel, parts.bias, false);
  if (parts.residual)
    p.res = addParam(kernel, parts.residual, false);
  if (parts.lnWeight)
    p.gamma = addParam(kernel, parts.lnWeight, false);
  if (parts.lnBias)
    p.beta = addParam(kernel, parts.lnBias, false);
  p.out = addParam(kernel, parts.result, true);
  return p;
}

/// Statements that leave in `v`, on lane m < M of the warp, row m of output
/// column `col` before any layernorm: the dot product, bias, residual and
/// activation. Every lane of the warp must run them (shuffles).
std::string columnValue(const ProductParts &parts, const Params &q,
                        const std::string &indent) {
  const ProductProblem &p = parts.problem;
  std::string N = std::to_string(p.n) + "LL", M = std::to_string(p.m);
  std::string text =
      "const " + storageType(p.dtype) + " *wrow = " + q.w + " + col * " +
      std::to_string(p.k) + "LL;\n"
      "float acc[" + M + "];\n"
      "#pragma unroll\nfor (int m = 0; m < " + M + "; ++m) acc[m] = 0.0f;\n" +
      dotLoop(p, q.x, q.w) +
      "float v = 0.0f;\n"
      "#pragma unroll\nfor (int m = 0; m < " + M + "; ++m) {\n"
      "  for (int o = 16; o > 0; o >>= 1)\n"
      "    acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], o);\n"
      "  if (m == lane) v = acc[m];\n}\n"
      "if (lane < " + M + ") {\n" +
      (q.bias.empty() ? "" : "  v += cgc_ld(" + q.bias + ", col);\n") +
      (q.res.empty() ? "" : "  v += cgc_ld(" + q.res + ", lane * " + N + " + col);\n") +
      "  v = " + activationExpr(parts.activation, "v") + ";\n}\n";
  std::string out;
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    std::string line = text.substr(at, nl - at);
    out += (line.rfind("#pragma", 0) == 0 ? "" : indent) + line + "\n";
    at = nl + 1;
  }
  return out;
}

void emitPlain(const ProductParts &parts, const Params &q, Kernel &kernel) {
  const ProductProblem &p = parts.problem;
  std::string N = std::to_string(p.n) + "LL";
  std::string body =
      "  const int lane = threadIdx.x & 31;\n"
      "  const long long col = (long long)blockIdx.x * " +
      std::to_string(WarpsPerBlock) + " + (threadIdx.x >> 5);\n"
      "  if (col >= " + N + ") return;\n" + columnValue(parts, q, "  ") +
      "  if (lane < " + std::to_string(p.m) + ") cgc_st(" + q.out + ", lane * " +
      N + " + col, v);\n";
  kernel.block[0] = Block;
  kernel.grid[0] = gridFor(p.n, WarpsPerBlock);
  kernel.source = kernelOpening(kernel, Block) + body + "}\n";
}

/// Sums `value` of lane m < M over the block's warps, then over the
/// cluster's blocks (through distributed shared memory), into stats[m][slot].
std::string clusterRowSum(const std::string &value, int slot,
                          const std::string &scale, unsigned cluster) {
  return "  if (lane < M) part[warp][lane] = " + value + ";\n"
         "  __syncthreads();\n"
         "  if (threadIdx.x < M) {\n"
         "    float s = 0.0f;\n"
         "    for (int w = 0; w < " + std::to_string(WarpsPerBlock) +
         "; ++w) s += part[w][threadIdx.x];\n"
         "    rowsum[threadIdx.x] = s;\n  }\n"
         "  cgc_cluster_sync();\n"
         "  if (threadIdx.x < M) {\n"
         "    float s = 0.0f;\n"
         "    for (unsigned r = 0; r < " + std::to_string(cluster) +
         "u; ++r) s += cgc_cluster_load(&rowsum[threadIdx.x], r);\n"
         "    stats[threadIdx.x][" + std::to_string(slot) + "] = " + scale +
         ";\n  }\n"
         "  cgc_cluster_sync();\n";
}

/// One thread block cluster computes every column and normalizes the rows:
/// each warp keeps its columns' values in registers, and the row sums go
/// through distributed shared memory (two-pass mean and variance, as the
/// interpreter computes them).
void emitWithLayerNorm(const ProductParts &parts, const Params &q,
                       Kernel &kernel) {
  const ProductProblem &p = parts.problem;
  int64_t blocks = std::min<int64_t>(8, (p.n + WarpsPerBlock - 1) / WarpsPerBlock);
  int64_t stride = blocks * WarpsPerBlock;
  int64_t perWarp = (p.n + stride - 1) / stride;
  std::string N = std::to_string(p.n) + "LL", M = std::to_string(p.m);
  std::string C = std::to_string(blocks), J = std::to_string(perWarp);
  std::string len = floatLiteral(float(p.n));
  std::string eps = floatLiteral(float(parts.layerNorm->floatAttr("eps", 1e-5)));
  std::string body =
      "  constexpr int M = " + M + ";\n"
      "  __shared__ float part[" + std::to_string(WarpsPerBlock) + "][M];\n"
      "  __shared__ float rowsum[M];\n  __shared__ float stats[M][2];\n"
      "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
      "  float vals[" + J + "];\n  float sum = 0.0f;\n"
      "#pragma unroll\n  for (int j = 0; j < " + J + "; ++j) {\n"
      "    const long long col = (long long)blockIdx.x * " +
      std::to_string(WarpsPerBlock) + " + warp + (long long)j * " +
      std::to_string(stride) + ";\n"
      "    vals[j] = 0.0f;\n"
      "    if (col >= " + N + ") continue;\n" + columnValue(parts, q, "    ") +
      "    vals[j] = v;\n    sum += v;\n  }\n" +
      clusterRowSum("sum", 0, "s / " + len, blocks) +
      "  const float mean = lane < M ? stats[lane][0] : 0.0f;\n"
      "  float q = 0.0f;\n"
      "#pragma unroll\n  for (int j = 0; j < " + J + "; ++j) {\n"
      "    const long long col = (long long)blockIdx.x * " +
      std::to_string(WarpsPerBlock) + " + warp + (long long)j * " +
      std::to_string(stride) + ";\n"
      "    if (col < " + N + ") { float d = vals[j] - mean; q += d * d; }\n  }\n" +
      clusterRowSum("q", 1, "rsqrtf(s / " + len + " + " + eps + ")", blocks) +
      "  if (lane >= M) return;\n"
      "  const float inv = stats[lane][1];\n"
      "#pragma unroll\n  for (int j = 0; j < " + J + "; ++j) {\n"
      "    const long long col = (long long)blockIdx.x * " +
      std::to_string(WarpsPerBlock) + " + warp + (long long)j * " +
      std::to_string(stride) + ";\n"
      "    if (col >= " + N + ") continue;\n"
      "    cgc_st(" + q.out + ", lane * " + N + " + col, (vals[j] - mean) * inv" +
      (q.gamma.empty() ? "" : " * cgc_ld(" + q.gamma + ", col)") +
      (q.beta.empty() ? "" : " + cgc_ld(" + q.beta + ", col)") + ");\n  }\n";
  kernel.block[0] = Block;
  kernel.grid[0] = uint32_t(blocks);
  std::string opening = kernelOpening(kernel, Block);
  opening.replace(opening.find("__launch_bounds__"), 0,
                  "__cluster_dims__(" + C + ", 1, 1) ");
  kernel.source = opening + body + "}\n";
}
} // namespace

void cgc::emitProduct(const ProductParts &parts, Kernel &kernel) {
  Params q = addParams(parts, kernel);
  if (parts.layerNorm)
    emitWithLayerNorm(parts, q, kernel);
  else
    emitPlain(parts, q, kernel);
}
