//===- Scheduler.cpp - Records from the rules, and their check ---------------===//
//
// scheduleOf() asks the rules (ProductRule.h, ReductionRule.h) how a heavy
// node runs and writes the answer, its launch and its scratch into one
// record; checkSchedule() says whether a record, the rules' or a
// hand-written one, can run the node: the strategy fits the op and its
// shape, and every number is the one its kernels need (kernels without a
// grid-stride loop need their exact grid; grid-stride ones any grid).
//
//===----------------------------------------------------------------------===//
#include "target/Scheduler.h"

#include "ir/ProductEpilogue.h"
#include "ir/RowFusion.h"
#include "ir/TypeRules.h"
#include "target/AttentionRule.h"
#include "target/ConvolutionRule.h"
#include "target/ProductRule.h"
#include "target/ReductionRule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/MathExtras.h"

using namespace cgc;
using F = ScheduleField;

bool cgc::isConvolutionNode(const Node &node) {
  return node.getOp() == OpKind::Conv || node.getOp() == OpKind::ConvolutionFusion;
}

bool cgc::isProductNode(const Node &node) {
  return node.info().has(MatMul) || node.getOp() == OpKind::ProductFusion;
}

/// The row op a row node's kernels are shaped by: itself, or a
/// row_fusion's root.
static const Node &rowOpOf(const Node &node) {
  if (node.getOp() == OpKind::RowFusion)
    return *rowFusionParts(node.region(0)).root;
  return node;
}

bool cgc::runsOnRows(const Node &node) {
  OpKind op = node.getOp();
  // cross_entropy's logits are [N, C] (its type rule).
  return reducedRun(node) || isInnermostSoftmax(node) ||
         op == OpKind::RowFusion || isRowNorm(node) ||
         op == OpKind::CrossEntropy;
}

static bool isStatic(const Node &node) {
  for (const Value *v : node.getOperands())
    if (!v->getType().isStatic())
      return false;
  for (unsigned r = 0; r < node.numResults(); ++r)
    if (!node.result(r)->getType().isStatic())
      return false;
  return true;
}

bool cgc::needsSchedule(const Node &node) {
  if (!isStatic(node))
    return false;
  if (isProductNode(node))
    return node.result()->getType().numElements() != 0;
  return runsOnRows(node) || node.getOp() == OpKind::Attention ||
         isConvolutionNode(node);
}

bool cgc::attentionRunsFused(const Node &attention, const Target &target) {
  switch (target.attention) {
  case AttentionPolicy::FusedWhereFaster: // A record given is the schedule pass's to check.
    return attention.schedule() ||
           (fusedAttentionRefusal(attention).empty() && fusedAttentionPays(attention)) ||
           (mmaAttentionRefusal(attention, target).empty() && mmaAttentionPays(attention));
  case AttentionPolicy::Expand:
    return false;
  }
  llvm_unreachable("an AttentionPolicy value");
}

bool cgc::convolutionRunsOnLibrary(const Node &conv, const Target &target) {
  switch (target.convolution) {
  case ConvolutionPolicy::LibraryWherePossible: // A record given is the schedule pass's to check.
    return conv.schedule() || libraryConvolutionRefusal(conv).empty();
  case ConvolutionPolicy::Expand:
    return false;
  }
  llvm_unreachable("a ConvolutionPolicy value");
}

bool cgc::convolutionTakesEpilogue(const Node &conv, const Target &target) {
  return convolutionRunsOnLibrary(conv, target) && convolutionEpilogueRefusal(conv).empty();
}

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

/// What a product_fusion asks of its kernel beyond the product.
struct ProductExtras {
  bool inputNorm = false, erfGelu = false;
};

static ProductExtras extrasOf(const Node &node) {
  ProductExtras e;
  if (node.getOp() != OpKind::ProductFusion)
    return e;
  for (const auto &member : node.region(0).nodes()) {
    e.inputNorm |= isRowNorm(*member);
    e.erfGelu |= ProductEpilogue::activationOf(member->getOp()) ==
                 ProductEpilogue::Activation::Gelu;
  }
  return e;
}

