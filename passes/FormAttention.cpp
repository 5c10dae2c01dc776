//===- FormAttention.cpp - Hand-written attention as one attention ---------===//
//
// Algorithm: models that do not call scaled_dot_product_attention write
// attention as products and a softmax (transformers' eager attention,
// timm's non-fused path, ONNX's Attention function, most hand-written
// modules):
//   [q = q0 * c]  [kt = transpose(k) * c]   (splat constants: the scale)
//   s = matmul(q, k, transpose_b)  or  matmul(q, kt)
//   [s = s * c  or  s = s / c]        (the scale, after)
//   [s = c * tanh(s / c)]             (a soft cap, Gemma 2's)
//   [s = s + m]                       (an additive mask, either side)
//   p = softmax(s, last axis)
//   y = matmul(p, v)
// Each softmax over the last axis that ends such a chain, in each graph
// (regions innermost first), becomes one `attention(q, k, v[, m])` with
// the chain's scale (1 when it has none) and cap, named after the last
// product and at its place; the chain's nodes go. k and v repeated per
// group of query heads (repeat_kv: reshape, broadcast_to, reshape) are
// read as their kv heads (grouped-query attention), the repeats going too.
// Each link must be read by the next alone, be no result (need_weights:
// the probabilities are read elsewhere, and the chain stays) and keep the
// scores' type; the mask must come after the scale and the cap (attention
// adds it to the capped, scaled scores) and broadcast to the scores; q, k
// and v must share their leading dims, q's heads a multiple of k's and
// v's; and the attention's type must be the chain's result's. Only f32
// chains with an additive mask (or none) form, the cases where attention
// computes what the chain does: a half type's chain rounds its scores
// before the softmax (attention keeps them in f32), and a bool mask, or a
// constant one with a row of -inf, can drop a whole row, which the
// softmax gives as NaN and attention as 0. A chain is formed only where
// an attention kernel runs the node on the context's target
// (attentionRunsFused): elsewhere expand-attention would write it out
// again.
// Why: attention runs as one kernel that never writes the score matrix
// (three kernels or more, and the scores' round trips, before).
// Requires: a verified graph after canonicalize. Guarantees: the graph
// computes the same values but for f32 rounding (and for a row of -inf
// in an additive mask given at run time: 0 where the softmax gave NaN).
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"
#include "passes/ValueBuilder.h"

#include "ir/Initializers.h"
#include "ir/OpAttrs.h"
#include "target/Scheduler.h"

#include <cmath>

using namespace cgc;

