//===- JsonWriter.cpp - The JSON form ----------------------------------------===//
//
// Writes keys in a fixed order and nodes in topological order, so the
// output of a graph read from this output is byte-identical.
//
//===----------------------------------------------------------------------===//
#include "ir/Printer.h"

#include "llvm/Support/ErrorHandling.h"
#include <cmath>
#include <nlohmann/json.hpp>

using namespace cgc;
using OJson = nlohmann::ordered_json;

namespace {
struct AttrJson {
  const DimTable &dims;
  OJson operator()(int64_t v) const { return v; }
  /// JSON numbers cannot spell infinities and NaN: strings do.
  static OJson number(double v) {
    if (std::isnan(v))
      return "nan";
    if (std::isinf(v))
      return v > 0 ? "inf" : "-inf";
    return v;
  }
  OJson operator()(double v) const { return number(v); }
  OJson operator()(bool v) const { return v; }
  OJson operator()(const std::string &v) const { return v; }
  OJson operator()(DType v) const { return dtypeName(v).str(); }
  OJson operator()(const std::vector<int64_t> &v) const { return v; }
  OJson operator()(const std::vector<double> &v) const {
    OJson out = OJson::array();
    for (double x : v)
      out.push_back(number(x));
    return out;
  }
  /// An integer as an exact JSON integer, a real as number() spells it.
  OJson operator()(Number v) const {
    return v.isInt() ? OJson(v.integer()) : number(v.real());
  }
  OJson operator()(const std::vector<Number> &v) const {
    OJson out = OJson::array();
    for (Number x : v)
      out.push_back((*this)(x));
    return out;
  }
  OJson operator()(const std::vector<Dim> &v) const {
    OJson out = OJson::array();
    for (Dim d : v)
      out.push_back(d.isStatic() ? OJson(d.extent())
                                 : OJson(dims.get(d.symbolIndex()).name));
    return out;
  }
};
} // namespace

static OJson typeJson(OJson obj, const TensorType &type, const DimTable &dims) {
  obj["dtype"] = dtypeName(type.dtype).str();
  obj["shape"] = AttrJson{dims}(std::vector<Dim>(type.dims.begin(), type.dims.end()));
  return obj;
}

static OJson initJson(const Initializer &init) {
  using S = Initializer::Source;
  OJson j;
  switch (init.source) {
  case S::Zeros: j["dist"] = "zeros"; break;
  case S::Ones: j["dist"] = "ones"; break;
  case S::Constant:
    j["dist"] = "constant";
    j["value"] = init.a;
    break;
  case S::Normal:
    j["dist"] = "normal";
    j["mean"] = init.a;
    j["std"] = init.b;
    break;
  case S::Uniform:
    j["dist"] = "uniform";
    j["low"] = init.a;
    j["high"] = init.b;
    break;
  case S::None: case S::Weights:
    llvm_unreachable("none and weights have no \"init\" object");
  }
  if (init.source == S::Normal || init.source == S::Uniform)
    j["seed"] = init.seed;
  return j;
}

static OJson nodesJson(const Graph &g);

static OJson regionJson(const Graph &region) {
  OJson j;
  j["inputs"] = OJson::array();
  for (const GraphInput &in : region.inputs()) {
    OJson obj;
    obj["name"] = in.value->getName();
    j["inputs"].push_back(typeJson(obj, in.value->getType(), region.dims()));
  }
  j["nodes"] = nodesJson(region);
  j["outputs"] = OJson::array();
  for (const GraphOutput &o : region.outputs)
    j["outputs"].push_back(o.value->getName());
  return j;
}

static OJson nodeJson(const Node &n) {
  OJson j;
  j["name"] = n.getName();
  j["op"] = mnemonic(n.getOp()).str();
  j["inputs"] = OJson::array();
  for (Value *v : n.getOperands())
    j["inputs"].push_back(v->getName());
  if (n.numResults() != 1 || n.result()->getName() != n.getName()) {
    j["outputs"] = OJson::array();
    for (unsigned r = 0; r < n.numResults(); ++r)
      j["outputs"].push_back(n.result(r)->getName());
  }
  if (!n.attrs().empty()) {
    AttrJson convert{n.getParent()->dims()};
    OJson attrs = OJson::object();
    for (const auto &[key, value] : n.attrs())
      attrs[key] = std::visit(convert, value);
    j["attrs"] = attrs;
  }
  if (!n.getSourceLoc().empty())
    j["loc"] = n.getSourceLoc();
  if (const Schedule *s = n.schedule()) {
    OJson record;
    record["strategy"] = strategyName(s->strategy).str();
    for (unsigned f = 0; f < kNumScheduleFields; ++f)
      if (strategyHas(s->strategy, ScheduleField(f)))
        record[fieldName(ScheduleField(f)).str()] = s->values[f];
    if (!s->reason.empty())
      record["reason"] = s->reason;
    j["schedule"] = record;
  }
  if (n.numRegions()) {
    llvm::ArrayRef<llvm::StringRef> names = regionNames(n.getOp());
    OJson regions;
    for (unsigned i = 0; i < n.numRegions(); ++i)
      regions[names[i].str()] = regionJson(n.region(i));
    j["regions"] = regions;
  }
  return j;
}

