//===- Graph.cpp - Values, nodes and graphs ---------------------------------===//
#include "ir/Graph.h"
#include "ir/Initializers.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include <algorithm>
#include <cassert>

using namespace cgc;

llvm::StringRef cgc::inputKindName(InputKind kind) {
  switch (kind) {
  case InputKind::UserInput: return "user_input";
  case InputKind::Parameter: return "parameter";
  case InputKind::Buffer: return "buffer";
  case InputKind::RngState: return "rng_state";
  case InputKind::OptimizerState: return "optimizer_state";
  case InputKind::DimSize: return "dim_size";
  }
  llvm_unreachable("invalid InputKind");
}

llvm::StringRef cgc::outputKindName(OutputKind kind) {
  switch (kind) {
  case OutputKind::Output: return "output";
  case OutputKind::Loss: return "loss";
  case OutputKind::ParameterUpdate: return "parameter_update";
  case OutputKind::BufferMutation: return "buffer_mutation";
  }
  llvm_unreachable("invalid OutputKind");
}

void Value::replaceAllUsesWith(Value *other) {
  assert(other != this && "replacing a value with itself");
  while (!useList.empty()) {
    Use use = useList.back();
    use.user->setOperand(use.operandIndex, other);
  }
}

Node::~Node() { dropOperands(); }

void Node::addOperand(Value *value) {
  operands.push_back(value);
  value->useList.push_back({this, unsigned(operands.size() - 1)});
}

void Node::setOperand(unsigned i, Value *value) {
  Value *old = operands[i];
  auto &uses = old->useList;
  auto it = std::find_if(uses.begin(), uses.end(), [&](const Use &u) {
    return u.user == this && u.operandIndex == i;
  });
  assert(it != uses.end() && "use list out of sync");
  uses.erase(it);
  operands[i] = value;
  value->useList.push_back({this, i});
}

void Node::eraseOperand(unsigned i) {
  llvm::SmallVector<Value *, 4> kept(operands.begin(), operands.end());
  kept.erase(kept.begin() + i);
  dropOperands();
  for (Value *v : kept)
    addOperand(v);
}

void Node::dropOperands() {
  for (unsigned i = 0; i < operands.size(); ++i) {
    auto &uses = operands[i]->useList;
    uses.erase(std::remove_if(uses.begin(), uses.end(),
                              [&](const Use &u) {
                                return u.user == this && u.operandIndex == i;
                              }),
               uses.end());
  }
  operands.clear();
}

Value *Node::addResult(std::string resultName, TensorType type) {
  results.push_back(std::make_unique<Value>(std::move(resultName),
                                            std::move(type), this,
                                            results.size()));
  return results.back().get();
}

void Node::eraseResult(unsigned i) {
  assert(!results[i]->hasUses() && "erasing a used result");
  results.erase(results.begin() + i);
  for (unsigned k = i; k < results.size(); ++k)
    results[k]->resultIndex = k;
}

const Attribute *Node::attr(llvm::StringRef key) const {
  auto it = attributes.find(key.str());
  return it == attributes.end() ? nullptr : &it->second;
}

int64_t Node::intAttr(llvm::StringRef key, int64_t fallback) const {
  const Attribute *a = attr(key);
  if (auto *v = a ? std::get_if<int64_t>(a) : nullptr)
    return *v;
  return fallback;
}

double Node::floatAttr(llvm::StringRef key, double fallback) const {
  const Attribute *a = attr(key);
  if (auto *v = a ? std::get_if<double>(a) : nullptr)
    return *v;
  if (auto *v = a ? std::get_if<int64_t>(a) : nullptr)
    return double(*v);
  return fallback;
}

bool Node::boolAttr(llvm::StringRef key, bool fallback) const {
  const Attribute *a = attr(key);
  if (auto *v = a ? std::get_if<bool>(a) : nullptr)
    return *v;
  return fallback;
}

std::string Node::strAttr(llvm::StringRef key, llvm::StringRef fallback) const {
  const Attribute *a = attr(key);
  if (auto *v = a ? std::get_if<std::string>(a) : nullptr)
    return *v;
  return fallback.str();
}

std::vector<int64_t> Node::intsAttr(llvm::StringRef key) const {
  const Attribute *a = attr(key);
  if (auto *v = a ? std::get_if<std::vector<int64_t>>(a) : nullptr)
    return *v;
  return {};
}

Graph &Node::addRegion() {
  regions.push_back(std::make_unique<Graph>(this));
  return *regions.back();
}

Graph::~Graph() {
  // Drop every use first: nodes may be destroyed before the values they use.
  for (auto &node : nodeList)
    node->dropOperands();
}

Graph &Graph::root() {
  Graph *g = this;
  while (g->parentNode)
    g = g->parentNode->getParent();
  return *g;
}

const Graph &Graph::root() const {
  return const_cast<Graph *>(this)->root();
}

Value *Graph::addInput(std::string inputName, TensorType type) {
  inputValues.push_back(std::make_unique<Value>(std::move(inputName),
                                                std::move(type), nullptr,
                                                inputValues.size()));
  inputList.push_back({inputValues.back().get(), InputKind::UserInput, {}, {}});
  return inputValues.back().get();
}

void Graph::eraseInput(unsigned i) {
  assert(!inputList[i].value->hasUses() && "erasing a used input");
  Value *doomed = inputList[i].value;
  inputList.erase(inputList.begin() + i);
  llvm::erase_if(inputValues,
                 [&](const std::unique_ptr<Value> &v) { return v.get() == doomed; });
  for (unsigned k = 0; k < inputList.size(); ++k)
    inputList[k].value->resultIndex = k;
}

