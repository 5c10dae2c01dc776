//===- MemcpyNode.cpp - Memcpy nodes ------------------------------------===//
//
// A memcpy node copies `bytes` bytes between two device ranges (outputs
// that could not be computed in place, loop-carried values, `if` results).
//
//===----------------------------------------------------------------------===//
#include "Nodes.h"

#include <cstring>

namespace cgc {
namespace rt {

static CUDA_MEMCPY3D memcpyParams(const NodeSite &site) {
  const format::NodeDesc &nd = site.desc();
  CUDA_MEMCPY3D p;
  std::memset(&p, 0, sizeof p);
  p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  p.srcDevice = site.ctx.address(nd.srcRegion, nd.srcOffset, nd.srcBinding);
  p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  p.dstDevice = site.ctx.address(nd.dstRegion, nd.dstOffset, nd.dstBinding);
  p.WidthInBytes = nd.bytes;
  p.Height = 1;
  p.Depth = 1;
  return p;
}

cgc_status addMemcpyNode(const NodeSite &site, const Deps &deps) {
  CUDA_MEMCPY3D p = memcpyParams(site);
  CGC_CHECK_CU(site.drv(),
               cuGraphAddMemcpyNode(&site.state().node, site.graph.graph,
                                    deps.data(), deps.size(), &p,
                                    site.ctx.engine->cuContext));
  return CGC_OK;
}

cgc_status refreshMemcpyNode(const NodeSite &site) {
  CUDA_MEMCPY3D p = memcpyParams(site);
  CGC_CHECK_CU(site.drv(), cuGraphExecMemcpyNodeSetParams(
                               site.tree.exec, site.state().node, &p,
                               site.ctx.engine->cuContext));
  ++site.ctx.counters.node_updates;
  return CGC_OK;
}

cgc_status runMemcpyNodeEager(const NodeSite &site, CUstream stream) {
  CUDA_MEMCPY3D p = memcpyParams(site);
  CGC_CHECK_CU(site.drv(), cuMemcpyDtoDAsync(p.dstDevice, p.srcDevice,
                                             site.desc().bytes, stream));
  return CGC_OK;
}

bool memcpyNodeUsesBinding(const NodeSite &site, const std::string &name) {
  return site.desc().dstBinding == name || site.desc().srcBinding == name;
}

} // namespace rt
} // namespace cgc
