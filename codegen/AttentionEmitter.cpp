//===- AttentionEmitter.cpp - attention as one fused kernel ------------------===//
//
// A fused_attention record's kernel: one call of cgc_attention
// (codegen/device/attention.cuh, where the algorithm is) with the node's
// dtypes, widths, heads, lengths, limits and mask strides as constants,
// and the record's launch: `grid_x` blocks of `block` threads, `tile`
// query rows each.
//
//===----------------------------------------------------------------------===//
#include "codegen/CudaText.h"
#include "codegen/Emitters.h"
#include "ir/OpAttrs.h"

using namespace cgc;

void cgc::emitAttention(const Node &node, const Schedule &record, Kernel &kernel) {
  AttentionShape s = attentionShape(node);
  DType dtype = node.result()->getType().dtype;
  bool hasMask = node.numOperands() == 4;
  DType maskType = hasMask ? node.operand(3)->getType().dtype : dtype;
  int mask = !hasMask ? 0 : maskType == DType::Bool ? 1 : 2;
  std::string q = addParam(kernel, node.operand(0), false),
              k = addParam(kernel, node.operand(1), false),
              v = addParam(kernel, node.operand(2), false),
              m = hasMask ? addParam(kernel, node.operand(3), false) : "nullptr",
              out = addParam(kernel, node.result(), true);
  double scale = attentionScale(node);
  int64_t rowsPerWarp = record[ScheduleField::Tile] / (record[ScheduleField::Block] / 32);
  int64_t tiles = (s.rows + record[ScheduleField::Tile] - 1) / record[ScheduleField::Tile];
  auto ll = [](int64_t x) { return std::to_string(x) + "LL"; };
  kernel.body =
      "  cgc_attention<" + storageType(dtype) + ", " +
      (hasMask ? storageType(maskType) : std::string("float")) + ", " +
      std::to_string(mask) + ", " + std::to_string(s.width) + ", " +
      std::to_string(s.valueWidth) + ", " + std::to_string(rowsPerWarp) + ">(" + q +
      ", " + k + ", " + v + ", " + m + ", " + out + ", " + std::to_string(s.qHeads) +
      ", " + std::to_string(s.qHeads / s.kvHeads) + ", " + std::to_string(s.rows) +
      ", " + std::to_string(s.keys) + ", " + std::to_string(std::max<int64_t>(tiles, 1)) +
      ", " + floatLiteral(float(scale)) + ", " +
      floatLiteral(float(node.floatAttr("softcap", 0))) + ", " +
      (node.boolAttr("causal", false) ? "true" : "false") + ", " +
      std::to_string(node.intAttr("window", 0)) + ", " + ll(s.maskStrides[0]) + ", " +
      ll(s.maskStrides[1]) + ", " + ll(s.maskStrides[2]) + ", " +
      ll(s.maskStrides[3]) + ");\n";
  kernel.block[0] = uint32_t(record[ScheduleField::Block]);
  kernel.grid[0] = uint32_t(record[ScheduleField::GridX]);
}