Node *Graph::append(std::unique_ptr<Node> node) {
  node->parent = this;
  nodeList.push_back(std::move(node));
  return nodeList.back().get();
}

Node *Graph::insertBefore(Node *before, std::unique_ptr<Node> node) {
  node->parent = this;
  auto it = nodeList.begin() + indexOf(before);
  return nodeList.insert(it, std::move(node))->get();
}

void Graph::erase(Node *node) {
  for (unsigned i = 0; i < node->numResults(); ++i)
    assert(!node->result(i)->hasUses() && "erasing a node that is used");
  nodeList.erase(nodeList.begin() + indexOf(node));
}

void Graph::erase(llvm::ArrayRef<Node *> nodes) {
  llvm::DenseSet<const Node *> doomed(nodes.begin(), nodes.end());
  // Their uses of each other go first, so that any destruction order is safe.
  for (Node *node : nodes)
    node->dropOperands();
  for (const Node *node : nodes)
    for (unsigned i = 0; i < node->numResults(); ++i)
      assert(!node->result(i)->hasUses() && "erasing a node that is used");
  llvm::erase_if(nodeList, [&](const std::unique_ptr<Node> &n) {
    return doomed.count(n.get()) != 0;
  });
}

void Graph::setNodeOrder(llvm::ArrayRef<Node *> order) {
  assert(order.size() == nodeList.size() && "not a permutation");
  llvm::DenseMap<const Node *, unsigned> index;
  for (unsigned i = 0; i < nodeList.size(); ++i)
    index[nodeList[i].get()] = i;
  std::vector<std::unique_ptr<Node>> sorted;
  for (Node *n : order)
    sorted.push_back(std::move(nodeList[index.lookup(n)]));
  nodeList = std::move(sorted);
}

unsigned Graph::indexOf(const Node *node) const {
  auto it = std::find_if(nodeList.begin(), nodeList.end(),
                         [&](const auto &n) { return n.get() == node; });
  assert(it != nodeList.end() && "node not in this graph");
  return it - nodeList.begin();
}

namespace {
/// Original values to their copies.
using ValueMap = llvm::DenseMap<const Value *, Value *>;
} // namespace

static void copyGraph(const Graph &from, Graph &to, ValueMap &map);

static void copyNode(const Node &n, Graph &to, ValueMap &map) {
  Node *copy =
      to.append(std::make_unique<Node>(n.getOp(), n.getName(), n.getLoc()));
  copy->setSourceLoc(n.getSourceLoc());
  for (const auto &[key, value] : n.attrs())
    copy->setAttr(key, value);
  if (const Schedule *s = n.schedule())
    copy->setSchedule(*s);
  for (Value *v : n.getOperands()) {
    assert(map.count(v) && "operand not defined before its use");
    copy->addOperand(map.lookup(v));
  }
  for (unsigned k = 0; k < n.numRegions(); ++k)
    copyGraph(n.region(k), copy->addRegion(), map);
  for (unsigned r = 0; r < n.numResults(); ++r)
    map[n.result(r)] =
        copy->addResult(n.result(r)->getName(), n.result(r)->getType());
}

static void copyGraph(const Graph &from, Graph &to, ValueMap &map) {
  to.name = from.name;
  to.doc = from.doc;
  to.optimizer = from.optimizer;
  to.formatVersion = from.formatVersion;
  to.weightsFile = from.weightsFile;
  to.weightsPath = from.weightsPath;
  to.sourceNames = from.sourceNames;
  for (const GraphInput &in : from.inputs()) {
    map[in.value] = to.addInput(in.value->getName(), in.value->getType());
    GraphInput &copy = to.input(to.inputs().size() - 1);
    copy.kind = in.kind;
    copy.init = in.init;
    copy.loc = in.loc;
    copy.perContext = in.perContext;
  }
  for (const auto &node : from.nodes())
    copyNode(*node, to, map);
  for (const GraphOutput &out : from.outputs) {
    assert(map.count(out.value) && "output not defined in its graph");
    GraphOutput copy = out;
    copy.value = map.lookup(out.value);
    to.outputs.push_back(std::move(copy));
  }
}

std::unique_ptr<Graph> Graph::clone() const {
  auto copy = std::make_unique<Graph>();
  copy->dimTable = dims();
  ValueMap map;
  copyGraph(*this, *copy, map);
  for (const auto &entry : entries)
    copy->entries.push_back(entry->clone());
  return copy;
}

bool Graph::isOutput(const Value *value) const {
  return llvm::any_of(outputs,
                      [&](const GraphOutput &o) { return o.value == value; });
}

void Graph::replaceAllUsesWith(Value *from, Value *to) {
  from->replaceAllUsesWith(to);
  for (GraphOutput &o : outputs)
    if (o.value == from)
      o.value = to;
}

Value *Graph::lookupValue(llvm::StringRef valueName) const {
  for (const GraphInput &in : inputList)
    if (in.value->getName() == valueName)
      return in.value;
  for (const auto &node : nodeList)
    for (unsigned i = 0; i < node->numResults(); ++i)
      if (node->result(i)->getName() == valueName)
        return node->result(i);
  return nullptr;
}

llvm::Optional<Element> cgc::splatConstant(const Value *v) {
  const Node *def = v->getDef();
  if (!def)
    return llvm::None;
  DType dtype = v->getType().dtype;
  if (def->getOp() == OpKind::Fill)
    return elementOf(dtype, std::get<Number>(*def->attr("value")));
  if (def->getOp() != OpKind::Constant)
    return llvm::None;
  const auto &values = std::get<std::vector<Number>>(*def->attr("value"));
  if (values.empty() ||
      llvm::any_of(values, [&](Number x) { return x != values.front(); }))
    return llvm::None;
  return elementOf(dtype, values.front());
}
