//===- TiledProductEmitter.cpp - The generated kernel of a small 2-D product ===//
//
// For f32 products of one batch whose work is too small for a library call
// to pay (a tiled_product record): out[m, n] = sum_k A(m, k) B(k, n), then the
// epilogue. Each block of 256 threads computes a T x T tile of the result
// (T, the record's tile: 32, or 16 when 32-wide tiles would leave SMs
// idle): per T-wide step
// of k it stages the A and B tiles in shared memory (rows padded to T + 1
// floats, so both the coalesced loads of either layout and the reads below
// are free of bank conflicts), then thread (tx, ty) adds
// A[ty + (256 / T) i][kk] * B[kk][tx] for its T^2 / 256 rows i. A
// transposed operand only changes which index of the tile the lanes walk:
// loads always run along the stored row. Grid: ceil(n / T) x ceil(m / T).
//
//===----------------------------------------------------------------------===//
#include "codegen/CudaText.h"
#include "codegen/Emitters.h"
#include "codegen/Product.h"

using namespace cgc;

static std::string lit(int64_t v) { return std::to_string(v) + "LL"; }

/// Stages a tile of an operand stored row-major as [outer, inner] into
/// shared[r][tx] (\p outerFirst: the tile's first index is the stored
/// row's) or shared[tx][r], T^2 / 256 elements per thread: thread row r
/// walks the stored rows from \p outerBase, lane tx the row itself from
/// \p innerBase, so loads are coalesced in either layout. Out of range: 0.
static std::string loadTile(const char *shared, const std::string &ptr,
                            const char *outer, const char *outerBase,
                            int64_t outerExtent, const char *inner,
                            const char *innerBase, int64_t innerExtent,
                            bool outerFirst) {
  std::string o = outer, i = inner, I = lit(innerExtent);
  return "      { const long long " + o + " = " + outerBase + " + r, " + i + " = " +
         innerBase + " + tx;\n"
         "        " + shared + (outerFirst ? "[r][tx]" : "[tx][r]") + " = " + o + " < " +
         lit(outerExtent) + " && " + i + " < " + I + " ? (float)cgc_ld(" + ptr + ", " + o +
         " * " + I + " + " + i + ") : 0.0f; }\n";
}

/// A's tile (rows row0.., k from k0) into As[m][k]: a[m, k], or a[k, m].
static std::string loadA(const ProductProblem &p, const std::string &a) {
  return p.transA ? loadTile("As", a, "k", "k0", p.k, "m", "row0", p.m, false)
                  : loadTile("As", a, "m", "row0", p.m, "k", "k0", p.k, true);
}

/// B's tile (k from k0, columns col0..) into Bs[k][n]: b[k, n], or b[n, k].
static std::string loadB(const ProductProblem &p, const std::string &b) {
  return p.transB ? loadTile("Bs", b, "n", "col0", p.n, "k", "k0", p.k, false)
                  : loadTile("Bs", b, "k", "k0", p.k, "n", "col0", p.n, true);
}

void cgc::emitTiledProduct(const ProductParts &parts, const Schedule &record,
                           Kernel &kernel) {
  const ProductProblem &p = parts.problem;
  const int64_t tile = record[ScheduleField::Tile];
  const unsigned Block = unsigned(record[ScheduleField::Block]);
  const std::string T = std::to_string(tile), Rows = std::to_string(Block / tile),
                    PerThread = std::to_string(tile * tile / Block);
  std::string a = addParam(kernel, parts.a, false);
  std::string b = addParam(kernel, parts.b, false);
  std::string bias = parts.bias ? addParam(kernel, parts.bias, false) : "";
  std::string res = parts.residual ? addParam(kernel, parts.residual, false) : "";
  std::string out = addParam(kernel, parts.result, true);
  std::string N = lit(p.n);
  std::string body =
      "  __shared__ float As[" + T + "][" + T + " + 1], Bs[" + T + "][" + T + " + 1];\n"
      "  const int tx = threadIdx.x % " + T + ", ty = threadIdx.x / " + T + ";\n"
      "  const long long row0 = (long long)blockIdx.y * " + T + ", col0 = (long long)blockIdx.x * " + T + ";\n"
      "  float acc[" + PerThread + "] = {};\n" +
      std::string(kWaitForProducers) +
      "  for (long long k0 = 0; k0 < " + lit(p.k) + "; k0 += " + T + ") {\n"
      "#pragma unroll\n    for (int r = ty; r < " + T + "; r += " + Rows + ") {\n" +
      loadA(p, a) + loadB(p, b) +
      "    }\n    __syncthreads();\n"
      "#pragma unroll 8\n    for (int kk = 0; kk < " + T + "; ++kk) {\n"
      "      const float bv = Bs[kk][tx];\n"
      "#pragma unroll\n      for (int i = 0; i < " + PerThread + "; ++i) acc[i] += As[ty + " + Rows + " * i][kk] * bv;\n"
      "    }\n    __syncthreads();\n  }\n"
      "  const long long n = col0 + tx;\n"
      "  if (n >= " + N + ") return;\n"
      "#pragma unroll\n  for (int i = 0; i < " + PerThread + "; ++i) {\n"
      "    const long long m = row0 + ty + " + Rows + " * i;\n"
      "    if (m >= " + lit(p.m) + ") break;\n"
      "    float v = acc[i];\n" +
      productEpilogue(parts, bias, res, out, "    ") + "  }\n";
  kernel.block[0] = Block;
  kernel.grid[0] = uint32_t(record[ScheduleField::GridX]);
  kernel.grid[1] = uint32_t(record[ScheduleField::GridY]);
  kernel.wait = Kernel::Wait::InBody;
  kernel.body = body;
}
