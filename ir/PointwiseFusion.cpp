//===- PointwiseFusion.cpp - What a fusion body may hold -------------------===//
#include "ir/PointwiseFusion.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace cgc;

bool cgc::isIndexMove(const Node &node) {
  OpKind op = node.getOp();
  bool moves = op == OpKind::Transpose || op == OpKind::Reshape ||
               op == OpKind::BroadcastTo || op == OpKind::Slice ||
               op == OpKind::Concat || isIndexedMove(node);
  if (!moves || !node.result()->getType().isStatic())
    return false;
  return llvm::all_of(node.getOperands(),
                      [](const Value *v) { return v->getType().isStatic(); });
}

bool cgc::isIndexedMove(const Node &node) {
  return node.getOp() == OpKind::Gather || node.getOp() == OpKind::Embedding;
}

uint64_t cgc::prologueEvaluations(llvm::ArrayRef<const Node *> nodes, const Value *x) {
  EvaluationCounts counts;
  counts.askAtElement(x);
  uint64_t total = 0;
  llvm::SmallPtrSet<const Value *, 8> inputs;
  for (const Node *n : llvm::reverse(nodes)) {
    total += counts.propagate(*n);
    for (const Value *v : n->getOperands())
      if (!v->getDef() || !llvm::is_contained(nodes, v->getDef()))
        inputs.insert(v);
  }
  for (const Value *v : inputs) // Their loads.
    total += counts.of(v);
  return total;
}

bool cgc::isProductPrologueOp(const Node &node) {
  auto isStatic = [](const Value *v) { return v->getType().isStatic(); };
  if (node.numResults() != 1 || !isStatic(node.result()) ||
      !llvm::all_of(node.getOperands(), isStatic))
    return false;
  if (node.info().has(Elementwise))
    return true;
  if (node.info().has(Source))
    return node.getOp() == OpKind::Iota || splatConstant(node.result());
  return isIndexMove(node) && node.getOp() != OpKind::Concat && !isIndexedMove(node);
}

bool cgc::movesElements(const Graph &body) {
  return llvm::any_of(body.nodes(), [](const auto &n) { return isIndexMove(*n); });
}

bool cgc::computesPerElement(const Node &node) {
  if (node.info().has(Elementwise) || node.getOp() == OpKind::Dropout)
    return true;
  return node.getOp() == OpKind::Fusion && !movesElements(node.region(0));
}

/// Whether body value \p v is read only at the coordinates it is stored
/// at: by elementwise ops of its shape whose values are so read, or as a
/// result.
static bool readAtItsElement(const Value *v) {
  return llvm::all_of(v->uses(), [&](const Use &u) {
    return u.user->info().has(Elementwise) &&
           u.user->result()->getType().dims == v->getType().dims &&
           readAtItsElement(u.user->result());
  });
}

bool cgc::readsOnlyInPlace(const Node &fusion, const Value *v) {
  const Graph &body = fusion.region(0);
  for (unsigned k = 0; k < fusion.numOperands(); ++k)
    if (fusion.operand(k) == v && !readAtItsElement(body.inputs()[k].value))
      return false;
  return true;
}

bool cgc::repeatsOneOperand(const Node &node) {
  return node.getOp() == OpKind::Concat &&
         llvm::all_of(node.getOperands(),
                      [&](const Value *v) { return v == node.operand(0); });
}

uint64_t EvaluationCounts::of(const Value *v) const {
  auto it = contexts.find(v);
  return it == contexts.end() ? 0 : it->second.size();
}

void EvaluationCounts::add(const Value *v, unsigned context) {
  std::set<unsigned> &set = contexts[v];
  if (set.size() <= kMaxViewEvaluations) // Beyond: refused either way.
    set.insert(context);
}

unsigned EvaluationCounts::through(unsigned context, const Node &move, unsigned operand) {
  auto key = std::make_tuple(context, &move, operand);
  auto it = interned.find(key);
  if (it != interned.end())
    return it->second;
  unsigned id = unsigned(interned.size()) + 1; // 0: the kernel's element.
  interned.emplace(key, id);
  return id;
}

uint64_t EvaluationCounts::propagateBody(const Graph &body) {
  uint64_t total = 0;
  for (const auto &n : llvm::reverse(body.nodes()))
    total += propagate(*n);
  return total;
}

uint64_t EvaluationCounts::propagate(const Node &node) {
  std::set<unsigned> asked;
  uint64_t total = 0;
  for (unsigned r = 0; r < node.numResults(); ++r) {
    auto it = contexts.find(node.result(r));
    if (it == contexts.end())
      continue;
    asked.insert(it->second.begin(), it->second.end());
    total += it->second.size();
  }
  if (asked.empty())
    return 0;
  if (node.getOp() == OpKind::Fusion) {
    // Copies: add() may grow `contexts`, which moves the sets it holds.
    const Graph &body = node.region(0);
    for (unsigned r = 0; r < node.numResults(); ++r)
      for (unsigned c : std::set<unsigned>(contexts[node.result(r)]))
        add(body.outputs[r].value, c);
    total += propagateBody(body);
    for (unsigned k = 0; k < node.numOperands(); ++k)
      for (unsigned c : std::set<unsigned>(contexts[body.inputs()[k].value]))
        add(node.operand(k), c);
    return total;
  }
  bool moves = isIndexMove(node);
  for (unsigned k = 0; k < node.numOperands(); ++k)
    for (unsigned c : asked)
      add(node.operand(k), moves ? through(c, node, repeatsOneOperand(node) ? 0 : k) : c);
  return total;
}

uint64_t cgc::viewEvaluations(const Graph &body) {
  EvaluationCounts counts;
  for (const GraphOutput &out : body.outputs)
    counts.askAtElement(out.value);
  uint64_t total = 0;
  for (const auto &n : llvm::reverse(body.nodes()))
    total += counts.propagate(*n);
  for (const GraphInput &in : body.inputs())
    total += counts.of(in.value);
  return total;
}
