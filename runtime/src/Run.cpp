//===- Run.cpp - Replay, eager launch, views and rebinding ---------------===//
//
// The per-call paths of a context: cgc_run (cuGraphLaunch; no allocation, no
// output), cgc_run_eager (cuLaunchKernel node by node in topological order),
// tensor views, and cgc_context_bind (in-place exec node parameter updates).
//
//===----------------------------------------------------------------------===//
#include "Internal.h"

#include <algorithm>

using namespace cgc::rt;
using cgc::format::GraphDesc;
using cgc::format::KernelDesc;
using cgc::format::NodeDesc;
using cgc::format::ParamDesc;

namespace {

/// Pushes node \p v's current parameters into the instantiated graph.
cgc_status refreshNode(cgc_context_s &ctx, GraphState &gs, const GraphDesc &gd,
                       uint32_t v) {
  const Driver &drv = *ctx.engine->drv;
  const NodeDesc &nd = gd.nodes[v];
  NodeState &ns = gs.nodes[v];
  if (nd.kind == NodeDesc::Kind::Kernel) {
    fillArgs(ctx, ctx.engine->artifact.manifest.kernels[nd.kernel], gs.dims,
             ns);
    CUDA_KERNEL_NODE_PARAMS kp = kernelParams(ctx, nd, ns);
    CGC_CHECK_CU(drv, cuGraphExecKernelNodeSetParams(gs.exec, ns.node, &kp));
  } else if (nd.kind == NodeDesc::Kind::Memset) {
    CUDA_MEMSET_NODE_PARAMS mp = memsetParams(ctx, nd);
    CGC_CHECK_CU(drv, cuGraphExecMemsetNodeSetParams(gs.exec, ns.node, &mp,
                                                     ctx.engine->cuContext));
  } else {
    CUDA_MEMCPY3D cp = memcpyParams(ctx, nd);
    CGC_CHECK_CU(drv, cuGraphExecMemcpyNodeSetParams(gs.exec, ns.node, &cp,
                                                     ctx.engine->cuContext));
  }
  return CGC_OK;
}

bool nodeUsesBinding(const cgc_context_s &ctx, const NodeDesc &nd,
                     const std::string &name) {
  if (nd.kind != NodeDesc::Kind::Kernel)
    return nd.dstBinding == name || nd.srcBinding == name;
  for (const ParamDesc &p :
       ctx.engine->artifact.manifest.kernels[nd.kernel].params)
    if (p.binding == name)
      return true;
  return false;
}

/// Validates dims and brings graph \p index up to date with them.
cgc_status prepareRun(cgc_context ctx, size_t index, const int64_t *dims,
                      size_t nDims) {
  if (!ctx)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null context");
  if (index >= ctx->graphs.size())
    return fail(CGC_ERROR_INVALID_ARGUMENT, "graph index out of range");
  const auto &dimDescs = ctx->engine->artifact.manifest.dims;
  if (nDims != 0 && (nDims != dimDescs.size() || !dims))
    return fail(CGC_ERROR_INVALID_ARGUMENT, "expected one value per dim");
  for (size_t d = 0; d < dimDescs.size(); ++d) {
    int64_t v = nDims ? dims[d] : dimDescs[d].max;
    if (v < dimDescs[d].min || v > dimDescs[d].max)
      return fail(CGC_ERROR_INVALID_ARGUMENT,
                  "dim '" + dimDescs[d].name + "' out of range");
    ctx->scratchDims[d] = v;
  }
  if (cgc_status s = ctx->engine->makeCurrent())
    return s;
  GraphState &gs = ctx->graphs[index];
  if (gs.usesDims && gs.dims != ctx->scratchDims) {
    gs.dims = ctx->scratchDims; // Same size: no allocation.
    const GraphDesc &gd = ctx->engine->artifact.manifest.graphs[index];
    for (uint32_t v = 0; v < gs.nodes.size(); ++v)
      if (gs.nodes[v].usesDims)
        if (cgc_status s = refreshNode(*ctx, gs, gd, v)) {
          // Some nodes may hold the new dims: refresh all next time.
          std::fill(gs.dims.begin(), gs.dims.end(), -1);
          return s;
        }
  }
  if (ctx->dims != ctx->scratchDims) {
    ctx->dims = ctx->scratchDims;
    for (TensorView &view : ctx->views)
      for (size_t a = 0; a < view.shape.size(); ++a) {
        const auto &sd = view.desc->shapeDims;
        view.shape[a] = view.desc->shape[a];
        for (size_t d = 0; a < sd.size() && d < dimDescs.size(); ++d)
          if (sd[a] == dimDescs[d].name)
            view.shape[a] = ctx->dims[d];
      }
  }
  return CGC_OK;
}

cgc_status viewOf(cgc_context ctx, const char *name, bool output,
                  cgc_tensor *desc) {
  if (!ctx || !name || !desc)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  size_t nIn = ctx->engine->artifact.manifest.inputs.size();
  size_t begin = output ? nIn : 0;
  size_t end = output ? ctx->views.size() : nIn;
  for (size_t i = begin; i < end; ++i) {
    TensorView &v = ctx->views[i];
    if (v.desc->name != name)
      continue;
    desc->data = reinterpret_cast<void *>(
        ctx->address(v.desc->region, v.desc->offset, v.desc->name));
    desc->dtype = dtypeCode(v.desc->dtype);
    desc->ndim = static_cast<int32_t>(v.shape.size());
    desc->shape = v.shape.data();
    desc->strides = v.strides.data();
    return CGC_OK;
  }
  return fail(CGC_ERROR_NOT_FOUND, std::string("no ") +
                                       (output ? "output" : "input") +
                                       " named '" + name + "'");
}

} // namespace

