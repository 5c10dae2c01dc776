//===- Builder.cpp - Creating nodes at an insertion point -------------------===//
#include "ir/Builder.h"

#include "ir/TypeRules.h"

#include <cassert>

using namespace cgc;

void GraphBuilder::setInsertionPointToEnd(Graph &g) {
  graph = &g;
  before = nullptr;
}

void GraphBuilder::setInsertionPoint(Node &node) {
  graph = node.getParent();
  before = &node;
}

void GraphBuilder::setOrigin(const Node &origin) {
  loc = origin.getLoc();
  sourceLoc = origin.getSourceLoc();
}

llvm::StringSet<> &GraphBuilder::namesOf(const Graph &g) {
  auto [it, inserted] = names.try_emplace(&g);
  if (!inserted)
    return it->second;
  for (const GraphInput &in : g.inputs())
    it->second.insert(in.value->getName());
  for (const auto &node : g.nodes()) {
    it->second.insert(node->getName());
    for (unsigned r = 0; r < node->numResults(); ++r)
      it->second.insert(node->result(r)->getName());
  }
  return it->second;
}

std::string GraphBuilder::uniqueName(llvm::StringRef base) {
  return uniqueNameIn(*graph, base);
}

std::string GraphBuilder::uniqueNameIn(const Graph &g, llvm::StringRef base) {
  llvm::StringSet<> &taken = namesOf(g);
  std::string name = base.str();
  for (unsigned k = 1; taken.count(name); ++k)
    name = base.str() + "_" + std::to_string(k);
  taken.insert(name);
  return name;
}

Node *GraphBuilder::insert(OpKind op, std::string name, Location at,
                           llvm::ArrayRef<Value *> operands,
                           const AttrMap &attrs) {
#ifndef NDEBUG
  for (const AttrSpec &spec : attrSpecs(op))
    assert((spec.optional || attrs.count(spec.name.str())) &&
           "a required attribute is missing");
#endif
  auto owned = std::make_unique<Node>(op, std::move(name), at);
  Node *node = before ? graph->insertBefore(before, std::move(owned))
                      : graph->append(std::move(owned));
  for (Value *v : operands)
    node->addOperand(v);
  for (const auto &[key, value] : attrs)
    node->setAttr(key, value);
  return node;
}

Node *GraphBuilder::typeSingleResult(Node *node,
                                     const std::string &resultName) {
  llvm::SmallVector<TensorType, 1> types;
  if (!inferResultTypes(*node, types, diag)) {
    node->dropOperands();
    node->getParent()->erase(node);
    return nullptr;
  }
  assert(types.size() == 1 && "an op without regions has one result");
  node->addResult(resultName, types[0]);
  return node;
}

Node *GraphBuilder::create(OpKind op, llvm::StringRef base,
                           llvm::ArrayRef<Value *> operands,
                           const AttrMap &attrs) {
  assert(regionNames(op).empty() && "use createWithRegions()");
  assert(int(operands.size()) >= opInfo(op).minOperands && "too few operands");
  std::string name = uniqueName(base);
  Node *node = insert(op, name, loc, operands, attrs);
  node->setSourceLoc(sourceLoc);
  return typeSingleResult(node, name);
}

Node *GraphBuilder::clone(const Node &node, llvm::ArrayRef<Value *> operands) {
  assert(!node.numRegions() && node.numResults() == 1 &&
         "clone() copies ops without regions");
  assert(int(operands.size()) >= opInfo(node.getOp()).minOperands &&
         "too few operands");
  const std::string &oldResult = node.result()->getName();
  std::string result = uniqueName(oldResult);
  std::string name =
      node.getName() == oldResult ? result : uniqueName(node.getName());
  Node *copy = insert(node.getOp(), name, node.getLoc(), operands,
                      node.attrs());
  copy->setSourceLoc(node.getSourceLoc());
  return typeSingleResult(copy, result);
}

Node *GraphBuilder::createWithRegions(OpKind op, llvm::StringRef base,
                                      llvm::ArrayRef<Value *> operands,
                                      const AttrMap &attrs) {
  Node *node = insert(op, uniqueName(base), loc, operands, attrs);
  node->setSourceLoc(sourceLoc);
  for (size_t k = 0; k < regionNames(op).size(); ++k)
    node->addRegion();
  return node;
}

bool GraphBuilder::addResults(Node &node, llvm::ArrayRef<std::string> bases) {
  assert(!node.numResults() && "the node has its results");
  // A node with regions gets its operands after createWithRegions: counted now.
  assert(int(node.numOperands()) >= opInfo(node.getOp()).minOperands &&
         "too few operands");
  llvm::SmallVector<TensorType, 4> types;
  if (!inferResultTypes(node, types, diag))
    return false;
  assert(types.size() == bases.size() && "one name per result");
  for (size_t r = 0; r < types.size(); ++r)
    node.addResult(uniqueNameIn(*node.getParent(), bases[r]), types[r]);
  return true;
}

void GraphBuilder::replace(Node &old, Node &replacement) {
  assert(old.numResults() == replacement.numResults() &&
         "replacing a node by one with other results");
  assert(&old != &replacement && "replacing a node by itself");
  Graph &g = *old.getParent();
  if (before == &old) {
    unsigned next = g.indexOf(&old) + 1;
    before = next < g.nodes().size() ? g.nodes()[next].get() : nullptr;
  }
  std::vector<std::string> resultNames;
  for (unsigned r = 0; r < old.numResults(); ++r) {
    resultNames.push_back(old.result(r)->getName());
    g.replaceAllUsesWith(old.result(r), replacement.result(r));
  }
  std::string name = old.getName();
  old.dropOperands();
  g.erase(&old);
  replacement.setName(std::move(name));
  for (unsigned r = 0; r < replacement.numResults(); ++r)
    replacement.result(r)->setName(std::move(resultNames[r]));
}
