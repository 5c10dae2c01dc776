//===- RowEmitter.cpp - Row and column kernels by shape class ----------------===//
//
// Sums, means, maxima and minima over contiguous rows, softmax and
// log_softmax over the innermost axis, layernorm and cross_entropy run on
// the threads their schedule record (ir/Schedule.h) gives them: `lanes`
// threads per row, each reading `loads` vectors of `vector` elements at
// u * vector for u = j * lanes + lane, so that adjacent threads read
// adjacent vectors. Row ops keep the row in registers when it fits (one
// read and one write of memory) and read it again otherwise. Groups of up
// to 32 lanes share a warp, and the whole block runs the same number of
// row iterations, so every shuffle has all 32 threads. Grid-stride loops
// take the record's grid (one wave of the target's multiprocessors).
//
// A row_fusion (made by fuse-rows) runs its prologue where the kernel
// loads a vector of the row and its epilogue where it stores one (RowIO,
// through PointwiseEmitter's vectorBody); its sibling reductions fold the
// same vectors into accumulators of their own.
//
// Column reductions (a columns record) run 32 x 8 threads per block over 32 *
// vector adjacent columns, combine the 8 partial sums through shared
// memory in order and, when several blocks share a column tile, write
// partials that a second kernel combines in order. Reductions over few
// long rows (a split_rows record) take ReduceEmitter.cpp's two-phase
// kernels.
//
//===----------------------------------------------------------------------===//
#include "codegen/RowIO.h"
#include "target/Target.h"

#include "llvm/Support/ErrorHandling.h"

using namespace cgc;

/// The float sum and maximum the row ops reduce with.
static const Accumulator kFloatSum{"float", "0.0f", "a + b"};
static const Accumulator kFloatMax{"float", "-CGC_INF", "cgc_max(a, b)"};


/// A reduction and its siblings (RowIO::siblingRows), each with its own
/// accumulator over the same loads.
static void emitRowReduction(RowIO &io, const Schedule &record,
                             Kernel &kernel) {
  std::vector<const Node *> rows = io.rowOps();
  DType in = rows[0]->operand(0)->getType().dtype;
  RowText t(record);
  // Row op i folds vector `v<i>` into `acc<i>` (no suffix for the first).
  auto named = [](const char *base, size_t i) {
    return base + (i ? std::to_string(i) : std::string());
  };
  std::vector<Accumulator> accs;
  std::vector<std::string> intos;
  std::string declare, declareLoads, folds, reduces, stores;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Accumulator &a = accs.emplace_back(accumulatorOf(*rows[i], in));
    std::string acc = named("acc", i), v = named("v", i);
    intos.push_back(v);
    declare += "    " + a.type + " " + acc + " = " + a.init + ";\n";
    declareLoads += "        " + a.type + " " + v + "[" + t.V + "];\n";
    folds += t.forEachElement(fold(a, v + "[k]", acc));
    reduces += t.reduce(acc, a);
  }
  // Parameters in a fixed order: the inputs', then the results'.
  std::string load = io.loadEach(t, intos, accs[0].type);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string acc = named("acc", i);
    std::string result = accs[i].mean ? acc + " / " + floatLiteral(float(t.s.length)) : acc;
    stores += "    if (live && lane == 0) " +
              (i ? io.storeSibling(*rows[i], result) : io.storeScalar(result)) + "\n";
  }
  std::string body = declare +
                     t.forEachLoad(declareLoads + load + folds, t.s.loads > 16 ? 4 : 0) +
                     reduces + stores;
  t.finish(kernel, body);
}

/// Row ops in registers: `float x[LOADS][V]` holds the row's share of each
/// thread, rows past the end read as \p fill.
static std::string loadRow(const RowText &t, RowIO &io,
                           const std::string &fill) {
  return "    float x[" + t.LOADS + "][" + t.V + "];\n" +
         "#pragma unroll\n    for (int j = 0; j < " + t.LOADS +
         "; ++j)\n#pragma unroll\n      for (int k = 0; k < " + t.V +
         "; ++k) x[j][k] = " + fill + ";\n" +
         t.forEachLoad(io.load(t, "x[j]", "float"));
}

