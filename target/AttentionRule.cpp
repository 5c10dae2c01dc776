//===- AttentionRule.cpp - The attention kernels' rules ----------------------===//
#include "target/AttentionRule.h"
#include "target/ScheduleRecords.h"

#include "ir/Types.h"

#include <algorithm>

using namespace cgc;

namespace {
/// How the mask's leading dims (before heads, rows and keys) meet the
/// scores': all broadcast, all full, or a mix the merged outer index
/// cannot address.
enum class MaskLead { Broadcast, Full, Mixed };

MaskLead maskLeadOf(const Node &node) {
  const auto &q = node.operand(0)->getType().dims;
  const auto &mask = node.operand(3)->getType().dims;
  size_t lead = q.size() - 3, missing = q.size() - mask.size();
  bool broadcast = true, full = true;
  for (size_t a = 0; a < lead; ++a) {
    bool present = a >= missing;
    Dim m = present ? mask[a - missing] : Dim::fixed(1);
    broadcast &= m == Dim::fixed(1);
    full &= m == q[a];
  }
  return broadcast ? MaskLead::Broadcast : full ? MaskLead::Full : MaskLead::Mixed;
}
} // namespace

/// Why neither kernel can address the node's mask; empty when they can.
static std::string maskRefusal(const Node &node) {
  if (node.numOperands() == 4 && maskLeadOf(node) == MaskLead::Mixed)
    return "the mask's leading dims are partly broadcast";
  return "";
}

/// Whether \p d is static, from 1 to kAttentionMaxWidth and a multiple
/// of \p multiple.
static bool widthFits(Dim d, int64_t multiple) {
  return d.isStatic() && d.extent() >= 1 && d.extent() <= kAttentionMaxWidth &&
         d.extent() % multiple == 0;
}

/// Why a SIMT kernel (\p kernel: its name in the message) cannot run
/// \p node: the fused and the decode kernels take the same operands.
static std::string simtAttentionRefusal(const Node &node, const std::string &kernel) {
  const TensorType &q = node.operand(0)->getType(), &v = node.operand(2)->getType();
  if (!isFloat(q.dtype))
    return kernel + " takes f32, f16 and bf16";
  if (!widthFits(q.dims.back(), 1) || !widthFits(v.dims.back(), 1))
    return kernel + " takes q, k and v rows of 1 to " + std::to_string(kAttentionMaxWidth) +
           " elements";
  return maskRefusal(node);
}

std::string cgc::fusedAttentionRefusal(const Node &node) {
  return simtAttentionRefusal(node, "the fused kernel");
}

std::string cgc::mmaAttentionRefusal(const Node &node, const Target &target) {
  const TensorType &q = node.operand(0)->getType(), &v = node.operand(2)->getType();
  if (q.dtype != DType::F16 && q.dtype != DType::BF16)
    return "the tensor-core kernel takes f16 and bf16";
  if (computeCapabilityOf(target.arch) < 80)
    return "the tensor-core kernel needs sm_80 or later";
  if (!widthFits(q.dims.back(), 16) || !widthFits(v.dims.back(), 8))
    return "the tensor-core kernel takes q and k rows of a multiple of 16 and v rows "
           "of a multiple of 8 elements, at most " + std::to_string(kAttentionMaxWidth);
  return maskRefusal(node);
}

bool cgc::mmaAttentionPays(const Node &node, const Target &target) {
  const TensorType &k = node.operand(1)->getType(), &v = node.operand(2)->getType();
  Dim keys = k.dims[k.rank() - 2];
  if (!keys.isStatic() || keys.extent() > kMmaAttentionMaxKeys)
    return false;
  if (k.dims.back().extent() <= kMmaAttentionMaxChosenWidth &&
      v.dims.back().extent() <= kMmaAttentionMaxChosenWidth)
    return true;
  return hasStaticTypes(node) && mmaAttentionSplit(attentionShape(node), target) > 1;
}

int64_t cgc::mmaAttentionBlocks(const AttentionShape &s, int64_t warps) {
  int64_t rows = 16 * warps;
  return std::max<int64_t>((s.rows + rows - 1) / rows, 1) * s.outer * s.qHeads;
}

int64_t cgc::mmaAttentionWarps(const AttentionShape &s, const Target &target) {
  return mmaAttentionBlocks(s, 4) >= int64_t(target.multiprocessors) ? 4 : 1;
}

