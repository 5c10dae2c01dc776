//===- CapturedCall.cpp - Library calls captured into child graph nodes --===//
//
// cuBLASLt and cuDNN have no graph node API, so a product or convolution
// node is its one library call captured: on a non-blocking stream of the
// context (made on first use), cuStreamBeginCapture in thread-local mode,
// the call, cuStreamEndCapture, and the captured graph becomes a child
// graph node (cuGraphAddChildGraphNode clones it, so the capture is
// destroyed). Only the library call is ever captured, never cgc's own
// nodes, and nothing runs on the GPU while building; the graph may be a
// conditional body.
//
// The captured kernels cannot be repointed like a kernel node of ours (their
// parameters are the library's), so when a caller binding changes an
// operand the call is captured again at the new addresses and the child
// graph in the executable graph is updated with
// cuGraphExecChildGraphNodeSetParams. The same plan on the same
// descriptors captures the same topology, which that update requires.
//
//===----------------------------------------------------------------------===//
#include "Nodes.h"

namespace cgc {
namespace rt {

cgc_status captureStreamOf(cgc_context_s &ctx, CUstream &stream) {
  if (!ctx.captureStream)
    CGC_CHECK_CU(*ctx.engine->drv,
                 cuStreamCreate(&ctx.captureStream, CU_STREAM_NON_BLOCKING));
  stream = ctx.captureStream;
  return CGC_OK;
}

cgc_status captureCall(const NodeSite &site, LibraryCall call, CUgraph &graph) {
  const Driver &drv = site.drv();
  graph = nullptr;
  CUstream stream = nullptr;
  if (cgc_status s = captureStreamOf(site.ctx, stream))
    return s;
  CGC_CHECK_CU(
      drv, cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  ++site.ctx.counters.captures;
  cgc_status s = call(site, stream);
  CUresult r = drv.cuStreamEndCapture(stream, &graph); // Ends it in any case.
  if (s != CGC_OK || r != CUDA_SUCCESS) {
    if (graph)
      drv.cuGraphDestroy(graph);
    graph = nullptr;
    return s != CGC_OK ? s : failDriver(drv, "cuStreamEndCapture", r);
  }
  return CGC_OK;
}

cgc_status addCapturedNode(const NodeSite &site, const Deps &deps,
                           Capture capture) {
  const Driver &drv = site.drv();
  CUgraph captured = nullptr;
  if (cgc_status s = capture(site, captured))
    return s;
  CUresult r = drv.cuGraphAddChildGraphNode(
      &site.state().node, site.graph.graph, deps.data(), deps.size(), captured);
  drv.cuGraphDestroy(captured); // The child node holds a clone.
  if (r != CUDA_SUCCESS)
    return failDriver(drv, "cuGraphAddChildGraphNode", r);
  return CGC_OK;
}

cgc_status refreshCapturedNode(const NodeSite &site, Capture capture,
                               CallLabel label, size_t index) {
  const Driver &drv = site.drv();
  CUgraph fresh = nullptr;
  if (cgc_status s = capture(site, fresh))
    return s;
  CUresult r = drv.cuGraphExecChildGraphNodeSetParams(site.tree.exec,
                                                      site.state().node, fresh);
  drv.cuGraphDestroy(fresh);
  ++site.ctx.counters.node_updates;
  if (r != CUDA_SUCCESS)
    return fail(CGC_ERROR_DRIVER,
                label(*site.ctx.engine, index) +
                    ": the call captured at the new addresses cannot update "
                    "the one in the graph: " +
                    drv.errorText("cuGraphExecChildGraphNodeSetParams", r));
  return CGC_OK;
}

} // namespace rt
} // namespace cgc
