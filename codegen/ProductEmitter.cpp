//===- ProductEmitter.cpp - The generated kernel of a small product ---------===//
//
// For products with few rows (a generated_product record): out[m, n] = sum_k x[m, k] *
// w[n, k], then the epilogue. Eight warps (256 threads) per block take eight
// output columns: in groups of G warps, each group C columns (C == G, so a
// block's columns stay eight), the group's warps splitting the k range in
// G interleaved parts. A warp's lanes read its C weight rows, 16 bytes
// per load (4 f32 or 8 f16/bf16 elements) when rows are 16-byte aligned,
// and the M <= 16 rows of x (hot in L1, shared by all warps) alongside,
// keeping C x M f32 accumulators in registers. A butterfly of shuffles
// sums the lanes; with G > 1 the group's warps add their partial sums in
// shared memory, in part order; lane c * M + m of the group's first warp
// then adds the bias and the residual, applies the activation and stores
// row m of column c. With an input layernorm, each block first normalizes
// the rows of x into shared memory and reads them from there; with a
// prologue (elementwise ops and index moves that compute x), each block
// evaluates x into shared memory so.
//
//===----------------------------------------------------------------------===//
#include "codegen/CudaText.h"
#include "codegen/Emitters.h"
#include "codegen/Product.h"

using namespace cgc;

/// A generated_product record's block (the scheduler checks it): eight
/// warps, eight output columns (the record's grid counts them so).
static const unsigned Block = 256;
static const unsigned WarpsPerBlock = Block / 32;

namespace {
/// Columns a warp takes and warps that split one column group's k range.
/// bench/gemv_search.cu on an H200 (2026-12-06, bf16, distinct weights
/// back to back): four columns split four ways read a decoder's weights
/// 1.2-1.6x faster than a warp per column, at 1 and at 8 rows, for every
/// shape of a 1B-class Llama (2048x2048 5.80 -> 3.86 us, 6144x2048 11.22
/// -> 7.84, 11264x2048 16.81 -> 12.36, 2048x5632 12.41 -> 7.71, the
/// 32000x2048 head 38.74 -> 30.64); past 8 rows (not measured) a warp
/// keeps one column.
struct WarpShape {
  int64_t columns, split;
};
WarpShape warpShape(const ProductProblem &p) {
  return p.m <= 8 ? WarpShape{4, 4} : WarpShape{1, 1};
}
} // namespace

/// The k of chunk \p t (a count of steps) of a lane: part `part` of the
/// group's G takes chunks part * 32 + lane, then every 32 G; a chunk is
/// \p v elements.
static std::string chunkK(WarpShape s, int64_t v, const std::string &t) {
  std::string step = t == "0" ? "" : " + 32LL * " + std::to_string(s.split) + " * " + t;
  return "(part * 32 + lane" + step + ") * " + std::to_string(v);
}

/// Adds the chunk at k of every row of x times weight chunk \p wv(c) of
/// each of the warp's columns to their accumulators.
static std::string accumulateChunk(const ProductProblem &p, WarpShape s,
                                   const std::string &x, const std::string &w,
                                   const std::string &wv) {
  std::string K = std::to_string(p.k) + "LL", M = std::to_string(p.m);
  return "#pragma unroll\n    for (int m = 0; m < " + M + "; ++m) {\n"
         "      const uint4 xm = *reinterpret_cast<const uint4 *>(" + x + " + m * " + K +
         " + k);\n"
         "#pragma unroll\n      for (int c = 0; c < " + std::to_string(s.columns) + "; ++c)\n"
         "        acc[c * " + M + " + m] += cgc_dot16(" + wv + ", xm, " + w + ");\n    }\n";
}

