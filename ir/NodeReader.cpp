//===- NodeReader.cpp - Nodes, attributes and dependency order --------------===//
//
// Algorithm: (1) read each node's fields and check its op and operand
// count; (2) map every value name to its definition, refusing doubles;
// (3) resolve operands, refusing undefined names; (4) order the nodes with
// Kahn's algorithm, preferring file order, and report a cycle if one
// remains; (5) build each node in that order: attributes against the op's
// schema from Ops.def, regions, then result types from the type rules,
// checked against the node's declared `type` if it has one (the reader
// keeps no declaration: passes keep the types it checked).
// A node whose operand failed to type is skipped to avoid cascades.
//
//===----------------------------------------------------------------------===//
#include "ir/ReaderContext.h"
#include "ir/ScheduleReader.h"
#include "ir/TypeRules.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include <cmath>
#include <limits>
#include <optional>
#include <set>

using namespace cgc;

namespace {
struct NodeSpec {
  const Json *json = nullptr;
  std::string pointer;
  std::string name;
  OpKind op = OpKind::Add;
  std::vector<std::string> operandNames;
  std::vector<std::string> resultNames;
  std::vector<int> producers; ///< Node index per operand; -1 for inputs.
  bool ok = false;
};

class NodeReader {
public:
  NodeReader(ReaderContext &ctx, Graph &graph) : ctx(ctx), graph(graph) {}
  bool read(const Json &nodes, const std::string &pointer);

private:
  std::string what(const NodeSpec &s) const {
    return "node '" + s.name + "' (" + mnemonic(s.op).str() + ")";
  }
  bool readSpec(const Json &j, NodeSpec &spec);
  bool readStringList(const Json &j, const std::string &p,
                      const std::string &field, const NodeSpec &spec,
                      std::vector<std::string> &out);
  bool defineValues();
  bool resolveOperands();
  bool order(std::vector<unsigned> &sorted);
  void reportCycle(const std::vector<bool> &placed);
  bool build(NodeSpec &spec);
  bool readAttrs(const NodeSpec &spec, Node &node);
  bool readAttr(const NodeSpec &spec, const AttrSpec &attr, const Json &j,
                const std::string &p, Node &node);
  bool readRegions(const NodeSpec &spec, Node &node);
  bool readDeclaredType(const NodeSpec &spec, TensorType &out);
  bool checkDeclaredType(const NodeSpec &spec, const Node &node,
                         const TensorType &declared,
                         const TensorType &computed);

  ReaderContext &ctx;
  Graph &graph;
  std::vector<NodeSpec> specs;
  llvm::StringMap<int> definedBy; ///< Value name -> node index, -1 input.
  llvm::DenseSet<Value *> poisoned;
  llvm::StringMap<Value *> values; ///< Built so far, by name.
};
} // namespace

bool NodeReader::readStringList(const Json &j, const std::string &p,
                                const std::string &field, const NodeSpec &spec,
                                std::vector<std::string> &out) {
  if (!j.is_array()) {
    ctx.error(p, what(spec) + ": '" + field + "' must be an array of names");
    return false;
  }
  for (size_t k = 0; k < j.size(); ++k) {
    std::string name;
    if (!ctx.readName(j[k], p + "/" + std::to_string(k),
                      what(spec) + ": " + field + " #" + std::to_string(k),
                      name))
      return false;
    out.push_back(name);
  }
  return true;
}

