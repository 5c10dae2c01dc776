//===- ReduceEmitter.cpp - Generic row-wise kernels --------------------------===//
//
// What has no row schedule (RowEmitter.cpp): argmax, reductions over dims
// that are neither trailing nor one run, softmax and log_softmax over a
// non-innermost axis run one block (256 threads) per output row: threads
// stride over the row, then combine with warp shuffles and a 32-entry
// shared array (cgc_block_reduce in the prelude). Reductions over few long
// rows run in two phases (emitSplitReduction, a split_rows record).
// cumsum runs one thread per line, or one block per line of 128 elements or
// more (a block scan per chunk).
//
//===----------------------------------------------------------------------===//
#include "codegen/Accumulator.h"
#include "codegen/CudaText.h"
#include "codegen/Emitters.h"
#include "ir/TypeRules.h"

using namespace cgc;

static const unsigned Block = 256;

/// Offset expression of the element whose coordinates over the dims
/// \p dims (a subset of \p shape, in order) form the linear index \p index.
static std::string subOffset(const Shape &shape, const std::vector<unsigned> &dims,
                             const std::string &index) {
  Shape st = strides(shape);
  std::string out;
  int64_t inner = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    int64_t extent = shape[dims[k]];
    std::string c = inner == 1 ? index : "(" + index + " / " + std::to_string(inner) + "LL)";
    if (k != 0)
      c = "(" + c + " % " + std::to_string(extent) + "LL)";
    if (extent != 1)
      out += (out.empty() ? "" : " + ") + c + " * " + std::to_string(st[dims[k]]) + "LL";
    inner *= extent;
  }
  return out.empty() ? "0" : out;
}

static std::string rowLoop(int64_t rows) {
  return "  for (long long row = blockIdx.x; row < " + std::to_string(rows) +
         "LL; row += gridDim.x) {\n";
}

static void finish(Kernel &kernel, int64_t rows, const std::string &body) {
  kernel.block[0] = Block;
  kernel.grid[0] = uint32_t(std::min<int64_t>(std::max<int64_t>(rows, 1), 65535));
  kernel.body = body;
}

/// Lines at least this long are scanned by a block each (kScanItems
/// elements a thread per chunk, chunks in order); shorter ones by a thread.
static const int64_t kBlockScanLength = 128, kScanItems = 4;

/// One block per line: each chunk of Block * kScanItems elements is summed
/// per thread, scanned across the block (cgc_block_scan) and carried on.
static std::string blockScanBody(const std::string &in, const std::string &out,
                                 const std::string &ct, int64_t lines,
                                 int64_t len, int64_t inner) {
  std::string L = std::to_string(len) + "LL", items = std::to_string(kScanItems);
  std::string stride = std::to_string(inner) + "LL";
  return rowLoop(lines) + "    long long base = (row / " + stride + ") * " +
         std::to_string(len * inner) + "LL + row % " + stride + ";\n    " + ct +
         " carry = 0;\n" + "    for (long long chunk = 0; chunk < " + L +
         "; chunk += " + std::to_string(Block * kScanItems) + "LL) {\n" +
         "      long long first = chunk + threadIdx.x * " + items + "LL;\n      " +
         ct + " v[" + items + "], local = 0;\n" + "      for (int j = 0; j < " +
         items + "; ++j) {\n" + "        local += first + j < " + L + " ? (" + ct +
         ")cgc_ld(" + in + ", base + (first + j) * " + stride + ") : (" + ct +
         ")0;\n        v[j] = local;\n      }\n      " + ct + " total;\n      " +
         ct + " before = carry + cgc_block_scan(local, total);\n" +
         "      for (int j = 0; j < " + items + "; ++j)\n" +
         "        if (first + j < " + L + ") cgc_st(" + out + ", base + (first + j) * " +
         stride + ", before + v[j]);\n" + "      carry += total;\n    }\n  }\n";
}

