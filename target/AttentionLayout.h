//===- AttentionLayout.h - Where attention reads and writes -------*- C++ -*-===//
//
// The attention kernels read q, k and v and write their result through
// element strides over (outer index, head, row), each row contiguous, so
// that the head split and merge around attention need no kernel of their
// own. Models write attention as
//   q = transpose(reshape(x, [.., S, H, D]), swap of the head and row axes)
//   y = reshape(transpose(attention(q, k, v), same swap), [.., S, H * D])
// where x is a projection [.., S, H * D] or a slice of its last axis (GPT-2's
// split of one projection in three, merge-products' split of a merged
// one). attentionOperand() folds such a chain into the view the kernel
// reads (x itself, at the slice's offset, with its row stride), and the
// transpose of a result into the layout the kernel writes. The chains'
// nodes then run no kernel: plan-memory gives their values the bytes of
// the tensor they view, and lowering skips them.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TARGET_ATTENTIONLAYOUT_H
#define CGC_TARGET_ATTENTIONLAYOUT_H

#include "ir/Graph.h"

#include <cstdint>
#include <vector>

namespace cgc {

/// Where an attention node reads q, k or v, or writes its result.
struct AttentionView {
  /// The tensor in memory: the operand or result itself, or the value its
  /// folded chain starts from (for the result: the result, laid out as
  /// the transpose that reads it).
  const Value *base = nullptr;
  /// Elements of base before the view's first.
  int64_t offset = 0;
  /// Element strides over the merged leading dims, the heads and the rows.
  int64_t outer = 0, head = 0, row = 0;
  /// The nodes that run no kernel: the operand's chain (transpose,
  /// reshape, slice), or the result's transpose.
  std::vector<const Node *> folded;
};

/// How \p attention (a static `attention` node) reads operand \p i (0: q,
/// 1: k, 2: v); i = 3: how it writes its result.
AttentionView attentionOperand(const Node &attention, unsigned i);

} // namespace cgc

#endif
