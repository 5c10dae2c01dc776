//===- ProductNode.cpp - Matrix product nodes (cuBLASLt) ----------------===//
//
// A product node runs one manifest product: one cublasLtMatmul with the
// algorithm its engine planned (ProductPlans.cpp). cuBLASLt has no graph
// node API, so the node is that one call captured: on a non-blocking stream
// of the context (made on first use), cuStreamBeginCapture in thread-local
// mode, cublasLtMatmul, cuStreamEndCapture, and the captured graph becomes
// a child graph node (cuGraphAddChildGraphNode clones it, so the capture is
// destroyed). Only the library call is ever captured, never cgc's own nodes,
// and nothing runs on the GPU while building; the graph may be a
// conditional body.
//
// The captured kernels cannot be repointed like a kernel node of ours (their
// parameters are cuBLASLt's), so when a caller binding changes an operand
// the call is captured again with the new addresses and the child graph in
// the executable graph is updated with cuGraphExecChildGraphNodeSetParams.
// The same algorithm on the same descriptors captures the same topology,
// which that update requires. Eager runs call cublasLtMatmul on the stream.
//
//===----------------------------------------------------------------------===//
#include "Nodes.h"

namespace cgc {
namespace rt {

using format::PointerDesc;
using format::ProductDesc;

static const ProductDesc &productOf(const NodeSite &site) {
  return site.ctx.engine->artifact.manifest.products[site.desc().product];
}

static void *addressOf(const NodeSite &site, const PointerDesc &p) {
  return reinterpret_cast<void *>(
      site.ctx.address(p.region, p.offset, p.binding));
}

/// Issues the product's cublasLtMatmul on \p stream at the context's
/// current addresses (the bias address goes into the context's descriptor).
static cgc_status matmul(const NodeSite &site, CUstream stream) {
  const cgc_engine_s &e = *site.ctx.engine;
  uint32_t index = site.desc().product;
  const ProductDesc &p = productOf(site);
  const ProductPlan &plan = e.products[index];
  const CublasLt &lt = *e.lt;
  cublasLtMatmulDesc_t desc = site.ctx.productDescs[index];
  if (p.hasBias()) {
    const void *bias = addressOf(site, p.bias);
    CGC_CHECK_LT(lt, productLabel(e, index),
                 cublasLtMatmulDescSetAttribute(
                     desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                     sizeof bias));
  }
  void *d = addressOf(site, p.d);
  void *c = p.beta != 0 ? addressOf(site, p.c) : d; // Unread when beta == 0.
  void *workspace = p.workspaceBytes ? addressOf(site, p.workspace) : nullptr;
  CGC_CHECK_LT(lt, productLabel(e, index),
               cublasLtMatmul(e.ltHandle, desc, &p.alpha, addressOf(site, p.a),
                              plan.a, addressOf(site, p.b), plan.b, &p.beta, c,
                              plan.c, d, plan.d, &plan.algo, workspace,
                              p.workspaceBytes, stream));
  return CGC_OK;
}

/// Captures the product's call into a new graph (the caller destroys it).
static cgc_status capture(const NodeSite &site, CUgraph &graph) {
  const Driver &drv = site.drv();
  CUstream &stream = site.ctx.captureStream;
  if (!stream)
    CGC_CHECK_CU(drv, cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CGC_CHECK_CU(drv, cuStreamBeginCapture(stream,
                                         CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  ++site.ctx.counters.captures;
  cgc_status s = matmul(site, stream);
  graph = nullptr;
  CUresult r = drv.cuStreamEndCapture(stream, &graph); // Ends it in any case.
  if (s != CGC_OK || r != CUDA_SUCCESS) {
    if (graph)
      drv.cuGraphDestroy(graph);
    graph = nullptr;
    return s != CGC_OK ? s : failDriver(drv, "cuStreamEndCapture", r);
  }
  return CGC_OK;
}

cgc_status createProductDescs(cgc_context_s &ctx) {
  const cgc_engine_s &e = *ctx.engine;
  ctx.productDescs.assign(e.products.size(), nullptr);
  for (size_t i = 0; i < e.products.size(); ++i)
    if (cgc_status s = createMatmulDesc(e, i, /*bias: set per call*/ 0,
                                        ctx.productDescs[i]))
      return s;
  return CGC_OK;
}

cgc_status addProductNode(const NodeSite &site, const Deps &deps) {
  const Driver &drv = site.drv();
  CUgraph captured = nullptr;
  if (cgc_status s = capture(site, captured))
    return s;
  CUresult r =
      drv.cuGraphAddChildGraphNode(&site.state().node, site.graph.graph,
                                   deps.data(), deps.size(), captured);
  drv.cuGraphDestroy(captured); // The child node holds a clone.
  if (r != CUDA_SUCCESS)
    return failDriver(drv, "cuGraphAddChildGraphNode", r);
  return CGC_OK;
}

cgc_status refreshProductNode(const NodeSite &site) {
  const Driver &drv = site.drv();
  CUgraph fresh = nullptr;
  if (cgc_status s = capture(site, fresh))
    return s;
  CUresult r = drv.cuGraphExecChildGraphNodeSetParams(
      site.tree.exec, site.state().node, fresh);
  drv.cuGraphDestroy(fresh);
  ++site.ctx.counters.node_updates;
  if (r != CUDA_SUCCESS)
    return fail(CGC_ERROR_DRIVER,
                productLabel(*site.ctx.engine, site.desc().product) +
                    ": the call captured at the new addresses cannot update "
                    "the one in the graph: " +
                    drv.errorText("cuGraphExecChildGraphNodeSetParams", r));
  return CGC_OK;
}

cgc_status runProductNodeEager(const NodeSite &site, CUstream stream) {
  return matmul(site, stream);
}

bool productNodeUsesBinding(const NodeSite &site, const std::string &name) {
  const ProductDesc &p = productOf(site);
  return p.a.binding == name || p.b.binding == name ||
         p.d.binding == name || (p.beta != 0 && p.c.binding == name) ||
         (p.hasBias() && p.bias.binding == name);
}

} // namespace rt
} // namespace cgc
