//===- ArtifactDump.cpp - Human-readable artifact summary ----------------===//
//
// dumpManifest() backs `cgc --dump-artifact`: a deterministic text listing
// of the header, tensors, kernels (with their IR sources) and graph nodes.
//
//===----------------------------------------------------------------------===//
#include "format/ArtifactFormat.h"
#include "format/WeightsFile.h"

#include <algorithm>

#include <cstdio>
#include <sstream>

namespace cgc {
namespace format {
namespace {

std::string shapeString(const TensorDesc &t) {
  std::string s = "[";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i)
      s += ", ";
    if (i < t.shapeDims.size() && !t.shapeDims[i].empty())
      s += t.shapeDims[i] + "<=";
    s += std::to_string(t.shape[i]);
  }
  return s + "]";
}

std::string paramString(const ParamDesc &p) {
  std::ostringstream os;
  os << paramKindName(p.kind);
  switch (p.kind) {
  case ParamDesc::Kind::Ptr:
    os << " " << regionName(p.region) << "+" << p.offset;
    if (!p.binding.empty())
      os << " (" << p.binding << ")";
    break;
  case ParamDesc::Kind::I32:
  case ParamDesc::Kind::I64:
    os << " " << p.intValue;
    if (!p.dim.empty())
      os << " (dim " << p.dim << ")";
    break;
  case ParamDesc::Kind::U64:
    os << " " << p.uintValue;
    break;
  case ParamDesc::Kind::Handle:
    os << " " << p.intValue;
    break;
  case ParamDesc::Kind::F32: {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", p.floatValue);
    os << " " << buf;
    break;
  }
  }
  return os.str();
}

/// \p text with quotes, backslashes and control bytes as \xNN.
std::string escaped(const std::string &text) {
  std::string out;
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\') {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += char(c);
    }
  }
  return out;
}

void dumpTensors(std::ostringstream &os, const char *title,
                 const std::vector<TensorDesc> &list) {
  os << title << " (" << list.size() << "):\n";
  for (const TensorDesc &t : list) {
    os << "  " << t.name << ": " << t.kind << " " << t.dtype
       << shapeString(t) << " @" << regionName(t.region) << "+" << t.offset
       << " " << t.bytes << "B";
    if (!t.initBlob.empty())
      os << " init=" << t.initBlob << "+" << t.initOffset;
    if (!t.initTensor.empty())
      os << " init=weights_file:'" << t.initTensor << "'+" << t.initOffset;
    if (!t.initPermutation.empty()) {
      os << " permuted";
      for (size_t i = 0; i < t.initPermutation.size(); ++i)
        os << (i ? "," : " ") << t.initPermutation[i];
    }
    if (!t.sourceName.empty())
      os << " source_name='" << escaped(t.sourceName) << "'";
    os << "\n";
  }
}

void dumpNode(std::ostringstream &os, const Manifest &m, const NodeDesc &n) {
  os << nodeKindName(n.kind);
  switch (n.kind) {
  case NodeDesc::Kind::Kernel:
    os << " #" << n.kernel << " " << m.kernels[n.kernel].name;
    return;
  case NodeDesc::Kind::Memset:
    os << " dst " << regionName(n.dstRegion) << "+" << n.dstOffset
       << " value " << unsigned(n.value) << " " << n.bytes << "B";
    return;
  case NodeDesc::Kind::Memcpy:
    os << " dst " << regionName(n.dstRegion) << "+" << n.dstOffset << " src "
       << regionName(n.srcRegion) << "+" << n.srcOffset << " " << n.bytes
       << "B";
    return;
  case NodeDesc::Kind::Conditional:
    os << " " << conditionName(n.condition) << " handle " << n.handle
       << " predicate " << regionName(n.predRegion) << "+" << n.predOffset
       << (n.invert ? " inverted" : "");
    if (n.condition == NodeDesc::Condition::While)
      os << " max_iterations " << n.maxIterations << " loop '" << n.loop
         << "' trips arena+" << n.tripOffset;
    os << " bodies";
    for (uint32_t b : n.bodies)
      os << " #" << b;
    return;
  case NodeDesc::Kind::Product: {
    const ProductDesc &p = m.products[n.product];
    os << " #" << n.product << " " << p.source.node << " " << p.dtype
       << (p.allowTf32 ? " tf32" : "") << " m" << p.m << " n" << p.n << " k"
       << p.k << (p.transA ? " T" : " N") << (p.transB ? "T" : "N");
    if (p.batch > 1)
      os << " batch " << p.batch;
    if (p.beta != 0)
      os << " beta " << p.beta;
    os << " epilogue " << epilogueName(p.epilogue) << " workspace="
       << p.workspaceBytes;
    return;
  }
  case NodeDesc::Kind::Convolution: {
    const ConvolutionDesc &c = m.convolutions[n.convolution];
    auto list = [&](const char *label, const std::vector<int64_t> &v) {
      os << " " << label;
      for (size_t i = 0; i < v.size(); ++i)
        os << (i ? "," : "") << v[i];
    };
    os << " #" << n.convolution << " " << c.source.node << " "
       << convolutionOperationName(c.operation) << " " << c.dtype
       << (c.allowTf32 ? " tf32" : "");
    list("x", c.xDims);
    list("w", c.wDims);
    list("y", c.yDims);
    list("stride", c.strides);
    list("dilation", c.dilations);
    list("pad", c.prePadding);
    list("/", c.postPadding);
    os << (c.xStrides.size() > 1 && c.xStrides[1] == 1 ? " nhwc" : "")
       << " epilogue";
    for (const ConvolutionStep &s : c.epilogue) {
      os << " " << stepOpName(s.op);
      if (s.operand != ConvolutionStep::Operand::None)
        os << "(" << stepOperandName(s.operand) << ")";
    }
    if (c.epilogue.empty())
      os << " none";
    os << " workspace=" << c.workspaceBytes;
    return;
  }
  case NodeDesc::Kind::Collective: {
    const CollectiveDesc &c = m.collectives[n.collective];
    uint64_t bytes = 0;
    for (const CollectiveDesc::Buffer &b : c.buffers)
      bytes += uint64_t(b.count) * dtypeSize(b.dtype);
    os << " #" << n.collective << " " << c.source.node << " all_reduce "
       << reductionName(c.reduction) << " " << c.buffers.size() << " buffers "
       << bytes << "B";
    return;
  }
  }
}