bool NodeReader::readSpec(const Json &j, NodeSpec &spec) {
  const std::string &p = spec.pointer;
  if (!ctx.expectObject(j, p, "a node"))
    return false;
  spec.name = j.contains("name") && j["name"].is_string()
                  ? j["name"].get<std::string>() : "?";
  std::string label = "node '" + quoteName(spec.name) + "'";
  if (!ctx.checkFields(j, p,
                       {"name", "op", "inputs", "outputs", "attrs", "loc",
                        "type", "regions", "schedule"},
                       {"name", "op"}, label) ||
      !ctx.readName(j["name"], p + "/name", "node name", spec.name))
    return false;
  const Json &op = j["op"];
  auto kind = op.is_string() ? lookupOp(op.get<std::string>()) : llvm::None;
  if (!kind) {
    ctx.error(p + "/op", label + ": unknown op " + quoteName(op.dump()));
    return false;
  }
  spec.op = *kind;
  if (j.contains("inputs") &&
      !readStringList(j["inputs"], p + "/inputs", "inputs", spec,
                      spec.operandNames))
    return false;
  if (j.contains("outputs")) {
    if (!readStringList(j["outputs"], p + "/outputs", "outputs", spec,
                        spec.resultNames))
      return false;
  } else {
    spec.resultNames.push_back(spec.name);
  }
  const OpInfo &info = opInfo(spec.op);
  int n = spec.operandNames.size();
  if (n < info.minOperands || (info.maxOperands >= 0 && n > info.maxOperands)) {
    std::string expected =
        info.minOperands == info.maxOperands
            ? std::to_string(info.minOperands)
            : info.maxOperands < 0
                  ? "at least " + std::to_string(info.minOperands)
                  : std::to_string(info.minOperands) + " to " +
                        std::to_string(info.maxOperands);
    ctx.error(p + "/inputs", what(spec) + ": expects " + expected +
                                 " operands, got " + std::to_string(n));
    return false;
  }
  if (j.contains("loc") && !j["loc"].is_string()) {
    ctx.error(p + "/loc", what(spec) + ": 'loc' must be a string");
    return false;
  }
  if (info.has(Collective) && spec.resultNames.size() != size_t(n)) {
    ctx.error(p + "/outputs", what(spec) + ": expects one result name per "
                                  "operand (" + std::to_string(n) + "), got " +
                                  std::to_string(spec.resultNames.size()));
    return false;
  }
  if (!info.has(ControlFlow) && !info.has(Fused) && !info.has(Collective) &&
      spec.resultNames.size() != 1) {
    ctx.error(p + "/outputs", what(spec) + ": expects 1 result name, got " +
                                  std::to_string(spec.resultNames.size()));
    return false;
  }
  if (j.contains("type") &&
      (info.has(ControlFlow) || info.has(Fused) || info.has(Collective))) {
    ctx.diag.error(ctx.keyAt(p + "/type"),
                   what(spec) + ": 'type' declares the result of a "
                                "single-result op; this op may have several");
    return false;
  }
  return true;
}

bool NodeReader::defineValues() {
  bool ok = true;
  for (const GraphInput &in : graph.inputs())
    definedBy[in.value->getName()] = -1;
  for (unsigned i = 0; i < specs.size(); ++i) {
    if (!specs[i].ok)
      continue;
    for (const std::string &name : specs[i].resultNames) {
      auto [it, inserted] = definedBy.try_emplace(name, int(i));
      if (inserted)
        continue;
      ctx.error(specs[i].pointer, what(specs[i]) + ": value '" + name +
                                      "' is already defined");
      if (it->second >= 0)
        ctx.diag.note(ctx.at(specs[it->second].pointer),
                      "previous definition is here");
      specs[i].ok = ok = false;
    }
  }
  return ok;
}

bool NodeReader::resolveOperands() {
  bool ok = true;
  for (NodeSpec &spec : specs) {
    if (!spec.ok)
      continue;
    for (unsigned k = 0; k < spec.operandNames.size(); ++k) {
      auto it = definedBy.find(spec.operandNames[k]);
      if (it == definedBy.end()) {
        ctx.error(spec.pointer + "/inputs/" + std::to_string(k),
                  what(spec) + ": operand #" + std::to_string(k) +
                      " refers to undefined value '" + spec.operandNames[k] +
                      "'");
        spec.ok = ok = false;
        continue;
      }
      spec.producers.push_back(it->second);
    }
  }
  return ok;
}

