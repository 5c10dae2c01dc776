//===- ManifestJson.cpp - JSON -> Manifest -------------------------------===//
//
// Reads the manifest JSON. Every type is checked by hand so that corrupt
// input yields a message naming the field instead of an exception.
// (The writer is in ManifestWrite.cpp; the Reader is ManifestReader.h;
// the library calls, products, convolutions and collectives, are read by
// LibraryCallsJson.cpp.)
//
//===----------------------------------------------------------------------===//
#include "format/ManifestReader.h"
#include "format/WeightsFile.h"

namespace cgc {
namespace format {
using namespace manifest_json;
namespace {

bool readTensor(Reader &r, const json &j, const std::string &p,
                TensorDesc &t) {
  if (!r.str(j, p, "name", t.name) || !r.str(j, p, "kind", t.kind) ||
      !r.str(j, p, "dtype", t.dtype) || !r.region(j, p, "region", t.region) ||
      !r.u64(j, p, "offset", t.offset) || !r.u64(j, p, "bytes", t.bytes))
    return false;
  const json *shape = r.array(j, p, "shape");
  if (!shape)
    return false;
  for (size_t i = 0; i < shape->size(); ++i) {
    int64_t d;
    if (!r.i64Value((*shape)[i], at(p + ".shape", i), d))
      return false;
    t.shape.push_back(d);
  }
  if (const json *dims = r.array(j, p, "shape_dims", true)) {
    for (size_t i = 0; i < dims->size(); ++i) {
      if (!(*dims)[i].is_string())
        return r.fail(at(p + ".shape_dims", i), "expected a string");
      t.shapeDims.push_back((*dims)[i].get<std::string>());
    }
  } else if (!r.error.empty()) {
    return false;
  }
  if (const json *perm = r.array(j, p, "init_permutation", true)) {
    t.initPermutation.resize(perm->size());
    for (size_t i = 0; i < perm->size(); ++i)
      if (!r.i64Value((*perm)[i], at(p + ".init_permutation", i), t.initPermutation[i]))
        return false;
  } else if (!r.error.empty()) {
    return false;
  }
  return r.str(j, p, "init_blob", t.initBlob, true) &&
         r.str(j, p, "init_tensor", t.initTensor, true) &&
         r.str(j, p, "source_name", t.sourceName, true) &&
         r.u64(j, p, "init_offset", t.initOffset, true);
}

/// The optional "weights_file": {"path", "size", "checksum": "0x..."}.
bool readWeightsFile(Reader &r, const json &root, WeightsFileDesc &out) {
  const json *w = r.field(root, "$", "weights_file", /*optional=*/true);
  if (!w)
    return r.error.empty();
  std::string checksum;
  if (!r.str(*w, "weights_file", "path", out.path) ||
      !r.u64(*w, "weights_file", "size", out.size) ||
      !r.str(*w, "weights_file", "checksum", checksum))
    return false;
  if (!parseHashText(checksum, out.checksum))
    return r.fail("weights_file.checksum",
                  "expected \"0x\" and 16 hex digits");
  return true;
}

bool readTensors(Reader &r, const json &root, const char *key,
                 std::vector<TensorDesc> &out) {
  const json *arr = r.array(root, "$", key);
  if (!arr)
    return false;
  out.resize(arr->size());
  for (size_t i = 0; i < arr->size(); ++i)
    if (!readTensor(r, (*arr)[i], at(key, i), out[i]))
      return false;
  return true;
}

bool readParam(Reader &r, const json &j, const std::string &p, ParamDesc &d) {
  std::string kind;
  if (!r.str(j, p, "kind", kind))
    return false;
  if (kind == "ptr") {
    d.kind = ParamDesc::Kind::Ptr;
    return r.region(j, p, "region", d.region) &&
           r.u64(j, p, "offset", d.offset) &&
           r.str(j, p, "binding", d.binding, true);
  }
  const json *v = r.field(j, p, "value");
  if (!v)
    return false;
  if (kind == "i32" || kind == "i64") {
    d.kind = kind == "i32" ? ParamDesc::Kind::I32 : ParamDesc::Kind::I64;
    return r.i64Value(*v, p + ".value", d.intValue) &&
           r.str(j, p, "dim", d.dim, true);
  }
  if (kind == "u64") {
    d.kind = ParamDesc::Kind::U64;
    return r.u64Value(*v, p + ".value", d.uintValue);
  }
  if (kind == "handle") {
    d.kind = ParamDesc::Kind::Handle;
    return r.i64Value(*v, p + ".value", d.intValue);
  }
  if (kind == "f32") {
    d.kind = ParamDesc::Kind::F32;
    if (!v->is_number())
      return r.fail(p + ".value", "expected a number");
    d.floatValue = static_cast<float>(v->get<double>());
    return true;
  }
  return r.fail(p + ".kind", "unknown parameter kind '" + kind + "'");
}

bool readDim3(Reader &r, const json &j, const std::string &p, const char *key,
              uint32_t out[3]) {
  const json *a = r.array(j, p, key);
  if (!a)
    return false;
  if (a->size() != 3)
    return r.fail(p + "." + key, "expected 3 values");
  for (size_t i = 0; i < 3; ++i) {
    uint64_t v;
    if (!r.u64Value((*a)[i], at(p + "." + key, i), v))
      return false;
    if (v == 0 || v > std::numeric_limits<uint32_t>::max())
      return r.fail(at(p + "." + key, i), "must be in [1, 2^32)");
    out[i] = static_cast<uint32_t>(v);
  }
  return true;
}

bool readKernel(Reader &r, const json &j, const std::string &p,
                KernelDesc &k) {
  if (!r.str(j, p, "name", k.name) || !readDim3(r, j, p, "grid", k.grid) ||
      !readDim3(r, j, p, "block", k.block) ||
      !r.u32(j, p, "shared_mem", k.sharedMem))
    return false;
  const json *params = r.array(j, p, "params");
  if (!params)
    return false;
  k.params.resize(params->size());
  for (size_t i = 0; i < params->size(); ++i)
    if (!readParam(r, (*params)[i], at(p + ".params", i), k.params[i]))
      return false;
  const json *sources = r.array(j, p, "sources", true);
  if (!sources)
    return r.error.empty();
  k.sources.resize(sources->size());
  for (size_t i = 0; i < sources->size(); ++i) {
    std::string sp = at(p + ".sources", i);
    SourceRef &s = k.sources[i];
    if (!r.str((*sources)[i], sp, "node", s.node) ||
        !r.str((*sources)[i], sp, "op", s.op) ||
        !r.str((*sources)[i], sp, "loc", s.loc, true))
      return false;
  }
  return true;
}

bool readConditional(Reader &r, const json &j, const std::string &p,
                     NodeDesc &n) {
  n.kind = NodeDesc::Kind::Conditional;
  std::string condition;
  if (!r.str(j, p, "condition", condition) ||
      !r.u32(j, p, "handle", n.handle) ||
      !r.region(j, p, "pred_region", n.predRegion) ||
      !r.u64(j, p, "pred_offset", n.predOffset) ||
      !r.str(j, p, "pred_binding", n.predBinding, true))
    return false;
  if (condition == "if")
    n.condition = NodeDesc::Condition::If;
  else if (condition == "while")
    n.condition = NodeDesc::Condition::While;
  else
    return r.fail(p + ".condition", "unknown condition '" + condition + "'");
  if (const json *invert = r.field(j, p, "invert", true)) {
    if (!invert->is_boolean())
      return r.fail(p + ".invert", "expected a boolean");
    n.invert = invert->get<bool>();
  }
  if (n.condition == NodeDesc::Condition::While &&
      (!r.i64(j, p, "max_iterations", n.maxIterations) ||
       !r.str(j, p, "loop", n.loop) ||
       !r.u64(j, p, "trip_offset", n.tripOffset)))
    return false;
  const json *bodies = r.array(j, p, "bodies");
  if (!bodies)
    return false;
  for (size_t i = 0; i < bodies->size(); ++i) {
    uint64_t b;
    if (!r.u64Value((*bodies)[i], at(p + ".bodies", i), b))
      return false;
    if (b > UINT32_MAX)
      return r.fail(at(p + ".bodies", i), "body index out of range");
    n.bodies.push_back(static_cast<uint32_t>(b));
  }
  return r.error.empty();
}

bool readNode(Reader &r, const json &j, const std::string &p, NodeDesc &n) {
  std::string kind;
  if (!r.str(j, p, "kind", kind))
    return false;
  if (kind == "kernel") {
    n.kind = NodeDesc::Kind::Kernel;
    return r.u32(j, p, "kernel", n.kernel);
  }
  if (kind == "conditional")
    return readConditional(r, j, p, n);
  if (kind == "product") {
    n.kind = NodeDesc::Kind::Product;
    return r.u32(j, p, "product", n.product);
  }
  if (kind == "convolution") {
    n.kind = NodeDesc::Kind::Convolution;
    return r.u32(j, p, "convolution", n.convolution);
  }
  if (kind == "collective") {
    n.kind = NodeDesc::Kind::Collective;
    return r.u32(j, p, "collective", n.collective);
  }
  if (kind != "memset" && kind != "memcpy")
    return r.fail(p + ".kind", "unsupported node kind '" + kind + "'");
  if (!r.region(j, p, "dst_region", n.dstRegion) ||
      !r.u64(j, p, "dst_offset", n.dstOffset) ||
      !r.str(j, p, "dst_binding", n.dstBinding, true) ||
      !r.u64(j, p, "bytes", n.bytes))
    return false;
  if (kind == "memset") {
    n.kind = NodeDesc::Kind::Memset;
    uint64_t v;
    if (!r.u64(j, p, "value", v))
      return false;
    if (v > 255)
      return r.fail(p + ".value", "memset value must be a byte");
    n.value = static_cast<uint8_t>(v);
    return true;
  }
  n.kind = NodeDesc::Kind::Memcpy;
  return r.region(j, p, "src_region", n.srcRegion) &&
         r.u64(j, p, "src_offset", n.srcOffset) &&
         r.str(j, p, "src_binding", n.srcBinding, true);
}

bool readGraphHeader(Reader &r, const json &j, const std::string &p,
                     GraphDesc &g) {
  if (!r.str(j, p, "name", g.name) || !r.u32(j, p, "handles", g.handles))
    return false;
  const json *dims = r.field(j, p, "dim_values");
  if (!dims)
    return false;
  if (!dims->is_object())
    return r.fail(p + ".dim_values", "expected an object");
  for (auto it = dims->begin(); it != dims->end(); ++it) {
    int64_t v;
    if (!r.i64Value(it.value(), p + ".dim_values." + it.key(), v))
      return false;
    g.dimValues.emplace_back(it.key(), v);
  }
  if (j.contains("padded")) {
    if (!j["padded"].is_boolean())
      return r.fail(p + ".padded", "expected a boolean");
    g.padded = j["padded"].get<bool>();
  }
  return true;
}

bool readGraph(Reader &r, const json &j, const std::string &p, GraphDesc &g,
               bool topLevel) {
  if (topLevel && !readGraphHeader(r, j, p, g))
    return false;
  const json *nodes = r.array(j, p, "nodes");
  if (!nodes)
    return false;
  g.nodes.resize(nodes->size());
  for (size_t i = 0; i < nodes->size(); ++i)
    if (!readNode(r, (*nodes)[i], at(p + ".nodes", i), g.nodes[i]))
      return false;
  const json *edges = r.array(j, p, "edges");
  if (!edges)
    return false;
  for (size_t i = 0; i < edges->size(); ++i) {
    const json &e = (*edges)[i];
    std::string ep = at(p + ".edges", i);
    uint64_t from, to;
    uint64_t kind = 0;
    if (!e.is_array() || (e.size() != 2 && e.size() != 3))
      return r.fail(ep, "expected [from, to] or [from, to, 1]");
    if (!r.u64Value(e[0], ep, from) || !r.u64Value(e[1], ep, to) ||
        (e.size() == 3 && !r.u64Value(e[2], ep, kind)))
      return false;
    if (kind > 1)
      return r.fail(ep, "edge kind must be 1 (programmatic) when given");
    g.programmatic.push_back(static_cast<uint8_t>(kind));
    if (from > UINT32_MAX || to > UINT32_MAX)
      return r.fail(ep, "node index out of range");
    g.edges.emplace_back(static_cast<uint32_t>(from),
                         static_cast<uint32_t>(to));
  }
  return true;
}

} // namespace

bool manifestFromJson(const char *text, size_t size, Manifest &out,
                      std::string &error) {
  error.clear();
  json root = json::parse(text, text + size, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded())
    return (error = "manifest: malformed JSON"), false;
  if (!root.is_object())
    return (error = "manifest: expected a JSON object"), false;
  Reader r(error);
  Manifest m;
  if (!r.str(root, "$", "compiler_version", m.compilerVersion) ||
      !r.str(root, "$", "target_arch", m.targetArch) ||
      !r.i64(root, "$", "min_driver_version", m.minDriverVersion) ||
      !r.u64(root, "$", "arena_size", m.arenaSize) ||
      !r.u64(root, "$", "persistent_size", m.persistentSize))
    return false;
  const json *dims = r.array(root, "$", "dims");
  if (!dims)
    return false;
  m.dims.resize(dims->size());
  for (size_t i = 0; i < dims->size(); ++i) {
    const json &d = (*dims)[i];
    std::string p = at("dims", i);
    if (!r.str(d, p, "name", m.dims[i].name) ||
        !r.i64(d, p, "min", m.dims[i].min) ||
        !r.i64(d, p, "max", m.dims[i].max))
      return false;
    const json *b = r.array(d, p, "buckets");
    if (!b)
      return false;
    for (size_t k = 0; k < b->size(); ++k) {
      int64_t v;
      if (!r.i64Value((*b)[k], at(p + ".buckets", k), v))
        return false;
      m.dims[i].buckets.push_back(v);
    }
  }
  const json *blobs = r.array(root, "$", "blobs");
  if (!blobs)
    return false;
  m.blobs.resize(blobs->size());
  for (size_t i = 0; i < blobs->size(); ++i) {
    std::string p = at("blobs", i);
    if (!r.str((*blobs)[i], p, "name", m.blobs[i].name) ||
        !r.u64((*blobs)[i], p, "offset", m.blobs[i].offset) ||
        !r.u64((*blobs)[i], p, "size", m.blobs[i].size))
      return false;
  }
  const json *kernels = r.array(root, "$", "kernels");
  if (!kernels)
    return false;
  m.kernels.resize(kernels->size());
  for (size_t i = 0; i < kernels->size(); ++i)
    if (!readKernel(r, (*kernels)[i], at("kernels", i), m.kernels[i]))
      return false;
  if (!readLibraryCalls(r, root, m))
    return false;
  const json *graphs = r.array(root, "$", "graphs");
  if (!graphs)
    return false;
  m.graphs.resize(graphs->size());
  for (size_t i = 0; i < graphs->size(); ++i)
    if (!readGraph(r, (*graphs)[i], at("graphs", i), m.graphs[i], true))
      return false;
  const json *bodies = r.array(root, "$", "bodies");
  if (!bodies)
    return false;
  m.bodies.resize(bodies->size());
  for (size_t i = 0; i < bodies->size(); ++i)
    if (!readGraph(r, (*bodies)[i], at("bodies", i), m.bodies[i], false))
      return false;
  if (!readTensors(r, root, "inputs", m.inputs) ||
      !readTensors(r, root, "outputs", m.outputs) ||
      !readTensors(r, root, "state", m.state) ||
      !readWeightsFile(r, root, m.weightsFile))
    return false;
  out = std::move(m);
  return true;
}

} // namespace format
} // namespace cgc