/// Row ops that read a row again in each pass: `float v[V]` holds the
/// vector u of the row.
static std::string streamRow(const RowText &t, RowIO &io) {
  return "        float v[" + t.V + "];\n" + io.load(t, "v", "float");
}

/// `for (j, k) STATEMENT` over the registers of the elements present.
static std::string overRegisters(const RowText &t, const std::string &statement) {
  return t.forEachLoad(t.forEachElement(statement));
}

static void emitRowSoftmax(RowIO &io, const Schedule &record, Kernel &kernel) {
  const Node &node = io.row();
  RowText t(record);
  bool log = node.getOp() == OpKind::LogSoftmax;
  bool registers = t.s.inRegisters();
  std::string load = registers ? loadRow(t, io, "-CGC_INF") : streamRow(t, io);
  std::string store = io.storeVector(t, registers ? "x[j]" : "v");
  // One division per row: each element is multiplied by 1 / s (within an
  // ulp of x / s, and an IEEE division per element made the kernel
  // instruction-bound).
  std::string scaleBy = log ? "    const float shift = logf(s);\n"
                            : "    const float inv = 1.0f / s;\n";
  std::string body;
  if (registers) {
    body = load + "    float m = -CGC_INF;\n" +
           overRegisters(t, "m = cgc_max(m, x[j][k]);") + t.reduce("m", kFloatMax) +
           "    float s = 0.0f;\n" +
           overRegisters(t, log ? "{ x[j][k] -= m; s += expf(x[j][k]); }"
                                : "{ x[j][k] = expf(x[j][k] - m); s += x[j][k]; }") +
           t.reduce("s", kFloatSum) + scaleBy +
           overRegisters(t, log ? "x[j][k] -= shift;" : "x[j][k] *= inv;") +
           t.forEachLoad(store);
  } else {
    const std::string &v = load;
    body = "    float m = -CGC_INF;\n" +
           t.forEachLoad(v + t.forEachElement("m = cgc_max(m, v[k]);"), 4) +
           t.reduce("m", kFloatMax) + "    float s = 0.0f;\n" +
           t.forEachLoad(v + t.forEachElement("s += expf(v[k] - m);"), 4) +
           t.reduce("s", kFloatSum) + scaleBy +
           t.forEachLoad(v + t.forEachElement(log ? "v[k] = v[k] - m - shift;"
                                                  : "v[k] = expf(v[k] - m) * inv;") +
                             store,
                         4);
  }
  t.finish(kernel, body);
}