void NodeReader::reportCycle(const std::vector<bool> &placed) {
  unsigned start = 0;
  while (placed[start])
    ++start;
  // Walk unplaced producers until a node repeats: that is the cycle.
  std::vector<int> seenAt(specs.size(), -1);
  std::vector<unsigned> path;
  unsigned current = start;
  while (seenAt[current] < 0) {
    seenAt[current] = path.size();
    path.push_back(current);
    for (int producer : specs[current].producers)
      if (producer >= 0 && !placed[producer]) {
        current = producer;
        break;
      }
  }
  // The path follows operands back to producers; print it in data-flow
  // order, from the repeated node around to itself.
  std::vector<const std::string *> cycle{&specs[current].name};
  for (size_t k = path.size(); k-- > size_t(seenAt[current]);)
    cycle.push_back(&specs[path[k]].name);
  // Long cycles keep their first and last 8 names.
  size_t nodes = cycle.size() - 1;
  std::string chain;
  for (size_t k = 0; k < cycle.size(); ++k) {
    if (nodes > 16 && k >= 8 && k < cycle.size() - 8) {
      if (k == 8)
        chain += " -> ...";
      continue;
    }
    chain += (k ? " -> " : "") + *cycle[k];
  }
  if (nodes > 16)
    chain += " (" + std::to_string(nodes) + " nodes)";
  ctx.error(specs[current].pointer,
            what(specs[current]) + ": dependency cycle: " + chain);
}

bool NodeReader::order(std::vector<unsigned> &sorted) {
  std::vector<unsigned> pending(specs.size(), 0);
  std::vector<std::vector<unsigned>> consumers(specs.size());
  for (unsigned i = 0; i < specs.size(); ++i)
    for (int producer : specs[i].producers)
      if (producer >= 0) {
        ++pending[i];
        consumers[producer].push_back(i);
      }
  std::set<unsigned> ready;
  for (unsigned i = 0; i < specs.size(); ++i)
    if (pending[i] == 0)
      ready.insert(i);
  std::vector<bool> placed(specs.size(), false);
  while (!ready.empty()) {
    unsigned i = *ready.begin();
    ready.erase(ready.begin());
    placed[i] = true;
    sorted.push_back(i);
    for (unsigned c : consumers[i])
      if (--pending[c] == 0)
        ready.insert(c);
  }
  if (sorted.size() == specs.size())
    return true;
  reportCycle(placed);
  return false;
}

bool NodeReader::readAttr(const NodeSpec &spec, const AttrSpec &attr,
                          const Json &j, const std::string &p, Node &node) {
  std::string key = attr.name.str();
  // nlohmann_json stores integers above INT64_MAX as unsigned; get<int64_t>
  // would wrap them to negative numbers (2^64-1 would read as axis -1).
  auto isInt64 = [](const Json &e) {
    return e.is_number_integer() &&
           !(e.is_number_unsigned() &&
             e.get<uint64_t>() > uint64_t(INT64_MAX));
  };
  auto allInts = [&] {
    return j.is_array() && llvm::all_of(j, isInt64);
  };
  // Floats are JSON numbers, or "inf", "-inf" and "nan" (which JSON
  // numbers cannot spell).
  auto number = [](const Json &e, double &out) {
    if (e.is_number())
      return out = e.get<double>(), true;
    if (!e.is_string())
      return false;
    const std::string &s = e.get_ref<const std::string &>();
    double inf = std::numeric_limits<double>::infinity();
    if (s == "inf" || s == "-inf" || s == "nan")
      return out = s == "nan" ? std::nan("") : s == "inf" ? inf : -inf, true;
    return false;
  };
  auto numbers = [&](std::vector<double> &out) {
    if (!j.is_array())
      return false;
    for (const Json &e : j)
      if (!number(e, out.emplace_back()))
        return false;
    return true;
  };
  // A `constant`'s or `fill`'s number keeps an integer literal exactly;
  // whether it fits the node's dtype is the type rule's to say.
  auto exactNumber = [&](const Json &e, Number &out) {
    if (isInt64(e))
      return out = Number::ofInt(e.get<int64_t>()), true;
    double v;
    if (!number(e, v))
      return false;
    out = Number::ofReal(v);
    return true;
  };
  switch (attr.kind) {
  case AttrKind::Int:
    if (isInt64(j)) {
      node.setAttr(key, j.get<int64_t>());
      return true;
    }
    break;
  case AttrKind::Float: {
    double v;
    if (number(j, v)) {
      node.setAttr(key, v);
      return true;
    }
    break;
  }
  case AttrKind::Bool:
    if (j.is_boolean()) {
      node.setAttr(key, j.get<bool>());
      return true;
    }
    break;
  case AttrKind::Str:
    if (j.is_string()) {
      node.setAttr(key, j.get<std::string>());
      return true;
    }
    break;
  case AttrKind::Ints:
    if (allInts()) {
      node.setAttr(key, j.get<std::vector<int64_t>>());
      return true;
    }
    break;
  case AttrKind::Floats: {
    std::vector<double> v;
    if (numbers(v)) {
      node.setAttr(key, v);
      return true;
    }
    break;
  }
  case AttrKind::DType: {
    DType d;
    if (!ctx.readDType(j, p, what(spec) + ": attribute '" + key + "'", d))
      return false;
    node.setAttr(key, d);
    return true;
  }
  case AttrKind::Shape: {
    std::vector<Dim> dims;
    if (!ctx.readShape(j, p, what(spec) + ": attribute '" + key + "'",
                       graph.dims(), dims))
      return false;
    node.setAttr(key, dims);
    return true;
  }
  case AttrKind::Number: {
    Number v;
    if (exactNumber(j, v)) {
      node.setAttr(key, v);
      return true;
    }
    break;
  }
  case AttrKind::Values: {
    std::vector<Number> v(1);
    if (exactNumber(j, v[0])) {
      node.setAttr(key, v);
      return true;
    }
    if (!j.is_array())
      break;
    v.clear();
    v.reserve(j.size());
    bool all = true;
    for (const Json &e : j)
      all = all && exactNumber(e, v.emplace_back());
    if (all) {
      node.setAttr(key, std::move(v));
      return true;
    }
    break;
  }
  }
  ctx.error(p, what(spec) + ": attribute '" + key + "' must be " +
                   attrKindName(attr.kind).str() + ", got " +
                   quoteName(j.dump().substr(0, 40)));
  return false;
}