int64_t cgc::mmaAttentionSplit(const AttentionShape &s, const Target &target) {
  if (mmaAttentionWarps(s, target) != 1)
    return 1;
  int64_t keyTiles = (s.keys + 31) / 32, split = 1;
  while (split < kMmaAttentionChosenSplit && 2 * split <= keyTiles &&
         mmaAttentionSharedBytes(s, 1, 2 * split) <= kAttentionSharedBytes)
    split *= 2;
  return split;
}

int64_t cgc::mmaAttentionSharedBytes(const AttentionShape &s, int64_t warps,
                                     int64_t split) {
  int64_t values = (s.valueWidth + 7) / 8 * 4 + 6; // attention_mma.cuh's part
  return warps * (split - 1) * values * 32 * 4;
}

bool cgc::fusedAttentionPays(const Node &node) {
  const TensorType &k = node.operand(1)->getType();
  Dim keys = k.dims[k.rank() - 2];
  return k.dtype == DType::F32 && keys.isStatic() &&
         keys.extent() <= kFusedAttentionMaxKeys;
}

int64_t cgc::attentionSharedBytes(const AttentionShape &s, int64_t rowsPerWarp) {
  int64_t rows = kAttentionBlock / 32 * rowsPerWarp;
  return 4 * (rows * s.width + kAttentionKeyTile * (s.width + 1) +
              kAttentionKeyTile * s.valueWidth);
}

int64_t cgc::attentionBlocks(const AttentionShape &s, int64_t rowsPerWarp) {
  int64_t rows = kAttentionBlock / 32 * rowsPerWarp;
  return std::max<int64_t>((s.rows + rows - 1) / rows, 1) * s.outer * s.qHeads;
}

int64_t cgc::attentionRowsPerWarp(const AttentionShape &s, const Target &target) {
  for (int64_t r : {16, 8, 4, 2})
    if (attentionSharedBytes(s, r) <= kAttentionSharedBytes &&
        attentionBlocks(s, r) >= int64_t(target.multiprocessors))
      return r;
  return 1;
}

std::string cgc::decodeAttentionRefusal(const Node &node) {
  return simtAttentionRefusal(node, "the decode kernel");
}

bool cgc::decodeAttentionPays(const Node &node) {
  if (!hasStaticTypes(node) || !decodeAttentionRefusal(node).empty())
    return false;
  AttentionShape s = attentionShape(node);
  return s.rows >= 1 && s.rows <= kDecodeAttentionMaxRows &&
         s.keys > std::max(kFusedAttentionMaxKeys, kMmaAttentionMaxKeys);
}

static int64_t groupRows(const AttentionShape &s) { return s.qHeads / s.kvHeads * s.rows; }

cgc::DecodeAttentionLaunch cgc::decodeAttentionLaunch(const AttentionShape &s,
                                                      int64_t rowsPerBlock, int64_t split) {
  DecodeAttentionLaunch l;
  l.rowsPerBlock = rowsPerBlock;
  l.groups = s.outer * s.kvHeads;
  l.rowChunks = ceilDiv(groupRows(s), rowsPerBlock);
  int64_t unit = kDecodeAttentionSpanUnit;
  l.span = std::max<int64_t>(ceilDiv(ceilDiv(s.keys, split), unit) * unit, unit);
  l.split = std::max<int64_t>(ceilDiv(s.keys, l.span), 1);
  return l;
}

cgc::DecodeAttentionLaunch cgc::decodeAttentionRule(const AttentionShape &s,
                                                    const Target &target) {
  int64_t rows = std::min(groupRows(s), kDecodeAttentionBlockRows);
  int64_t blocks = s.outer * s.kvHeads * ceilDiv(groupRows(s), rows);
  int64_t most = std::min(ceilDiv(s.keys, kDecodeAttentionMinSpan), kDecodeAttentionMaxSplit);
  int64_t waves = ceilDiv(kDecodeAttentionBlocksPerMultiprocessor * target.multiprocessors,
                             blocks);
  return decodeAttentionLaunch(s, rows, std::max<int64_t>(std::min(most, waves), 1));
}

int64_t cgc::decodeAttentionScratch(const AttentionShape &s, const DecodeAttentionLaunch &l) {
  return l.split == 1 ? 0
                      : 4 * l.blocks() * l.rowsPerBlock * (s.valueWidth + 2);
}