/// The launch and scratch of \p strategy for \p p (a tiled record of
/// \p tile, or the rule's for \p target when 0).
static Schedule productRecord(const ProductProblem &p, Strategy strategy,
                              const Target &target, int64_t tile = 0) {
  Schedule s;
  s.strategy = strategy;
  switch (strategy) {
  case Strategy::GeneratedProduct:
    s[F::Vector] = generatedProductVector(p);
    s[F::GridX] = ceilDiv(p.n, kGeneratedProductBlock / 32);
    s[F::Block] = kGeneratedProductBlock;
    return s;
  case Strategy::TiledProduct:
    s[F::Tile] = tile ? tile : productTile(p, target.multiprocessors);
    s[F::GridX] = ceilDiv(p.n, s[F::Tile]);
    s[F::GridY] = ceilDiv(p.m, s[F::Tile]);
    s[F::Block] = kTiledProductBlock;
    return s;
  case Strategy::LibraryProduct:
    s[F::Scratch] = int64_t(productWorkspaceBytes(p));
    return s;
  case Strategy::Rows:
  case Strategy::SplitRows:
  case Strategy::Columns:
  case Strategy::FusedAttention:
  case Strategy::MmaAttention:
  case Strategy::LibraryConvolution:
    break;
  }
  llvm_unreachable("a product strategy");
}

static std::string checkProduct(const Node &node, const Schedule &r,
                                const Target &target) {
  const ProductProblem p = productProblem(productOf(node));
  ProductExtras extras = extrasOf(node);
  std::string name = strategyName(r.strategy).str();
  switch (r.strategy) {
  case Strategy::GeneratedProduct:
    if (!generatedRuns(p))
      return "the generated product kernel needs one batch, at most 32 rows "
             "and a weight stored along k (a linear's, or transpose_b)";
    if (r[F::Vector] != 1 && r[F::Vector] != generatedProductVector(p))
      return "vector must be 1 or " + std::to_string(generatedProductVector(p)) +
             " (16-byte loads of rows of k = " + std::to_string(p.k) + ")";
    if (extras.inputNorm &&
        !fusesInputLayerNorm(p, Strategy::GeneratedProduct))
      return "the input layernorm of this product needs " +
             std::to_string(p.m * p.k * dtypeSize(p.dtype)) +
             " bytes of rows in shared memory, more than the " +
             std::to_string(kNormalizedInputMaxBytes) +
             " a generated product takes; keep the layernorm outside the "
             "product_fusion";
    break;
  case Strategy::TiledProduct:
    if (!tiledRuns(p))
      return "the tiled product kernel needs one batch of f32 with k > 0";
    if (r[F::Tile] != kProductTile && r[F::Tile] != kSmallProductTile)
      return "tile must be " + std::to_string(kProductTile) + " or " +
             std::to_string(kSmallProductTile);
    break;
  case Strategy::LibraryProduct:
    if (p.k == 0)
      return "a product with an empty contraction (k = 0) and more than " +
             std::to_string(kGeneratedProductMaxRows) +
             " rows or a batch is not supported by codegen yet";
    if (extras.inputNorm || extras.erfGelu)
      return "this product runs on cuBLASLt, which has no input layernorm and "
             "computes gelu in its tanh form only; keep those ops outside the "
             "product_fusion (fuse-epilogue does)";
    if (r[F::Scratch] < (int64_t(1) << 20) || r[F::Scratch] > (int64_t(1) << 32))
      return "scratch (the cuBLASLt workspace) must be from 2^20 to 2^32 bytes";
    return "";
  case Strategy::Rows:
  case Strategy::SplitRows:
  case Strategy::Columns:
  case Strategy::FusedAttention:
  case Strategy::MmaAttention:
  case Strategy::LibraryConvolution:
    return "a product runs as generated_product, tiled_product or "
           "library_product, not " + name;
  }
  if (extras.inputNorm && r.strategy != Strategy::GeneratedProduct)
    return "only the generated product kernel normalizes its input rows";
  Schedule launch = productRecord(p, r.strategy, target, r[F::Tile]);
  for (F f : {F::GridX, F::GridY, F::Block})
    if (strategyHas(r.strategy, f) && r[f] != launch[f])
      return fieldName(f).str() + " must be " + std::to_string(launch[f]) +
             " (one block per " +
             (r.strategy == Strategy::TiledProduct ? "tile" : "8 columns") +
             ", no grid-stride loop)";
  return "";
}

