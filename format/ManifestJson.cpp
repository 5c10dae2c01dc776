//===- ManifestJson.cpp - JSON -> Manifest -------------------------------===//
//
// Reads the manifest JSON. Every type is checked by hand so that corrupt
// input yields a message naming the field instead of an exception.
// (The writer is in ManifestWrite.cpp.)
//
//===----------------------------------------------------------------------===//
#include "format/ArtifactFormat.h"
#include "format/WeightsFile.h"

#include <nlohmann/json.hpp>

#include <limits>

using nlohmann::json;

namespace cgc {
namespace format {
namespace {

/// Typed field access with a JSON-path-like context for messages.
class Reader {
public:
  explicit Reader(std::string &error) : error(error) {}

  bool fail(const std::string &path, const std::string &msg) {
    error = "manifest: " + path + ": " + msg;
    return false;
  }
  const json *field(const json &obj, const std::string &path, const char *key,
                    bool optional = false) {
    if (!obj.is_object()) {
      fail(path, "expected an object");
      return nullptr;
    }
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (!optional)
        fail(path, std::string("missing field '") + key + "'");
      return nullptr;
    }
    return &*it;
  }
  bool str(const json &obj, const std::string &path, const char *key,
           std::string &out, bool optional = false) {
    const json *v = field(obj, path, key, optional);
    if (!v)
      return optional && error.empty();
    if (!v->is_string())
      return fail(path + "." + key, "expected a string");
    out = v->get<std::string>();
    return true;
  }
  bool u64(const json &obj, const std::string &path, const char *key,
           uint64_t &out, bool optional = false) {
    const json *v = field(obj, path, key, optional);
    if (!v)
      return optional && error.empty();
    return u64Value(*v, path + "." + key, out);
  }
  bool u64Value(const json &v, const std::string &path, uint64_t &out) {
    if (v.is_number_unsigned()) {
      out = v.get<uint64_t>();
      return true;
    }
    if (v.is_number_integer() && v.get<int64_t>() >= 0) {
      out = static_cast<uint64_t>(v.get<int64_t>());
      return true;
    }
    return fail(path, "expected a non-negative integer");
  }
  bool i64Value(const json &v, const std::string &path, int64_t &out) {
    if (v.is_number_integer() && !v.is_number_unsigned()) {
      out = v.get<int64_t>();
      return true;
    }
    if (v.is_number_unsigned() &&
        v.get<uint64_t>() <=
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      out = static_cast<int64_t>(v.get<uint64_t>());
      return true;
    }
    return fail(path, "expected an integer");
  }
  bool i64(const json &obj, const std::string &path, const char *key,
           int64_t &out) {
    const json *v = field(obj, path, key);
    return v && i64Value(*v, path + "." + key, out);
  }
  bool u32(const json &obj, const std::string &path, const char *key,
           uint32_t &out) {
    uint64_t v;
    if (!u64(obj, path, key, v))
      return false;
    if (v > std::numeric_limits<uint32_t>::max())
      return fail(path + "." + key, "value does not fit in 32 bits");
    out = static_cast<uint32_t>(v);
    return true;
  }
  const json *array(const json &obj, const std::string &path, const char *key,
                    bool optional = false) {
    const json *v = field(obj, path, key, optional);
    if (v && !v->is_array()) {
      fail(path + "." + key, "expected an array");
      return nullptr;
    }
    return v;
  }
  bool region(const json &obj, const std::string &path, const char *key,
              Region &out) {
    std::string s;
    if (!str(obj, path, key, s))
      return false;
    if (s == "arena")
      out = Region::Arena;
    else if (s == "persistent")
      out = Region::Persistent;
    else
      return fail(path + "." + key, "unknown region '" + s + "'");
    return true;
  }

