//===- SignatureReader.cpp - A graph's inputs and outputs ---------------------===//
//
// The "inputs" (kinds, dtypes, shapes, initializers and weight
// permutations) and "outputs" (kinds, targets) of a graph file, each
// checked where it stands (docs/ir.md).
//
//===----------------------------------------------------------------------===//
#include "ir/GraphReader.h"

#include "format/Permutation.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace cgc;

static llvm::Optional<InputKind> parseInputKind(llvm::StringRef s) {
  for (InputKind k : {InputKind::UserInput, InputKind::Parameter,
                      InputKind::Buffer, InputKind::RngState,
                      InputKind::OptimizerState, InputKind::DimSize})
    if (inputKindName(k) == s)
      return k;
  return llvm::None;
}

bool GraphReader::readInitializer(const Json &j, const std::string &p,
                                  const std::string &what, Initializer &init) {
  if (!ctx.expectObject(j, p, what + ": 'init'") ||
      !ctx.checkFields(j, p, {"dist", "seed", "mean", "std", "low", "high", "value"},
                       {"dist"}, what + ": 'init'"))
    return false;
  std::string dist = j["dist"].is_string() ? j["dist"].get<std::string>() : "";
  using S = Initializer::Source;
  const std::pair<const char *, S> dists[] = {
      {"normal", S::Normal}, {"uniform", S::Uniform},
      {"zeros", S::Zeros}, {"ones", S::Ones}, {"constant", S::Constant}};
  for (auto [name, source] : dists)
    if (dist == name)
      init.source = source;
  if (init.source == S::None) {
    ctx.error(p + "/dist", what + ": unknown 'dist' " + quoteName(j["dist"].dump()) +
                               " (expected normal, uniform, zeros, ones or constant)");
    return false;
  }
  for (const char *key : {"mean", "std", "low", "high", "value"})
    if (j.contains(key) && !j[key].is_number()) {
      ctx.error(p + "/" + key, what + ": '" + key + "' must be a number");
      return false;
    }
  if (j.contains("seed") && !j["seed"].is_number_unsigned()) {
    ctx.error(p + "/seed", what + ": 'seed' must be a non-negative integer");
    return false;
  }
  init.seed = j.value("seed", uint64_t(0));
  if (init.source == S::Normal) {
    init.a = j.value("mean", 0.0);
    init.b = j.value("std", 1.0);
  } else if (init.source == S::Constant) {
    init.a = j.value("value", 0.0);
  } else {
    init.a = j.value("low", 0.0);
    init.b = j.value("high", 1.0);
  }
  if ((init.source == S::Normal && init.b < 0) ||
      (init.source == S::Uniform && init.b < init.a)) {
    ctx.error(p, what + ": the distribution's parameters are invalid");
    return false;
  }
  return true;
}

/// "weight_permutation": the stored weight's axes in the order the input
/// holds them (Initializer::permutation).
bool GraphReader::readWeightPermutation(const Json &j, const std::string &p,
                                        const std::string &what, unsigned rank,
                                        Initializer &init) {
  std::string q = p + "/weight_permutation";
  const Json &perm = j["weight_permutation"];
  if (!j.contains("weight")) {
    ctx.error(q, what + ": a weight_permutation needs a 'weight'");
    return false;
  }
  if (perm.is_array())
    for (const Json &a : perm)
      if (a.is_number_integer())
        init.permutation.push_back(a.get<int64_t>());
  if (!perm.is_array() || init.permutation.size() != perm.size() ||
      !format::isPermutation(init.permutation, rank)) {
    ctx.error(q, what + ": weight_permutation must be a permutation of its " +
                     std::to_string(rank) + " axes");
    return false;
  }
  return true;
}