//===----------------------------------------------------------------------===//
// Rows and columns
//===----------------------------------------------------------------------===//

static DType inputType(const Node &row) { return row.operand(0)->getType().dtype; }

/// The row op's rows and length: its reduced run, or its trailing axes.
static std::pair<int64_t, int64_t> rowsOf(const Node &row) {
  RowSchedule s = rowScheduleOf(row);
  return {s.rows, s.length};
}

static uint32_t rowBlock(unsigned lanes) {
  return lanes > 32 ? lanes : RowSchedule::kRowBlock;
}

static int64_t rowGrid(int64_t rows, unsigned lanes, const Target &target) {
  int64_t slots = lanes > 32 ? 1 : RowSchedule::kRowBlock / lanes;
  return residentGrid(ceilDiv(rows, slots), rowBlock(lanes),
                      target.multiprocessors);
}

/// The scratch of a rows record: a reduced cross_entropy's per-row losses
/// and counts for its second kernel; no other row op has a second kernel.
static int64_t rowsScratch(const Node &row) {
  return row.getOp() == OpKind::CrossEntropy ? int64_t(phaseScratchBytes(row))
                                             : 0;
}

/// Whether a split reduction of \p length elements of \p dtype loads
/// float4 in phase 1.
static bool splitLoadsFloat4(DType dtype, int64_t length) {
  return dtype == DType::F32 && length % 4 == 0;
}

/// The block of the split and column kernels: 256 threads (32 x 8 for
/// columns).
constexpr int64_t kPartialsBlock = 256;

static Schedule rowsRecord(const Node &row, const Target &target) {
  RowSchedule rs = rowScheduleOf(row);
  std::string streamed;
  if (row.getOp() == OpKind::CrossEntropy && rs.lanes > kStreamingRowBlock) {
    rs.lanes = kStreamingRowBlock;
    rs.loads = ceilDiv(std::max<int64_t>(ceilDiv(rs.length, rs.vector), 1),
                       rs.lanes);
    streamed = ", streamed by at most " + std::to_string(kStreamingRowBlock) +
               " lanes";
  }
  Schedule s;
  s.strategy = Strategy::Rows;
  s[F::Rows] = rs.rows;
  s[F::Length] = rs.length;
  s[F::Vector] = rs.vector;
  s[F::Lanes] = rs.lanes;
  s[F::Loads] = rs.loads;
  s[F::Block] = rowBlock(rs.lanes);
  s[F::GridX] = rowGrid(rs.rows, rs.lanes, target);
  s[F::Scratch] = rowsScratch(row);
  s.reason = std::to_string(rs.rows) + " rows of " + std::to_string(rs.length) +
             ": " + std::to_string(rs.vector) + "-element loads, the fewest " +
             "lanes (a power of two, <= 1024) that hold <= " +
             std::to_string(RowSchedule::kRowRegisterElements) +
             " elements each" + streamed +
             (rs.inRegisters() ? "; the row stays in registers"
                               : "; the row is read again per pass");
  return s;
}