namespace {

/// One recognized chain: its nodes (to erase) and the attention's
/// operands, scale and soft cap.
struct AttentionChain {
  std::vector<Node *> nodes;
  Value *q = nullptr, *k = nullptr, *v = nullptr, *mask = nullptr;
  Node *qk = nullptr; ///< The q k^T product.
  double scale = 1.0;
  bool scaled = false; ///< A scale was taken (the mask must come after it).
  double softcap = 0;    ///< c of c * tanh(s / c); 0: none.
  /// k is `k` transposed by kPerm (empty: `k` itself): k^T was a transpose
  /// of other axes than k's last two (ONNX's 3-D Attention).
  std::vector<int64_t> kPerm;
  bool kUngrouped = false; ///< `k` is already the kv heads (ungroupHeads).
  const Node *kReader = nullptr; ///< The chain's node that reads `k`.
};

/// The finite value of splat constant \p v, if it is one.
llvm::Optional<double> finiteSplat(const Value *v) {
  auto value = splatConstant(v);
  if (!value)
    return llvm::None;
  double x = realOf(v->getType().dtype, *value);
  return std::isfinite(x) ? llvm::Optional<double>(x) : llvm::None;
}

/// \p n's defining node in \p g when \p v is read by \p n alone.
Node *soleDef(const Graph &g, const Value *v, const Node &n) {
  Node *def = v->getDef();
  return def && def->getParent() == &g && soleUser(g, v) == &n ? def : nullptr;
}

/// A splat constant's node goes with the chain when the chain alone reads it.
void takeConstant(const Graph &g, Value *c, const Node &user, AttentionChain &chain) {
  if (Node *def = soleDef(g, c, user))
    chain.nodes.push_back(def);
}

/// When \p v (read by \p user alone) is \p v0 * c, c * \p v0 or \p v0 / c
/// with c a finite nonzero splat constant, keeping \p v's type: \p v
/// becomes v0, the chain's scale takes c (or 1 / c), and the scaling node
/// is returned (it joins the chain, with c's node when only it reads c).
Node *peelScale(const Graph &g, Value *&v, const Node &user, AttentionChain &c) {
  Node *n = soleDef(g, v, user);
  if (!n || (n->getOp() != OpKind::Mul && n->getOp() != OpKind::Div))
    return nullptr;
  bool divides = n->getOp() == OpKind::Div;
  for (unsigned i = 0; i < (divides ? 1u : 2u); ++i)
    if (auto value = finiteSplat(n->operand(1 - i));
        value && *value != 0 && n->operand(i)->getType() == v->getType()) {
      c.scale *= divides ? 1.0 / *value : *value;
      c.scaled = true;
      takeConstant(g, n->operand(1 - i), *n, c);
      c.nodes.push_back(n);
      v = n->operand(i);
      return n;
    }
  return nullptr;
}

/// When \p n is a soft cap of scores x, c * tanh(x / c) with c a positive
/// splat constant (Gemma 2's eager attention): the division, which reads
/// x; the cap, its nodes and constants join \p c. Null otherwise.
Node *softCap(const Graph &g, Node &n, AttentionChain &c) {
  if (n.getOp() != OpKind::Mul)
    return nullptr;
  for (unsigned i = 0; i < 2; ++i) {
    auto cap = finiteSplat(n.operand(1 - i));
    Node *tanh = soleDef(g, n.operand(i), n);
    Node *div = tanh && tanh->getOp() == OpKind::Tanh ? soleDef(g, tanh->operand(0), *tanh)
                                                      : nullptr;
    if (!cap || *cap <= 0 || !div || div->getOp() != OpKind::Div ||
        finiteSplat(div->operand(1)) != cap || n.result()->getType() != div->operand(0)->getType())
      continue;
    c.softcap = *cap;
    takeConstant(g, n.operand(1 - i), n, c);
    if (div->operand(1) != n.operand(1 - i))
      takeConstant(g, div->operand(1), *div, c);
    c.nodes.insert(c.nodes.end(), {div, tanh, &n});
    return div;
  }
  return nullptr;
}

/// \p t's perm (over \p rank axes) with its last two entries exchanged:
/// when t makes k^T, what gives k from t's operand (the identity when t
/// exchanges the operand's last two axes).
std::vector<int64_t> untransposed(const Node &t, unsigned rank) {
  std::vector<int64_t> perm = transposePerm(t, rank);
  std::swap(perm[rank - 2], perm[rank - 1]);
  return perm;
}

bool isIdentity(llvm::ArrayRef<int64_t> perm) {
  for (size_t a = 0; a < perm.size(); ++a)
    if (perm[a] != int64_t(a))
      return false;
  return true;
}

/// kv0 when \p kv (read by \p user alone) is kv0 [..., H, S, E] with each
/// head repeated G times in turn, as transformers' repeat_kv writes it for
/// grouped-query heads: reshape to [..., H, 1, S, E], broadcast_to
/// [..., H, G, S, E], reshape to [..., H * G, S, E]; with \p transposed,
/// kv is k^T as ONNX's Attention function writes it: a transpose of the
/// repeat's last two axes before the last reshape (to [..., H * G, E, S]).
/// The nodes join \p taken when the chain alone reads them; null
/// otherwise.
Value *unrepeated(const Graph &g, Value *kv, const Node &user, std::vector<Node *> &taken,
                  bool transposed = false) {
  Node *merged = soleDef(g, kv, user);
  if (!merged || merged->getOp() != OpKind::Reshape)
    return nullptr;
  Node *swap = nullptr;
  Value *repeated = merged->operand(0);
  if (transposed) {
    swap = soleDef(g, repeated, *merged);
    unsigned rank = repeated->getType().rank();
    if (!swap || swap->getOp() != OpKind::Transpose || rank < 2 ||
        !isIdentity(untransposed(*swap, rank)))
      return nullptr;
    repeated = swap->operand(0);
  }
  Node *repeat = soleDef(g, repeated, swap ? *swap : *merged);
  if (!repeat || repeat->getOp() != OpKind::BroadcastTo)
    return nullptr;
  Node *split = soleDef(g, repeat->operand(0), *repeat);
  if (!split || split->getOp() != OpKind::Reshape)
    return nullptr;
  Value *kv0 = split->operand(0);
  const auto &base = kv0->getType().dims, &one = split->result()->getType().dims;
  const auto &groups = repeat->result()->getType().dims;
  llvm::SmallVector<Dim, 4> out = kv->getType().dims;
  size_t rank = base.size();
  if (rank < 3 || one.size() != rank + 1 || groups.size() != rank + 1 || out.size() != rank)
    return nullptr;
  if (transposed)
    std::swap(out[rank - 2], out[rank - 1]);
  size_t heads = rank - 3;
  Dim h = base[heads], grouped = groups[heads + 1];
  if (!h.isStatic() || !grouped.isStatic() || one[heads + 1] != Dim::fixed(1) ||
      out[heads] != Dim::fixed(h.extent() * grouped.extent()))
    return nullptr;
  for (size_t a = 0; a < rank; ++a) {
    size_t b = a <= heads ? a : a + 1;
    if (one[b] != base[a] || groups[b] != base[a] || (a != heads && out[a] != base[a]))
      return nullptr;
  }
  taken.insert(taken.end(), {split, repeat});
  if (swap)
    taken.push_back(swap);
  taken.push_back(merged);
  return kv0;
}

/// Walks back from the scores \p s (read by \p next) through an optional
/// mask, then an optional scale, to the q k^T product: attention adds the
/// mask to the scaled scores, so a mask met after a scale on the way back
/// (added before it) ends the walk. Every link keeps the scores' type.
bool scoresFrom(const Graph &g, Value *s, Node &next, AttentionChain &c) {
  Node *n = soleDef(g, s, next);
  if (!n)
    return false;
  if (n->getOp() == OpKind::Add) {
    if (c.mask || c.scaled || c.softcap)
      return false; // Attention adds its mask to the scaled, capped scores.
    // Either side may be the scores (the mask may be a product too: BERT's
    // (1 - mask) * min): the first that walks back to q k^T.
    for (unsigned i = 0; i < 2; ++i) {
      if (n->operand(i)->getType() != n->result()->getType())
        continue;
      AttentionChain tried = c;
      tried.mask = n->operand(1 - i);
      tried.nodes.push_back(n);
      if (scoresFrom(g, n->operand(i), *n, tried)) {
        c = std::move(tried);
        return true;
      }
    }
    return false;
  }
  // A soft cap comes after the scale (attention caps the scaled scores).
  if (!c.scaled && !c.softcap)
    if (Node *div = softCap(g, *n, c))
      return scoresFrom(g, div->operand(0), *div, c);
  if (Node *scaling = peelScale(g, s, next, c))
    return scoresFrom(g, s, *scaling, c);
  if (n->getOp() != OpKind::MatMul || n->boolAttr("transpose_a", false))
    return false;
  c.qk = n;
  c.nodes.push_back(n);
  c.q = n->operand(0);
  c.k = n->operand(1);
  // Scales taken on q and on k^T before the product (timm's vision
  // transformers scale q; ONNX's Attention function scales both by the
  // square root).
  peelScale(g, c.q, *n, c);
  c.kReader = n;
  if (Node *kScale = peelScale(g, c.k, *n, c))
    c.kReader = kScale;
  if (n->boolAttr("transpose_b", false))
    return true;
  const Node *user = c.kReader;
  // k^T as grouped-query heads repeated and transposed (ONNX's Attention
  // function): k is the kv heads.
  std::vector<Node *> repeat;
  if (Value *k0 = unrepeated(g, c.k, *user, repeat, /*transposed=*/true)) {
    c.nodes.insert(c.nodes.end(), repeat.begin(), repeat.end());
    c.k = k0;
    c.kUngrouped = true;
    return true;
  }
  // k^T as a transpose: of k's last two axes, or of others too (k is then
  // that transpose with its last two entries exchanged).
  Node *t = soleDef(g, c.k, *user);
  unsigned rank = c.k->getType().rank();
  if (!t || t->getOp() != OpKind::Transpose || rank < 2)
    return false;
  std::vector<int64_t> perm = untransposed(*t, rank);
  c.nodes.push_back(t);
  c.k = t->operand(0);
  c.kReader = t;
  if (!isIdentity(perm))
    c.kPerm = perm;
  return true;
}

/// Grouped-query heads: k and v as their kv heads, when both were repeated
/// by as many groups.
void ungroupHeads(const Graph &g, AttentionChain &c, const Node &pv) {
  if (!c.kPerm.empty())
    return; // k is a transpose of `k`: a repeat of `k` is not k's.
  std::vector<Node *> taken;
  Value *k0 = c.kUngrouped ? c.k : unrepeated(g, c.k, *c.kReader, taken);
  Value *v0 = unrepeated(g, c.v, pv, taken);
  if (!k0 || !v0)
    return;
  unsigned heads = k0->getType().rank() - 3;
  if (k0->getType().dims[heads] != v0->getType().dims[heads])
    return;
  c.k = k0;
  c.v = v0;
  c.nodes.insert(c.nodes.begin(), taken.begin(), taken.end());
}

/// Whether additive mask \p mask is a constant with a row of -inf over the
/// keys (its last axis; one -inf when it broadcasts there): softmax gives
/// that row NaN, attention 0.
bool dropsAWholeRow(const Value &mask) {
  const Node *def = mask.getDef();
  if (!def || def->getOp() != OpKind::Constant)
    return false;
  std::vector<Element> values = constantElements(*def);
  int64_t keys = mask.getType().rank() ? mask.getType().dims.back().extent() : 1;
  for (size_t row = 0; keys > 0 && row < values.size(); row += size_t(keys))
    if (std::all_of(values.begin() + row, values.begin() + row + keys, [&](Element e) {
          return realOf(mask.getType().dtype, e) == -INFINITY;
        }))
      return true;
  return false;
}

/// Whether the chain's operands make an attention that computes what the
/// chain does: q, k and v of f32 and one rank, their leading dims equal,
/// q's heads a multiple of k's and v's, and an f32 mask broadcasting to
/// the scores that drops no whole row.
bool operandsFit(const AttentionChain &c) {
  const TensorType &q = c.q->getType(), &v = c.v->getType();
  TensorType k = c.k->getType(); // Transposed by kPerm, as the attention reads it.
  for (size_t a = 0; a < c.kPerm.size(); ++a)
    k.dims[a] = c.k->getType().dims[c.kPerm[a]];
  unsigned rank = q.rank();
  if (q.dtype != DType::F32 || k.dtype != q.dtype || v.dtype != q.dtype || rank < 3 ||
      k.rank() != rank || v.rank() != rank || k.dims[rank - 1] != q.dims[rank - 1] ||
      v.dims[rank - 2] != k.dims[rank - 2] || !q.dims[rank - 1].isStatic())
    return false;
  for (unsigned a = 0; a + 3 < rank; ++a)
    if (k.dims[a] != q.dims[a] || v.dims[a] != q.dims[a])
      return false;
  Dim qHeads = q.dims[rank - 3], kvHeads = k.dims[rank - 3];
  if (v.dims[rank - 3] != kvHeads ||
      (qHeads != kvHeads && (!qHeads.isStatic() || !kvHeads.isStatic() ||
                             kvHeads.extent() == 0 ||
                             qHeads.extent() % kvHeads.extent() != 0)))
    return false;
  if (!c.mask)
    return true;
  const TensorType &mask = c.mask->getType();
  llvm::SmallVector<Dim, 4> scores(q.dims.begin(), q.dims.end() - 1);
  scores.push_back(k.dims[rank - 2]);
  auto joined = broadcastShapes(mask.dims, scores);
  return mask.dtype == q.dtype && !dropsAWholeRow(*c.mask) && mask.rank() <= rank &&
         joined && *joined == scores;
}

/// The chain that softmax \p sm ends, if it is one.
llvm::Optional<AttentionChain> chainTo(const Graph &g, Node &sm) {
  unsigned rank = sm.result()->getType().rank();
  if (rank < 3 || normalizeAxis(sm.intAttr("axis", -1), rank) != rank - 1)
    return llvm::None;
  AttentionChain c;
  Node *pv = soleUser(g, sm.result());
  if (!pv || pv->getOp() != OpKind::MatMul || pv->operand(0) != sm.result() ||
      pv->boolAttr("transpose_a", false) || pv->boolAttr("transpose_b", false))
    return llvm::None;
  c.v = pv->operand(1);
  if (!scoresFrom(g, sm.operand(0), sm, c))
    return llvm::None;
  ungroupHeads(g, c, *pv);
  if (!operandsFit(c))
    return llvm::None;
  c.nodes.push_back(&sm);
  c.nodes.push_back(pv);
  return c;
}

class FormAttentionPass : public Pass {
public:
  llvm::StringRef name() const override { return "form-attention"; }
  llvm::StringRef summary() const override {
    return "write hand-written attention (products and a softmax) as one attention";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    return forEachGraphInnermostFirst(
        graph, [&](Graph &g) { return formInGraph(g, ctx); });
  }

private:
  static bool formInGraph(Graph &g, PassContext &ctx);
};

} // namespace