extern "C" {

cgc_status cgc_run(cgc_context ctx, size_t graph_index, const int64_t *dims,
                   size_t n_dims, void *stream) {
  if (cgc_status s = prepareRun(ctx, graph_index, dims, n_dims))
    return s;
  CGC_CHECK_CU(*ctx->engine->drv,
               cuGraphLaunch(ctx->graphs[graph_index].exec,
                             static_cast<CUstream>(stream)));
  return CGC_OK;
}

cgc_status cgc_run_eager(cgc_context ctx, size_t graph_index,
                         const int64_t *dims, size_t n_dims, void *stream) {
  if (cgc_status s = prepareRun(ctx, graph_index, dims, n_dims))
    return s;
  const Driver &drv = *ctx->engine->drv;
  const auto &m = ctx->engine->artifact.manifest;
  const GraphDesc &gd = m.graphs[graph_index];
  GraphState &gs = ctx->graphs[graph_index];
  CUstream st = static_cast<CUstream>(stream);
  for (uint32_t v : gs.order) {
    const NodeDesc &nd = gd.nodes[v];
    if (nd.kind == NodeDesc::Kind::Kernel) {
      const KernelDesc &kd = m.kernels[nd.kernel];
      CGC_CHECK_CU(drv, cuLaunchKernel(ctx->engine->functions[nd.kernel],
                                       kd.grid[0], kd.grid[1], kd.grid[2],
                                       kd.block[0], kd.block[1], kd.block[2],
                                       kd.sharedMem, st,
                                       gs.nodes[v].args.data(), nullptr));
    } else if (nd.kind == NodeDesc::Kind::Memset) {
      CUDA_MEMSET_NODE_PARAMS p = memsetParams(*ctx, nd);
      CGC_CHECK_CU(drv, cuMemsetD8Async(p.dst, nd.value, nd.bytes, st));
    } else {
      CUDA_MEMCPY3D p = memcpyParams(*ctx, nd);
      CGC_CHECK_CU(drv,
                   cuMemcpyDtoDAsync(p.dstDevice, p.srcDevice, nd.bytes, st));
    }
  }
  return CGC_OK;
}

cgc_status cgc_context_input(cgc_context ctx, const char *name,
                             cgc_tensor *desc) {
  return viewOf(ctx, name, /*output=*/false, desc);
}

cgc_status cgc_context_output(cgc_context ctx, const char *name,
                              cgc_tensor *desc) {
  return viewOf(ctx, name, /*output=*/true, desc);
}

cgc_status cgc_context_bind(cgc_context ctx, const char *name,
                            void *device_ptr) {
  if (!ctx || !name)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  TensorView *view = ctx->findView(name);
  if (!view)
    return fail(CGC_ERROR_NOT_FOUND,
                std::string("no input or output named '") + name + "'");
  if (reinterpret_cast<uintptr_t>(device_ptr) % 16)
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                std::string("pointer bound to '") + name +
                    "' is not 16-byte aligned");
  if (cgc_status s = ctx->engine->makeCurrent())
    return s;
  view->bound = reinterpret_cast<CUdeviceptr>(device_ptr);
  const auto &m = ctx->engine->artifact.manifest;
  for (size_t g = 0; g < ctx->graphs.size(); ++g)
    for (uint32_t v = 0; v < m.graphs[g].nodes.size(); ++v)
      if (nodeUsesBinding(*ctx, m.graphs[g].nodes[v], view->desc->name))
        if (cgc_status s = refreshNode(*ctx, ctx->graphs[g], m.graphs[g], v))
          return s;
  return CGC_OK;
}

} // extern "C"