static Schedule reductionRecord(const Node &row, const Target &target) {
  ReductionSplit split = reductionSplit(row);
  DType dtype = inputType(row);
  if (split.chunks) {
    Schedule s;
    s.strategy = Strategy::SplitRows;
    s[F::Rows] = split.rows;
    s[F::Length] = split.length;
    s[F::Vector] = splitLoadsFloat4(dtype, split.length) ? 4 : 1;
    s[F::Chunks] = split.chunks;
    s[F::GridX] = split.rows * split.chunks;
    s[F::Block] = kPartialsBlock;
    s[F::Scratch] = int64_t(phaseScratchBytes(row));
    s.reason = std::to_string(split.rows) + " rows < " +
               std::to_string(kSplitReductionMaxRows) + " of " +
               std::to_string(split.length) + " >= " +
               std::to_string(kSplitReductionMinLength) + ": " +
               std::to_string(split.chunks) + " blocks of <= " +
               std::to_string(kSplitReductionChunk) + " per row, then the " +
               "partials in order";
    return s;
  }
  ColumnSplit c = columnSplit(row);
  if (!c.chunks)
    return rowsRecord(row, target);
  Schedule s;
  s.strategy = Strategy::Columns;
  s[F::Rows] = c.outer;
  s[F::Length] = c.length;
  s[F::Inner] = c.inner;
  s[F::Vector] = c.vector;
  s[F::Chunks] = c.chunks;
  s[F::GridX] = c.tiles() * c.chunks;
  s[F::Block] = kPartialsBlock;
  s[F::Scratch] = int64_t(phaseScratchBytes(row));
  s.reason = std::to_string(c.tiles()) + " column tiles of " +
             std::to_string(32 * c.vector) + ", " + std::to_string(c.chunks) +
             " chunks each: toward " + std::to_string(kColumnTargetBlocks) +
             " blocks with >= " + std::to_string(kColumnMinChunkRows) +
             " rows per chunk";
  return s;
}

/// Whether \p vector elements per load can read rows of \p length of
/// \p dtype: a whole word that divides the row (bool and i64: 1).
static bool loadFits(int64_t vector, int64_t length, DType dtype) {
  if (vector == 1)
    return true;
  if (dtype == DType::Bool || dtype == DType::I64 || vector <= 0)
    return false;
  int64_t bytes = vector * dtypeSize(dtype);
  return (bytes == 4 || bytes == 8 || bytes == 16) && length % vector == 0;
}

static std::string expect(F field, int64_t want, const std::string &why) {
  return fieldName(field).str() + " must be " + std::to_string(want) + " (" +
         why + ")";
}

static std::string checkRows(const Node &node, const Node &row,
                             const Schedule &r) {
  auto [rows, length] = rowsOf(row);
  auto run = reducedRun(row);
  if (run && run->inner != 1)
    return "a reduction over dims that are not innermost runs as columns";
  if (r[F::Rows] != rows)
    return expect(F::Rows, rows, "the op's rows");
  if (r[F::Length] != length)
    return expect(F::Length, length, "the op's row length");
  DType dtype = inputType(row);
  if (!loadFits(r[F::Vector], length, dtype))
    return "vector " + std::to_string(r[F::Vector]) + " does not load rows of " +
           std::to_string(length) + " " + dtypeName(dtype).str() +
           " (whole 4-, 8- or 16-byte words that divide the row)";
  int64_t lanes = r[F::Lanes];
  int64_t cap = row.getOp() == OpKind::CrossEntropy ? kStreamingRowBlock : 1024;
  if (lanes < 1 || lanes > cap || !llvm::isPowerOf2_64(uint64_t(lanes)))
    return "lanes must be a power of two from 1 to " + std::to_string(cap);
  int64_t units = std::max<int64_t>(ceilDiv(length, r[F::Vector]), 1);
  if (r[F::Loads] != ceilDiv(units, lanes))
    return expect(F::Loads, ceilDiv(units, lanes), "vectors per row / lanes");
  if (r[F::Block] != rowBlock(unsigned(lanes)))
    return expect(F::Block, rowBlock(unsigned(lanes)),
                  "a block per row above 32 lanes, else 256 threads");
  if (r[F::GridX] < 1 || r[F::GridX] > INT32_MAX)
    return "grid_x must be from 1 to 2^31 - 1";
  int64_t scratch = rowsScratch(row);
  if (r[F::Scratch] != scratch)
    return expect(F::Scratch, scratch,
                  "a reduced cross_entropy's per-row losses and counts, "
                  "else none");
  if (node.getOp() == OpKind::RowFusion &&
      !rowScheduleIn(r).inRegisters())
    return "a row_fusion keeps its rows in registers: at most " +
           std::to_string(RowSchedule::kRowRegisterElements) +
           " elements per lane";
  return "";
}

