//===- ProductRule.h - How a matrix product runs: the cost rule -*- C++ -*-===//
//
// A `matmul` or `linear` runs either as a kernel cgc generates or as one
// cuBLASLt call. Private to the scheduling library: the schedule pass
// records the rule's answer on the node (target/Scheduler.h), and
// everything after it reads the record. docs/passes.md gives the rule and
// the measurements behind its thresholds.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TARGET_PRODUCTRULE_H
#define CGC_TARGET_PRODUCTRULE_H

#include "ir/Schedule.h"
#include "target/Problem.h"
#include "target/Target.h"

#include <cstdint>
#include <string>

namespace cgc {

/// The rule: a product with one batch and a weight stored row by row along
/// k (a linear's [n, k] weight, or transpose_b) runs as a generated kernel
/// when its rows are few enough; everything else calls cuBLASLt. At such
/// sizes the product is bound by reading its weight and by launch cost,
/// where one fused kernel beats a library call; with more rows, the
/// generated kernel rereads x for every weight chunk (M loads per chunk)
/// while cuBLASLt's tensor cores keep up. Measured on an H100
/// (bench/product_rule.py; docs/passes.md has the table):
///   - f32 (full fp32, CUDA cores in cuBLASLt too): generated up to 16 rows
///     (N = K = 4096: 72.8 against 91.9 us at 16 rows; 32 rows even).
///   - f16/bf16: generated at 1 row (4096^2 bf16: 8.5 against 11.5 us), and
///     up to 4 rows when the weight is at most 1 MiB (256^2 bf16, 4 rows:
///     2.3 against 3.5 us); cuBLASLt beyond (4096^2 bf16, 4 rows: 14.8
///     against 10.3 us; 16 rows: 43.8 against 9.7).
/// Products of one batch in f32 with a short contraction, few outputs and
/// little work run as the tiled kernel, where a cuBLASLt call costs more
/// than the work. Measured on an H100 by `bench/product_rule.py --tiled`
/// (bench/results/product-tiled-NVIDIA-H100-80GB-HBM3-2026-11-24.log, one
/// product per graph replay): mlp_train_small's products 2.2-5.3 us
/// against 3.1-13.6 under cuBLASLt (m256 n128 k32 TN: 2.7 against 10.0);
/// 128^3 even (5.2 / 5.3). cuBLASLt wins once the block's serial k loop
/// grows (128x128x256: 8.6 against 6.5; 64x64x1024: 28.0 against 12.8),
/// the outputs many (512x512x16: 4.2 against 3.5; 1024x1024x4: 8.4
/// against 4.4) or the work large (256x256x128: 5.9 against 5.3). So:
/// k <= 256, m n <= 2^17, m n k <= 2^22, and k <= 128 unless m n k <= 2^20.
constexpr int64_t kGeneratedProductMaxRows = 16;
constexpr int64_t kGeneratedHalfProductMaxRows = 4;
constexpr uint64_t kGeneratedHalfProductSmallWeight = 1 << 20;
constexpr uint64_t kTiledProductMaxMacs = uint64_t(1) << 22;
constexpr uint64_t kTiledProductLongKMaxMacs = uint64_t(1) << 20;
constexpr int64_t kTiledProductMaxK = 256, kTiledProductShortK = 128;
constexpr uint64_t kTiledProductMaxOutputs = uint64_t(1) << 17;
/// cgc's tensor-core kernel (MmaProduct) runs f16 and bf16 products only
/// under `cgc --mma-products`: the cost rule gives it none, because it
/// measured no faster than cuBLASLt at any size tried (H100, 2026-12-06,
/// bench/product_rule.py's ffn_chain, us per product in a chain of 12:
/// 16 x 768 x 768 bf16 4.16 against 4.14, 128 x 768 x 768 5.65 against
/// 3.92; docs/passes.md).
/// GeneratedProduct, TiledProduct, MmaProduct or LibraryProduct for
/// \p target; \p reason (when set) receives the comparison that decided.
Strategy productStrategy(const ProductProblem &p, const Target &target,
                         std::string *reason = nullptr);
/// Whether the generated kernel can run \p p at all: one batch, at most
/// 32 rows (a lane holds each row's sum), a weight stored along k (or no
/// contraction).
bool generatedRuns(const ProductProblem &p);
/// Whether the tiled kernel can run \p p: one batch, f32, a contraction.
bool tiledRuns(const ProductProblem &p);
/// Whether the tensor-core kernel can run \p p on \p target: sm_80 or
/// newer, one batch of f16 or bf16, x stored [m, k] (no transpose_a), k a
/// positive multiple of 8 and, for a weight stored [k, n], n too (16-byte
/// loads of rows), and a 16-column weight slice that fits the target's
/// shared memory per block.
bool mmaRuns(const ProductProblem &p, const Target &target);

/// The generated kernel: a warp per output column, 8 warps per block,
/// loads of 16 bytes when rows are 16-byte aligned (vector elements each).
constexpr unsigned kGeneratedProductBlock = 256;
int64_t generatedProductVector(const ProductProblem &p);
/// The tiled kernel: T x T output tiles, one block of 256 threads each;
/// T = 32, unless fewer 32-wide tiles than the target's multiprocessors
/// cover the result (then 16, to fill them).
constexpr unsigned kProductTile = 32, kSmallProductTile = 16;
constexpr unsigned kTiledProductBlock = 256;
int64_t productTile(const ProductProblem &p, unsigned multiprocessors);

/// The tensor-core kernel: blocks of 8 warps over 64 rows and T columns,
/// T the widest of 64, 32 and 16 whose blocks still cover the target's
/// multiprocessors and whose weight slice fits its shared memory (16 when
/// none does). Dynamic shared memory: the T x k weight slice (k rounded up
/// to 16, rows padded by 8) and 4 stages of 64 x 64 of x, 2 bytes each
/// (the kernel asserts that its own layout takes exactly this).
constexpr unsigned kMmaProductRows = 64, kMmaProductBlock = 256;
/// The column counts a block may take, widest first.
constexpr int64_t kMmaProductColumns[] = {64, 32, 16};
int64_t mmaProductColumns(const ProductProblem &p, const Target &target);
uint64_t mmaProductSharedBytes(const ProductProblem &p, int64_t columns);
/// Shared memory one block may take on \p target (sm_90 to sm_110: 227
/// KiB; sm_80 and sm_87: 163 KiB; else 99 KiB).
uint64_t sharedBytesPerBlock(const Target &target);

/// A generated product also computes its input rows when a layernorm
/// (over the last axis) or a prologue of elementwise ops and index moves
/// produces them: every block computes the m rows of x into shared memory
/// before its dot products, so the op before a small product costs no
/// node of its own. At most 32 KiB of rows.
/// (A layernorm after the product needs every column of the row at once:
/// measured on an H100, one thread block cluster computing the whole row
/// spent about 3 us more per node in cluster launch than a plain kernel,
/// more than the node it saved.)
constexpr uint64_t kComputedInputMaxBytes = 32 * 1024;
/// Whether a product that runs as \p strategy can compute its input rows.
bool computesInputRows(const ProductProblem &p, Strategy strategy);
/// Every block of a generated product evaluates a prologue over all m x k
/// input elements, so its redundant work grows with the blocks: at most
/// 2^24 evaluations of one prologue op in all (about 120 thousand per
/// multiprocessor of an H100, a few hundred cycles), and at most 16 ops.
/// Past either, the prologue runs as a kernel of its own, once.
constexpr uint64_t kPrologueMaxEvaluations = uint64_t(1) << 24;
constexpr size_t kPrologueMaxOps = 16;
/// Whether a product that runs as \p strategy can compute its input rows
/// by a prologue of \p ops ops.
bool computesInputPrologue(const ProductProblem &p, Strategy strategy, size_t ops);

/// The arena scratch a library product may use: 4 bytes per output element
/// (room for split-k partial sums), at least 1 MiB, at most the 32 MiB
/// NVIDIA recommends for Hopper.
uint64_t productWorkspaceBytes(const ProductProblem &p);

} // namespace cgc

#endif