/// Forms the chain ending at each softmax in node order; a chain no
/// kernel would run is left as it is.
bool FormAttentionPass::formInGraph(Graph &g, PassContext &ctx) {
  GraphBuilder builder(g, ctx.diag);
  ValueBuilder vb(builder);
  std::vector<Node *> softmaxes;
  for (const auto &n : g.nodes())
    if (n->getOp() == OpKind::Softmax)
      softmaxes.push_back(n.get());
  for (Node *sm : softmaxes) {
    llvm::Optional<AttentionChain> c = chainTo(g, *sm);
    if (!c)
      continue;
    Node &last = *c->nodes.back();
    vb.setInsertionPoint(last);
    vb.setOrigin(last);
    vb.setBase(last.getName() + ".attention");
    Value *k = c->kPerm.empty()
                   ? c->k
                   : vb.op(OpKind::Transpose, {c->k}, AttrMap{{"perm", c->kPerm}});
    if (!k)
      return false;
    std::vector<Value *> operands{c->q, k, c->v};
    if (c->mask)
      operands.push_back(c->mask);
    AttrMap attrs{{"scale", c->scale}};
    if (c->softcap)
      attrs["softcap"] = c->softcap;
    Value *attention = vb.op(OpKind::Attention, operands, attrs);
    if (!attention)
      return false;
    Node *node = attention->getDef();
    // The chain's result exactly (a q broadcast over the heads by the
    // product, or a scale that broadcast the scores, would change it).
    if (attention->getType() != last.result()->getType() ||
        !attentionRunsFused(*node, ctx.target)) {
      node->dropOperands();
      g.erase(node);
      if (k != c->k) {
        k->getDef()->dropOperands();
        g.erase(k->getDef());
      }
      continue;
    }
    g.replaceAllUsesWith(last.result(), attention);
    std::string name = last.getName(), value = last.result()->getName();
    for (Node *n : c->nodes) // Every use inside the chain goes with it.
      n->dropOperands();
    g.erase(c->nodes);
    node->setName(name); // Free once the chain is gone.
    attention->setName(value);
  }
  return true;
}

std::unique_ptr<Pass> cgc::createFormAttentionPass() {
  return std::make_unique<FormAttentionPass>();
}