static std::string checkSplit(const Node &node, const Node &row,
                              const Schedule &r) {
  auto run = reducedRun(row);
  if (!run || run->inner != 1 || node.getOp() == OpKind::RowFusion)
    return "split_rows runs a reduction over trailing dims";
  if (r[F::Rows] != run->outer)
    return expect(F::Rows, run->outer, "the op's rows");
  if (r[F::Length] != run->length)
    return expect(F::Length, run->length, "the op's row length");
  bool float4 = splitLoadsFloat4(inputType(row), run->length);
  if (r[F::Vector] != 1 && !(r[F::Vector] == 4 && float4))
    return "vector must be 1, or 4 for f32 rows of a multiple of 4";
  if (r[F::Chunks] < 2 || r[F::Chunks] > run->length ||
      r[F::Chunks] * run->outer > INT32_MAX)
    return "chunks must be from 2 to the row length";
  if (r[F::GridX] != run->outer * r[F::Chunks])
    return expect(F::GridX, run->outer * r[F::Chunks], "rows x chunks");
  if (r[F::Block] != kPartialsBlock)
    return expect(F::Block, kPartialsBlock, "the split kernels' block");
  int64_t scratch = run->outer * r[F::Chunks] * partialBytesOf(inputType(row));
  if (r[F::Scratch] != scratch)
    return expect(F::Scratch, scratch, "one partial per block");
  return "";
}