bool NodeReader::readAttrs(const NodeSpec &spec, Node &node) {
  const Json &j = *spec.json;
  std::string p = spec.pointer + "/attrs";
  Json empty = Json::object();
  const Json &attrs = j.contains("attrs") ? j["attrs"] : empty;
  if (!attrs.is_object()) {
    ctx.error(p, what(spec) + ": 'attrs' must be an object");
    return false;
  }
  bool ok = true;
  for (auto it = attrs.begin(); it != attrs.end(); ++it) {
    std::string ap = p + "/" + escapePointerToken(it.key());
    const AttrSpec *attr = findAttrSpec(spec.op, it.key());
    if (!attr) {
      std::string expected;
      for (const AttrSpec &a : attrSpecs(spec.op))
        expected += (expected.empty() ? "" : ", ") + a.name.str();
      ctx.diag.error(ctx.keyAt(ap),
                     what(spec) + ": unknown attribute '" +
                         quoteName(it.key()) + "'" +
                         (expected.empty() ? " (this op takes none)"
                                           : " (expected: " + expected + ")"));
      ok = false;
      continue;
    }
    ok = readAttr(spec, *attr, it.value(), ap, node) && ok;
  }
  for (const AttrSpec &attr : attrSpecs(spec.op))
    if (!attr.optional && !attrs.contains(attr.name.str())) {
      ctx.error(spec.pointer, what(spec) + ": missing attribute '" +
                                  attr.name + "'");
      ok = false;
    }
  return ok;
}

bool NodeReader::readRegions(const NodeSpec &spec, Node &node) {
  const Json &j = *spec.json;
  llvm::ArrayRef<llvm::StringRef> names = regionNames(spec.op);
  std::string p = spec.pointer + "/regions";
  if (names.empty()) {
    if (!j.contains("regions"))
      return true;
    ctx.error(p, what(spec) + ": this op takes no regions");
    return false;
  }
  if (!j.contains("regions")) {
    ctx.error(spec.pointer, what(spec) + ": missing field 'regions'");
    return false;
  }
  if (!ctx.expectObject(j["regions"], p, what(spec) + ": 'regions'") ||
      !ctx.checkFields(j["regions"], p, names, names, what(spec) + ": regions"))
    return false;
  for (llvm::StringRef name : names)
    if (!readRegion(ctx, j["regions"][name.str()], p + "/" + name.str(),
                    node.addRegion()))
      return false;
  return true;
}

