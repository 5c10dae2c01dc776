//===- ConditionalNode.cpp - IF and WHILE conditional nodes -------------===//
//
// A conditional node runs its body graphs on the device: an IF runs
// bodies[0] when its handle is non-zero (else bodies[1], if any); a WHILE
// runs bodies[0] while it is. Setter kernels, which read the predicate
// that the program computed, set the handle: before the node, and for a
// WHILE again at the end of its body. The handle is created on the graph
// that holds the node, before any node of that graph is added (its setter
// kernels take the handle as an argument), and reset to 0 at every launch. Eager runs read the
// predicate on the host instead (a stream synchronization per decision:
// for debugging and comparison only) and enforce the trip bound there.
//
//===----------------------------------------------------------------------===//
#include "Nodes.h"

namespace cgc {
namespace rt {

using format::NodeDesc;

static CUgraphConditionalNodeType nodeType(NodeDesc::Condition c) {
  switch (c) {
  case NodeDesc::Condition::If: return CU_GRAPH_COND_TYPE_IF;
  case NodeDesc::Condition::While: return CU_GRAPH_COND_TYPE_WHILE;
  }
  return CU_GRAPH_COND_TYPE_IF;
}

cgc_status createConditionalHandle(const NodeSite &site) {
  CGC_CHECK_CU(site.drv(), cuGraphConditionalHandleCreate(
                               &site.tree.handles[site.desc().handle],
                               site.graph.graph, site.ctx.engine->cuContext,
                               0, CU_GRAPH_COND_ASSIGN_DEFAULT));
  return CGC_OK;
}

cgc_status addConditionalNode(const NodeSite &site, const Deps &deps) {
  const NodeDesc &nd = site.desc();
  const Driver &drv = site.drv();
  CUcontext cuContext = site.ctx.engine->cuContext;
  CUgraphConditionalHandle handle = site.tree.handles[nd.handle];
  CUgraphNodeParams p{};
  p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  p.conditional.handle = handle;
  p.conditional.type = nodeType(nd.condition);
  p.conditional.size = unsigned(nd.bodies.size());
  p.conditional.ctx = cuContext;
  CGC_CHECK_CU(drv, cuGraphAddNode(&site.state().node, site.graph.graph,
                                   deps.data(), nullptr, deps.size(), &p));
  for (size_t b = 0; b < nd.bodies.size(); ++b)
    if (cgc_status s = buildGraph(site.ctx, site.graph.tree,
                                  site.ctx.bodyState(nd.bodies[b]),
                                  p.conditional.phGraph_out[b]))
      return s;
  return CGC_OK;
}

cgc_status refreshConditionalNode(const NodeSite &) {
  return CGC_OK; // Its setter kernels hold the predicate's address.
}

/// Waits for the stream and reads the predicate byte.
static cgc_status readPredicate(const NodeSite &site, CUstream stream,
                                bool &value) {
  const NodeDesc &nd = site.desc();
  uint8_t byte = 0;
  CGC_CHECK_CU(site.drv(), cuStreamSynchronize(stream));
  CGC_CHECK_CU(site.drv(),
               cuMemcpyDtoH(&byte, site.ctx.address(nd.predRegion,
                                                     nd.predOffset,
                                                     nd.predBinding),
                            1));
  value = byte != 0;
  return CGC_OK;
}

cgc_status runConditionalNodeEager(const NodeSite &site, CUstream stream) {
  const NodeDesc &nd = site.desc();
  cgc_context_s &ctx = site.ctx;
  bool value = false;
  switch (nd.condition) {
  case NodeDesc::Condition::If:
    if (cgc_status s = readPredicate(site, stream, value))
      return s;
    if (value != nd.invert)
      return runGraphEager(ctx, site.graph.tree, ctx.bodyState(nd.bodies[0]),
                           stream);
    if (nd.bodies.size() == 2)
      return runGraphEager(ctx, site.graph.tree, ctx.bodyState(nd.bodies[1]),
                           stream);
    return CGC_OK;
  case NodeDesc::Condition::While: {
    int64_t trips = 0;
    for (; trips < nd.maxIterations; ++trips) {
      if (cgc_status s = readPredicate(site, stream, value))
        return s;
      if (!value)
        break;
      if (cgc_status s = runGraphEager(ctx, site.graph.tree,
                                       ctx.bodyState(nd.bodies[0]), stream))
        return s;
    }
    // The setter kernels, which count trips on the device, do not run.
    CGC_CHECK_CU(site.drv(),
                 cuMemsetD32Async(ctx.address(format::Region::Arena,
                                              nd.tripOffset, ""),
                                  uint32_t(trips), 1, stream));
    return CGC_OK;
  }
  }
  return fail(CGC_ERROR_INVALID_ARTIFACT, "unknown condition");
}

bool conditionalNodeUsesBinding(const NodeSite &site, const std::string &name) {
  return site.desc().predBinding == name;
}

} // namespace rt
} // namespace cgc
