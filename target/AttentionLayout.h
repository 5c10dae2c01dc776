//===- AttentionLayout.h - Where attention reads and writes -------*- C++ -*-===//
//
// The attention kernels read q, k and v and write their result through
// element strides over (outer index, head, row), each row contiguous, so
// that the head splits and merges around attention need no kernel of
// their own. Models split heads with chains of transposes, reshapes and
// slices of a projection (BERT's view and permute; GPT-2's and
// merge-products' slices of one projection; nn.MultiheadAttention's
// unflatten, permute, squeeze, select, view and transpose), and merge them
// back with a transpose and a reshape.
//
// attentionViews() composes each operand's chain as a layout (each dim a
// list of (size, stride) modes, as CuTe's layouts): a transpose permutes
// the dims, a slice offsets and narrows one, a reshape flattens the modes
// and regroups them into the new dims, splitting a mode where a new dim
// takes part of it; a reshape that needs a mode split where its size does
// not divide fails the chain there. The view the kernel reads is the
// chain composed from the farthest tensor it reaches: one stride for the
// leading dims together, one per head and row, the last dim contiguous.
// A chain folds only if each of its values is read by the chain or by
// attention alone, and its base is computed (no node another chain folds)
// and not written over before the attention (no region input, no state an
// output updates); then its nodes run no kernel (plan-memory gives their
// values the bytes of the tensor they view, which stay live until the
// attention). A result read only by a transpose that keeps its last axis
// last is written in that transpose's layout, and that transpose runs no
// kernel either.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TARGET_ATTENTIONLAYOUT_H
#define CGC_TARGET_ATTENTIONLAYOUT_H

#include "ir/Graph.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include <array>
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
  /// The nodes that run no kernel: the operand's chain, or the result's
  /// transpose.
  std::vector<const Node *> folded;
};

/// q, k, v and the result (in that order) of one attention node.
using AttentionViews = std::array<AttentionView, 4>;

/// The views of every static attention node of \p graph and of its
/// regions, and the nodes folded into them.
struct AttentionLayouts {
  llvm::DenseMap<const Node *, AttentionViews> views;
  llvm::DenseSet<const Node *> folded;
};
AttentionLayouts attentionLayouts(const Graph &graph);

/// The view of a \p value of shape [.., heads, rows, width] stored
/// row-major.
AttentionView contiguousView(const Value *value);

/// For tests: the view of \p operand ([.., heads, rows, width]) composed
/// from the farthest tensor its chain of transposes, reshapes and slices
/// reaches, whoever else reads the chain; none when no chain composes.
llvm::Optional<AttentionView> composedView(const Value *operand);

} // namespace cgc

#endif