static void emitCumSum(const Node &node, Kernel &kernel) {
  Shape shape = staticShape(node.operand(0)->getType());
  unsigned axis = *normalizeAxis(node.intAttr("axis", 0), shape.size());
  int64_t len = shape[axis], inner = product(shape, axis + 1);
  int64_t lines = product(shape) / std::max<int64_t>(len, 1);
  DType dtype = node.result()->getType().dtype;
  std::string in = addParam(kernel, node.operand(0), false);
  std::string out = addParam(kernel, node.result(), true);
  std::string ct = isFloat(dtype) ? "float" : "long long";
  if (len >= kBlockScanLength)
    return finish(kernel, lines, blockScanBody(in, out, ct, lines, len, inner));
  std::string body =
      gridStrideLoop("line", lines, Block) + "    long long base = (line / " +
      std::to_string(inner) + "LL) * " + std::to_string(len * inner) +
      "LL + line % " + std::to_string(inner) + "LL;\n    " + ct +
      " acc = 0;\n    for (long long k = 0; k < " + std::to_string(len) +
      "LL; ++k) {\n      long long at = base + k * " + std::to_string(inner) +
      "LL;\n      acc += cgc_ld(" + in + ", at);\n      cgc_st(" + out +
      ", at, acc);\n    }\n  }\n";
  kernel.block[0] = Block;
  kernel.grid[0] = gridFor(lines, Block);
  kernel.body = body;
}

static std::string blockCombine(const Accumulator &a) {
  return "  acc = cgc_block_reduce(acc, " + combiner(a) + ");\n";
}

void cgc::emitReduction(const Node &node, Kernel &kernel) {
  if (node.info().has(Scan))
    return emitCumSum(node, kernel);
  Shape shape = staticShape(node.operand(0)->getType());
  std::vector<unsigned> reduced, kept;
  for (unsigned a : reducedAxes(node, shape.size()))
    reduced.push_back(a);
  for (unsigned d = 0; d < shape.size(); ++d)
    if (!llvm::is_contained(reduced, d))
      kept.push_back(d);
  int64_t rows = 1, len = 1;
  for (unsigned d : kept)
    rows *= shape[d];
  for (unsigned d : reduced)
    len *= shape[d];
  DType in = node.operand(0)->getType().dtype;
  std::string pin = addParam(kernel, node.operand(0), false);
  std::string pout = addParam(kernel, node.result(), true);
  std::string body = rowLoop(rows) + "    long long base = " +
                     subOffset(shape, kept, "row") + ";\n";
  std::string load = "cgc_ld(" + pin + ", base + " + subOffset(shape, reduced, "r") + ")";
  std::string loop = "    for (long long r = threadIdx.x; r < " +
                     std::to_string(len) + "LL; r += blockDim.x) {\n";
  if (node.getOp() == OpKind::ArgMax) {
    // Integers compare as long long (exact); floats as double (NaN wins).
    bool exact = !isFloat(in);
    std::string value = exact ? "long long" : "double";
    std::string lowest = exact ? "(-9223372036854775807LL - 1)" : "-(double)CGC_INF";
    body += "    " + value + " best = " + lowest + "; long long at = 0x7fffffffffffffffLL;\n" +
            loop + "      " + value + " x = (" + value + ")" + load +
            ";\n      if (cgc_argmax_better(x, r, best, at)) { best = x; at = r; }\n" +
            "    }\n    long long result = cgc_block_argmax(best, at);\n" +
            "    if (threadIdx.x == 0) cgc_st(" + pout + ", row, result);\n  }\n";
    return finish(kernel, rows, body);
  }
  Accumulator a = accumulatorOf(node, in);
  std::string result = "acc";
  if (a.mean)
    result = "acc / " + floatLiteral(float(len));
  body += "    " + a.type + " acc = " + a.init + ";\n" + loop + "      " +
          fold(a, load) + "\n    }\n  " + blockCombine(a) + "    if (threadIdx.x == 0) cgc_st(" + pout +
          ", row, " + result + ");\n  }\n";
  finish(kernel, rows, body);
}

