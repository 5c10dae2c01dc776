//===- AttentionRule.h - When and how attention runs as one kernel -*- C++ -*-===//
//
// The fused attention kernel (codegen/device/attention.cuh) runs an
// `attention` node whose q and k rows are at most kAttentionMaxWidth wide
// (E and Ev), in f32, f16 or bf16, with a mask (if any) whose leading dims
// are all broadcast or all full. One block of four warps takes a tile of
// 4 * R query rows of one head; each warp owns R rows and streams the keys
// in tiles of kAttentionKeyTile through shared memory with an online
// softmax (running max, sum and output per row), so no score matrix is
// ever written. The tensor-core kernel (codegen/device/attention_mma.cuh)
// runs f16 and bf16 attention whose rows fit mma.sync's fragments
// (mmaAttentionRefusal): a warp per 16 query rows. expand-attention keeps
// whole only the attention a kernel can run and is faster for
// (fusedAttentionPays, mmaAttentionPays); it writes out the rest, and the
// schedule pass gives the tensor-core kernel whatever it can run.
//
// R: the largest of 16, 8, 4, 2 whose grid still fills every
// multiprocessor once and whose tiles fit 48 KiB of static shared memory;
// else 1. More rows per warp reuse each key and value read from shared
// memory R times; fewer rows per block give small batches more blocks
// (BERT-base at batch 1, sequence 128: 12 heads x 16 tiles of 8 rows).
// Private to the scheduling library (target/Scheduler.h).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TARGET_ATTENTIONRULE_H
#define CGC_TARGET_ATTENTIONRULE_H

#include "ir/Graph.h"
#include "target/Problem.h"
#include "target/Target.h"

#include <cstdint>
#include <string>

