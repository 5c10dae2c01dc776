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
#include "target/Scheduler.h"

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
/// its arguments: everything the kernels take alike. `heads`: hq, group,
/// sq; `keys`: sk; `limits`: scale, softcap, causal, window, the mask's
/// strides and the layout.
struct AttentionCall {
  std::string maskType, maskKind, q, k, v, mask, out, heads, keys, limits, layout;
};

/// The pointer argument of \p view (a parameter of \p kernel, written when
/// \p written) at the view's offset, cast by \p pointerCast.
std::string viewPointer(Kernel &kernel, const AttentionView &view, bool written,
                        const std::string &pointerCast) {
  assert(view.base && "plan-memory gives every static attention its views");
  std::string p = pointerCast + addParam(kernel, view.base, written);
  return view.offset ? "(" + p + " + " + std::to_string(view.offset) + "LL)" : p;
}

AttentionCall attentionCall(const Node &node, const AttentionViews &views, Kernel &kernel,
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
    for (int64_t stride : {view.outer, view.head, view.row})
      layout += (layout.empty() ? "" : ", ") + std::to_string(stride) + "LL";
    return viewPointer(kernel, view, i == 3, pointerCast);
  };
  c.q = place(0);
  c.k = place(1);
  c.v = place(2);
  c.mask = hasMask ? addParam(kernel, node.operand(3), false) : "nullptr";
  c.out = place(3);
  auto ll = [](int64_t x) { return std::to_string(x) + "LL"; };
  c.heads = std::to_string(s.qHeads) + ", " + std::to_string(s.qHeads / s.kvHeads) + ", " +
            std::to_string(s.rows);
  c.keys = std::to_string(s.keys);
  c.layout = "CgcAttentionLayout{" + layout + "}";
  c.limits = floatLiteral(float(attentionScale(node))) + ", " +
             floatLiteral(float(node.floatAttr("softcap", 0))) + ", " +
             (node.boolAttr("causal", false) ? "true" : "false") + ", " +
             std::to_string(kernelWindow(node, s)) + ", " + ll(s.maskStrides[0]) + ", " +
             ll(s.maskStrides[1]) + ", " + ll(s.maskStrides[2]) + ", " +
             ll(s.maskStrides[3]) + ", " + c.layout;
  return c;
}
} // namespace

void cgc::emitAttention(const Node &node, const Schedule &record,
                        const AttentionViews &views, Kernel &kernel) {
  AttentionShape s = attentionShape(node);
  DType dtype = node.result()->getType().dtype;
  bool mma = record.strategy == Strategy::MmaAttention;
  AttentionCall c = attentionCall(node, views, kernel,
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
  int64_t tiles = (s.rows + record[ScheduleField::Tile] - 1) / record[ScheduleField::Tile];
  kernel.body += c.q + ", " + c.k + ", " + c.v + ", " + c.mask + ", " + c.out + ", " +
                 c.heads + ", " + c.keys + ", " + std::to_string(std::max<int64_t>(tiles, 1)) +
                 ", " + c.limits + ");\n";
  kernel.block[0] = uint32_t(record[ScheduleField::Block]);
  kernel.grid[0] = uint32_t(record[ScheduleField::GridX]);
}

void cgc::emitDecodeAttention(const Node &node, const Schedule &record,
                              const AttentionViews &views, const Storage *scratch,
                              Kernel &first, Kernel *combine) {
  AttentionShape s = attentionShape(node);
  DecodeAttentionLaunch l = decodeAttentionLaunchOf(node, record);
  AttentionCall c = attentionCall(node, views, first, "");
  std::string part = scratch ? addScratchParam(first, *scratch, true, "float") : "nullptr";
  std::string type = storageType(node.result()->getType().dtype);
  std::string shape = std::to_string(s.valueWidth) + ", " + std::to_string(l.rowsPerBlock) +
                      ", " + std::to_string(l.split);
  std::string rowChunks = std::to_string(l.rowChunks);
  first.body = "  cgc_attention_decode<" + type + ", " + c.maskType + ", " + c.maskKind + ", " +
               std::to_string(s.width) + ", " + shape + ">(" + c.q + ", " + c.k + ", " + c.v +
               ", " + c.mask + ", " + c.out + ", " + part + ", " + c.heads + ", " + c.keys +
               ", " + rowChunks + ", " + std::to_string(l.span) + ", " + c.limits + ");\n";
  first.block[0] = uint32_t(record[ScheduleField::Block]);
  first.grid[0] = uint32_t(record[ScheduleField::GridX]);
  if (!scratch)
    return;
  assert(combine && "a split decode attention has a combine kernel");
  std::string in = addScratchParam(*combine, *scratch, false, "float");
  std::string out = viewPointer(*combine, views[3], true, "");
  combine->body = "  cgc_attention_decode_combine<" + type + ", " + shape + ">(" + in + ", " +
                  out + ", " + c.heads + ", " + rowChunks + ", " + c.layout + ");\n";
  combine->block[0] = uint32_t(record[ScheduleField::Block]);
  combine->grid[0] = uint32_t(l.groups * l.rowChunks);
}
