//===- ManifestValidate.cpp - Semantic checks of a manifest --------------===//
//
// validateManifest(): names unique, dtypes known, every region range, blob
// reference and binding in bounds, kernel indices valid, graph edges valid
// and acyclic, every body owned by exactly one conditional node of one tree
// (so bodies form trees under the named graphs), conditional handles unique
// within a tree and in range, dim values in range, every matrix of a
// library product (with its leading dimension and batch stride) and every
// tensor of a library convolution (by its strides) in bounds, and a
// convolution's shapes consistent, collective buffers in bounds, apart
// and outside conditional bodies (the library calls' checks are in
// LibraryCallsValidate.cpp). The runtime relies on these checks.
//
//===----------------------------------------------------------------------===//
#include "format/ManifestChecks.h"
#include "format/Permutation.h"
#include "format/WeightsFile.h"

#include <algorithm>
#include <map>
#include <set>

namespace cgc {
namespace format {
namespace {

using namespace checks;

/// A state tensor whose initial value is in the weights file beside the
/// artifact: that file is named, the value lies inside it and goes to the
/// persistent region.
bool checkFileInit(Checker &c, const Manifest &m, const TensorDesc &t,
                   const std::string &p) {
  uint64_t end;
  if (m.weightsFile.path.empty())
    return c.fail(p + ": init_tensor '" + t.initTensor +
                  "' but the artifact names no weights_file");
  if (!t.initBlob.empty())
    return c.fail(p + ": both init_blob and init_tensor");
  if (!t.initPermutation.empty() &&
      !isPermutation(t.initPermutation, t.shape.size()))
    return c.fail(p + ": init_permutation is not a permutation of its " +
                  std::to_string(t.shape.size()) + " axes");
  if (t.region != Region::Persistent)
    return c.fail(p + ": an initial value from the weights file must go to "
                      "the persistent region");
  if (!addNoOverflow(t.initOffset, t.bytes, end) || end > m.weightsFile.size)
    return c.fail(p + ": initial value exceeds the weights file (" +
                  std::to_string(m.weightsFile.size) + " bytes)");
  return true;
}

bool checkTensors(Checker &c, const Manifest &m,
                  const std::vector<TensorDesc> &list, const char *key,
                  std::set<std::string> &names,
                  const std::map<std::string, const BlobDesc *> &blobs) {
  std::set<std::string> dimNames;
  for (const DimDesc &d : m.dims)
    dimNames.insert(d.name);
  for (size_t i = 0; i < list.size(); ++i) {
    const TensorDesc &t = list[i];
    std::string p = std::string(key) + "[" + std::to_string(i) + "] '" +
                    t.name + "'";
    if (t.name.empty())
      return c.fail(p + ": empty name");
    if (!names.insert(t.name).second)
      return c.fail(p + ": duplicate tensor name");
    size_t elem = dtypeSize(t.dtype);
    if (elem == 0)
      return c.fail(p + ": unknown dtype '" + t.dtype + "'");
    uint64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d < 0 || d > (int64_t(1) << 48))
        return c.fail(p + ": bad dimension " + std::to_string(d));
      if (d != 0 && numel > (uint64_t(1) << 62) / uint64_t(d))
        return c.fail(p + ": shape too large");
      numel *= uint64_t(d);
    }
    if (numel > (uint64_t(1) << 60) || numel * elem > t.bytes)
      return c.fail(p + ": " + std::to_string(t.bytes) +
                    " bytes cannot hold the shape");
    if (!t.shapeDims.empty() && t.shapeDims.size() != t.shape.size())
      return c.fail(p + ": shape_dims and shape differ in rank");
    for (const std::string &d : t.shapeDims)
      if (!d.empty() && !dimNames.count(d))
        return c.fail(p + ": unknown dim '" + d + "'");
    if (!checkRange(c, m, t.region, t.offset, t.bytes, p))
      return false;
    if (!t.initTensor.empty() && !checkFileInit(c, m, t, p))
      return false;
    if (!t.initPermutation.empty() && t.initTensor.empty())
      return c.fail(p + ": init_permutation applies to an init_tensor only");
    if (t.initBlob.empty())
      continue;
    auto it = blobs.find(t.initBlob);
    uint64_t end;
    if (it == blobs.end())
      return c.fail(p + ": unknown init blob '" + t.initBlob + "'");
    if (!addNoOverflow(t.initOffset, t.bytes, end) || end > it->second->size)
      return c.fail(p + ": initial value exceeds blob '" + t.initBlob + "'");
  }
  return true;
}

/// What the nodes of one graph tree share while it is checked.
struct Tree {
  uint32_t handles = 0;
  std::set<uint32_t> handlesUsed;
  std::vector<uint32_t> bodies; ///< Bodies still to check.
};

bool checkKernelNode(Checker &c, const Manifest &m, const NodeDesc &nd,
                     const Tree &tree, const std::string &np) {
  if (nd.kernel >= m.kernels.size())
    return c.fail(np + ": kernel index " + std::to_string(nd.kernel) +
                  " out of range");
  for (const ParamDesc &pd : m.kernels[nd.kernel].params)
    if (pd.kind == ParamDesc::Kind::Handle &&
        (pd.intValue < 0 || pd.intValue >= int64_t(tree.handles)))
      return c.fail(np + ": kernel '" + m.kernels[nd.kernel].name +
                    "' sets handle " + std::to_string(pd.intValue) +
                    ", but its graph has " + std::to_string(tree.handles));
  return true;
}

bool checkCopyNode(Checker &c, const Manifest &m, const NodeDesc &nd,
                   const std::string &np) {
  if (nd.bytes == 0)
    return c.fail(np + ": zero-byte " + nodeKindName(nd.kind));
  if (!checkRange(c, m, nd.dstRegion, nd.dstOffset, nd.bytes, np + " dst") ||
      !checkBinding(c, m, nd.dstBinding, nd.dstRegion, nd.dstOffset, nd.bytes,
                    np + " dst"))
    return false;
  return nd.kind != NodeDesc::Kind::Memcpy ||
         (checkRange(c, m, nd.srcRegion, nd.srcOffset, nd.bytes, np + " src") &&
          checkBinding(c, m, nd.srcBinding, nd.srcRegion, nd.srcOffset,
                       nd.bytes, np + " src"));
}

bool checkConditionalNode(Checker &c, const Manifest &m, const NodeDesc &nd,
                          Tree &tree, const std::string &np) {
  if (nd.handle >= tree.handles)
    return c.fail(np + ": handle " + std::to_string(nd.handle) +
                  " out of range (the graph has " +
                  std::to_string(tree.handles) + ")");
  if (!tree.handlesUsed.insert(nd.handle).second)
    return c.fail(np + ": handle " + std::to_string(nd.handle) +
                  " is used by two conditional nodes");
  size_t want = nd.condition == NodeDesc::Condition::While ? 1 : 2;
  if (nd.bodies.empty() || nd.bodies.size() > want)
    return c.fail(np + ": " + conditionName(nd.condition) + " takes " +
                  (want == 1 ? "one body" : "one or two bodies"));
  if (nd.condition == NodeDesc::Condition::While &&
      (nd.maxIterations < 1 || nd.maxIterations > INT64_C(0xffffffff)))
    return c.fail(np + ": max_iterations must be in [1, 2^32)");
  for (uint32_t b : nd.bodies) {
    if (b >= m.bodies.size())
      return c.fail(np + ": body index " + std::to_string(b) +
                    " out of range");
    tree.bodies.push_back(b);
  }
  if (nd.condition == NodeDesc::Condition::While &&
      (nd.loop.empty() || nd.tripOffset % 4 != 0))
    return c.fail(np + ": a while needs its loop name and a 4-aligned trip "
                       "counter");
  if (nd.condition == NodeDesc::Condition::While &&
      !checkRange(c, m, Region::Arena, nd.tripOffset, 4, np + " trip counter"))
    return false;
  return checkRange(c, m, nd.predRegion, nd.predOffset, 1, np + " predicate") &&
         checkBinding(c, m, nd.predBinding, nd.predRegion, nd.predOffset, 1,
                      np + " predicate");
}

bool checkProductNode(Checker &c, const Manifest &m, const NodeDesc &nd,
                      const std::string &np) {
  if (nd.product >= m.products.size())
    return c.fail(np + ": product index " + std::to_string(nd.product) +
                  " out of range");
  return true;
}

bool checkConvolutionNode(Checker &c, const Manifest &m, const NodeDesc &nd,
                          const std::string &np) {
  if (nd.convolution >= m.convolutions.size())
    return c.fail(np + ": convolution index " +
                  std::to_string(nd.convolution) + " out of range");
  return true;
}

bool checkCollectiveNode(Checker &c, const Manifest &m, const NodeDesc &nd,
                         const std::string &np) {
  if (nd.collective >= m.collectives.size())
    return c.fail(np + ": collective index " + std::to_string(nd.collective) +
                  " out of range");
  return true;
}

bool checkNode(Checker &c, const Manifest &m, const NodeDesc &nd, Tree &tree,
               const std::string &np) {
  switch (nd.kind) {
  case NodeDesc::Kind::Kernel: return checkKernelNode(c, m, nd, tree, np);
  case NodeDesc::Kind::Memset:
  case NodeDesc::Kind::Memcpy: return checkCopyNode(c, m, nd, np);
  case NodeDesc::Kind::Conditional:
    return checkConditionalNode(c, m, nd, tree, np);
  case NodeDesc::Kind::Product: return checkProductNode(c, m, nd, np);
  case NodeDesc::Kind::Convolution:
    return checkConvolutionNode(c, m, nd, np);
  case NodeDesc::Kind::Collective:
    return checkCollectiveNode(c, m, nd, np);
  }
  return c.fail(np + ": unknown node kind");
}

bool checkGraph(Checker &c, const Manifest &m, const GraphDesc &g,
                Tree &tree, const std::string &p) {
  size_t n = g.nodes.size();
  for (size_t i = 0; i < n; ++i)
    if (!checkNode(c, m, g.nodes[i], tree,
                   p + ".nodes[" + std::to_string(i) + "]"))
      return false;
  std::vector<std::vector<uint32_t>> succ(n);
  std::vector<size_t> indeg(n, 0);
  std::set<std::pair<uint32_t, uint32_t>> seen;
  if (!g.programmatic.empty() && g.programmatic.size() != g.edges.size())
    return c.fail(p + ": one edge kind per edge expected");
  for (size_t i = 0; i < g.edges.size(); ++i) {
    auto e = g.edges[i];
    std::string ep = p + ".edges[" + std::to_string(i) + "]";
    if (e.first >= n || e.second >= n)
      return c.fail(ep + ": node index out of range");
    if (e.first == e.second)
      return c.fail(ep + ": self edge");
    if (!seen.insert(e).second)
      return c.fail(ep + ": duplicate edge");
    if (g.isProgrammatic(i) &&
        (g.nodes[e.first].kind != NodeDesc::Kind::Kernel ||
         g.nodes[e.second].kind != NodeDesc::Kind::Kernel))
      return c.fail(ep + ": a programmatic edge must join two kernels");
    succ[e.first].push_back(e.second);
    ++indeg[e.second];
  }
  std::vector<uint32_t> ready;
  for (uint32_t i = 0; i < n; ++i)
    if (indeg[i] == 0)
      ready.push_back(i);
  size_t visited = 0;
  while (!ready.empty()) {
    uint32_t v = ready.back();
    ready.pop_back();
    ++visited;
    for (uint32_t s : succ[v])
      if (--indeg[s] == 0)
        ready.push_back(s);
  }
  if (visited != n)
    return c.fail(p + ": edges form a cycle");
  return true;
}

bool checkDimValues(Checker &c, const Manifest &m, const GraphDesc &g,
                    const std::string &p) {
  std::set<std::string> seen;
  for (const auto &[name, value] : g.dimValues) {
    const DimDesc *dim = nullptr;
    for (const DimDesc &d : m.dims)
      if (d.name == name)
        dim = &d;
    if (!dim || !seen.insert(name).second)
      return c.fail(p + ": dim value for unknown or repeated dim '" + name +
                    "'");
    if (value < dim->min || value > dim->max)
      return c.fail(p + ": dim '" + name + "' = " + std::to_string(value) +
                    " is outside [" + std::to_string(dim->min) + ", " +
                    std::to_string(dim->max) + "]");
  }
  return true;
}

} // namespace