bool GraphReader::readInput(const Json &j, const std::string &p, Graph &g) {
  if (!ctx.expectObject(j, p, "an input") ||
      !ctx.checkFields(j, p,
                       {"name", "kind", "dtype", "shape", "init", "weight",
                        "weight_permutation", "scope"},
                       {"name", "dtype", "shape"}, "input"))
    return false;
  std::string name;
  if (!ctx.readName(j["name"], p + "/name", "input name", name))
    return false;
  std::string what = "input '" + name + "'";
  if (Value *previous = g.lookupValue(name)) {
    (void)previous;
    ctx.error(p + "/name", what + " is defined twice");
    return false;
  }
  TensorType type;
  if (!ctx.readTensorType(j, p, what, g.dims(), type))
    return false;
  InputKind kind = InputKind::UserInput;
  if (j.contains("kind")) {
    auto k = j["kind"].is_string() ? parseInputKind(j["kind"].get<std::string>())
                                   : llvm::None;
    if (!k) {
      ctx.error(p + "/kind", what + ": unknown kind " + quoteName(j["kind"].dump()) +
                                 " (expected user_input, parameter, buffer, "
                                 "rng_state or optimizer_state)");
      return false;
    }
    kind = *k;
  }
  Initializer init;
  if (j.contains("init") && j.contains("weight")) {
    ctx.error(p + "/weight", what + ": give 'init' or 'weight', not both");
    return false;
  }
  if ((j.contains("init") || j.contains("weight")) && !isPersistent(kind)) {
    ctx.error(p, what + ": only persistent inputs (parameters, buffers, "
                        "state) take 'init' or 'weight'");
    return false;
  }
  if (j.contains("init") && !readInitializer(j["init"], p + "/init", what, init))
    return false;
  bool random = init.source == Initializer::Source::Normal ||
                init.source == Initializer::Source::Uniform;
  if (random && !isFloat(type.dtype)) {
    ctx.error(p + "/init/dist", what + " is " +
                                    typeToString(type, g.dims()) +
                                    "; random initializers need a float dtype");
    return false;
  }
  if (j.contains("weight")) {
    if (!ctx.readName(j["weight"], p + "/weight", what + ": weight", init.tensor))
      return false;
    init.source = Initializer::Source::Weights;
  }
  if (j.contains("weight_permutation") &&
      !readWeightPermutation(j, p, what, type.rank(), init))
    return false;
  if (kind == InputKind::Parameter && init.source == Initializer::Source::None) {
    ctx.error(p, what + ": a parameter needs 'init' or 'weight'");
    return false;
  }
  if (!type.isStatic() && isPersistent(kind)) {
    ctx.error(p + "/shape", what + ": persistent state needs a static shape");
    return false;
  }
  bool perContext = false;
  if (j.contains("scope") && !readScope(j, p, what, kind, init, perContext))
    return false;
  g.addInput(name, type);
  GraphInput &in = g.input(g.inputs().size() - 1);
  in.kind = kind;
  in.init = init;
  in.loc = ctx.at(p);
  in.perContext = perContext;
  return true;
}

/// "scope": "engine" (the default: one copy, shared by every context) or
/// "context" (GraphInput::perContext): a buffer or a random stream's state
/// that each context holds and starts from its `init`.
bool GraphReader::readScope(const Json &j, const std::string &p,
                            const std::string &what, InputKind kind,
                            const Initializer &init, bool &perContext) {
  const Json &scope = j["scope"];
  std::string q = p + "/scope";
  if (!scope.is_string() ||
      (scope.get<std::string>() != "engine" && scope.get<std::string>() != "context")) {
    ctx.error(q, what + ": scope must be \"engine\" or \"context\", not " +
                     scope.dump());
    return false;
  }
  perContext = scope.get<std::string>() == "context";
  if (perContext && kind != InputKind::Buffer && kind != InputKind::RngState) {
    ctx.error(q, what + " is a " + inputKindName(kind).str() +
                     "; only a buffer or an rng_state may have scope \"context\"");
    return false;
  }
  if (perContext && init.source == Initializer::Source::Weights) {
    ctx.error(q, what + ": per-context state starts from its 'init', not a 'weight'");
    return false;
  }
  return true;
}