/// layernorm: (x - mean) * inv * weight + bias with inv = rsqrt(variance +
/// eps), the mean and variance in two passes over the row (as the
/// interpreter computes them); rms_norm: x * inv * weight with inv =
/// rsqrt(mean(x^2) + eps), one pass.
static void emitRowNorm(RowIO &io, const Schedule &record,
                             Kernel &kernel) {
  const Node &node = io.row();
  bool centered = node.getOp() == OpKind::LayerNorm;
  RowText t(record);
  int64_t length = t.s.length;
  // Parameters in a fixed order: input, weight, bias, result.
  bool registers = t.s.inRegisters();
  std::string load = registers ? loadRow(t, io, "0.0f") : streamRow(t, io);
  std::string w = node.numOperands() > 1 ? io.param(node.operand(1), false) : "";
  std::string b = node.numOperands() > 2 ? io.param(node.operand(2), false) : "";
  std::string store = io.storeVector(t, registers ? "x[j]" : "v");
  std::string n = floatLiteral(float(length));
  std::string eps = floatLiteral(float(node.floatAttr("eps", 1e-5)));
  // Weight and bias are rows of the same length: the same vector loads.
  std::string affine;
  if (!w.empty())
    affine += "        float wv[" + t.V + "];\n        cgc_ldv<" + t.V +
              ", float>(" + w + ", u * " + t.V + ", wv);\n";
  if (!b.empty())
    affine += "        float bv[" + t.V + "];\n        cgc_ldv<" + t.V +
              ", float>(" + b + ", u * " + t.V + ", bv);\n";
  std::string scale = std::string(w.empty() ? "" : " * wv[k]") + (b.empty() ? "" : " + bv[k]");
  std::string body;
  if (!centered) {
    std::string v = registers ? "x[j][k]" : "v[k]";
    std::string squares = "    float q = 0.0f;\n" +
                          (registers ? overRegisters(t, "q += x[j][k] * x[j][k];")
                                     : t.forEachLoad(load + t.forEachElement("q += v[k] * v[k];"), 4)) +
                          t.reduce("q", kFloatSum) + "    const float inv = rsqrtf(q / " +
                          n + " + " + eps + ");\n";
    std::string normalize = affine + t.forEachElement(v + " = " + v + " * inv" + scale + ";") + store;
    body = registers ? load + squares + t.forEachLoad(normalize)
                     : squares + t.forEachLoad(load + normalize, 4);
  } else if (registers) {
    body = load + "    float s = 0.0f;\n" +
           overRegisters(t, "s += x[j][k];") + t.reduce("s", kFloatSum) +
           "    const float mean = s / " + n + ";\n    float q = 0.0f;\n" +
           overRegisters(t, "{ x[j][k] -= mean; q += x[j][k] * x[j][k]; }") +
           t.reduce("q", kFloatSum) + "    const float inv = rsqrtf(q / " + n +
           " + " + eps + ");\n" +
           t.forEachLoad(affine + t.forEachElement("x[j][k] = x[j][k] * inv" + scale + ";") +
                         store);
  } else {
    const std::string &v = load;
    body = "    float s = 0.0f;\n" +
           t.forEachLoad(v + t.forEachElement("s += v[k];"), 4) +
           t.reduce("s", kFloatSum) + "    const float mean = s / " + n +
           ";\n    float q = 0.0f;\n" +
           t.forEachLoad(v + t.forEachElement("{ float d = v[k] - mean; q += d * d; }"), 4) +
           t.reduce("q", kFloatSum) + "    const float inv = rsqrtf(q / " + n +
           " + " + eps + ");\n" +
           t.forEachLoad(v + affine +
                             t.forEachElement("v[k] = (v[k] - mean) * inv" + scale + ";") +
                             store,
                         4);
  }
  t.finish(kernel, body);
}

/// One vector of a streamed row into the running (max m, sum s): the
/// vector's maximum first, one rescale of s when it raises m (rare after
/// the first vectors), then an expf per element without a branch. A row
/// of -inf so far adds nothing; NaN poisons m and s.
static std::string streamVector(const RowText &t) {
  return "        float vm = v[0];\n" +
         t.forEachElement("vm = cgc_max(vm, v[k]);") +
         "        if (vm > m) { s = m == -CGC_INF ? 0.0f : s * expf(m - vm); m = vm; }\n"
         "        else if (vm != vm) { m = vm; }\n"
         "        if (m != -CGC_INF)\n" +
         t.forEachElement("s += expf(v[k] - m);");
}

/// cross_entropy over [N, C] logits: each row's loss m + log(sum exp(x -
/// m)) - x[target] (0 for an ignored target) goes to the result (no
/// reduction) or, with its count, to \p scratch for the second kernel.
/// The row is read once and not kept: each thread streams its share with
/// a running (max, sum) pair (online log-sum-exp), so blocks stay at 256
/// threads and eight fit on a multiprocessor.
static void emitRowCrossEntropy(const Node &node, const Schedule &record,
                                Kernel &kernel, const Storage *scratch) {
  int64_t classes = staticShape(node.operand(0)->getType())[1];
  RowText t(record);
  std::string x = addParam(kernel, node.operand(0), false);
  std::string target = addParam(kernel, node.operand(1), false);
  std::string out = scratch ? addScratchParam(kernel, *scratch, true, "float")
                            : addParam(kernel, node.result(), true);
  std::string c = std::to_string(classes) + "LL";
  std::string ignore = std::to_string(node.intAttr("ignore_index", -100)) + "LL";
  std::string body =
      "    float m = -CGC_INF, s = 0.0f;\n" +
      t.forEachLoad("        float v[" + t.V + "];\n" + t.load(x, "v") +
                        streamVector(t),
                    t.s.loads > 8 ? 4 : 0) +
      "    cgc_group_lse<" + t.L + ">(m, s);\n"
      "    if (live && lane == 0) {\n"
      "      const long long target = (long long)cgc_ld(" + target + ", row);\n"
      "      const bool ignored = target == " + ignore + " || target < 0 || target >= " +
      c + ";\n"
      // (m - x[target]) + log(s): the difference first, so large logits
      // (1e8) do not absorb log(s) (as the interpreter computes it).
      "      const float loss = ignored ? 0.0f : (m - (float)cgc_ld(" + x +
      ", row * " + c + " + target)) + logf(s);\n" +
      (scratch ? "      " + out + "[2 * row] = loss;\n      " + out +
                     "[2 * row + 1] = ignored ? 0.0f : 1.0f;\n"
               : "      cgc_st(" + out + ", row, loss);\n") +
      "    }\n";
  t.finish(kernel, body);
}