/// The dot loop over weight chunks of \p v elements (the record's vector:
/// 16 bytes, or 1 when rows are not 16-byte aligned), chunkK's.
static std::string dotLoop(const ProductProblem &p, WarpShape s, int64_t v,
                           const std::string &x, const std::string &w) {
  std::string K = std::to_string(p.k) + "LL", M = std::to_string(p.m),
              C = std::to_string(s.columns), G = std::to_string(s.split);
  if (v == 1)
    return "  for (long long k = part * 32 + lane; k < " + K + "; k += 32 * " + G + ") {\n"
           "#pragma unroll\n    for (int m = 0; m < " + M + "; ++m) {\n"
           "      const float xm = cgc_ld(" + x + ", m * " + K + " + k);\n"
           "#pragma unroll\n      for (int c = 0; c < " + C + "; ++c)\n"
           "        acc[c * " + M + " + m] += cgc_ld(wrow[c], k) * xm;\n    }\n  }\n";
  // Steps in flight per lane: a warp per column, 16 weight chunks for one
  // or two rows (a 128 MiB bf16 GEMV on an H100: 49.1 us against 52.8 with
  // 4; the rows' chunks add registers with more rows, so 4 there); four
  // columns a warp, 4 steps of 4 chunks (bench/gemv_search.cu's kernel).
  std::string unroll = s.columns > 1 ? "4" : p.m <= 2 ? "16" : "4";
  return "#pragma unroll " + unroll + "\n  for (long long k = " + chunkK(s, v, "0") + "; k < " +
         K + "; k += 32 * " + G + " * " + std::to_string(v) + ") {\n"
         "    uint4 wv[" + C + "];\n"
         "#pragma unroll\n    for (int c = 0; c < " + C + "; ++c)\n"
         "      wv[c] = __ldg(reinterpret_cast<const uint4 *>(wrow[c] + k));\n" +
         accumulateChunk(p, s, x, w, "wv[c]") + "  }\n";
}

/// The dot loop over weight chunks already in registers (wpre[c][t]).
static std::string prefetchedDotLoop(const ProductProblem &p, WarpShape s, int64_t v,
                                     const std::string &x, const std::string &w,
                                     int64_t chunks) {
  return "#pragma unroll\n  for (int t = 0; t < " + std::to_string(chunks) + "; ++t) {\n"
         "    const long long k = " + chunkK(s, v, "t") + ";\n"
         "    if (k >= " + std::to_string(p.k) + "LL) break;\n" +
         accumulateChunk(p, s, x, w, "wpre[c][t]") + "  }\n";
}

