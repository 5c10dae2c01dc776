//===- ChooseLayout.cpp - Channels last where tensor cores want it ----------===//
//
// Algorithm, in two steps:
//  1. Every conv of f16 or bf16 that cuDNN runs (target/Scheduler.h's
//     convolutionRunsOnLibrary) and holds its channels first becomes
//     (not in a graph autodiff differentiates or one over a training
//     step's state, PassContext::differentiated: conv's derivative rule
//     and its derivatives' ops are channels first)
//       transpose(conv{channels_last}(transpose(x, last), transpose(w, last)
//                 [, b]), first)
//     cuDNN's tensor-core engines read NHWC; given NCHW they transpose
//     around every convolution themselves.
//  2. Transposes sink toward the results, so that the ones between two
//     convolutions meet and cancel (canonicalize composes them, dce drops
//     the dead). A node u reading t = transpose(x, p) becomes
//     transpose(u', p), or a reshape of u', when
//       - u is elementwise and each of its other operands is a transpose
//         by p too (u' reads its input) or broadcasts as a reshape would
//         (its non-unit dims keep their order under p: a per-channel
//         [C, 1, 1] becomes [1, 1, C]);
//       - u is a reduction over axes A: u' reduces x over p(A); without
//         keepdim the result is transposed by what p does to the kept axes
//         (nothing, when it keeps their order);
//       - u is a max_pool or avg_pool, or a conv cuDNN runs, holding its
//         channels first, and p moves the channels from last to axis 1:
//         u' is the channels_last op (a conv's weight transposed to last).
//     A transpose that moves only unit dims becomes a reshape. Sweeps
//     repeat until nothing changes.
//  3. A graph input with an initial value from the weights file that is
//     read only through transposes by one perm (a conv weight) is declared
//     transposed instead: its initializer's `permutation` says how to
//     permute the stored tensor as it is loaded (the compiler does it for
//     weights in the artifact, the runtime for a weights file beside it).
//     The transposes of weights the caller binds stay on the device.
// The layout is recorded in the IR: each converted op's `channels_last`,
// each weight's permutation.
// Requires: a verified graph, before expand-convolution (which writes
// channels_last pools out without transposes). Guarantees: the same
// values (--check-equivalence); graph inputs and outputs keep their
// layout.
//
//===----------------------------------------------------------------------===//
#include "ir/ConvolutionShape.h"
#include "ir/OpAttrs.h"
#include "ir/TypeRules.h"
#include "passes/Pass.h"
#include "passes/ValueBuilder.h"
#include "target/Scheduler.h"

#include "llvm/ADT/STLExtras.h"

using namespace cgc;