/// The second kernel of a reduced cross_entropy: one block sums the rows'
/// losses and counts in a fixed order.
static void emitCrossEntropyTotal(const Node &node, const Storage &scratch,
                                  Kernel &kernel) {
  int64_t rows = staticShape(node.operand(0)->getType())[0];
  std::string in = addScratchParam(kernel, scratch, false, "float");
  std::string out = addParam(kernel, node.result(), true);
  bool mean = node.strAttr("reduction", "mean") == "mean";
  kernel.block[0] = 1024;
  kernel.grid[0] = 1;
  kernel.body =
      "  float total = 0.0f, count = 0.0f;\n"
      "  for (long long r = threadIdx.x; r < " + std::to_string(rows) +
      "LL; r += 1024) { total += " + in + "[2 * r]; count += " + in + "[2 * r + 1]; }\n"
      "  total = cgc_block_sum(total);\n  count = cgc_block_sum(count);\n"
      "  if (threadIdx.x == 0) cgc_st(" + out + ", 0, total" +
      (mean ? " / (count > 0.0f ? count : 1.0f)" : "") + ");\n";
}

/// Phase 1 of a column reduction: block b reduces rows [chunk * per,
/// (chunk + 1) * per) of its 32 * V column tile into the result (one
/// chunk) or its partials.
static void emitColumnPartials(const Node &node, const ColumnSplit &c,
                               const Storage *partials, Kernel &kernel) {
  DType in = node.operand(0)->getType().dtype;
  Accumulator a = accumulatorOf(node, in);
  std::string x = addParam(kernel, node.operand(0), false);
  std::string out = partials ? addScratchParam(kernel, *partials, true, a.type)
                             : addParam(kernel, node.result(), true);
  int64_t per = (c.length + c.chunks - 1) / c.chunks;
  int64_t tilesPerOuter = c.tiles() / c.outer;
  std::string V = std::to_string(c.vector), I = std::to_string(c.inner) + "LL";
  std::string W = std::to_string(32 * c.vector);
  std::string finalValue = !partials && a.mean
                               ? "r / " + floatLiteral(float(c.length)) : "r";
  std::string dest = partials ? "(long long)chunk * " +
                                    std::to_string(c.outer * c.inner) + "LL + o * " + I + " + col + k"
                              : "o * " + I + " + col + k";
  kernel.block[0] = 256;
  kernel.grid[0] = uint32_t(c.tiles() * c.chunks);
  kernel.body =
      "  __shared__ " + a.type + " part[8][" + W + "];\n"
      "  const long long tile = blockIdx.x / " + std::to_string(c.chunks) +
      "LL, chunk = blockIdx.x % " + std::to_string(c.chunks) + "LL;\n"
      "  const long long o = tile / " + std::to_string(tilesPerOuter) +
      "LL, col = (tile % " + std::to_string(tilesPerOuter) + "LL * 32 + threadIdx.x % 32) * " +
      V + ";\n"
      "  const unsigned ty = threadIdx.x / 32;\n"
      "  const long long end = cgc_min((chunk + 1) * " + std::to_string(per) +
      "LL, " + std::to_string(c.length) + "LL);\n"
      "  " + a.type + " acc[" + V + "];\n"
      "#pragma unroll\n  for (int k = 0; k < " + V + "; ++k) acc[k] = " + a.init + ";\n"
      "  if (col < " + I + ")\n"
      "#pragma unroll 4\n"
      "    for (long long l = chunk * " + std::to_string(per) + "LL + ty; l < end; l += 8) {\n"
      "      " + a.type + " v[" + V + "];\n"
      "      cgc_ldv<" + V + ", " + a.type + ">(" + x + ", (o * " +
      std::to_string(c.length) + "LL + l) * " + I + " + col, v);\n"
      "#pragma unroll\n      for (int k = 0; k < " + V + "; ++k) " +
      fold(a, "v[k]", "acc[k]") + "\n    }\n"
      "#pragma unroll\n  for (int k = 0; k < " + V + "; ++k) part[ty][(threadIdx.x % 32) * " +
      V + " + k] = acc[k];\n"
      "  __syncthreads();\n"
      "  if (ty == 0 && col < " + I + ")\n"
      "#pragma unroll\n    for (int k = 0; k < " + V + "; ++k) {\n"
      "      " + a.type + " r = part[0][threadIdx.x * " + V + " + k];\n"
      "      for (int t = 1; t < 8; ++t) " +
      fold(a, "part[t][threadIdx.x * " + V + " + k]", "r") + "\n"
      "      " + (partials ? out + "[" + dest + "] = r;" : "cgc_st(" + out + ", " + dest + ", " + finalValue + ");") +
      "\n    }\n";
}