namespace {
/// The kernel's parameters, by role.
struct Params {
  std::string x, w, bias, res, gamma, beta, out;
};

Params addParams(const ProductParts &parts, Kernel &kernel) {
  Params p;
  if (parts.a)
    p.x = addParam(kernel, parts.a, false);
  if (parts.normWeight)
    p.gamma = addParam(kernel, parts.normWeight, false);
  if (parts.normBias)
    p.beta = addParam(kernel, parts.normBias, false);
  p.w = addParam(kernel, parts.b, false);
  if (parts.bias)
    p.bias = addParam(kernel, parts.bias, false);
  if (parts.residual)
    p.res = addParam(kernel, parts.residual, false);
  p.out = addParam(kernel, parts.result, true);
  return p;
}

/// Elements of a row each lane holds in registers for the input layernorm
/// (all loads in flight at once), or 0 for rows too long: those loop.
int64_t elementsPerLane(const ProductProblem &p) {
  int64_t r = (p.k + 31) / 32;
  return r <= 32 ? r : 0;
}

/// Before the wait: the layernorm's weight and bias, when no kernel writes
/// them, into registers (gpre, bpre) of every lane.
std::string preloadNormParams(const ProductParts &parts, const Params &q) {
  int64_t r = elementsPerLane(parts.problem);
  std::string out, R = std::to_string(r), K = std::to_string(parts.problem.k) + "LL";
  for (auto [param, reg] : {std::pair<const std::string &, const char *>{q.gamma, "gpre"},
                            {q.beta, "bpre"}}) {
    if (param.empty())
      continue;
    out += "  float " + std::string(reg) + "[" + R + "];\n"
           "#pragma unroll\n  for (int i = 0; i < " + R + "; ++i) {\n"
           "    const long long k = lane + 32LL * i;\n"
           "    " + reg + "[i] = k < " + K + " ? (float)cgc_ld(" + param + ", k) : 0.0f;\n  }\n";
  }
  return out;
}

/// The input layernorm or rms_norm (whose mean is 0): warp w normalizes
/// rows w, w + 8, ... of x into the block's shared copy `xs` (two passes
/// for a layernorm, as the interpreter computes it,
/// rounded to the storage type as the interpreter rounds the layernorm's
/// result), then the block waits for all rows. Rows of at most 1024
/// elements are held in registers, so all their loads are in flight at
/// once; \p preloaded: gpre and bpre hold the weight and bias.
std::string normalizeRows(const ProductParts &parts, const Params &q,
                          bool preloaded) {
  const ProductProblem &p = parts.problem;
  std::string K = std::to_string(p.k) + "LL", Kf = floatLiteral(float(p.k));
  std::string eps = floatLiteral(float(parts.inputNorm->floatAttr("eps", 1e-5)));
  bool centered = parts.inputNorm->getOp() == OpKind::LayerNorm;
  auto warpSum = [](const std::string &var) {
    return "    for (int o = 16; o > 0; o >>= 1) " + var + " += __shfl_xor_sync(0xffffffffu, " +
           var + ", o);\n";
  };
  auto scaled = [&](const std::string &value, const std::string &i) {
    std::string g = q.gamma.empty() ? "" : preloaded ? " * gpre[" + i + "]" : " * cgc_ld(" + q.gamma + ", k)";
    std::string b = q.beta.empty() ? "" : preloaded ? " + bpre[" + i + "]" : " + cgc_ld(" + q.beta + ", k)";
    return "(" + value + " - mean) * inv" + g + b;
  };
  std::string head = "  __shared__ __align__(16) " + storageType(p.dtype) + " xs[" +
                     std::to_string(p.m * p.k) + "];\n"
                     "  for (int m = threadIdx.x >> 5; m < " + std::to_string(p.m) + "; m += " +
                     std::to_string(WarpsPerBlock) + ") {\n";
  int64_t r = elementsPerLane(p);
  if (r) {
    std::string R = std::to_string(r);
    std::string forEach = "#pragma unroll\n    for (int i = 0; i < " + R + "; ++i) {\n"
                          "      const long long k = lane + 32LL * i;\n";
    return head + "    float xv[" + R + "];\n" + forEach +
           "      xv[i] = k < " + K + " ? (float)cgc_ld(" + q.x + ", m * " + K + " + k) : 0.0f;\n    }\n" +
           (centered ? "    float s = 0.0f;\n"
                       "#pragma unroll\n    for (int i = 0; i < " + R + "; ++i) s += xv[i];\n" +
                           warpSum("s") + "    const float mean = s / " + Kf + ";\n"
                     : "    const float mean = 0.0f;\n") +
           "    float d2 = 0.0f;\n" + forEach +
           "      const float d = xv[i] - mean;\n"
           "      if (k < " + K + ") d2 += d * d;\n    }\n" +
           warpSum("d2") +
           "    const float inv = rsqrtf(d2 / " + Kf + " + " + eps + ");\n" + forEach +
           "      if (k < " + K + ") cgc_st(xs, m * " + K + " + k, " + scaled("xv[i]", "i") + ");\n"
           "    }\n  }\n  __syncthreads();\n";
  }
  std::string x = "cgc_ld(" + q.x + ", m * " + K + " + k)";
  return head +
         (centered ? "    float s = 0.0f;\n"
                     "    for (long long k = lane; k < " + K + "; k += 32) s += " + x + ";\n" +
                         warpSum("s") + "    const float mean = s / " + Kf + ";\n"
                   : "    const float mean = 0.0f;\n") +
         "    float d2 = 0.0f;\n"
         "    for (long long k = lane; k < " + K + "; k += 32) {\n"
         "      const float d = " + x + " - mean;\n"
         "      d2 += d * d;\n    }\n" +
         warpSum("d2") +
         "    const float inv = rsqrtf(d2 / " + Kf + " + " + eps + ");\n"
         "    for (long long k = lane; k < " + K + "; k += 32)\n"
         "      cgc_st(xs, m * " + K + " + k, " + scaled(x, "") + ");\n  }\n"
         "  __syncthreads();\n";
}

/// The prologue: the block's threads evaluate the product's first operand
/// (elementwise ops and index moves over the prologue's inputs, in f32 as
/// a fusion does) at each of its m x k elements into the block's shared
/// copy `xs`, rounded to the storage type; then the block waits for all
/// rows.
std::string computeRows(const ProductParts &parts, Kernel &kernel) {
  const ProductProblem &p = parts.problem;
  const Value *x = parts.product->operand(0);
  Shape shape = staticShape(x->getType());
  std::vector<std::string> at;
  for (size_t d = 0; d < shape.size(); ++d)
    at.push_back(shape[d] == 1 ? "0" : "c" + std::to_string(d));
  ElementAt e = viewElementAt(parts.prologue, x, at, "    ", kernel);
  std::string count = std::to_string(p.m * p.k) + "LL";
  return "  __shared__ __align__(16) " + storageType(p.dtype) + " xs[" +
         std::to_string(p.m * p.k) + "];\n"
         "  for (long long i = threadIdx.x; i < " + count + "; i += " +
         std::to_string(Block) + ") {\n" +
         coordDecls(shape, "i", "c") + e.statements +
         "    cgc_st(xs, i, " + e.value + ");\n  }\n  __syncthreads();\n";
}

/// Chunks of each of its weight rows a lane loads ahead (16 bytes each,
/// at most 16 in all), or 0.
int64_t prefetchChunks(const ProductProblem &p, WarpShape s, int64_t v) {
  int64_t chunks = (p.k + 32 * s.split * v - 1) / (32 * s.split * v);
  return v > 1 && chunks * s.columns <= 16 ? chunks : 0;
}
} // namespace