void dumpGraph(std::ostringstream &os, const Manifest &m, const GraphDesc &g,
               const std::string &title) {
  size_t counts[NodeDesc::NumKinds] = {};
  for (const NodeDesc &n : g.nodes)
    ++counts[static_cast<int>(n.kind)];
  os << title << ": " << g.nodes.size() << " nodes (";
  for (unsigned k = 0; k < NodeDesc::NumKinds; ++k)
    os << (k ? ", " : "") << counts[k] << " "
       << nodeKindName(static_cast<NodeDesc::Kind>(k));
  os << "), " << g.edges.size() << " edges ("
     << std::count(g.programmatic.begin(), g.programmatic.end(), 1)
     << " programmatic, marked ~)";
  if (g.handles)
    os << ", " << g.handles << " conditional handles";
  for (const auto &[name, value] : g.dimValues)
    os << ", " << name << (g.padded ? "<=" : "=") << value;
  os << "\n";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    os << "  n" << i << " ";
    dumpNode(os, m, g.nodes[i]);
    os << " <-";
    bool any = false;
    for (size_t k = 0; k < g.edges.size(); ++k)
      if (g.edges[k].second == i) {
        os << " n" << g.edges[k].first << (g.isProgrammatic(k) ? "~" : "");
        any = true;
      }
    os << (any ? "" : " (root)") << "\n";
  }
}

} // namespace

std::string dumpManifest(const Artifact &a) {
  const Manifest &m = a.manifest;
  std::ostringstream os;
  os << "cgc artifact v" << a.header.formatVersion << ": " << a.header.fileSize
     << " bytes, manifest " << a.header.manifestSize << " bytes, checksum "
     << hashText(a.header.checksum) << "\n";
  os << "compiler: " << m.compilerVersion << "\n";
  os << "target: " << m.targetArch << ", min driver " << m.minDriverVersion
     << "\n";
  os << "arena: " << m.arenaSize << " bytes, persistent: " << m.persistentSize
     << " bytes\n";
  os << "dims (" << m.dims.size() << "):\n";
  for (const DimDesc &d : m.dims) {
    os << "  " << d.name << " in [" << d.min << ", " << d.max << "] buckets {";
    for (size_t i = 0; i < d.buckets.size(); ++i)
      os << (i ? ", " : "") << d.buckets[i];
    os << "}\n";
  }
  if (!m.weightsFile.path.empty())
    os << "weights file: " << m.weightsFile.path << " "
       << m.weightsFile.size << "B checksum "
       << hashText(m.weightsFile.checksum) << "\n";
  os << "blobs (" << m.blobs.size() << "):\n";
  for (const BlobDesc &b : m.blobs)
    os << "  " << b.name << ": data+" << b.offset << " " << b.size << "B\n";
  dumpTensors(os, "inputs", m.inputs);
  dumpTensors(os, "outputs", m.outputs);
  dumpTensors(os, "state", m.state);
  os << "kernels (" << m.kernels.size() << "):\n";
  for (size_t k = 0; k < m.kernels.size(); ++k) {
    const KernelDesc &kd = m.kernels[k];
    os << "  #" << k << " " << kd.name << " grid(" << kd.grid[0] << ","
       << kd.grid[1] << "," << kd.grid[2] << ") block(" << kd.block[0] << ","
       << kd.block[1] << "," << kd.block[2] << ") smem " << kd.sharedMem
       << "\n";
    for (size_t i = 0; i < kd.params.size(); ++i)
      os << "    arg" << i << ": " << paramString(kd.params[i]) << "\n";
    for (const SourceRef &s : kd.sources)
      os << "    from " << s.node << " " << s.op
         << (s.loc.empty() ? "" : " at " + s.loc) << "\n";
  }
  for (const GraphDesc &g : m.graphs)
    dumpGraph(os, m, g, "graph " + g.name);
  for (size_t b = 0; b < m.bodies.size(); ++b)
    dumpGraph(os, m, m.bodies[b], "body #" + std::to_string(b));
  return os.str();
}

} // namespace format
} // namespace cgc