static std::string checkColumns(const Node &node, const Node &row,
                                const Schedule &r) {
  auto run = reducedRun(row);
  if (!run || run->inner == 1 || node.getOp() == OpKind::RowFusion)
    return "columns runs a reduction over dims that are not innermost";
  if (r[F::Rows] != run->outer || r[F::Length] != run->length ||
      r[F::Inner] != run->inner)
    return "rows, length and inner must be the op's " +
           std::to_string(run->outer) + ", " + std::to_string(run->length) +
           " and " + std::to_string(run->inner);
  DType dtype = inputType(row);
  bool wide = dtype == DType::F32 || dtype == DType::I32;
  if (r[F::Vector] != 1 && !(wide && loadFits(r[F::Vector], run->inner, dtype)))
    return "vector " + std::to_string(r[F::Vector]) +
           " does not load these columns (f32 or i32 words that divide inner)";
  if (r[F::Chunks] < 1 || r[F::Chunks] > std::max<int64_t>(run->length, 1))
    return "chunks must be from 1 to the reduced length";
  ColumnSplit c = columnSplitIn(r);
  if (r[F::GridX] != c.tiles() * c.chunks)
    return expect(F::GridX, c.tiles() * c.chunks, "column tiles x chunks");
  if (r[F::Block] != kPartialsBlock)
    return expect(F::Block, kPartialsBlock, "32 x 8 threads per tile");
  int64_t scratch = c.chunks > 1 ? c.chunks * c.outer * c.inner *
                                       partialBytesOf(dtype)
                                 : 0;
  if (r[F::Scratch] != scratch)
    return expect(F::Scratch, scratch, "one partial per chunk and column");
  return "";
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

static Schedule attentionRecord(const AttentionShape &shape, int64_t rowsPerWarp) {
  Schedule s;
  s.strategy = Strategy::FusedAttention;
  s[F::Tile] = kAttentionBlock / 32 * rowsPerWarp;
  s[F::GridX] = attentionBlocks(shape, rowsPerWarp);
  s[F::Block] = kAttentionBlock;
  return s;
}

static Schedule mmaAttentionRecord(const AttentionShape &shape, int64_t warps) {
  Schedule s;
  s.strategy = Strategy::MmaAttention;
  s[F::Tile] = 16 * warps;
  s[F::GridX] = mmaAttentionBlocks(shape, warps);
  s[F::Block] = 32 * warps;
  return s;
}

static std::string checkMmaAttention(const Node &node, const Schedule &r,
                                     const Target &target) {
  std::string refusal = mmaAttentionRefusal(node, target);
  if (!refusal.empty())
    return refusal + "; expand-attention writes it out as products and a softmax";
  int64_t warps = r[F::Tile] / 16;
  if (r[F::Tile] % 16 != 0 || warps < 1 || warps > 4)
    return "tile must be 16, 32, 48 or 64 (query rows: 1 to 4 warps of 16 rows)";
  Schedule launch = mmaAttentionRecord(attentionShape(node), warps);
  if (launch[F::GridX] > INT32_MAX)
    return "more than 2^31 - 1 blocks";
  for (F f : {F::GridX, F::Block})
    if (r[f] != launch[f])
      return expect(f, launch[f], "one warp per 16 query rows, one block per " +
                                      std::to_string(r[F::Tile]) + " rows and head");
  return "";
}

static std::string checkAttention(const Node &node, const Schedule &r,
                                  const Target &target) {
  if (r.strategy == Strategy::MmaAttention)
    return checkMmaAttention(node, r, target);
  if (r.strategy != Strategy::FusedAttention)
    return "attention runs as fused_attention or mma_attention, not " +
           strategyName(r.strategy).str();
  std::string refusal = fusedAttentionRefusal(node);
  if (!refusal.empty())
    return refusal + "; expand-attention writes it out as products and a softmax";
  AttentionShape shape = attentionShape(node);
  int64_t rowsPerWarp = r[F::Tile] / (kAttentionBlock / 32);
  if (r[F::Tile] % (kAttentionBlock / 32) != 0 ||
      !llvm::is_contained(std::initializer_list<int64_t>{1, 2, 4, 8, 16}, rowsPerWarp))
    return "tile must be 4, 8, 16, 32 or 64 (query rows: 4 warps of 1 to 16 rows)";
  if (attentionSharedBytes(shape, rowsPerWarp) > kAttentionSharedBytes)
    return "a tile of " + std::to_string(r[F::Tile]) + " query rows needs " +
           std::to_string(attentionSharedBytes(shape, rowsPerWarp)) +
           " bytes of shared memory, more than " +
           std::to_string(kAttentionSharedBytes);
  Schedule launch = attentionRecord(shape, rowsPerWarp);
  if (launch[F::GridX] > INT32_MAX)
    return "more than 2^31 - 1 blocks";
  for (F f : {F::GridX, F::Block})
    if (r[f] != launch[f])
      return expect(f, launch[f], "one block of " + std::to_string(kAttentionBlock) +
                                      " threads per query tile and head");
  return "";
}

//===----------------------------------------------------------------------===//
// Convolutions
//===----------------------------------------------------------------------===//

static Schedule convolutionRecord() {
  Schedule s;
  s.strategy = Strategy::LibraryConvolution;
  s[F::Scratch] = kConvolutionWorkspaceBytes;
  s.reason = "cuDNN, its engine chosen at load";
  return s;
}

static std::string checkConvolution(const Node &node, const Schedule &r) {
  if (r.strategy != Strategy::LibraryConvolution)
    return "conv runs as library_convolution, not " +
           strategyName(r.strategy).str();
  std::string refusal = libraryConvolutionRefusal(node);
  if (!refusal.empty())
    return refusal + "; expand-convolution writes it out as window gathers and products";
  if (r[F::Scratch] < 0 || r[F::Scratch] > (int64_t(1) << 40))
    return "scratch must be in [0, 2^40] bytes";
  return "";
}

//===----------------------------------------------------------------------===//
// The entry points
//===----------------------------------------------------------------------===//

llvm::Optional<Schedule> cgc::scheduleOf(const Node &node,
                                         const Target &target,
                                         std::string &error) {
  Schedule s;
  if (isConvolutionNode(node)) {
    s = convolutionRecord();
  } else if (node.getOp() == OpKind::Attention &&
      mmaAttentionRefusal(node, target).empty()) {
    AttentionShape shape = attentionShape(node);
    int64_t warps = mmaAttentionWarps(shape, target);
    s = mmaAttentionRecord(shape, warps);
    s.reason = "tensor cores: " + std::to_string(s[F::GridX]) + " blocks of " +
               std::to_string(warps) + " warps of 16 query rows (" +
               std::to_string(target.multiprocessors) + " multiprocessors)";
  } else if (node.getOp() == OpKind::Attention) {
    AttentionShape shape = attentionShape(node);
    int64_t rowsPerWarp = attentionRowsPerWarp(shape, target);
    s = attentionRecord(shape, rowsPerWarp);
    s.reason = std::to_string(attentionBlocks(shape, rowsPerWarp)) + " blocks of " +
               std::to_string(s[F::Tile]) + " query rows (" +
               std::to_string(target.multiprocessors) +
               " multiprocessors), " +
               std::to_string(attentionSharedBytes(shape, rowsPerWarp)) +
               " bytes of shared memory";
  } else if (isProductNode(node)) {
    ProductProblem p = productProblem(productOf(node));
    std::string reason;
    s = productRecord(p, productStrategy(p, target.products, &reason), target);
    s.reason = std::move(reason);
  } else {
    const Node &row = rowOpOf(node);
    if (node.getOp() == OpKind::RowFusion && !rowReadOnce(row)) {
      error = "cannot run as one row kernel: its row op reads rows more than "
              "once (a split or column reduction, or rows longer than "
              "registers hold)";
      return llvm::None;
    }
    s = reducedRun(row) ? reductionRecord(row, target)
                        : rowsRecord(row, target);
  }
  error = checkSchedule(node, s, target);
  if (!error.empty())
    return llvm::None;
  return s;
}

std::string cgc::checkSchedule(const Node &node, const Schedule &record,
                               const Target &target) {
  if (!needsSchedule(node))
    return "'" + mnemonic(node.getOp()).str() + "' takes no schedule record";
  if (isProductNode(node))
    return checkProduct(node, record, target);
  if (node.getOp() == OpKind::Attention)
    return checkAttention(node, record, target);
  if (isConvolutionNode(node))
    return checkConvolution(node, record);
  const Node &row = rowOpOf(node);
  switch (record.strategy) {
  case Strategy::Rows: return checkRows(node, row, record);
  case Strategy::SplitRows: return checkSplit(node, row, record);
  case Strategy::Columns: return checkColumns(node, row, record);
  case Strategy::GeneratedProduct:
  case Strategy::TiledProduct:
  case Strategy::LibraryProduct:
  case Strategy::FusedAttention:
  case Strategy::MmaAttention:
  case Strategy::LibraryConvolution:
    return "a row op runs as rows, split_rows or columns, not " +
           strategyName(record.strategy).str();
  }
  llvm_unreachable("a Strategy value");
}

Strategy cgc::productStrategyOf(const Node &product, const Target &target) {
  return productStrategy(productProblem(product), target.products);
}

bool cgc::productNormalizesInput(const Node &product, const Target &target) {
  ProductProblem p = productProblem(product);
  return fusesInputLayerNorm(p, productStrategy(p, target.products));
}

bool cgc::readsRowsOnce(const Node &node) { return rowReadOnce(node); }

bool cgc::runsAsOneRow(const Node &node) { return rowScheduleOf(node).rows == 1; }

unsigned cgc::rowVectorOf(const Node &node) {
  return rowScheduleOf(node).vector;
}