bool NodeReader::readDeclaredType(const NodeSpec &spec, TensorType &out) {
  std::string p = spec.pointer + "/type";
  const Json &j = (*spec.json)["type"];
  std::string label = what(spec) + ": 'type'";
  return ctx.expectObject(j, p, label) &&
         ctx.checkFields(j, p, {"dtype", "shape"}, {"dtype", "shape"},
                         label) &&
         ctx.readTensorType(j, p, label, graph.dims(), out);
}

bool NodeReader::checkDeclaredType(const NodeSpec &spec, const Node &node,
                                   const TensorType &declared,
                                   const TensorType &computed) {
  if (declared == computed)
    return true;
  ctx.diag.nodeError(node, ctx.at(spec.pointer + "/type"),
                     "declared " + typeToString(declared, graph.dims()) +
                         " but computes " +
                         typeToString(computed, graph.dims()));
  return false;
}

bool NodeReader::build(NodeSpec &spec) {
  // Appended first: regions and type rules reach the dims through it.
  Node &node = *graph.append(
      std::make_unique<Node>(spec.op, spec.name, ctx.at(spec.pointer)));
  if (spec.json->contains("loc"))
    node.setSourceLoc((*spec.json)["loc"].get<std::string>());
  bool operandPoisoned = false;
  for (const std::string &name : spec.operandNames) {
    Value *v = values.lookup(name);
    operandPoisoned |= poisoned.count(v) != 0;
    node.addOperand(v);
  }
  bool ok = readAttrs(spec, node) && readRegions(spec, node);
  if (ok && spec.json->contains("schedule")) {
    Schedule record;
    ok = readSchedule(ctx, (*spec.json)["schedule"], spec.pointer + "/schedule",
                      what(spec), record);
    node.setSchedule(std::move(record));
  }
  std::optional<TensorType> declared;
  if (ok && spec.json->contains("type"))
    ok = readDeclaredType(spec, declared.emplace());
  llvm::SmallVector<TensorType, 2> types;
  if (ok && !operandPoisoned) {
    ok = inferResultTypes(node, types, ctx.diag);
    if (ok && types.size() != spec.resultNames.size()) {
      ctx.error(spec.pointer + "/outputs",
                what(spec) + ": has " + std::to_string(types.size()) +
                    " results but names " +
                    std::to_string(spec.resultNames.size()));
      ok = false;
    }
    // readSpec admits `type` on single-result ops only.
    if (ok && declared)
      ok = checkDeclaredType(spec, node, *declared, types[0]);
  }
  types.resize(spec.resultNames.size());
  for (unsigned r = 0; r < spec.resultNames.size(); ++r) {
    Value *v = node.addResult(spec.resultNames[r], types[r]);
    values[v->getName()] = v;
    if (!ok || operandPoisoned)
      poisoned.insert(v);
  }
  return ok;
}

bool NodeReader::read(const Json &nodes, const std::string &pointer) {
  specs.resize(nodes.size());
  bool ok = true;
  for (size_t i = 0; i < nodes.size(); ++i) {
    specs[i].json = &nodes[i];
    specs[i].pointer = pointer + "/" + std::to_string(i);
    specs[i].ok = readSpec(nodes[i], specs[i]);
    ok &= specs[i].ok;
  }
  ok = defineValues() && ok;
  ok = resolveOperands() && ok;
  if (!ok)
    return false;
  std::vector<unsigned> sorted;
  for (const GraphInput &in : graph.inputs())
    values[in.value->getName()] = in.value;
  if (!order(sorted))
    return false;
  for (unsigned i : sorted)
    ok = build(specs[i]) && ok;
  return ok;
}

bool cgc::readNodes(ReaderContext &ctx, const Json &nodes,
                    const std::string &pointer, Graph &graph) {
  return NodeReader(ctx, graph).read(nodes, pointer);
}