namespace {

using Perm = std::vector<int64_t>;

/// The perm of \p v's producer when it is a transpose, else empty.
Perm transposeOf(const Value *v) {
  const Node *n = v->getDef();
  if (!n || n->getOp() != OpKind::Transpose)
    return {};
  return transposePerm(*n, n->operand(0)->getType().rank());
}

Perm inverse(const Perm &p) {
  Perm q(p.size());
  for (size_t i = 0; i < p.size(); ++i)
    q[size_t(p[i])] = int64_t(i);
  return q;
}

/// Whether taking axis order[i] of \p dims as axis i keeps the non-unit
/// axes in their order: then the permutation is a reshape (a symbolic dim
/// counts as non-unit).
bool keepsNonUnitOrder(llvm::ArrayRef<Dim> dims, const Perm &order) {
  int64_t previous = -1;
  for (int64_t axis : order) {
    if (dims[size_t(axis)] == Dim::fixed(1))
      continue;
    if (axis < previous)
      return false;
    previous = axis;
  }
  return true;
}

/// \p dims of a rank-r value permuted by \p p (result axis i is axis p[i]).
std::vector<Dim> permuted(llvm::ArrayRef<Dim> dims, const Perm &p) {
  std::vector<Dim> out;
  for (int64_t axis : p)
    out.push_back(dims[size_t(axis)]);
  return out;
}

/// How \p v, read by an op of rank \p p.size() that now runs before the
/// transpose by \p p, is read there: through the transpose's input, as
/// it is (a scalar), or reshaped to these dims; none when that would need
/// a transpose of its own.
struct Untransposed {
  enum class Kind { Input, Same, Reshape } kind;
  std::vector<Dim> dims;
};

llvm::Optional<Untransposed> untransposed(const Value *v, const Perm &p) {
  if (transposeOf(v) == p)
    return Untransposed{Untransposed::Kind::Input, {}};
  const TensorType &t = v->getType();
  size_t r = p.size();
  if (t.rank() > r)
    return llvm::None;
  if (t.rank() == 0)
    return Untransposed{Untransposed::Kind::Same, {}};
  std::vector<Dim> full(r - t.rank(), Dim::fixed(1));
  full.insert(full.end(), t.dims.begin(), t.dims.end());
  Perm back = inverse(p);
  if (!keepsNonUnitOrder(full, back))
    return llvm::None;
  return Untransposed{Untransposed::Kind::Reshape, permuted(full, back)};
}

Value *readUntransposed(ValueBuilder &vb, Value *v, const Untransposed &how) {
  switch (how.kind) {
  case Untransposed::Kind::Input: return v->getDef()->operand(0);
  case Untransposed::Kind::Same: return v;
  case Untransposed::Kind::Reshape: return vb.reshape(v, how.dims, "untransposed");
  }
  return nullptr;
}

/// The transpose perm that \p u (elementwise) reads through, when every
/// operand can move before it; empty otherwise.
Perm elementwisePerm(const Node &u) {
  Perm p;
  for (const Value *v : u.getOperands()) {
    Perm q = transposeOf(v);
    if (!q.empty() && q.size() == u.result()->getType().rank())
      p = q;
  }
  if (p.empty())
    return {};
  for (const Value *v : u.getOperands())
    if (!untransposed(v, p))
      return {};
  return p;
}

/// An op of the convolution family that has a channels_last form (its
/// schema in Ops.def: conv and the pools).
bool isWindowOp(const Node &n) {
  return n.info().family == Convolution && findAttrSpec(n.getOp(), "channels_last");
}

/// Whether window op \p u reads its input through a transpose that moves
/// the channels from last to axis 1, and can hold its channels last.
bool windowReadsChannelsLast(const Node &u, const Target &target) {
  if (!isWindowOp(u) || u.boolAttr("channels_last", false))
    return false;
  if (u.getOp() == OpKind::Conv && !convolutionRunsOnLibrary(u, target))
    return false;
  unsigned rank = u.operand(0)->getType().rank();
  return transposeOf(u.operand(0)) == channelsFirstPerm(rank);
}

/// A reduction over `axes` (not argmax) of a transposed value.
bool isSinkableReduction(const Node &u) {
  return u.info().family == Reduction && u.getOp() != OpKind::ArgMax &&
         !transposeOf(u.operand(0)).empty();
}

/// A transpose that moves only unit dims.
bool isReshapeLike(const Node &t) {
  if (t.getOp() != OpKind::Transpose)
    return false;
  return keepsNonUnitOrder(t.operand(0)->getType().dims,
                           transposePerm(t, t.operand(0)->getType().rank()));
}

/// u's attributes with `channels_last` set.
AttrMap channelsLast(const Node &u) {
  AttrMap attrs(u.attrs().begin(), u.attrs().end());
  attrs["channels_last"] = true;
  return attrs;
}

Value *transposed(ValueBuilder &vb, Value *v, const Perm &p, llvm::StringRef suffix) {
  return vb.op(OpKind::Transpose, {v}, {{"perm", p}}, suffix);
}

/// Step 1: a channels-first half-type conv between transposes.
Value *toChannelsLast(ValueBuilder &vb, const Node &conv) {
  unsigned rank = conv.result()->getType().rank();
  Perm last = channelsLastPerm(rank);
  std::vector<Value *> operands = {transposed(vb, conv.operand(0), last, "nhwc"),
                                   transposed(vb, conv.operand(1), last, "weight_nhwc")};
  if (conv.numOperands() == 3)
    operands.push_back(conv.operand(2));
  Value *y = vb.op(OpKind::Conv, operands, channelsLast(conv), "channels_last");
  return transposed(vb, y, channelsFirstPerm(rank), "");
}

/// Step 2 for a window op.
Value *sinkThroughWindow(ValueBuilder &vb, const Node &u) {
  unsigned rank = u.result()->getType().rank();
  std::vector<Value *> operands = {u.operand(0)->getDef()->operand(0)};
  if (u.getOp() == OpKind::Conv)
    operands.push_back(transposed(vb, u.operand(1), channelsLastPerm(rank), "weight_nhwc"));
  for (unsigned k = operands.size(); k < u.numOperands(); ++k)
    operands.push_back(u.operand(k));
  Value *y = vb.op(u.getOp(), operands, channelsLast(u), "channels_last");
  return transposed(vb, y, channelsFirstPerm(rank), "");
}

/// Step 2 for a reduction.
Value *sinkThroughReduction(ValueBuilder &vb, const Node &u) {
  Value *x = u.operand(0)->getDef()->operand(0);
  Perm p = transposeOf(u.operand(0));
  unsigned rank = unsigned(p.size());
  auto axes = reductionAxes(u, rank);
  std::vector<int64_t> mapped;
  for (unsigned a : axes)
    mapped.push_back(p[a]);
  llvm::sort(mapped);
  bool keep = u.boolAttr("keepdim", false);
  AttrMap attrs(u.attrs().begin(), u.attrs().end());
  attrs["axes"] = mapped;
  Value *y = vb.op(u.getOp(), {x}, attrs, "untransposed");
  if (keep)
    return transposed(vb, y, p, "");
  // Kept axes of u in order; each is x's axis p[i]; its place among x's
  // kept axes is its axis in y.
  std::vector<int64_t> keptX;
  for (unsigned j = 0; j < rank; ++j)
    if (!llvm::is_contained(mapped, int64_t(j)))
      keptX.push_back(j);
  Perm q;
  for (unsigned i = 0; i < rank; ++i)
    if (!llvm::is_contained(axes, i))
      q.push_back(llvm::find(keptX, p[i]) - keptX.begin());
  bool identity = true;
  for (size_t i = 0; i < q.size(); ++i)
    identity &= q[i] == int64_t(i);
  return identity ? y : transposed(vb, y, q, "");
}

/// Step 2 for an elementwise op.
Value *sinkThroughElementwise(ValueBuilder &vb, const Node &u) {
  Perm p = elementwisePerm(u);
  std::vector<Value *> operands;
  for (Value *v : u.getOperands())
    operands.push_back(readUntransposed(vb, v, *untransposed(v, p)));
  return transposed(vb, vb.clone(u, operands), p, "");
}

enum class Move { None, Reshape, Window, Reduction, Elementwise };

Move moveOf(const Node &u, const Target &target) {
  if (isReshapeLike(u))
    return Move::Reshape;
  if (windowReadsChannelsLast(u, target))
    return Move::Window;
  if (isSinkableReduction(u))
    return Move::Reduction;
  if (u.info().family == Elementwise && !elementwisePerm(u).empty())
    return Move::Elementwise;
  return Move::None;
}

bool isHalfLibraryConv(const Node &n, const Target &target) {
  if (n.getOp() != OpKind::Conv || n.boolAttr("channels_last", false) ||
      !convolutionRunsOnLibrary(n, target))
    return false;
  DType dtype = n.result()->getType().dtype;
  return dtype == DType::F16 || dtype == DType::BF16;
}

/// Step 3: a weight read only through transposes by one perm p, which no
/// output updates, is declared transposed (its initial value permuted as
/// it is loaded: Initializer::permutation) and read directly.
void holdWeightsTransposed(Graph &graph) {
  for (unsigned i = 0; i < graph.inputs().size(); ++i) {
    GraphInput &in = graph.input(i);
    Value *w = in.value;
    if (in.init.source != Initializer::Source::Weights || w->uses().empty() ||
        llvm::any_of(graph.outputs, [&](const GraphOutput &o) {
          return o.target == w->getName() || o.value == w;
        }))
      continue;
    Perm p;
    bool same = true;
    for (const Use &use : w->uses()) {
      Perm q = use.user->getOp() == OpKind::Transpose && use.user->getParent() == &graph
                   ? transposeOf(use.user->result())
                   : Perm{};
      same &= !q.empty() && (p.empty() || q == p);
      p = q;
    }
    if (!same)
      continue;
    Perm held = p;
    if (!in.init.permutation.empty())
      for (size_t axis = 0; axis < p.size(); ++axis)
        held[axis] = in.init.permutation[size_t(p[axis])];
    in.init.permutation = held;
    std::vector<Node *> transposes;
    for (const Use &use : w->uses())
      transposes.push_back(use.user);
    for (Node *t : transposes)
      graph.replaceAllUsesWith(t->result(), w);
    graph.erase(transposes);
    w->setType(TensorType(w->getType().dtype, permuted(w->getType().dims, p)));
  }
}

class ChooseLayoutPass : public Pass {
public:
  llvm::StringRef name() const override { return "layout"; }
  llvm::StringRef summary() const override {
    return "hold the half types' convolutions' channels last, and sink the "
           "transposes that adds";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    const Target &target = ctx.target;
    bool any = false;
    if (!rewriteEach(
            graph, ctx.diag,
            [&](const Node &n) {
              bool half = !ctx.differentiated && isHalfLibraryConv(n, target);
              any |= half;
              return half;
            },
            toChannelsLast))
      return false;
    // Each sweep moves every transpose past at least one node; a graph of
    // n nodes needs at most n sweeps.
    for (size_t sweep = 0; any && sweep <= graph.nodes().size(); ++sweep) {
      bool moved = false;
      if (!rewriteEach(
              graph, ctx.diag,
              [&](const Node &n) {
                bool moves = moveOf(n, target) != Move::None;
                moved |= moves;
                return moves;
              },
              [&](ValueBuilder &vb, const Node &u) -> Value * {
                switch (moveOf(u, target)) {
                case Move::Reshape:
                  return vb.reshape(u.operand(0), u.result()->getType().dims, "");
                case Move::Window: return sinkThroughWindow(vb, u);
                case Move::Reduction: return sinkThroughReduction(vb, u);
                case Move::Elementwise: return sinkThroughElementwise(vb, u);
                case Move::None: // An earlier rewrite of this sweep changed it.
                  return vb.clone(u, u.getOperands());
                }
                return nullptr;
              }))
        return false;
      if (!moved)
        break;
    }
    if (any)
      holdWeightsTransposed(graph);
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> cgc::createChooseLayoutPass() {
  return std::make_unique<ChooseLayoutPass>();
}
