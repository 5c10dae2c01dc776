//===- MemsetNode.cpp - Memset nodes ------------------------------------===//
//
// A memset node fills `bytes` bytes at its destination with one byte value
// (zero fills of the arena, loop trip counters).
//
//===----------------------------------------------------------------------===//
#include "Nodes.h"

#include <cstring>

namespace cgc {
namespace rt {

static CUDA_MEMSET_NODE_PARAMS memsetParams(const NodeSite &site) {
  const format::NodeDesc &nd = site.desc();
  CUDA_MEMSET_NODE_PARAMS p;
  std::memset(&p, 0, sizeof p);
  p.dst = site.ctx.address(nd.dstRegion, nd.dstOffset, nd.dstBinding);
  p.value = nd.value;
  p.elementSize = 1;
  p.width = nd.bytes;
  p.height = 1;
  p.pitch = 0;
  return p;
}

cgc_status addMemsetNode(const NodeSite &site, const Deps &deps) {
  CUDA_MEMSET_NODE_PARAMS p = memsetParams(site);
  CGC_CHECK_CU(site.drv(),
               cuGraphAddMemsetNode(&site.state().node, site.graph.graph,
                                    deps.data(), deps.size(), &p,
                                    site.ctx.engine->cuContext));
  return CGC_OK;
}

cgc_status refreshMemsetNode(const NodeSite &site) {
  CUDA_MEMSET_NODE_PARAMS p = memsetParams(site);
  CGC_CHECK_CU(site.drv(), cuGraphExecMemsetNodeSetParams(
                               site.tree.exec, site.state().node, &p,
                               site.ctx.engine->cuContext));
  ++site.ctx.counters.node_updates;
  return CGC_OK;
}

cgc_status runMemsetNodeEager(const NodeSite &site, CUstream stream) {
  const format::NodeDesc &nd = site.desc();
  CUDA_MEMSET_NODE_PARAMS p = memsetParams(site);
  CGC_CHECK_CU(site.drv(), cuMemsetD8Async(p.dst, nd.value, nd.bytes, stream));
  return CGC_OK;
}

bool memsetNodeUsesBinding(const NodeSite &site, const std::string &name) {
  return site.desc().dstBinding == name;
}

} // namespace rt
} // namespace cgc
