//===- Run.cpp - Replay, eager launch, views and rebinding ---------------===//
//
// The per-call paths of a context: cgc_run (cuGraphLaunch; no allocation, no
// output), cgc_run_eager (cuLaunchKernel node by node in topological order),
// tensor views, and cgc_context_bind (in-place exec node parameter updates).
//
//===----------------------------------------------------------------------===//
#include "Nodes.h"
#include "Ranks.h"

#include <algorithm>

using namespace cgc::rt;
using cgc::format::GraphDesc;
using cgc::format::KernelDesc;
using cgc::format::NodeDesc;
using cgc::format::ParamDesc;

namespace {

/// Pushes the current binding of \p name into every node that uses it.
cgc_status refreshBoundNodes(cgc_context_s &ctx, const std::string &name) {
  for (GraphState &gs : ctx.graphs)
    for (uint32_t v = 0; v < gs.nodes.size(); ++v) {
      NodeSite site{ctx, gs, ctx.trees[gs.tree], v};
      if (nodeUsesBinding(site, name))
        if (cgc_status s = refreshNode(site))
          return s;
    }
  return CGC_OK;
}

/// The value tree \p t is specialized to for dim \p d, else \p otherwise.
int64_t boundValue(const TreeState &t, size_t d, int64_t otherwise) {
  return t.bound[d] >= 0 ? t.bound[d] : otherwise;
}

/// Validates dims and brings graph \p index up to date with them.
cgc_status prepareRun(cgc_context ctx, size_t index, const int64_t *dims,
                      size_t nDims) {
  if (!ctx)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null context");
  if (index >= ctx->trees.size())
    return fail(CGC_ERROR_INVALID_ARGUMENT, "graph index out of range");
  const auto &dimDescs = ctx->engine->artifact.manifest.dims;
  if (nDims != 0 && (nDims != dimDescs.size() || !dims))
    return fail(CGC_ERROR_INVALID_ARGUMENT, "expected one value per dim");
  const GraphDesc &gd = *ctx->graphs[index].desc;
  const TreeState &bound = ctx->trees[index];
  for (size_t d = 0; d < dimDescs.size(); ++d) {
    int64_t v = nDims ? dims[d] : boundValue(bound, d, dimDescs[d].max);
    if (v < dimDescs[d].min || v > dimDescs[d].max)
      return fail(CGC_ERROR_INVALID_ARGUMENT,
                  "dim '" + dimDescs[d].name + "' out of range");
    if (gd.padded ? v > boundValue(bound, d, v) : v != boundValue(bound, d, v))
      return fail(CGC_ERROR_INVALID_ARGUMENT,
                  "graph '" + gd.name + "' is compiled for " +
                      dimDescs[d].name + (gd.padded ? "<=" : "=") +
                      std::to_string(boundValue(bound, d, v)) + ", not " +
                      std::to_string(v) +
                      " (cgc_engine_select_graph finds the graph for a size)");
    ctx->scratchDims[d] = v;
  }
  if (cgc_status s = ctx->engine->makeCurrent())
    return s;
  TreeState &tree = ctx->trees[index];
  if (tree.usesDims && tree.dims != ctx->scratchDims) {
    tree.dims = ctx->scratchDims; // Same size: no allocation.
    for (uint32_t member : tree.members) {
      GraphState &gs = ctx->graphs[member];
      for (uint32_t v = 0; v < gs.nodes.size(); ++v)
        if (gs.nodes[v].usesDims)
          if (cgc_status s = refreshNode({*ctx, gs, tree, v})) {
            // Some nodes may hold the new dims: refresh all next time.
            std::fill(tree.dims.begin(), tree.dims.end(), -1);
            return s;
          }
    }
  }
  if (ctx->dims != ctx->scratchDims) {
    ctx->dims = ctx->scratchDims;
    for (TensorView &view : ctx->views) {
      for (size_t a = 0; a < view.shape.size(); ++a) {
        int32_t d = view.dimOfAxis[a];
        view.shape[a] = d < 0 ? view.desc->shape[a] : ctx->dims[size_t(d)];
      }
      // Contiguous at the real shape (a padded graph's boundary is packed).
      for (size_t a = view.shape.size(); a-- > 1;)
        view.strides[a - 1] = view.strides[a] * view.shape[a];
    }
  }
  return CGC_OK;
}

/// A padded graph reads the real dims from its `dim_size` inputs: when the
/// dims changed, all are written on \p stream ahead of the launch by one
/// batch of stream memory operations (about 1.8 us of GPU time on an
/// H100, however many dims; no copy from host memory, so the next call
/// may change the values at once); replays at the same size write nothing.
cgc_status writeDimSizes(cgc_context ctx, size_t index, CUstream stream) {
  if (!ctx->graphs[index].desc->padded || ctx->writtenDims == ctx->dims)
    return CGC_OK;
  std::fill(ctx->writtenDims.begin(), ctx->writtenDims.end(), -1);
  std::vector<CUstreamBatchMemOpParams> &ops = ctx->dimWrites;
  for (size_t k = 0; k < ops.size(); ++k)
    ops[k].writeValue.value64 = cuuint64_t(ctx->dims[ctx->dimWriteDims[k]]);
  CGC_CHECK_CU(*ctx->engine->drv,
               cuStreamBatchMemOp(stream, unsigned(ops.size()), ops.data(), 0));
  ctx->writtenDims = ctx->dims; // Same size: no allocation.
  ++ctx->counters.dim_writes;
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
  CUstream s = static_cast<CUstream>(stream);
  if (cgc_status st = writeDimSizes(ctx, graph_index, s))
    return st;
  // A joined engine launches under its ranks' lock, never after the
  // watchdog aborted the communicator the graph's collectives use.
  return issueJoined(*ctx->engine, [&]() -> cgc_status {
    CGC_CHECK_CU(*ctx->engine->drv, cuGraphLaunch(ctx->trees[graph_index].exec, s));
    ++ctx->counters.launches;
    return recordReplay(*ctx->engine, s);
  });
}

cgc_status cgc_run_eager(cgc_context ctx, size_t graph_index,
                         const int64_t *dims, size_t n_dims, void *stream) {
  if (cgc_status s = prepareRun(ctx, graph_index, dims, n_dims))
    return s;
  CUstream s = static_cast<CUstream>(stream);
  if (cgc_status st = writeDimSizes(ctx, graph_index, s))
    return st;
  if (cgc_status st = issueJoined(*ctx->engine, [] { return CGC_OK; }))
    return st; // The communicator was aborted: nothing runs.
  if (cgc_status st = runGraphEager(*ctx, uint32_t(graph_index), uint32_t(graph_index), s))
    return st;
  return issueJoined(*ctx->engine, [&] { return recordReplay(*ctx->engine, s); });
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
  if (view->desc->kind == "dim_size")
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                std::string("'") + name + "' holds a real dim size, which "
                "cgc_run writes; it cannot be bound");
  if (reinterpret_cast<uintptr_t>(device_ptr) % 16)
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                std::string("pointer bound to '") + name +
                    "' is not 16-byte aligned");
  if (cgc_status s = ctx->engine->makeCurrent())
    return s;
  CUdeviceptr previous = view->bound;
  view->bound = reinterpret_cast<CUdeviceptr>(device_ptr);
  if (cgc_status s = refreshBoundNodes(*ctx, view->desc->name)) {
    // A node refused the new pointer (a product's re-capture can fail):
    // go back to the old one everywhere, so no node is left half-bound.
    std::string why = cgc_last_error();
    view->bound = previous;
    refreshBoundNodes(*ctx, view->desc->name);
    return fail(s, why + " (the binding of '" + name + "' is unchanged)");
  }
  return CGC_OK;
}

} // extern "C"

namespace cgc {
namespace rt {

cgc_status runGraphEager(cgc_context_s &ctx, uint32_t tree, uint32_t state,
                         CUstream stream) {
  GraphState &gs = ctx.graphs[state];
  for (uint32_t v : gs.order)
    if (cgc_status s = runNodeEager({ctx, gs, ctx.trees[tree], v}, stream))
      return s;
  return CGC_OK;
}

} // namespace rt
} // namespace cgc