/// Phase 1: block b reduces chunk b % chunks of row b / chunks (a
/// contiguous range, four elements per 16-byte load for f32 rows whose
/// chunks start 16-byte aligned) into partial b. Phase 2: block r combines
/// row r's partials in order. 256 threads each.
void cgc::emitSplitReduction(const Node &node, const ReductionSplit &split,
                             const Storage &partials, Kernel &phase1,
                             Kernel &phase2) {
  DType in = node.operand(0)->getType().dtype;
  Accumulator a = accumulatorOf(node, in);
  int64_t per = (split.length + split.chunks - 1) / split.chunks;
  bool vector = split.vector == 4; // float4 loads (the record checks f32)
  if (vector)
    per = (per + 3) / 4 * 4;
  std::string C = std::to_string(split.chunks) + "LL", L = std::to_string(split.length) + "LL";
  std::string x = addParam(phase1, node.operand(0), false);
  std::string p1 = addScratchParam(phase1, partials, true, a.type);
  std::string loop;
  if (vector)
    loop = "#pragma unroll 4\n  for (long long i = begin + threadIdx.x * 4LL; i < end; i += 1024LL) {\n"
           "    const float4 v = *reinterpret_cast<const float4 *>(row + i);\n"
           "    " + fold(a, "v.x") + " " + fold(a, "v.y") + "\n"
           "    " + fold(a, "v.z") + " " + fold(a, "v.w") + "\n  }\n";
  else
    loop = "#pragma unroll 4\n  for (long long i = begin + threadIdx.x; i < end; i += 256LL)\n"
           "    " + fold(a, "(" + a.type + ")cgc_ld(row, i)") + "\n";
  phase1.block[0] = 256;
  phase1.grid[0] = uint32_t(split.rows * split.chunks);
  phase1.body =
      "  const " + storageType(in) + " *row = " + x +
      " + (long long)(blockIdx.x / " + C + ") * " + L + ";\n"
      "  const long long begin = (long long)(blockIdx.x % " + C + ") * " +
      std::to_string(per) + "LL;\n"
      "  const long long end = cgc_min(begin + " + std::to_string(per) + "LL, " + L + ");\n"
      "  " + a.type + " acc = " + a.init + ";\n" + loop + blockCombine(a) +
      "  if (threadIdx.x == 0) " + p1 + "[blockIdx.x] = acc;\n";

  std::string p0 = addScratchParam(phase2, partials, false, a.type);
  std::string out = addParam(phase2, node.result(), true);
  std::string result = a.mean ? "acc / " + floatLiteral(float(split.length))
                              : "acc";
  phase2.block[0] = 256;
  phase2.grid[0] = uint32_t(split.rows);
  phase2.body =
      "  " + a.type + " acc = " + a.init + ";\n"
      "  for (long long i = threadIdx.x; i < " + C + "; i += 256LL)\n"
      "    " + fold(a, p0 + "[(long long)blockIdx.x * " + C + " + i]") + "\n" +
      blockCombine(a) + "  if (threadIdx.x == 0) cgc_st(" + out +
      ", blockIdx.x, " + result + ");\n";
}

void cgc::emitNormalization(const Node &node, Kernel &kernel) {
  Shape shape = staticShape(node.operand(0)->getType());
  unsigned axis = *normalizeAxis(node.intAttr("axis", -1), shape.size());
  std::string x = addParam(kernel, node.operand(0), false);
  std::string y = addParam(kernel, node.result(), true);
  int64_t len = shape[axis], inner = product(shape, axis + 1);
  int64_t rows = product(shape) / std::max<int64_t>(len, 1);
  std::string in = std::to_string(inner);
  std::string loopK = "    for (long long k = threadIdx.x; k < " + std::to_string(len) +
                      "LL; k += blockDim.x)";
  std::string at = "base + k * " + in + "LL";
  std::string store;
  switch (node.getOp()) {
  case OpKind::Softmax:
    store = "expf(cgc_ld(" + x + ", " + at + ") - m) / s";
    break;
  case OpKind::LogSoftmax:
    store = "cgc_ld(" + x + ", " + at + ") - m - logf(s)";
    break;
  case OpKind::LayerNorm: case OpKind::RmsNorm: // Always a row schedule (RowEmitter.cpp).
  case OpKind::BatchNorm: // expand-batch-norm writes it out.
#define CGC_NORMALIZATION_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("not a softmax or log_softmax");
  }
  std::string body =
      rowLoop(rows) + "    long long base = (row / " + in + "LL) * " +
      std::to_string(len * inner) + "LL + row % " + in + "LL;\n" +
      "    float m = -CGC_INF;\n" + loopK + " m = cgc_max(m, (float)cgc_ld(" +
      x + ", " + at + "));\n    m = cgc_block_max(m);\n    float s = 0.0f;\n" +
      loopK + " s += expf(cgc_ld(" + x + ", " + at + ") - m);\n" +
      "    s = cgc_block_sum(s);\n" + loopK + " cgc_st(" + y + ", " + at +
      ", " + store + ");\n  }\n";
  finish(kernel, rows, body);
}

