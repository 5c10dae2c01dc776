//===- FusionBuilder.cpp - Replace a group of nodes by one fusion node -----===//
#include "passes/FusionBuilder.h"

#include "ir/RowFusion.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <queue>

using namespace cgc;

bool cgc::isFusiblePerElement(const Node &n) {
  if (!isPerElement(n) || !n.result()->getType().isStatic())
    return false;
  return llvm::all_of(n.getOperands(),
                      [](const Value *v) { return v->getType().isStatic(); });
}

bool cgc::readsRngFrom(const Node &n, const NodeSet &members) {
  return n.getOp() == OpKind::Dropout && n.numOperands() == 2 &&
         n.operand(1)->getDef() && members.count(n.operand(1)->getDef());
}

bool cgc::isSplatSource(const Node &n) {
  return n.numResults() == 1 && splatConstant(n.result()).hasValue();
}

bool cgc::isIotaSource(const Node &n) {
  return n.getOp() == OpKind::Iota && n.result()->getType().isStatic();
}

bool cgc::isExternal(const Graph &graph, const NodeSet &members,
                     const Value *v) {
  return graph.isOutput(v) || llvm::any_of(v->uses(), [&](const Use &u) {
           return !members.count(u.user);
         });
}

Node *cgc::buildFusionNode(Graph &graph, const NodeSet &members, OpKind kind,
                           const std::string &name, GraphBuilder &builder,
                           std::vector<Node *> &dead,
                           llvm::DenseSet<Node *> &erasedSources) {
  Node *last = members.back();
  builder.setInsertionPointToEnd(graph);
  builder.setOrigin(*last);
  Node *fusion = builder.createWithRegions(kind, name, {});
  Graph &body = fusion->region(0);
  builder.setInsertionPointToEnd(body);
  llvm::DenseMap<Value *, Value *> mapped;
  llvm::SmallVector<Node *, 4> clonedSources;
  auto mapOperand = [&](Value *v) -> Value * {
    auto it = mapped.find(v);
    if (it != mapped.end())
      return it->second;
    Node *def = v->getDef();
    if (def && (isSplatSource(*def) ||
                (kind == OpKind::Fusion && isIotaSource(*def)))) {
      Node *clone = builder.clone(*def, {});
      clonedSources.push_back(def);
      return mapped[v] = clone ? clone->result() : nullptr;
    }
    std::string inName =
        builder.uniqueName("in" + std::to_string(fusion->numOperands()));
    fusion->addOperand(v);
    return mapped[v] = body.addInput(inName, v->getType());
  };
  for (Node *m : members) {
    llvm::SmallVector<Value *, 3> operands;
    for (Value *v : m->getOperands())
      operands.push_back(mapOperand(v));
    if (llvm::is_contained(operands, nullptr))
      return nullptr;
    Node *clone = builder.clone(*m, operands);
    if (!clone)
      return nullptr;
    mapped[m->result()] = clone->result();
  }
  // Results: values read outside the group or returned.
  std::vector<std::string> resultNames;
  std::vector<Node *> resultMembers;
  for (Node *m : members) {
    Value *v = m->result();
    if (!isExternal(graph, members, v))
      continue;
    body.outputs.push_back({v->getName(), mapped[v], OutputKind::Output, "",
                            m->getLoc()});
    resultNames.push_back(v->getName());
    resultMembers.push_back(m);
  }
  if (!builder.addResults(*fusion, resultNames))
    return nullptr;
  for (unsigned r = 0; r < fusion->numResults(); ++r) {
    Value *v = resultMembers[r]->result(), *result = fusion->result(r);
    llvm::SmallVector<Use, 4> uses(v->uses().begin(), v->uses().end());
    for (const Use &u : uses)
      if (!members.count(u.user))
        u.user->setOperand(u.operandIndex, result);
    for (GraphOutput &o : graph.outputs) // Members keep their own uses.
      if (o.value == v)
        o.value = result;
  }
  for (Node *m : members)
    m->dropOperands();
  dead.insert(dead.end(), members.begin(), members.end());
  // The results take over the names of the values they replace, which are
  // free now that the members are going.
  for (unsigned r = 0; r < fusion->numResults(); ++r)
    fusion->result(r)->setName(resultNames[r]);
  // A source cloned into the body goes with its last reader.
  for (Node *src : clonedSources)
    if (!src->result()->hasUses() && !graph.isOutput(src->result()) &&
        erasedSources.insert(src).second)
      dead.push_back(src);
  return fusion;
}

void cgc::sortStably(Graph &graph,
                     const llvm::DenseMap<Node *, unsigned> &position) {
  // Kahn's algorithm, always taking the ready node that came first.
  llvm::DenseMap<Node *, unsigned> pending;
  llvm::DenseMap<Node *, llvm::SmallVector<Node *, 4>> users;
  using Item = std::pair<unsigned, Node *>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
  llvm::DenseMap<Node *, unsigned> key;
  for (unsigned i = 0; i < graph.nodes().size(); ++i) {
    Node *n = graph.nodes()[i].get();
    key[n] = position.count(n) ? position.lookup(n) : i;
  }
  for (const auto &owned : graph.nodes()) {
    Node *n = owned.get();
    llvm::SmallPtrSet<Node *, 4> deps;
    for (Value *v : n->getOperands())
      if (Node *d = v->getDef())
        if (d->getParent() == &graph && deps.insert(d).second)
          users[d].push_back(n);
    pending[n] = deps.size();
    if (deps.empty())
      ready.push({key[n], n});
  }
  std::vector<Node *> order;
  while (!ready.empty()) {
    Node *n = ready.top().second;
    ready.pop();
    order.push_back(n);
    for (Node *u : users[n])
      if (--pending[u] == 0)
        ready.push({key[u], u});
  }
  graph.setNodeOrder(order);
}


bool cgc::buildChainFusion(Graph &graph, llvm::ArrayRef<Node *> chain, OpKind kind,
                           const Node &origin, GraphBuilder &builder,
                           std::vector<Node *> &dead, size_t shared) {
  Node *last = chain.back();
  builder.setInsertionPoint(*last);
  builder.setOrigin(origin);
  Node *fusion = builder.createWithRegions(kind, origin.getName() + ".fused", {});
  Graph &body = fusion->region(0);
  builder.setInsertionPointToEnd(body);
  // Members' results map to their copies; each outside value read becomes
  // one body input.
  llvm::DenseMap<Value *, Value *> mapped;
  Value *mappedLast = nullptr;
  for (Node *m : chain) {
    llvm::SmallVector<Value *, 3> operands;
    for (Value *v : m->getOperands()) {
      Value *&in = mapped[v];
      if (!in) {
        fusion->addOperand(v);
        in = body.addInput(
            builder.uniqueName("in" + std::to_string(fusion->numOperands() - 1)),
            v->getType());
      }
      operands.push_back(in);
    }
    Node *clone = builder.clone(*m, operands);
    if (!clone)
      return false;
    mappedLast = mapped[m->result()] = clone->result();
  }
  std::string resultName = last->result()->getName();
  body.outputs.push_back(
      {resultName, mappedLast, OutputKind::Output, "", last->getLoc()});
  if (!builder.addResults(*fusion, {resultName}))
    return false;
  graph.replaceAllUsesWith(last->result(), fusion->result());
  for (Node *member : chain.drop_front(shared))
    member->dropOperands();
  dead.insert(dead.end(), chain.begin() + shared, chain.end());
  fusion->result()->setName(resultName);
  return true;
}
