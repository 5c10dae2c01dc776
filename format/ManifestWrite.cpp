//===- ManifestWrite.cpp - Manifest -> JSON ------------------------------===//
//
// Serializes the Manifest to JSON text with sorted keys, so that the same
// manifest always yields the same bytes.
//
//===----------------------------------------------------------------------===//
#include "format/ArtifactFormat.h"
#include "format/WeightsFile.h"

#include <nlohmann/json.hpp>

using nlohmann::json;

namespace cgc {
namespace format {
namespace {

json regionJson(Region r) { return regionName(r); }

json tensorToJson(const TensorDesc &t) {
  json j = {{"name", t.name},     {"kind", t.kind},
            {"dtype", t.dtype},   {"shape", t.shape},
            {"region", regionJson(t.region)},
            {"offset", t.offset}, {"bytes", t.bytes}};
  bool anyDim = false;
  for (const std::string &d : t.shapeDims)
    anyDim |= !d.empty();
  if (anyDim)
    j["shape_dims"] = t.shapeDims;
  if (!t.initBlob.empty()) {
    j["init_blob"] = t.initBlob;
    j["init_offset"] = t.initOffset;
  }
  if (!t.initTensor.empty()) {
    j["init_tensor"] = t.initTensor;
    j["init_offset"] = t.initOffset;
    if (!t.initPermutation.empty())
      j["init_permutation"] = t.initPermutation;
  }
  if (!t.sourceName.empty())
    j["source_name"] = t.sourceName;
  return j;
}

json paramToJson(const ParamDesc &p) {
  json j = {{"kind", paramKindName(p.kind)}};
  switch (p.kind) {
  case ParamDesc::Kind::Ptr:
    j["region"] = regionJson(p.region);
    j["offset"] = p.offset;
    if (!p.binding.empty())
      j["binding"] = p.binding;
    break;
  case ParamDesc::Kind::I32:
  case ParamDesc::Kind::I64:
    j["value"] = p.intValue;
    if (!p.dim.empty())
      j["dim"] = p.dim;
    break;
  case ParamDesc::Kind::U64:
    j["value"] = p.uintValue;
    break;
  case ParamDesc::Kind::F32:
    j["value"] = static_cast<double>(p.floatValue);
    break;
  case ParamDesc::Kind::Handle:
    j["value"] = p.intValue;
    break;
  }
  return j;
}

json copyEndsToJson(const NodeDesc &n, json j) {
  j["dst_region"] = regionJson(n.dstRegion);
  j["dst_offset"] = n.dstOffset;
  if (!n.dstBinding.empty())
    j["dst_binding"] = n.dstBinding;
  j["bytes"] = n.bytes;
  return j;
}

json pointerToJson(const PointerDesc &p) {
  json j = {{"region", regionJson(p.region)}, {"offset", p.offset}};
  if (!p.binding.empty())
    j["binding"] = p.binding;
  return j;
}

json productToJson(const ProductDesc &p) {
  json j = {{"dtype", p.dtype},
            {"allow_tf32", p.allowTf32},
            {"trans_a", p.transA},
            {"trans_b", p.transB},
            {"m", p.m}, {"n", p.n}, {"k", p.k},
            {"lda", p.lda}, {"ldb", p.ldb}, {"ldc", p.ldc},
            {"batch", p.batch},
            {"stride_a", p.strideA}, {"stride_b", p.strideB},
            {"stride_c", p.strideC},
            {"alpha", static_cast<double>(p.alpha)},
            {"beta", static_cast<double>(p.beta)},
            {"epilogue", epilogueName(p.epilogue)},
            {"a", pointerToJson(p.a)},
            {"b", pointerToJson(p.b)},
            {"d", pointerToJson(p.d)},
            {"workspace", pointerToJson(p.workspace)},
            {"workspace_bytes", p.workspaceBytes},
            {"source", {{"node", p.source.node}, {"op", p.source.op},
                        {"loc", p.source.loc}}}};
  if (p.beta != 0)
    j["c"] = pointerToJson(p.c);
  if (p.hasBias())
    j["bias"] = pointerToJson(p.bias);
  return j;
}

json convolutionToJson(const ConvolutionDesc &c) {
  json steps = json::array();
  for (const ConvolutionStep &s : c.epilogue) {
    json step = {{"op", stepOpName(s.op)}, {"operand", stepOperandName(s.operand)}};
    if (s.operand != ConvolutionStep::Operand::None)
      step["pointer"] = pointerToJson(s.pointer);
    steps.push_back(step);
  }
  return {{"operation", convolutionOperationName(c.operation)},
          {"dtype", c.dtype},
          {"allow_tf32", c.allowTf32},
          {"x_dims", c.xDims}, {"x_strides", c.xStrides},
          {"w_dims", c.wDims}, {"w_strides", c.wStrides},
          {"y_dims", c.yDims}, {"y_strides", c.yStrides},
          {"pre_padding", c.prePadding}, {"post_padding", c.postPadding},
          {"strides", c.strides}, {"dilations", c.dilations},
          {"epilogue", steps},
          {"x", pointerToJson(c.x)},
          {"w", pointerToJson(c.w)},
          {"y", pointerToJson(c.y)},
          {"workspace", pointerToJson(c.workspace)},
          {"workspace_bytes", c.workspaceBytes},
          {"source", {{"node", c.source.node}, {"op", c.source.op},
                      {"loc", c.source.loc}}}};
}

json collectiveToJson(const CollectiveDesc &c) {
  json buffers = json::array();
  for (const CollectiveDesc::Buffer &b : c.buffers)
    buffers.push_back({{"dtype", b.dtype}, {"count", b.count},
                       {"data", pointerToJson(b.data)}});
  return {{"reduction", reductionName(c.reduction)},
          {"buffers", buffers},
          {"source", {{"node", c.source.node}, {"op", c.source.op},
                      {"loc", c.source.loc}}}};
}

json nodeToJson(const NodeDesc &n) {
  json j = {{"kind", nodeKindName(n.kind)}};
  switch (n.kind) {
  case NodeDesc::Kind::Kernel:
    j["kernel"] = n.kernel;
    return j;
  case NodeDesc::Kind::Memset:
    j = copyEndsToJson(n, j);
    j["value"] = n.value;
    return j;
  case NodeDesc::Kind::Memcpy:
    j = copyEndsToJson(n, j);
    j["src_region"] = regionJson(n.srcRegion);
    j["src_offset"] = n.srcOffset;
    if (!n.srcBinding.empty())
      j["src_binding"] = n.srcBinding;
    return j;
  case NodeDesc::Kind::Conditional:
    j["condition"] = conditionName(n.condition);
    j["handle"] = n.handle;
    j["bodies"] = n.bodies;
    j["pred_region"] = regionJson(n.predRegion);
    j["pred_offset"] = n.predOffset;
    if (!n.predBinding.empty())
      j["pred_binding"] = n.predBinding;
    if (n.invert)
      j["invert"] = true;
    if (n.condition == NodeDesc::Condition::While) {
      j["max_iterations"] = n.maxIterations;
      j["loop"] = n.loop;
      j["trip_offset"] = n.tripOffset;
    }
    return j;
  case NodeDesc::Kind::Product:
    j["product"] = n.product;
    return j;
  case NodeDesc::Kind::Convolution:
    j["convolution"] = n.convolution;
    return j;
  case NodeDesc::Kind::Collective:
    j["collective"] = n.collective;
    return j;
  }
  return j;
}

json graphToJson(const GraphDesc &g, bool topLevel) {
  json nodes = json::array(), edges = json::array();
  for (const NodeDesc &n : g.nodes)
    nodes.push_back(nodeToJson(n));
  for (size_t i = 0; i < g.edges.size(); ++i)
    edges.push_back(g.isProgrammatic(i)
                        ? json{g.edges[i].first, g.edges[i].second, 1}
                        : json{g.edges[i].first, g.edges[i].second});
  json j = {{"nodes", nodes}, {"edges", edges}};
  if (!topLevel)
    return j;
  j["name"] = g.name;
  j["handles"] = g.handles;
  json dims = json::object();
  for (const auto &[name, value] : g.dimValues)
    dims[name] = value;
  j["dim_values"] = dims;
  if (g.padded)
    j["padded"] = true;
  return j;
}

} // namespace

std::string manifestToJson(const Manifest &m) {
  json j;
  j["compiler_version"] = m.compilerVersion;
  j["target_arch"] = m.targetArch;
  j["min_driver_version"] = m.minDriverVersion;
  j["arena_size"] = m.arenaSize;
  j["persistent_size"] = m.persistentSize;
  j["dims"] = json::array();
  for (const DimDesc &d : m.dims)
    j["dims"].push_back({{"name", d.name},
                         {"min", d.min},
                         {"max", d.max},
                         {"buckets", d.buckets}});
  j["blobs"] = json::array();
  for (const BlobDesc &b : m.blobs)
    j["blobs"].push_back(
        {{"name", b.name}, {"offset", b.offset}, {"size", b.size}});
  j["kernels"] = json::array();
  for (const KernelDesc &k : m.kernels) {
    json params = json::array(), sources = json::array();
    for (const ParamDesc &p : k.params)
      params.push_back(paramToJson(p));
    for (const SourceRef &s : k.sources)
      sources.push_back({{"node", s.node}, {"op", s.op}, {"loc", s.loc}});
    j["kernels"].push_back(
        {{"name", k.name},
         {"grid", {k.grid[0], k.grid[1], k.grid[2]}},
         {"block", {k.block[0], k.block[1], k.block[2]}},
         {"shared_mem", k.sharedMem},
         {"params", params},
         {"sources", sources}});
  }
  j["products"] = json::array();
  for (const ProductDesc &p : m.products)
    j["products"].push_back(productToJson(p));
  j["convolutions"] = json::array();
  for (const ConvolutionDesc &c : m.convolutions)
    j["convolutions"].push_back(convolutionToJson(c));
  if (!m.collectives.empty()) { // Written only when there are some.
    j["collectives"] = json::array();
    for (const CollectiveDesc &c : m.collectives)
      j["collectives"].push_back(collectiveToJson(c));
  }
  j["graphs"] = json::array();
  for (const GraphDesc &g : m.graphs)
    j["graphs"].push_back(graphToJson(g, /*topLevel=*/true));
  j["bodies"] = json::array();
  for (const GraphDesc &g : m.bodies)
    j["bodies"].push_back(graphToJson(g, /*topLevel=*/false));
  for (const char *key : {"inputs", "outputs", "state"}) {
    const auto &list = key[0] == 'i'   ? m.inputs
                       : key[0] == 'o' ? m.outputs
                                       : m.state;
    j[key] = json::array();
    for (const TensorDesc &t : list)
      j[key].push_back(tensorToJson(t));
  }
  if (!m.weightsFile.path.empty())
    j["weights_file"] = {{"path", m.weightsFile.path},
                         {"size", m.weightsFile.size},
                         {"checksum", hashText(m.weightsFile.checksum)}};
  // nlohmann::json objects are std::maps: keys come out sorted.
  return j.dump(1);
}

} // namespace format
} // namespace cgc
