//===- AttentionEmitter.cpp - attention as one fused kernel ------------------===//
//
// An attention node's kernel: one call of cgc_attention (a fused_attention
// record: codegen/device/attention.cuh, where that algorithm is) or of
// cgc_attention_mma (an mma_attention record, tensor cores:
// codegen/device/attention_mma.cuh) with the node's dtypes, widths, heads,
// lengths, limits and mask strides as constants, and the record's launch:
// `grid_x` blocks of `block` threads, `tile` query rows each. q, k, v and
// the result are read and written where target/AttentionLayout.h says:
// the head splits and merges around the node run no kernel of their own
// (the views plan-memory keeps).
//
//===----------------------------------------------------------------------===//
#include "codegen/CudaText.h"
#include "codegen/Emitters.h"
#include "ir/OpAttrs.h"

#include <algorithm>
#include <cassert>

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

AttentionCall attentionCall(const Node &node, const Schedule &record,
                            const AttentionViews &views, Kernel &kernel,
                            const std::string &pointerCast) {
  AttentionShape s = attentionShape(node);
  DType dtype = node.result()->getType().dtype;
  bool hasMask = node.numOperands() == 4;
  DType maskType = hasMask ? node.operand(3)->getType().dtype : dtype;
  AttentionCall c;
  c.maskType = hasMask ? storageType(maskType) : std::string("float");
  c.maskKind = std::to_string(!hasMask ? 0 : maskType == DType::Bool ? 1 : 2);
  std::string layout;
  auto place = [&](unsigned i) {
    const AttentionView &view = views[i];
    assert(view.base && "plan-memory gives every static attention its views");
    std::string p = pointerCast + addParam(kernel, view.base, i == 3);
    for (int64_t stride : {view.outer, view.head, view.row})
      layout += (layout.empty() ? "" : ", ") + std::to_string(stride) + "LL";
    return view.offset ? "(" + p + " + " + std::to_string(view.offset) + "LL)" : p;
  };
  c.q = place(0);
  c.k = place(1);
  c.v = place(2);
  c.mask = hasMask ? addParam(kernel, node.operand(3), false) : "nullptr";
  c.out = place(3);
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
           ll(s.maskStrides[3]) + ", CgcAttentionLayout{" + layout + "}";
  return c;
}
} // namespace

void cgc::emitAttention(const Node &node, const Schedule &record,
                        const AttentionViews &views, Kernel &kernel) {
  AttentionShape s = attentionShape(node);
  DType dtype = node.result()->getType().dtype;
  bool mma = record.strategy == Strategy::MmaAttention;
  AttentionCall c = attentionCall(node, record, views, kernel,
                                  mma ? "(unsigned short *)" : "");
  std::string widths = std::to_string(s.width) + ", " + std::to_string(s.valueWidth);
  int64_t warps = record[ScheduleField::Block] / 32;
  if (mma) {
    int64_t rowWarps = record[ScheduleField::Tile] / 16; // the rest split the keys
    kernel.body = "  cgc_attention_mma<" + std::string(dtype == DType::BF16 ? "1" : "0") +
                  ", " + c.maskType + ", " + c.maskKind + ", " + widths + ", " +
                  std::to_string(rowWarps) + ", " + std::to_string(warps / rowWarps) + ">(";
  } else {
    kernel.body = "  cgc_attention<" + storageType(dtype) + ", " + c.maskType + ", " +
                  c.maskKind + ", " + widths + ", " +
                  std::to_string(record[ScheduleField::Tile] / warps) + ">(";
  }
  kernel.body += c.q + ", " + c.k + ", " + c.v + ", " + c.mask + ", " + c.out + ", " +
                 c.rest + ");\n";
  kernel.block[0] = uint32_t(record[ScheduleField::Block]);
  kernel.grid[0] = uint32_t(record[ScheduleField::GridX]);
}