  std::string &error;
};

std::string at(const std::string &base, size_t i) {
  return base + "[" + std::to_string(i) + "]";
}

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

bool readPointer(Reader &r, const json &j, const std::string &p,
                 const char *key, PointerDesc &out) {
  const json *v = r.field(j, p, key);
  std::string q = p + "." + key;
  return v && r.region(*v, q, "region", out.region) &&
         r.u64(*v, q, "offset", out.offset) &&
         r.str(*v, q, "binding", out.binding, true);
}

bool readBool(Reader &r, const json &j, const std::string &p, const char *key,
              bool &out) {
  const json *v = r.field(j, p, key);
  if (!v)
    return false;
  if (!v->is_boolean())
    return r.fail(p + "." + key, "expected a boolean");
  out = v->get<bool>();
  return true;
}

bool readFloat(Reader &r, const json &j, const std::string &p,
               const char *key, float &out) {
  const json *v = r.field(j, p, key);
  if (!v)
    return false;
  if (!v->is_number())
    return r.fail(p + "." + key, "expected a number");
  out = static_cast<float>(v->get<double>());
  return true;
}

bool readEpilogue(Reader &r, const json &j, const std::string &p,
                  ProductDesc::Epilogue &out) {
  std::string name;
  if (!r.str(j, p, "epilogue", name))
    return false;
  for (unsigned e = 0; e < ProductDesc::NumEpilogues; ++e)
    if (name == epilogueName(static_cast<ProductDesc::Epilogue>(e))) {
      out = static_cast<ProductDesc::Epilogue>(e);
      return true;
    }
  return r.fail(p + ".epilogue", "unknown epilogue '" + name + "'");
}

bool readProduct(Reader &r, const json &j, const std::string &p,
                 ProductDesc &d) {
  if (!r.str(j, p, "dtype", d.dtype) ||
      !readBool(r, j, p, "allow_tf32", d.allowTf32) ||
      !readBool(r, j, p, "trans_a", d.transA) ||
      !readBool(r, j, p, "trans_b", d.transB) || !r.i64(j, p, "m", d.m) ||
      !r.i64(j, p, "n", d.n) || !r.i64(j, p, "k", d.k) ||
      !r.i64(j, p, "lda", d.lda) || !r.i64(j, p, "ldb", d.ldb) ||
      !r.i64(j, p, "ldc", d.ldc) || !r.i64(j, p, "batch", d.batch) ||
      !r.i64(j, p, "stride_a", d.strideA) ||
      !r.i64(j, p, "stride_b", d.strideB) ||
      !r.i64(j, p, "stride_c", d.strideC) ||
      !readFloat(r, j, p, "alpha", d.alpha) ||
      !readFloat(r, j, p, "beta", d.beta) || !readEpilogue(r, j, p, d.epilogue) ||
      !readPointer(r, j, p, "a", d.a) || !readPointer(r, j, p, "b", d.b) ||
      !readPointer(r, j, p, "d", d.d) ||
      !readPointer(r, j, p, "workspace", d.workspace) ||
      !r.u64(j, p, "workspace_bytes", d.workspaceBytes))
    return false;
  if ((d.beta != 0 && !readPointer(r, j, p, "c", d.c)) ||
      (d.hasBias() && !readPointer(r, j, p, "bias", d.bias)))
    return false;
  const json *source = r.field(j, p, "source");
  return source && r.str(*source, p + ".source", "node", d.source.node) &&
         r.str(*source, p + ".source", "op", d.source.op) &&
         r.str(*source, p + ".source", "loc", d.source.loc, true);
}

bool readI64s(Reader &r, const json &j, const std::string &p, const char *key,
              std::vector<int64_t> &out) {
  const json *values = r.array(j, p, key);
  if (!values)
    return false;
  out.resize(values->size());
  for (size_t i = 0; i < values->size(); ++i)
    if (!r.i64Value((*values)[i], at(p + "." + key, i), out[i]))
      return false;
  return true;
}

/// A name among \p count enum values, by \p nameOf.
template <class Enum, class NameOf>
bool readEnum(Reader &r, const json &j, const std::string &p, const char *key,
              unsigned count, NameOf nameOf, Enum &out) {
  std::string name;
  if (!r.str(j, p, key, name))
    return false;
  for (unsigned k = 0; k < count; ++k)
    if (name == nameOf(static_cast<Enum>(k))) {
      out = static_cast<Enum>(k);
      return true;
    }
  return r.fail(p + "." + key, "unknown " + std::string(key) + " '" + name + "'");
}

bool readStep(Reader &r, const json &j, const std::string &p, ConvolutionStep &s) {
  if (!readEnum(r, j, p, "op", ConvolutionStep::NumOps, stepOpName, s.op) ||
      !readEnum(r, j, p, "operand", ConvolutionStep::NumOperands, stepOperandName,
                s.operand))
    return false;
  return s.operand == ConvolutionStep::Operand::None ||
         readPointer(r, j, p, "pointer", s.pointer);
}

bool readConvolution(Reader &r, const json &j, const std::string &p,
                     ConvolutionDesc &d) {
  if (!r.str(j, p, "dtype", d.dtype) ||
      !readBool(r, j, p, "allow_tf32", d.allowTf32) ||
      !readI64s(r, j, p, "x_dims", d.xDims) ||
      !readI64s(r, j, p, "x_strides", d.xStrides) ||
      !readI64s(r, j, p, "w_dims", d.wDims) ||
      !readI64s(r, j, p, "w_strides", d.wStrides) ||
      !readI64s(r, j, p, "y_dims", d.yDims) ||
      !readI64s(r, j, p, "y_strides", d.yStrides) ||
      !readI64s(r, j, p, "pre_padding", d.prePadding) ||
      !readI64s(r, j, p, "post_padding", d.postPadding) ||
      !readI64s(r, j, p, "strides", d.strides) ||
      !readI64s(r, j, p, "dilations", d.dilations) ||
      !readPointer(r, j, p, "x", d.x) || !readPointer(r, j, p, "w", d.w) ||
      !readPointer(r, j, p, "y", d.y) ||
      !readPointer(r, j, p, "workspace", d.workspace) ||
      !r.u64(j, p, "workspace_bytes", d.workspaceBytes))
    return false;
  const json *steps = r.array(j, p, "epilogue");
  if (!steps)
    return false;
  d.epilogue.resize(steps->size());
  for (size_t i = 0; i < steps->size(); ++i)
    if (!readStep(r, (*steps)[i], at(p + ".epilogue", i), d.epilogue[i]))
      return false;
  const json *source = r.field(j, p, "source");
  return source && r.str(*source, p + ".source", "node", d.source.node) &&
         r.str(*source, p + ".source", "op", d.source.op) &&
         r.str(*source, p + ".source", "loc", d.source.loc, true);
}

bool readCollective(Reader &r, const json &j, const std::string &p,
                    CollectiveDesc &d) {
  if (!readEnum(r, j, p, "reduction", CollectiveDesc::NumReductions,
                reductionName, d.reduction))
    return false;
  const json *buffers = r.array(j, p, "buffers");
  if (!buffers)
    return false;
  d.buffers.resize(buffers->size());
  for (size_t i = 0; i < buffers->size(); ++i) {
    std::string bp = at(p + ".buffers", i);
    CollectiveDesc::Buffer &b = d.buffers[i];
    if (!r.str((*buffers)[i], bp, "dtype", b.dtype) ||
        !r.i64((*buffers)[i], bp, "count", b.count) ||
        !readPointer(r, (*buffers)[i], bp, "data", b.data))
      return false;
  }
  const json *source = r.field(j, p, "source");
  return source && r.str(*source, p + ".source", "node", d.source.node) &&
         r.str(*source, p + ".source", "op", d.source.op) &&
         r.str(*source, p + ".source", "loc", d.source.loc, true);
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
  const json *products = r.array(root, "$", "products");
  if (!products)
    return false;
  m.products.resize(products->size());
  for (size_t i = 0; i < products->size(); ++i)
    if (!readProduct(r, (*products)[i], at("products", i), m.products[i]))
      return false;
  const json *convolutions = r.array(root, "$", "convolutions");
  if (!convolutions)
    return false;
  m.convolutions.resize(convolutions->size());
  for (size_t i = 0; i < convolutions->size(); ++i)
    if (!readConvolution(r, (*convolutions)[i], at("convolutions", i),
                         m.convolutions[i]))
      return false;
  if (const json *collectives = r.field(root, "$", "collectives", true)) {
    if (!collectives->is_array())
      return r.fail("$.collectives", "expected an array");
    m.collectives.resize(collectives->size());
    for (size_t i = 0; i < collectives->size(); ++i)
      if (!readCollective(r, (*collectives)[i], at("collectives", i),
                          m.collectives[i]))
        return false;
  }
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