/// Whether \p v, read in \p g or a region within it, is constant
/// (isConstantWeight).
static bool isConstantIn(const Value *v, const Graph *g,
                         const llvm::DenseSet<const Node *> &packedConcats) {
  if (const Node *def = v->getDef())
    return packedConcats.count(def) &&
           llvm::all_of(def->getOperands(), [&](const Value *operand) {
             return isConstantIn(operand, def->getParent(), packedConcats);
           });
  auto inputOf = [&](const Graph &graph) {
    return llvm::find_if(graph.inputs(), [&](const GraphInput &in) { return in.value == v; });
  };
  while (inputOf(*g) == g->inputs().end()) { // Up to the graph whose input v is.
    if (!g->isRegion())
      return false;
    g = g->getParentNode()->getParent();
  }
  if (!g->isRegion())
    return isPersistent(inputOf(*g)->kind) &&
           llvm::none_of(g->outputs, [&](const GraphOutput &o) {
             return o.target == v->getName();
           });
  // Through a `while`, a carried value its body gives back unchanged is
  // the loop's operand (a decoding loop carries its weights so).
  const Node &loop = *g->getParentNode();
  size_t i = size_t(inputOf(*g) - g->inputs().begin());
  return loop.getOp() == OpKind::While &&
         loop.region(1).outputs[i].value == loop.region(1).inputs()[i].value &&
         isConstantIn(loop.operand(unsigned(i)), loop.getParent(), packedConcats);
}

bool cgc::isConstantWeight(const Value *v, const ProductParts &parts) {
  return isConstantIn(v, parts.product->getParent(), *parts.packedConcats);
}

