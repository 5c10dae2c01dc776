//===- AttentionLayout.cpp - Where attention reads and writes ---------------===//
#include "target/AttentionLayout.h"

#include "ir/OpAttrs.h"

#include "llvm/ADT/STLExtras.h"

using namespace cgc;

namespace {

/// `size` elements `stride` apart.
struct Mode {
  int64_t size, stride;
};
using Modes = std::vector<Mode>;

/// A tensor's elements as an offset and, per dim, its modes (outer
/// first); a dim of extent 1 has none.
struct Layout {
  std::vector<Modes> dims;
  int64_t offset = 0;
};

std::vector<int64_t> extents(const Value *v) { return v->getType().extents(); }

Layout rowMajor(const std::vector<int64_t> &shape) {
  Layout l;
  l.dims.resize(shape.size());
  int64_t stride = 1;
  for (size_t a = shape.size(); a-- > 0;) {
    if (shape[a] != 1)
      l.dims[a] = {Mode{shape[a], stride}};
    stride *= shape[a];
  }
  return l;
}

/// \p modes with size-1 modes dropped and each outer mode merged into the
/// inner one it continues.
Modes coalesce(const Modes &modes) {
  Modes out;
  for (const Mode &m : modes) {
    if (m.size == 1)
      continue;
    if (!out.empty() && out.back().stride == m.size * m.stride)
      out.back() = {out.back().size * m.size, m.stride};
    else
      out.push_back(m);
  }
  return out;
}

/// The modes regrouped into \p shape (row-major order kept), splitting a
/// mode where a new dim takes its outer part; false where a dim would need
/// part of a mode its size does not divide.
bool reshape(Layout &l, const std::vector<int64_t> &shape) {
  Modes flat;
  for (const Modes &dim : l.dims)
    for (const Mode &m : dim)
      if (m.size != 1)
        flat.push_back(m);
  std::vector<Modes> dims;
  size_t at = 0;
  for (int64_t need : shape) {
    Modes group;
    while (need > 1) {
      if (at == flat.size())
        return false;
      Mode &m = flat[at];
      if (need % m.size == 0) {
        group.push_back(m);
        need /= m.size;
        ++at;
      } else if (m.size % need == 0) {
        int64_t inner = m.size / need;
        group.push_back({need, m.stride * inner});
        m = {inner, m.stride};
        need = 1;
      } else {
        return false;
      }
    }
    dims.push_back(group);
  }
  if (at != flat.size())
    return false;
  l.dims = std::move(dims);
  return true;
}

/// Elements [begin, begin + extent * step) of one dim, every step-th;
/// false unless that dim is one mode.
bool slice(Layout &l, size_t axis, int64_t begin, int64_t extent, int64_t step) {
  Modes modes = coalesce(l.dims[axis]);
  if (modes.empty()) {
    l.dims[axis] = {};
    return begin == 0 && extent == 1;
  }
  if (modes.size() != 1)
    return false;
  l.offset += begin * modes[0].stride;
  l.dims[axis] = extent == 1 ? Modes{} : Modes{{extent, modes[0].stride * step}};
  return extent > 0;
}

Layout transpose(const Layout &l, const std::vector<int64_t> &perm) {
  Layout out = l;
  for (size_t a = 0; a < perm.size(); ++a)
    out.dims[a] = l.dims[perm[a]];
  return out;
}

/// \p l after the transpose, reshape or slice \p n reading it; false
/// where the result is no view of \p l.
bool apply(Layout &l, const Node &n) {
  std::vector<int64_t> out = extents(n.result());
  if (n.getOp() == OpKind::Transpose) {
    l = transpose(l, transposePerm(n, out.size()));
    return true;
  }
  if (n.getOp() == OpKind::Reshape)
    return reshape(l, out);
  SliceParams p = sliceParams(n);
  std::vector<int64_t> in = extents(n.operand(0));
  for (size_t s = 0; s < p.axes.size(); ++s) {
    size_t axis = size_t(p.axes[s] < 0 ? p.axes[s] + int64_t(in.size()) : p.axes[s]);
    SliceRange r = sliceRange(p.starts[s], p.ends[s], p.steps[s], in[axis]);
    if (p.steps[s] <= 0 || !slice(l, axis, r.begin, out[axis], p.steps[s]))
      return false;
  }
  return true;
}

/// One stride for a run of dims (0 when they hold one element).
bool singleStride(const std::vector<Modes> &dims, size_t from, size_t to, int64_t &stride) {
  Modes all;
  for (size_t a = from; a < to; ++a)
    all.insert(all.end(), dims[a].begin(), dims[a].end());
  Modes one = coalesce(all);
  stride = one.empty() ? 0 : one[0].stride;
  return one.size() <= 1;
}

/// \p l as strides over [.., heads, rows, width]: none unless the leading
/// dims, the heads and the rows each have one stride and the width is
/// contiguous.
llvm::Optional<AttentionView> stridedView(const Layout &l, const Value *base) {
  size_t r = l.dims.size();
  AttentionView view;
  view.base = base;
  view.offset = l.offset;
  int64_t width = 0;
  if (r < 3 || !singleStride(l.dims, 0, r - 3, view.outer) ||
      !singleStride(l.dims, r - 3, r - 2, view.head) ||
      !singleStride(l.dims, r - 2, r - 1, view.row) ||
      !singleStride(l.dims, r - 1, r, width) || width > 1)
    return llvm::None;
  return view;
}

/// stridedView(\p l) where a view other than the stored tensor may be
/// read: the tensor-core kernel loads pairs of elements, and 16-byte steps
/// keep every load aligned.
llvm::Optional<AttentionView> kernelView(const Layout &l, const Value *base) {
  llvm::Optional<AttentionView> view = stridedView(l, base);
  if (view && (view->offset % 8 || view->outer % 8 || view->head % 8 || view->row % 8))
    return llvm::None;
  return view;
}

/// A transpose, reshape or slice of static shapes a chain may hold. Not
/// one reading an attention's result, which may be stored in another
/// layout (resultView): the chain starts below it.
bool isMovement(const Node *n) {
  if (!n || !(n->getOp() == OpKind::Transpose || n->getOp() == OpKind::Reshape ||
              n->getOp() == OpKind::Slice))
    return false;
  const Node *producer = n->operand(0)->getDef();
  return n->operand(0)->getType().isStatic() && n->result()->getType().isStatic() &&
         !(producer && producer->getOp() == OpKind::Attention);
}

/// The transposes, reshapes and slices above \p v, nearest first.
std::vector<const Node *> chainAbove(const Value *v) {
  std::vector<const Node *> chain;
  for (const Node *n = v->getDef(); isMovement(n); n = n->operand(0)->getDef())
    chain.push_back(n);
  return chain;
}

/// How \p attention writes its result: in the layout of the transpose
/// that alone reads it, when that keeps the last axis last.
AttentionView resultView(const Node &attention) {
  const Value *result = attention.result();
  AttentionView view = contiguousView(result);
  if (result->uses().size() != 1 || attention.getParent()->isOutput(result))
    return view;
  const Node *t = result->uses().front().user;
  if (t->getOp() != OpKind::Transpose || t->getParent()->isOutput(t->result()))
    return view;
  size_t r = extents(result).size();
  std::vector<int64_t> perm = transposePerm(*t, r);
  if (perm[r - 1] != int64_t(r - 1))
    return view;
  // Dim a of the result is dim inverse[a] of t, stored row-major.
  // Dim perm[a] of the result is dim a of t, stored row-major.
  Layout stored = rowMajor(extents(t->result()));
  Layout written = stored;
  for (size_t a = 0; a < r; ++a)
    written.dims[perm[a]] = stored.dims[a];
  llvm::Optional<AttentionView> v = kernelView(written, result);
  if (!v)
    return view;
  v->folded = {t};
  return *v;
}

bool staticAttention(const Node &n) {
  return n.getOp() == OpKind::Attention && n.result()->getType().isStatic() &&
         llvm::all_of(n.getOperands(), [](const Value *v) { return v->getType().isStatic(); });
}

/// Whether a view may read \p base at its attention, after the nodes
/// between: not a region's input (a loop's next value or an arm's update
/// may be written over it first) nor state an output updates (the update
/// may be written in place first); plan-memory's in-place checks see only
/// the folded chain's own reads.
bool stableBase(const Value *base, const Graph &graph) {
  if (base->getDef())
    return true;
  return !graph.isRegion() && llvm::none_of(graph.outputs, [&](const GraphOutput &o) {
    return updatesState(o.kind) && o.target == base->getName();
  });
}

void collect(const Graph &graph, AttentionLayouts &out) {
  for (const auto &n : graph.nodes()) {
    for (unsigned r = 0; r < n->numRegions(); ++r)
      collect(n->region(r), out);
    if (!staticAttention(*n))
      continue;
    AttentionViews &views = out.views[n.get()];
    for (unsigned i = 0; i < 3; ++i) {
      llvm::Optional<AttentionView> v = composedView(n->operand(i));
      views[i] = v && stableBase(v->base, graph) ? *v : contiguousView(n->operand(i));
    }
    views[3] = resultView(*n);
  }
}

/// Whether \p view's base is computed: no node of another folded chain
/// (a result's transpose is: the attention writes it in its layout).
bool computedBase(const AttentionView &view, const AttentionLayouts &layouts) {
  const Node *def = view.base->getDef();
  if (!def || !layouts.folded.count(def))
    return true;
  const Value *written = def->operand(0);
  const Node *attention = written->getDef();
  auto entry = attention ? layouts.views.find(attention) : layouts.views.end();
  return entry != layouts.views.end() &&
         llvm::is_contained(entry->second[3].folded, def);
}

/// Whether nothing but \p layouts' folded nodes and the attentions that
/// read through them reads the values of \p view's folded chain.
bool readOnlyThroughViews(const AttentionView &view, const AttentionLayouts &layouts) {
  for (const Node *f : view.folded) {
    const Value *r = f->result();
    if (f->getParent()->isOutput(r))
      return false;
    for (const Use &u : r->uses()) {
      if (layouts.folded.count(u.user))
        continue;
      auto reader = layouts.views.find(u.user);
      if (reader == layouts.views.end() || u.operandIndex >= 3 ||
          !llvm::is_contained(reader->second[u.operandIndex].folded, f))
        return false;
    }
  }
  return true;
}

void gatherFolded(AttentionLayouts &layouts) {
  layouts.folded.clear();
  for (const auto &entry : layouts.views)
    for (const AttentionView &v : entry.second)
      layouts.folded.insert(v.folded.begin(), v.folded.end());
}

} // namespace

