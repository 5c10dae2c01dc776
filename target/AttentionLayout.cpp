//===- AttentionLayout.cpp - Where attention reads and writes ---------------===//
#include "target/AttentionLayout.h"

#include "ir/OpAttrs.h"

#include "llvm/ADT/STLExtras.h"

using namespace cgc;

namespace {

std::vector<int64_t> extents(const Value *v) {
  std::vector<int64_t> out;
  for (Dim d : v->getType().dims)
    out.push_back(d.extent());
  return out;
}

/// The strides of \p v stored row-major as [.., heads, rows, width].
AttentionView contiguous(const Value *v) {
  std::vector<int64_t> e = extents(v);
  size_t r = e.size();
  AttentionView view;
  view.base = v;
  view.row = e[r - 1];
  view.head = e[r - 2] * e[r - 1];
  view.outer = e[r - 3] * view.head;
  return view;
}

/// Whether \p n is a transpose that swaps the head and row axes (the two
/// before the last) and nothing else.
bool swapsHeadsAndRows(const Node *n) {
  if (!n || n->getOp() != OpKind::Transpose)
    return false;
  unsigned rank = n->result()->getType().rank();
  if (rank < 3)
    return false;
  std::vector<int64_t> perm = transposePerm(*n, rank);
  for (unsigned a = 0; a < rank; ++a) {
    unsigned want = a == rank - 3 ? rank - 2 : a == rank - 2 ? rank - 3 : a;
    if (perm[a] != int64_t(want))
      return false;
  }
  return true;
}

/// Whether a chain node's result \p v is read by \p reader alone, in its
/// own graph, and is no output of it.
bool readOnlyBy(const Value *v, const Node *reader) {
  const Node *def = v->getDef();
  return def && v->getType().isStatic() && !def->getParent()->isOutput(v) &&
         llvm::all_of(v->uses(), [&](const Use &u) { return u.user == reader; });
}

/// Whether a kernel may read \p view: 16-byte steps at 16-bit elements
/// (the tensor-core kernel loads pairs of elements; vector widths).
bool aligned(const AttentionView &view) {
  return view.offset % 8 == 0 && view.row % 8 == 0 && view.head % 8 == 0 &&
         view.outer % 8 == 0;
}

/// The view of a head split: \p t = transpose(y) with y [.., S, H, D],
/// where y may be reshape(z) with z [.., S, H * D], and z a slice of the
/// last axis of w [.., S, F]. Stops at the last level whose view aligns.
AttentionView headSplit(const Node &t) {
  const Value *y = t.operand(0);
  std::vector<int64_t> ye = extents(y);
  size_t r = ye.size();
  AttentionView view;
  view.base = y;
  view.head = ye[r - 1];
  view.row = ye[r - 2] * ye[r - 1];
  view.outer = ye[r - 3] * view.row;
  view.folded = {&t};
  const Node *reshape = y->getDef();
  if (!aligned(view) || !reshape || reshape->getOp() != OpKind::Reshape ||
      !readOnlyBy(y, &t))
    return view;
  const Value *z = reshape->operand(0);
  std::vector<int64_t> ze = extents(z);
  if (!z->getType().isStatic() || ze.size() != r - 1 ||
      !std::equal(ze.begin(), ze.end() - 1, ye.begin()) || ze.back() != view.row)
    return view;
  view.base = z;
  view.folded.push_back(reshape);
  const Node *slice = z->getDef();
  if (!slice || slice->getOp() != OpKind::Slice || !readOnlyBy(z, reshape))
    return view;
  const Value *w = slice->operand(0);
  std::vector<int64_t> we = extents(w);
  SliceParams p = sliceParams(*slice);
  bool lastAxisOnly = p.axes.size() == 1 && p.steps[0] == 1 &&
                      (p.axes[0] == int64_t(r) - 2 || p.axes[0] == -1);
  if (!lastAxisOnly || !w->getType().isStatic() || we.size() != r - 1)
    return view;
  AttentionView sliced = view;
  sliced.base = w;
  sliced.offset = sliceRange(p.starts[0], p.ends[0], 1, we.back()).begin;
  sliced.row = we.back();
  sliced.outer = ye[r - 3] * sliced.row;
  sliced.folded.push_back(slice);
  return aligned(sliced) ? sliced : view;
}

/// Whether every reader of \p v is an attention reading it as q, k or v,
/// in \p v's graph, and \p v is no output of that graph.
bool readAsOperandOnly(const Value *v) {
  const Node *def = v->getDef();
  return def && !def->getParent()->isOutput(v) &&
         llvm::all_of(v->uses(), [&](const Use &u) {
           return u.user->getOp() == OpKind::Attention && u.operandIndex < 3 &&
                  u.user->getParent() == def->getParent();
         });
}

} // namespace

AttentionView cgc::attentionOperand(const Node &attention, unsigned i) {
  if (i == 3) {
    const Value *result = attention.result();
    AttentionView view = contiguous(result);
    if (result->uses().size() != 1 ||
        attention.getParent()->isOutput(result))
      return view;
    const Node *t = result->uses().front().user;
    if (!swapsHeadsAndRows(t) || t->getParent()->isOutput(t->result()))
      return view;
    // The result laid out as t = [.., S, H, EV].
    std::vector<int64_t> te = extents(t->result());
    size_t r = te.size();
    AttentionView written = view;
    written.head = te[r - 1];
    written.row = te[r - 2] * te[r - 1];
    written.outer = te[r - 3] * written.row;
    written.folded = {t};
    return aligned(written) ? written : view;
  }
  const Value *operand = attention.operand(i);
  const Node *t = operand->getDef();
  if (!swapsHeadsAndRows(t) || !readAsOperandOnly(operand))
    return contiguous(operand);
  AttentionView view = headSplit(*t);
  return aligned(view) ? view : contiguous(operand);
}