bool GraphReader::readInputs(const Json &j, Graph &g) {
  if (!j.is_array()) {
    ctx.error("/inputs", "graph: 'inputs' must be an array");
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < j.size(); ++i)
    ok = readInput(j[i], "/inputs/" + std::to_string(i), g) && ok;
  return ok;
}

static llvm::Optional<OutputKind> parseOutputKind(llvm::StringRef s) {
  for (OutputKind k : {OutputKind::Output, OutputKind::Loss,
                       OutputKind::ParameterUpdate, OutputKind::BufferMutation})
    if (outputKindName(k) == s)
      return k;
  return llvm::None;
}

bool GraphReader::readOutput(const Json &j, const std::string &p, Graph &g) {
  GraphOutput out;
  std::string valueName;
  out.loc = ctx.at(p);
  if (j.is_string()) {
    if (!ctx.readName(j, p, "output", valueName))
      return false;
    out.name = valueName;
  } else {
    if (!ctx.expectObject(j, p, "an output") ||
        !ctx.checkFields(j, p, {"name", "value", "kind", "target"},
                         {"name", "value"}, "output") ||
        !ctx.readName(j["name"], p + "/name", "output name", out.name) ||
        !ctx.readName(j["value"], p + "/value", "output value", valueName))
      return false;
    if (j.contains("kind")) {
      auto k = j["kind"].is_string()
                   ? parseOutputKind(j["kind"].get<std::string>())
                   : llvm::None;
      if (!k) {
        ctx.error(p + "/kind", "output '" + out.name + "': unknown kind " +
                                   quoteName(j["kind"].dump()) +
                                   " (expected output, loss, parameter_update "
                                   "or buffer_mutation)");
        return false;
      }
      out.kind = *k;
    }
  }
  std::string what = "output '" + out.name + "'";
  for (const GraphOutput &other : g.outputs)
    if (other.name == out.name) {
      ctx.error(p, what + " is declared twice");
      return false;
    }
  out.value = g.lookupValue(valueName);
  if (!out.value) {
    ctx.error(j.is_string() ? p : p + "/value",
              what + " refers to undefined value '" + valueName + "'");
    return false;
  }
  bool isUpdate = out.kind == OutputKind::ParameterUpdate ||
                  out.kind == OutputKind::BufferMutation;
  if (isUpdate != (j.is_object() && j.contains("target"))) {
    ctx.error(p, what + ": parameter updates and buffer mutations, and only "
                        "they, name a 'target' input");
    return false;
  }
  if (isUpdate) {
    if (!ctx.readName(j["target"], p + "/target", "output target", out.target))
      return false;
    Value *target = g.lookupValue(out.target);
    bool targetIsInput = false;
    for (const GraphInput &in : g.inputs())
      targetIsInput |= in.value == target && isPersistent(in.kind);
    if (!targetIsInput) {
      ctx.error(p + "/target", what + ": target '" + out.target +
                                   "' is not a persistent graph input");
      return false;
    }
    if (target->getType() != out.value->getType()) {
      ctx.error(p + "/target",
                what + " is " + typeToString(out.value->getType(), g.dims()) +
                    " but its target is " +
                    typeToString(target->getType(), g.dims()));
      return false;
    }
  }
  g.outputs.push_back(out);
  return true;
}

bool GraphReader::readOutputs(const Json &j, Graph &g, const std::string &at) {
  if (!j.is_array()) {
    ctx.error(at + "/outputs", "graph: 'outputs' must be an array");
    return false;
  }
  if (j.empty()) {
    ctx.error(at + "/outputs", "graph '" + g.name + "' has no outputs");
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < j.size(); ++i)
    ok = readOutput(j[i], at + "/outputs/" + std::to_string(i), g) && ok;
  return ok;
}
