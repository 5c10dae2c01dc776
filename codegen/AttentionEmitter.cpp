//===- AttentionEmitter.cpp - attention as one fused kernel ------------------===//
//
// An attention node's kernel: one call of cgc_attention (a fused_attention
// record: codegen/device/attention.cuh, where that algorithm is) or of
// cgc_attention_mma (an mma_attention record, tensor cores:
// codegen/device/attention_mma.cuh) with the node's dtypes, widths, heads,
// lengths, limits and mask strides as constants, and the record's launch:
// `grid_x` blocks of `block` threads, `tile` query rows each.
//
//===----------------------------------------------------------------------===//
#include "codegen/CudaText.h"
#include "codegen/Emitters.h"
#include "ir/OpAttrs.h"

#include <algorithm>

using namespace cgc;

namespace {
/// The window as the kernels' int: a window of at least the query rows
/// drops no key (j <= i - window never holds), so larger ones, which an
/// int cannot hold, are passed as the row count; 0 is no window.
int64_t kernelWindow(const Node &node, const AttentionShape &s) {
  int64_t window = node.intAttr("window", 0);
  return window > 0 ? std::min<int64_t>(window, std::max<int64_t>(s.rows, 1)) : 0;
}

/// The call's template arguments after the kernel's own first ones, and
/// its arguments: everything both kernels take alike.
struct AttentionCall {
  std::string maskType, maskKind, q, k, v, mask, out, rest;
};

AttentionCall attentionCall(const Node &node, const Schedule &record, Kernel &kernel,
                            const std::string &pointerCast) {
  AttentionShape s = attentionShape(node);
  DType dtype = node.result()->getType().dtype;
  bool hasMask = node.numOperands() == 4;
  DType maskType = hasMask ? node.operand(3)->getType().dtype : dtype;
  AttentionCall c;
  c.maskType = hasMask ? storageType(maskType) : std::string("float");
  c.maskKind = std::to_string(!hasMask ? 0 : maskType == DType::Bool ? 1 : 2);
  c.q = pointerCast + addParam(kernel, node.operand(0), false);
  c.k = pointerCast + addParam(kernel, node.operand(1), false);
  c.v = pointerCast + addParam(kernel, node.operand(2), false);
  c.mask = hasMask ? addParam(kernel, node.operand(3), false) : "nullptr";
  c.out = pointerCast + addParam(kernel, node.result(), true);
  int64_t tiles = (s.rows + record[ScheduleField::Tile] - 1) / record[ScheduleField::Tile];
  auto ll = [](int64_t x) { return std::to_string(x) + "LL"; };
  c.rest = std::to_string(s.qHeads) + ", " + std::to_string(s.qHeads / s.kvHeads) + ", " +
           std::to_string(s.rows) + ", " + std::to_string(s.keys) + ", " +
           std::to_string(std::max<int64_t>(tiles, 1)) + ", " +
           floatLiteral(float(attentionScale(node))) + ", " +
           floatLiteral(float(node.floatAttr("softcap", 0))) + ", " +
           (node.boolAttr("causal", false) ? "true" : "false") + ", " +
           std::to_string(kernelWindow(node, s)) + ", " + ll(s.maskStrides[0]) + ", " +
           ll(s.maskStrides[1]) + ", " + ll(s.maskStrides[2]) + ", " +
           ll(s.maskStrides[3]);
  return c;
}
} // namespace

void cgc::emitAttention(const Node &node, const Schedule &record, Kernel &kernel) {
  AttentionShape s = attentionShape(node);
  DType dtype = node.result()->getType().dtype;
  bool mma = record.strategy == Strategy::MmaAttention;
  AttentionCall c = attentionCall(node, record, kernel,
                                  mma ? "(unsigned short *)" : "");
  std::string widths = std::to_string(s.width) + ", " + std::to_string(s.valueWidth);
  int64_t warps = record[ScheduleField::Block] / 32;
  if (mma)
    kernel.body = "  cgc_attention_mma<" + std::string(dtype == DType::BF16 ? "1" : "0") +
                  ", " + c.maskType + ", " + c.maskKind + ", " + widths + ", " +
                  std::to_string(warps) + ">(";
  else
    kernel.body = "  cgc_attention<" + storageType(dtype) + ", " + c.maskType + ", " +
                  c.maskKind + ", " + widths + ", " +
                  std::to_string(record[ScheduleField::Tile] / warps) + ">(";
  kernel.body += c.q + ", " + c.k + ", " + c.v + ", " + c.mask + ", " + c.out + ", " +
                 c.rest + ");\n";
  kernel.block[0] = uint32_t(record[ScheduleField::Block]);
  kernel.grid[0] = uint32_t(record[ScheduleField::GridX]);
}