void cgc::emitProduct(const ProductParts &parts, const Schedule &record,
                      Kernel &kernel) {
  const ProductProblem &p = parts.problem;
  const int64_t v = record[ScheduleField::Vector];
  assert(record[ScheduleField::Block] == Block && "the record's block");
  const WarpShape s = warpShape(p);
  Params q = addParams(parts, kernel);
  std::string N = std::to_string(p.n) + "LL", M = std::to_string(p.m),
              K = std::to_string(p.k) + "LL", C = std::to_string(s.columns),
              G = std::to_string(s.split), CM = std::to_string(s.columns * p.m),
              last = std::to_string(p.n - 1) + "LL";
  std::string rows = q.x;
  std::string body =
      "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, part = warp % " + G +
      ";\n"
      "  const long long col0 = (long long)blockIdx.x * " + std::to_string(WarpsPerBlock) +
      " + (warp / " + G + ") * " + C + ";\n"
      "  const " + storageType(p.dtype) + " *wrow[" + C + "];\n"
      "#pragma unroll\n  for (int c = 0; c < " + C + "; ++c)\n"
      "    wrow[c] = " + q.w + " + cgc_min(col0 + c, " + last + ") * " + K + ";\n";
  // Weights no kernel writes load before the wait for the producers
  // (programmatic launch lets this kernel start early) and before the
  // input layernorm: their latency hides behind both.
  int64_t chunks = prefetchChunks(p, s, v);
  bool early = chunks && isConstantWeight(parts.b, parts);
  if (early) {
    std::string T = std::to_string(chunks);
    body += "  uint4 wpre[" + C + "][" + T + "];\n"
            "#pragma unroll\n  for (int c = 0; c < " + C + "; ++c)\n"
            "#pragma unroll\n    for (int t = 0; t < " + T + "; ++t) {\n"
            "      const long long k = " + chunkK(s, v, "t") + ";\n"
            "      if (k < " + K + ") wpre[c][t] = __ldg(reinterpret_cast<const uint4 *>(wrow[c] + k));\n"
            "    }\n";
  }
  bool preloadNorm = parts.inputNorm && elementsPerLane(p) &&
                     (!parts.normWeight || isConstantWeight(parts.normWeight, parts)) &&
                     (!parts.normBias || isConstantWeight(parts.normBias, parts));
  if (preloadNorm)
    body += preloadNormParams(parts, q);
  // Lane c * M + m of a group's first warp writes row m of column c.
  std::string mine = "col0 + cgc_min(lane / " + M + ", " + std::to_string(s.columns - 1) + ")";
  bool preloadBias = parts.bias && isConstantWeight(parts.bias, parts);
  if (preloadBias)
    body += "  const float bpreCol = cgc_ld(" + q.bias + ", cgc_min(" + mine + ", " + last +
            "));\n";
  body += kWaitForProducers;
  if (parts.inputNorm) {
    body += normalizeRows(parts, q, preloadNorm);
    rows = "xs";
  } else if (!parts.prologue.ops.empty()) {
    body += computeRows(parts, kernel);
    rows = "xs";
  }
  body +=
      "  float acc[" + CM + "];\n"
      "#pragma unroll\n  for (int i = 0; i < " + CM + "; ++i) acc[i] = 0.0f;\n" +
      (early ? prefetchedDotLoop(p, s, v, rows, q.w, chunks)
             : dotLoop(p, s, v, rows, q.w)) +
      "  float v = 0.0f;\n"
      "#pragma unroll\n  for (int i = 0; i < " + CM + "; ++i) {\n"
      "    for (int o = 16; o > 0; o >>= 1)\n"
      "      acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], o);\n"
      "    if (i == lane) v = acc[i];\n  }\n";
  if (s.split > 1)
    body += "  __shared__ float cgc_part[" + std::to_string(WarpsPerBlock * s.columns * p.m) +
            "];\n"
            "  if (lane < " + CM + ") cgc_part[warp * " + CM + " + lane] = v;\n"
            "  __syncthreads();\n"
            "  if (part != 0 || lane >= " + CM + ") return;\n"
            "  v = cgc_part[warp * " + CM + " + lane];\n"
            "#pragma unroll\n  for (int g = 1; g < " + G + "; ++g) v += cgc_part[(warp + g) * " + CM +
            " + lane];\n";
  else
    body += "  if (lane >= " + CM + ") return;\n";
  body +=
      "  const long long col = col0 + lane / " + M + ", row = lane % " + M + ";\n"
      "  if (col >= " + N + ") return;\n" +
      (q.bias.empty() ? ""
       : preloadBias ? "  v += bpreCol;\n"
                     : "  v += cgc_ld(" + q.bias + ", col);\n") +
      (q.res.empty() ? "" : "  v += cgc_ld(" + q.res + ", row * " + N + " + col);\n") +
      "  cgc_st(" + q.out + ", row * " + N + " + col, " +
      (parts.activation ? elementwiseExpr(*parts.activation, {"v"}) : "v") + ");\n";
  kernel.block[0] = Block;
  // Eight columns a block, so no grid-stride loop: the grid covers n (the
  // x dimension takes up to 2^31 - 1 blocks).
  kernel.grid[0] = uint32_t(record[ScheduleField::GridX]);
  kernel.wait = Kernel::Wait::InBody;
  kernel.body = body;
}

std::string cgc::productEpilogue(const ProductParts &parts, const std::string &bias,
                                 const std::string &res, const std::string &out,
                                 const std::string &indent) {
  std::string at = "m * " + std::to_string(parts.problem.n) + "LL + n";
  return (bias.empty() ? "" : indent + "v += cgc_ld(" + bias + ", n);\n") +
         (res.empty() ? "" : indent + "v += cgc_ld(" + res + ", " + at + ");\n") +
         indent + "cgc_st(" + out + ", " + at + ", " +
         (parts.activation ? elementwiseExpr(*parts.activation, {"v"}) : "v") + ");\n";
}

void cgc::emitProductKernel(const ProductParts &parts, const Schedule &record,
                            Kernel &kernel) {
  switch (record.strategy) {
  case Strategy::GeneratedProduct: return emitProduct(parts, record, kernel);
  case Strategy::TiledProduct: return emitTiledProduct(parts, record, kernel);
  case Strategy::MmaProduct: return emitMmaProduct(parts, record, kernel);
  case Strategy::LibraryProduct:
    llvm_unreachable("cuBLASLt runs this product (ProductLowering.cpp)");
  case Strategy::Rows:
  case Strategy::SplitRows:
  case Strategy::Columns:
  case Strategy::FusedAttention:
  case Strategy::MmaAttention:
  case Strategy::DecodeAttention:
  case Strategy::LibraryConvolution:
    llvm_unreachable("the schedule pass gives products product records");
  }
  llvm_unreachable("a Strategy value");
}