AttentionView cgc::contiguousView(const Value *value) {
  // A row-major [.., heads, rows, width] always has one stride per dim;
  // its alignment is the kernels' own rule (target/AttentionRule.h).
  return *stridedView(rowMajor(extents(value)), value);
}

llvm::Optional<AttentionView> cgc::composedView(const Value *operand) {
  std::vector<const Node *> chain = chainAbove(operand);
  for (size_t k = chain.size(); k > 0; --k) {
    const Value *base = chain[k - 1]->operand(0);
    Layout l = rowMajor(extents(base));
    bool ok = true;
    for (size_t n = k; n-- > 0 && ok;)
      ok = apply(l, *chain[n]);
    llvm::Optional<AttentionView> view = ok ? kernelView(l, base) : llvm::None;
    if (view) {
      view->folded.assign(chain.begin(), chain.begin() + k);
      return view;
    }
  }
  return llvm::None;
}

AttentionLayouts cgc::attentionLayouts(const Graph &graph) {
  AttentionLayouts layouts;
  collect(graph, layouts);
  // A chain whose values something else reads, or whose base another
  // chain folds, is computed after all: its operand is read as stored.
  // Dropping one can break another's reads.
  for (bool changed = true; changed;) {
    changed = false;
    gatherFolded(layouts);
    for (auto &entry : layouts.views)
      for (unsigned i = 0; i < 3; ++i) {
        AttentionView &v = entry.second[i];
        if (!v.folded.empty() &&
            (!readOnlyThroughViews(v, layouts) || !computedBase(v, layouts))) {
          v = contiguousView(entry.first->operand(i));
          changed = true;
        }
      }
  }
  gatherFolded(layouts);
  return layouts;
}
