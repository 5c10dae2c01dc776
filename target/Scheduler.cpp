//===- Scheduler.cpp - Records from the rules, and their check ---------------===//
//
// scheduleOf() asks the rules (ProductRule.h, ReductionRule.h) how a heavy
// node runs and writes the answer, its launch and its scratch into one
// record; checkSchedule() says whether a record, the rules' or a
// hand-written one, can run the node: the strategy fits the op and its
// shape, and every number is the one its kernels need (kernels without a
// grid-stride loop need their exact grid; grid-stride ones any grid).
// The records of row and column kernels are RowRecords.cpp's.
//
//===----------------------------------------------------------------------===//
#include "target/Scheduler.h"
#include "target/ScheduleRecords.h"

#include "ir/ConvolutionShape.h"
#include "ir/ProductEpilogue.h"
#include "ir/RowFusion.h"
#include "ir/TypeRules.h"
#include "target/AttentionRule.h"
#include "target/ConvolutionRule.h"
#include "target/ProductRule.h"
#include "target/ReductionRule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"

using namespace cgc;
using F = ScheduleField;

bool cgc::isConvolutionNode(const Node &node) {
  return isWeightedConvolution(node.getOp()) || node.getOp() == OpKind::ConvolutionFusion;
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

bool cgc::needsSchedule(const Node &node) {
  if (!hasStaticTypes(node))
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
           (mmaAttentionRefusal(attention, target).empty() &&
            mmaAttentionPays(attention, target)) ||
           decodeAttentionPays(attention);
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

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

/// What a product_fusion asks of its kernel beyond the product.
struct ProductExtras {
  /// The kernel computes its input rows: a layernorm or a prologue.
  bool computedInput = false, erfGelu = false;
};

static ProductExtras extrasOf(const Node &node) {
  ProductExtras e;
  if (node.getOp() != OpKind::ProductFusion)
    return e;
  // Members before the product compute its input (the type rule).
  e.computedInput = !node.region(0).nodes().front()->info().has(MatMul);
  for (const auto &member : node.region(0).nodes())
    e.erfGelu |= ProductEpilogue::activationOf(member->getOp()) ==
                 ProductEpilogue::Activation::Gelu;
  return e;
}

/// The launch and scratch of \p strategy for \p p (a tiled or mma record
/// of \p tile, or the rule's for \p target when 0).
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
  case Strategy::MmaProduct:
    s[F::Tile] = tile ? tile : mmaProductColumns(p, target);
    s[F::GridX] = ceilDiv(p.n, s[F::Tile]);
    s[F::GridY] = ceilDiv(p.m, kMmaProductRows);
    s[F::Block] = kMmaProductBlock;
    return s;
  case Strategy::LibraryProduct:
    s[F::Scratch] = int64_t(productWorkspaceBytes(p));
    return s;
  case Strategy::Rows:
  case Strategy::SplitRows:
  case Strategy::Columns:
  case Strategy::FusedAttention:
  case Strategy::MmaAttention:
  case Strategy::DecodeAttention:
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
    if (extras.computedInput &&
        !computesInputRows(p, Strategy::GeneratedProduct))
      return "the input rows this product computes (its layernorm or "
             "prologue) need " +
             std::to_string(p.m * p.k * dtypeSize(p.dtype)) +
             " bytes of shared memory, more than the " +
             std::to_string(kComputedInputMaxBytes) +
             " a generated product takes; keep them outside the "
             "product_fusion";
    break;
  case Strategy::TiledProduct:
    if (!tiledRuns(p))
      return "the tiled product kernel needs one batch of f32 with k > 0";
    if (r[F::Tile] != kProductTile && r[F::Tile] != kSmallProductTile)
      return "tile must be " + std::to_string(kProductTile) + " or " +
             std::to_string(kSmallProductTile);
    break;
  case Strategy::MmaProduct:
    if (!mmaRuns(p, target))
      return "the tensor-core product kernel needs sm_80 or newer (here " +
             target.arch + "), one batch of f16 or bf16, no "
             "transpose_a, k a positive multiple of 8 and, without "
             "transpose_b, n too, and 16 columns of weight that fit its "
             "shared memory";
    if (!llvm::is_contained(kMmaProductColumns, r[F::Tile]))
      return "tile (columns per block) must be 16, 32 or 64";
    if (mmaProductSharedBytes(p, r[F::Tile]) > sharedBytesPerBlock(target))
      return "a weight slice of " + std::to_string(r[F::Tile]) + " columns needs " +
             std::to_string(mmaProductSharedBytes(p, r[F::Tile])) +
             " bytes of shared memory, more than a block has on " + target.arch;
    break;
  case Strategy::LibraryProduct:
    if (p.k == 0)
      return "a product with an empty contraction (k = 0) and more than " +
             std::to_string(kGeneratedProductMaxRows) +
             " rows or a batch is not supported by codegen yet";
    if (extras.computedInput || extras.erfGelu)
      return "this product runs on cuBLASLt, which computes no input rows (a "
             "layernorm or prologue) and gelu in its tanh form only; keep "
             "those ops outside the product_fusion (fuse-epilogue does)";
    if (r[F::Scratch] < (int64_t(1) << 20) || r[F::Scratch] > (int64_t(1) << 32))
      return "scratch (the cuBLASLt workspace) must be from 2^20 to 2^32 bytes";
    return "";
  case Strategy::Rows:
  case Strategy::SplitRows:
  case Strategy::Columns:
  case Strategy::FusedAttention:
  case Strategy::MmaAttention:
  case Strategy::DecodeAttention:
  case Strategy::LibraryConvolution:
    return "a product runs as generated_product, tiled_product, "
           "mma_product or library_product, not " + name;
  }
  if (extras.computedInput && r.strategy != Strategy::GeneratedProduct)
    return "only the generated product kernel computes its input rows (a "
           "layernorm or prologue before the product)";
  Schedule launch = productRecord(p, r.strategy, target, r[F::Tile]);
  for (F f : {F::GridX, F::GridY, F::Block})
    if (strategyHas(r.strategy, f) && r[f] != launch[f])
      return fieldName(f).str() + " must be " + std::to_string(launch[f]) +
             " (one block per " +
             (r.strategy == Strategy::GeneratedProduct ? "8 columns" : "tile") +
             ", no grid-stride loop)";
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

static Schedule mmaAttentionRecord(const AttentionShape &shape, int64_t warps,
                                   int64_t split) {
  Schedule s;
  s.strategy = Strategy::MmaAttention;
  s[F::Tile] = 16 * warps;
  s[F::GridX] = mmaAttentionBlocks(shape, warps);
  s[F::Block] = 32 * warps * split;
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
  AttentionShape shape = attentionShape(node);
  int64_t split = r[F::Block] / (32 * warps);
  if (split < 1 || r[F::Block] % (32 * warps) != 0 || (split & (split - 1)) != 0 ||
      warps * split > kMmaAttentionMaxBlockWarps)
    return "block must be 32 x " + std::to_string(warps) +
           " (the row warps) x a split of the keys of 1, 2, 4 or 8, at most 256 threads";
  if (mmaAttentionSharedBytes(shape, warps, split) > kAttentionSharedBytes)
    return "the key split's combine needs " +
           std::to_string(mmaAttentionSharedBytes(shape, warps, split)) +
           " bytes of shared memory, more than " + std::to_string(kAttentionSharedBytes);
  Schedule launch = mmaAttentionRecord(shape, warps, split);
  if (launch[F::GridX] > INT32_MAX)
    return "more than 2^31 - 1 blocks";
  if (r[F::GridX] != launch[F::GridX])
    return expect(F::GridX, launch[F::GridX],
                  "one block per " + std::to_string(r[F::Tile]) + " rows and head");
  return "";
}

static Schedule decodeAttentionRecord(const AttentionShape &shape,
                                      const DecodeAttentionLaunch &l) {
  Schedule s;
  s.strategy = Strategy::DecodeAttention;
  s[F::Tile] = l.rowsPerBlock;
  s[F::Chunks] = l.split;
  s[F::GridX] = l.blocks();
  s[F::Block] = kDecodeAttentionBlock;
  s[F::Scratch] = decodeAttentionScratch(shape, l);
  return s;
}

static std::string checkDecodeAttention(const Node &node, const Schedule &r) {
  std::string refusal = decodeAttentionRefusal(node);
  if (!refusal.empty())
    return refusal + "; expand-attention writes it out as products and a softmax";
  AttentionShape shape = attentionShape(node);
  if (r[F::Tile] < 1 || r[F::Tile] > kDecodeAttentionBlockRows)
    return "tile (query rows per block) must be from 1 to " +
           std::to_string(kDecodeAttentionBlockRows);
  int64_t most = std::max<int64_t>(ceilDiv(shape.keys, kDecodeAttentionSpanUnit), 1);
  if (r[F::Chunks] < 1 || r[F::Chunks] > most)
    return "chunks (the keys' spans) must be from 1 to " + std::to_string(most) +
           " (spans of at least " +
           std::to_string(kDecodeAttentionSpanUnit) + " keys)";
  DecodeAttentionLaunch l = decodeAttentionLaunch(shape, r[F::Tile], r[F::Chunks]);
  if (l.split != r[F::Chunks])
    return expect(F::Chunks, l.split, "spans of " + std::to_string(l.span) +
                                          " keys, a multiple of " +
                                          std::to_string(kDecodeAttentionSpanUnit));
  Schedule launch = decodeAttentionRecord(shape, l);
  if (launch[F::GridX] > INT32_MAX)
    return "more than 2^31 - 1 blocks";
  for (F f : {F::GridX, F::Block, F::Scratch})
    if (r[f] != launch[f])
      return expect(f, launch[f], "one block of " + std::to_string(kDecodeAttentionBlock) +
                                      " threads per row chunk and span, " +
                                      "the partials between the kernels");
  return "";
}

static std::string checkAttention(const Node &node, const Schedule &r,
                                  const Target &target) {
  if (r.strategy == Strategy::MmaAttention)
    return checkMmaAttention(node, r, target);
  if (r.strategy == Strategy::DecodeAttention)
    return checkDecodeAttention(node, r);
  if (r.strategy != Strategy::FusedAttention)
    return "attention runs as fused_attention, mma_attention or decode_attention, not " +
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
    return mnemonic(node.getOp()).str() + " runs as library_convolution, not " +
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
  } else if (node.getOp() == OpKind::Attention && decodeAttentionPays(node)) {
    AttentionShape shape = attentionShape(node);
    DecodeAttentionLaunch l = decodeAttentionRule(shape, target);
    s = decodeAttentionRecord(shape, l);
    s.reason = "decode-shaped: " + std::to_string(s[F::GridX]) + " blocks of " +
               std::to_string(l.rowsPerBlock) + " query rows over spans of " +
               std::to_string(l.span) + " keys (" + std::to_string(target.multiprocessors) +
               " multiprocessors)";
  } else if (node.getOp() == OpKind::Attention &&
      mmaAttentionRefusal(node, target).empty()) {
    AttentionShape shape = attentionShape(node);
    int64_t warps = mmaAttentionWarps(shape, target);
    int64_t split = mmaAttentionSplit(shape, target);
    s = mmaAttentionRecord(shape, warps, split);
    s.reason = "tensor cores: " + std::to_string(s[F::GridX]) + " blocks of " +
               std::to_string(warps) + " warps of 16 query rows (" +
               std::to_string(target.multiprocessors) + " multiprocessors)";
    if (split > 1)
      s.reason += ", their keys split over " + std::to_string(split) + " warps";
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
    s = productRecord(p, productStrategy(p, target, &reason), target);
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
  return checkRowRecord(node, rowOpOf(node), record);
}

Strategy cgc::productStrategyOf(const Node &product, const Target &target) {
  return productStrategy(productProblem(product), target);
}

DecodeAttentionLaunch cgc::decodeAttentionLaunchOf(const Node &attention,
                                                   const Schedule &record) {
  return decodeAttentionLaunch(attentionShape(attention), record[F::Tile], record[F::Chunks]);
}

bool cgc::productComputesInput(const Node &product, const Target &target) {
  ProductProblem p = productProblem(product);
  return computesInputRows(p, productStrategy(p, target));
}

bool cgc::productComputesPrologue(const Node &product, size_t ops,
                                  const Target &target) {
  ProductProblem p = productProblem(product);
  return computesInputPrologue(p, productStrategy(p, target), ops);
}

uint64_t cgc::mmaProductSharedBytesOf(const ProductProblem &problem, int64_t columns) {
  return mmaProductSharedBytes(problem, columns);
}

bool cgc::readsRowsOnce(const Node &node) { return rowReadOnce(node); }

bool cgc::runsAsOneRow(const Node &node) { return rowScheduleOf(node).rows == 1; }

unsigned cgc::rowVectorOf(const Node &node) {
  return rowScheduleOf(node).vector;
}