bool validateManifest(const Manifest &m, std::string &error) {
  Checker c{error};
  if (m.targetArch.rfind("sm_", 0) != 0)
    return c.fail("target_arch '" + m.targetArch + "' is not sm_XX");
  std::set<std::string> dimNames;
  for (const DimDesc &d : m.dims) {
    if (d.name.empty() || !dimNames.insert(d.name).second)
      return c.fail("dim '" + d.name + "': empty or duplicate name");
    if (d.min < 0 || d.min > d.max)
      return c.fail("dim '" + d.name + "': need 0 <= min <= max");
    for (size_t i = 0; i < d.buckets.size(); ++i)
      if (d.buckets[i] < d.min || d.buckets[i] > d.max ||
          (i && d.buckets[i] <= d.buckets[i - 1]))
        return c.fail("dim '" + d.name +
                      "': buckets must be increasing and in [min, max]");
  }
  std::map<std::string, const BlobDesc *> blobs;
  for (const BlobDesc &b : m.blobs) {
    if (b.name.empty() || !blobs.emplace(b.name, &b).second)
      return c.fail("blob '" + b.name + "': empty or duplicate name");
    if (b.offset % kBlobAlignment)
      return c.fail("blob '" + b.name + "': offset not 256-aligned");
  }
  std::string why;
  if (!m.weightsFile.path.empty() &&
      !isSafeWeightsPath(m.weightsFile.path, why))
    return c.fail("weights_file '" + m.weightsFile.path + "': " + why);
  std::set<std::string> tensorNames;
  if (!checkTensors(c, m, m.inputs, "inputs", tensorNames, blobs) ||
      !checkTensors(c, m, m.outputs, "outputs", tensorNames, blobs) ||
      !checkTensors(c, m, m.state, "state", tensorNames, blobs))
    return false;
  for (size_t k = 0; k < m.kernels.size(); ++k) {
    const KernelDesc &kd = m.kernels[k];
    std::string p = "kernels[" + std::to_string(k) + "] '" + kd.name + "'";
    if (kd.name.empty())
      return c.fail(p + ": empty symbol name");
    for (size_t i = 0; i < kd.params.size(); ++i) {
      const ParamDesc &pd = kd.params[i];
      std::string pp = p + ".params[" + std::to_string(i) + "]";
      if (pd.kind == ParamDesc::Kind::Ptr) {
        if (!checkRange(c, m, pd.region, pd.offset, 1, pp) ||
            !checkBinding(c, m, pd.binding, pd.region, pd.offset, 1, pp))
          return false;
      } else if (pd.kind == ParamDesc::Kind::I32 &&
                 (pd.intValue < INT32_MIN || pd.intValue > INT32_MAX)) {
        return c.fail(pp + ": value does not fit in i32");
      }
      if (!pd.dim.empty() && !dimNames.count(pd.dim))
        return c.fail(pp + ": unknown dim '" + pd.dim + "'");
    }
  }
  for (size_t k = 0; k < m.products.size(); ++k)
    if (!checkProduct(c, m, m.products[k],
                      "products[" + std::to_string(k) + "] '" +
                          m.products[k].source.node + "'"))
      return false;
  for (size_t k = 0; k < m.convolutions.size(); ++k)
    if (!checkConvolution(c, m, m.convolutions[k],
                          "convolutions[" + std::to_string(k) + "] '" +
                              m.convolutions[k].source.node + "'"))
      return false;
  for (size_t k = 0; k < m.collectives.size(); ++k)
    if (!checkCollective(c, m, m.collectives[k],
                         "collectives[" + std::to_string(k) + "] '" +
                             m.collectives[k].source.node + "'"))
      return false;
  // Every rank must run each collective: none may hang off a condition.
  for (size_t b = 0; b < m.bodies.size(); ++b)
    for (const NodeDesc &nd : m.bodies[b].nodes)
      if (nd.kind == NodeDesc::Kind::Collective)
        return c.fail("bodies[" + std::to_string(b) +
                      "]: a collective inside a conditional body");
  std::set<std::string> graphNames;
  std::vector<size_t> owners(m.bodies.size(), 0);
  for (size_t g = 0; g < m.graphs.size(); ++g) {
    const GraphDesc &gd = m.graphs[g];
    std::string p = "graphs[" + std::to_string(g) + "]";
    if (!graphNames.insert(gd.name).second)
      return c.fail(p + ": duplicate graph name '" + gd.name + "'");
    if (!checkDimValues(c, m, gd, p))
      return false;
    Tree tree;
    tree.handles = gd.handles;
    if (!checkGraph(c, m, gd, tree, p))
      return false;
    while (!tree.bodies.empty()) {
      uint32_t b = tree.bodies.back();
      tree.bodies.pop_back();
      std::string bp = "bodies[" + std::to_string(b) + "]";
      if (++owners[b] > 1)
        return c.fail(bp + ": owned by two conditional nodes");
      if (!checkGraph(c, m, m.bodies[b], tree, bp))
        return false;
    }
  }
  for (size_t b = 0; b < owners.size(); ++b)
    if (owners[b] == 0)
      return c.fail("bodies[" + std::to_string(b) +
                    "]: no conditional node of a graph owns it");
  return true;
}

} // namespace format
} // namespace cgc
