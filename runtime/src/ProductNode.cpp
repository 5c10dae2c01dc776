//===- ProductNode.cpp - Matrix product nodes (cuBLASLt) ----------------===//
//
// A product node runs one manifest product: one cublasLtMatmul with the
// algorithm its engine planned (ProductPlans.cpp). cuBLASLt has no graph
// node API, so the node is that one call captured into a child graph node,
// and captured again when a caller binding changes an operand
// (CapturedCall.cpp); the same algorithm on the same descriptors captures
// the same topology. Eager runs call cublasLtMatmul on the stream.
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

cgc_status createProductDescs(cgc_context_s &ctx) {
  const cgc_engine_s &e = *ctx.engine;
  ctx.productDescs.assign(e.products.size(), nullptr);
  for (size_t i = 0; i < e.products.size(); ++i)
    if (cgc_status s = createMatmulDesc(e, i, /*bias: set per call*/ 0,
                                        ctx.productDescs[i]))
      return s;
  return CGC_OK;
}

static cgc_status captureMatmul(const NodeSite &site, CUgraph &graph) {
  return captureCall(site, matmul, graph);
}

cgc_status addProductNode(const NodeSite &site, const Deps &deps) {
  return addCapturedNode(site, deps, captureMatmul);
}

cgc_status refreshProductNode(const NodeSite &site) {
  return refreshCapturedNode(site, captureMatmul, productLabel,
                             site.desc().product);
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