/// Phase 2 of a column reduction: a thread per column combines its
/// chunks' partials in order.
static void emitColumnCombine(const Node &node, const ColumnSplit &c,
                              const Storage &partials, Kernel &kernel,
                              unsigned multiprocessors) {
  Accumulator a = accumulatorOf(node, node.operand(0)->getType().dtype);
  std::string in = addScratchParam(kernel, partials, false, a.type);
  std::string out = addParam(kernel, node.result(), true);
  int64_t columns = c.outer * c.inner;
  std::string result =
      a.mean ? "acc / " + floatLiteral(float(c.length)) : "acc";
  kernel.block[0] = 256;
  kernel.grid[0] = residentGrid((columns + 255) / 256, 256, multiprocessors);
  kernel.body =
      gridStrideLoop("i", columns, 256) + "    " +
      a.type + " acc = " + a.init + ";\n    for (long long c = 0; c < " +
      std::to_string(c.chunks) + "LL; ++c) " +
      fold(a, in + "[c * " + std::to_string(columns) + "LL + i]") +
      "\n    cgc_st(" + out + ", i, " + result + ");\n  }\n";
}

bool cgc::emitRowKernels(const Node &node, const Schedule &record,
                         const Storage *scratch, unsigned multiprocessors,
                         Kernel &first, Kernel *second, std::string &why) {
  RowIO io(node, first);
  why = io.refusal(record);
  if (!why.empty())
    return false;
  const Node &row = io.row();
  switch (record.strategy) {
  case Strategy::SplitRows:
    emitSplitReduction(row, reductionSplitIn(record), *scratch, first, *second);
    return true;
  case Strategy::Columns: {
    ColumnSplit c = columnSplitIn(record);
    emitColumnPartials(row, c, c.chunks > 1 ? scratch : nullptr, first);
    if (c.chunks > 1)
      emitColumnCombine(row, c, *scratch, *second, multiprocessors);
    return true;
  }
  case Strategy::Rows:
    break;
  case Strategy::GeneratedProduct:
  case Strategy::TiledProduct:
  case Strategy::MmaProduct:
  case Strategy::LibraryProduct:
  case Strategy::FusedAttention:
  case Strategy::MmaAttention:
  case Strategy::DecodeAttention:
  case Strategy::LibraryConvolution:
    llvm_unreachable("the schedule pass gives row ops row records");
  }
  if (reducedRun(row)) {
    emitRowReduction(io, record, first);
    return true;
  }
  switch (row.getOp()) {
  case OpKind::Softmax: case OpKind::LogSoftmax:
    emitRowSoftmax(io, record, first);
    return true;
  case OpKind::LayerNorm: case OpKind::RmsNorm:
    emitRowNorm(io, record, first);
    return true;
  case OpKind::CrossEntropy:
    emitRowCrossEntropy(row, record, first, scratch);
    if (scratch)
      emitCrossEntropyTotal(row, *scratch, *second);
    return true;
  case OpKind::MseLoss: case OpKind::BatchNorm:
#define CGC_NORMALIZATION_OP(...)
#define CGC_LOSS_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("runsOnRows() admits no other op");
}