static OJson nodesJson(const Graph &g) {
  OJson nodes = OJson::array();
  for (const auto &n : g.nodes())
    nodes.push_back(nodeJson(*n));
  return nodes;
}

/// The hyperparameters of an optimizer of \p kind into \p j.
static void hyperJson(OptimizerDecl::Kind kind, const OptimizerHyper &h, OJson &j) {
  using K = OptimizerDecl::Kind;
  j["lr"] = h.lr;
  switch (kind) {
  case K::Sgd:
    j["momentum"] = h.momentum;
    j["nesterov"] = h.nesterov;
    break;
  case K::Adam: case K::AdamW:
    j["betas"] = {h.beta1, h.beta2};
    j["eps"] = h.eps;
    break;
  }
  j["weight_decay"] = h.weightDecay;
}

static OJson optimizerJson(const OptimizerDecl &o) {
  using K = OptimizerDecl::Kind;
  OJson j;
  switch (o.kind) {
  case K::Sgd: j["kind"] = "sgd"; break;
  case K::Adam: j["kind"] = "adam"; break;
  case K::AdamW: j["kind"] = "adamw"; break;
  }
  hyperJson(o.kind, o, j);
  for (const OptimizerGroup &g : o.groups) {
    OJson group;
    group["params"] = g.params;
    hyperJson(o.kind, g.hyper, group);
    j["groups"].push_back(group);
  }
  if (o.skipNonFinite)
    j["skip_nonfinite"] = true;
  if (o.accumulate != 1)
    j["accumulate"] = o.accumulate;
  if (o.maxGradNorm > 0)
    j["max_grad_norm"] = o.maxGradNorm;
  switch (o.lrSchedule) {
  case OptimizerDecl::LrSchedule::Constant:
    break;
  case OptimizerDecl::LrSchedule::Linear: case OptimizerDecl::LrSchedule::Cosine:
    j["schedule"] = {{"kind", o.lrSchedule == OptimizerDecl::LrSchedule::Linear ? "linear" : "cosine"},
                     {"warmup_steps", o.warmupSteps},
                     {"total_steps", o.totalSteps}};
    break;
  }
  return j;
}

static OJson outputsJson(const Graph &g) {
  OJson list = OJson::array();
  for (const GraphOutput &o : g.outputs) {
    OJson obj;
    obj["name"] = o.name;
    obj["value"] = o.value->getName();
    obj["kind"] = outputKindName(o.kind).str();
    if (!o.target.empty())
      obj["target"] = o.target;
    list.push_back(obj);
  }
  return list;
}

std::string cgc::writeGraphJson(const Graph &g) {
  OJson j;
  j["format_version"] = g.formatVersion;
  j["name"] = g.name;
  if (!g.doc.empty())
    j["doc"] = g.doc;
  if (!g.sourceNames.empty())
    j["source_names"] = g.sourceNames;
  if (g.optimizer)
    j["optimizer"] = optimizerJson(*g.optimizer);
  OJson dims = OJson::array();
  for (const SymbolicDim &d : g.dims().all()) {
    if (d.dataDependent)
      continue;
    OJson dj;
    dj["name"] = d.name;
    dj["min"] = d.min;
    dj["max"] = d.max;
    if (!d.buckets.empty())
      dj["buckets"] = d.buckets;
    dims.push_back(dj);
  }
  if (!dims.empty())
    j["dims"] = dims;
  if (!g.weightsFile.empty())
    j["weights_file"] = g.weightsFile;
  j["inputs"] = OJson::array();
  for (const GraphInput &in : g.inputs()) {
    OJson obj;
    obj["name"] = in.value->getName();
    obj["kind"] = inputKindName(in.kind).str();
    obj = typeJson(obj, in.value->getType(), g.dims());
    if (in.init.source == Initializer::Source::Weights)
      obj["weight"] = in.init.tensor;
    else if (in.init.source != Initializer::Source::None)
      obj["init"] = initJson(in.init);
    if (!in.init.permutation.empty())
      obj["weight_permutation"] = in.init.permutation;
    if (in.perContext)
      obj["scope"] = "context";
    j["inputs"].push_back(obj);
  }
  j["nodes"] = nodesJson(g);
  j["outputs"] = outputsJson(g);
  for (const auto &entry : g.entries) {
    OJson e;
    e["name"] = entry->name;
    e["nodes"] = nodesJson(*entry);
    e["outputs"] = outputsJson(*entry);
    j["entries"].push_back(e);
  }
  return j.dump(1) + "\n";
}