namespace cgc {

constexpr int64_t kAttentionMaxWidth = 128;
constexpr int64_t kAttentionKeyTile = 32;
constexpr int64_t kAttentionBlock = 128;
constexpr int64_t kAttentionSharedBytes = 48 * 1024;

/// Why the fused kernel cannot run attention node \p node (its dims may be
/// symbolic but for the widths); empty when it can.
std::string fusedAttentionRefusal(const Node &node);

/// The longest key sequence the fused kernel is chosen for.
constexpr int64_t kFusedAttentionMaxKeys = 128;
/// Whether the fused kernel is faster than the products and softmax that
/// expand-attention writes: f32 with at most kFusedAttentionMaxKeys static
/// keys. Measured on an H200 (bench/attention.py, docs/perf.md): BERT-base
/// at batch 1, sequence 128 in f32 ran in 13.1 us fused against 16.5 us
/// written out (cuBLASLt products, 21.2 us for PyTorch's best SDPA); in
/// bf16 the products' tensor cores win (9.2 us against 17.8 fused; GPT-2
/// causal 9.8 against 16.9), and at sequence 512 and longer by far
/// (13.8 against 110.5 us at 512): the kernel's scores and sums are SIMT
/// f32 arithmetic.
bool fusedAttentionPays(const Node &node);

/// Why the tensor-core kernel (codegen/device/attention_mma.cuh) cannot
/// run \p node on \p target; empty when it can: f16 or bf16 on sm_80 or
/// later, q and k rows of a multiple of 16 elements and v rows of a
/// multiple of 8, at most kAttentionMaxWidth (the accumulators of a warp's
/// 16 rows stay in registers), a mask as the fused kernel takes it.
std::string mmaAttentionRefusal(const Node &node, const Target &target);
/// The longest key sequence and the widest rows the tensor-core kernel is
/// chosen for unsplit.
constexpr int64_t kMmaAttentionMaxKeys = 128;
constexpr int64_t kMmaAttentionMaxChosenWidth = 64;
/// Whether the tensor-core kernel is chosen over the written-out products:
/// at most kMmaAttentionMaxKeys static keys, and rows of at most
/// kMmaAttentionMaxChosenWidth or keys split over several warps
/// (mmaAttentionSplit). Measured on an H200, 2026-12-05 (bench/attention.py
/// --splits, docs/passes.md), batch 1, sequence 128, keys split over 4
/// warps: BERT-base's masked attention 6.0 us against 12.8 written out
/// (cuDNN's SDPA 11.2), GPT-2's causal one 6.2 against 10.3 (6.2), Llama's
/// causal grouped-query one 5.8 against 13.0 (6.2), 32 heads of width 128
/// 10.9 against 18.4 (7.1); at sequence 512 it loses (23.9 against 14.4
/// at width 64 and its best split, 42.1 against 19.4 at width 128: every
/// warp reads its keys and values from L2, with no reuse across warps).
bool mmaAttentionPays(const Node &node, const Target &target);
/// Row warps per block of the tensor-core kernel: 4 (64 query rows) when
/// such blocks still fill every multiprocessor, else 1 (BERT-base at batch
/// 1, sequence 128: 12 heads x 8 blocks of 16 rows).
int64_t mmaAttentionWarps(const AttentionShape &s, const Target &target);
/// Blocks of the tensor-core kernel at \p warps row warps per block.
int64_t mmaAttentionBlocks(const AttentionShape &s, int64_t warps);
/// The most warps of a block: row warps times the key split.
constexpr int64_t kMmaAttentionMaxBlockWarps = 8;
/// Warps each row group's keys are split over (attention_mma.cuh's
/// SPLIT): with one row warp per block (too few rows to fill the GPU), as
/// many as there are key tiles of 32, up to kMmaAttentionChosenSplit;
/// else 1. Measured on an H200 (bench/attention.py --splits,
/// docs/passes.md): a split of 8 loses to 4 at 128 keys.
constexpr int64_t kMmaAttentionChosenSplit = 4;
int64_t mmaAttentionSplit(const AttentionShape &s, const Target &target);
/// Bytes of static shared memory the split's combine takes (0 unsplit).
int64_t mmaAttentionSharedBytes(const AttentionShape &s, int64_t warps, int64_t split);

/// The decode-shaped kernel (codegen/device/attention_decode.cuh): few
/// query rows per head over many keys (a decoding step over its KV cache).
/// Each block takes up to kDecodeAttentionBlockRows query rows that share
/// one kv head (the heads of a grouped-query group, each with its rows)
/// and a span of the keys; a second kernel merges the spans' partials.
constexpr int64_t kDecodeAttentionBlock = 128;
constexpr int64_t kDecodeAttentionBlockRows = 8;
/// The most query rows per head the decode kernel is chosen for.
constexpr int64_t kDecodeAttentionMaxRows = 8;
/// The spans (the unit they are rounded to: the block's 4 warps take 4
/// keys each at a time): at least kDecodeAttentionMinSpan keys each, at
/// most kDecodeAttentionMaxSplit of them, and at most
/// kDecodeAttentionBlocksPerMultiprocessor blocks per multiprocessor in
/// all. Measured on an H100, 2026-12-06 (bench/attention.py
/// --decode-chunks, docs/passes.md): one query row per head, 32/8 heads
/// of width 64 at batch 1: 256 keys best in 8 spans (10.6 us; 4: 13.3;
/// 16: 11.0), 512 keys in 16 (13.3; 8: 14.6; 32: 14.8); width 128, 4096
/// keys in 32 (39.6; 16: 45.6; 64: 45.0); 12 heads of 64 in f32, 2048
/// keys in 32 (11.0; 16: 11.5; 64: 13.8); batch 8, 1024 keys in 16
/// (23.4; 8: 25.9; 32: 29.8).
constexpr int64_t kDecodeAttentionMinSpan = 32;
constexpr int64_t kDecodeAttentionMaxSplit = 32;
constexpr int64_t kDecodeAttentionBlocksPerMultiprocessor = 8;
constexpr int64_t kDecodeAttentionSpanUnit = 16;
/// Why the decode kernel cannot run \p node; empty when it can: f32, f16
/// or bf16, rows of q, k and v of 1 to kAttentionMaxWidth elements, a mask
/// as the fused kernel takes it.
std::string decodeAttentionRefusal(const Node &node);
/// Whether the decode kernel is chosen: static types, at most
/// kDecodeAttentionMaxRows query rows per head and more keys than the
/// other kernels are chosen for (kFusedAttentionMaxKeys,
/// kMmaAttentionMaxKeys), where attention was written out as two products
/// and a softmax (three kernels or more per layer of a decoding step).
bool decodeAttentionPays(const Node &node);
/// The launch of \p rowsPerBlock query rows per block and the keys split
/// into about \p split spans (a multiple of kDecodeAttentionSpanUnit keys
/// each; `split` is then what those spans take).
DecodeAttentionLaunch decodeAttentionLaunch(const AttentionShape &s, int64_t rowsPerBlock,
                                            int64_t split);
/// The rule's launch on \p target: R = min(group x rows,
/// kDecodeAttentionBlockRows); the keys split as above.
DecodeAttentionLaunch decodeAttentionRule(const AttentionShape &s, const Target &target);
/// Bytes of the partials between the decode kernel's two kernels (0 with
/// one span).
int64_t decodeAttentionScratch(const AttentionShape &s, const DecodeAttentionLaunch &l);

/// Bytes of static shared memory of a block of \p rowsPerWarp.
int64_t attentionSharedBytes(const AttentionShape &s, int64_t rowsPerWarp);
/// The rule's rows per warp (above).
int64_t attentionRowsPerWarp(const AttentionShape &s, const Target &target);
/// Blocks of the kernel at \p rowsPerWarp: query tiles x heads x outer.
int64_t attentionBlocks(const AttentionShape &s, int64_t rowsPerWarp);

} // namespace cgc

#endif
