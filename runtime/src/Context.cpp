//===- Context.cpp - Execution contexts: arena, graphs, replay -----------===//
//
// A context owns an arena and one instantiated CUDA graph per manifest graph,
// built node by node (kernel, memset, memcpy nodes and the manifest's edges;
// no stream capture, no empty nodes), instantiated and uploaded once.
// Replay, eager launch and rebinding are in Run.cpp.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"

#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <queue>

using namespace cgc::rt;
using cgc::format::GraphDesc;
using cgc::format::KernelDesc;
using cgc::format::NodeDesc;
using cgc::format::ParamDesc;
using cgc::format::Region;

cgc_context_s::~cgc_context_s() {
  if (!engine)
    return;
  const Driver &drv = *engine->drv;
  engine->makeCurrent();
  for (GraphState &g : graphs) {
    if (g.exec)
      drv.cuGraphExecDestroy(g.exec);
    if (g.graph)
      drv.cuGraphDestroy(g.graph);
  }
  if (ownsArena && arena)
    drv.cuMemFree(arena);
}

TensorView *cgc_context_s::findView(const char *name) {
  for (TensorView &v : views)
    if (v.desc->name == name)
      return &v;
  return nullptr;
}

CUdeviceptr cgc_context_s::address(Region r, uint64_t offset,
                                   const std::string &binding) const {
  if (!binding.empty())
    for (const TensorView &v : views)
      if (v.bound && v.desc->name == binding)
        return v.bound + (offset - v.desc->offset);
  return engine->regionBase(r, arena) + offset;
}

namespace cgc {
namespace rt {

/// Writes the current value of every argument of \p kd into \p ns.
void fillArgs(const cgc_context_s &ctx, const KernelDesc &kd,
              const std::vector<int64_t> &dims, NodeState &ns) {
  const auto &dimDescs = ctx.engine->artifact.manifest.dims;
  for (size_t i = 0; i < kd.params.size(); ++i) {
    const ParamDesc &p = kd.params[i];
    uint64_t slot = 0;
    int64_t iv = p.intValue;
    if (!p.dim.empty())
      for (size_t d = 0; d < dimDescs.size(); ++d)
        if (dimDescs[d].name == p.dim)
          iv = dims[d];
    switch (p.kind) {
    case ParamDesc::Kind::Ptr: {
      CUdeviceptr a = ctx.address(p.region, p.offset, p.binding);
      std::memcpy(&slot, &a, sizeof a);
      break;
    }
    case ParamDesc::Kind::I32: {
      int32_t v = static_cast<int32_t>(iv);
      std::memcpy(&slot, &v, sizeof v);
      break;
    }
    case ParamDesc::Kind::I64:
      std::memcpy(&slot, &iv, sizeof iv);
      break;
    case ParamDesc::Kind::U64:
      slot = p.uintValue;
      break;
    case ParamDesc::Kind::F32:
      std::memcpy(&slot, &p.floatValue, sizeof(float));
      break;
    }
    ns.storage[i] = slot;
  }
}

CUDA_KERNEL_NODE_PARAMS kernelParams(const cgc_context_s &ctx,
                                     const NodeDesc &nd, NodeState &ns) {
  const KernelDesc &kd = ctx.engine->artifact.manifest.kernels[nd.kernel];
  CUDA_KERNEL_NODE_PARAMS p;
  std::memset(&p, 0, sizeof p);
  p.kern = ctx.engine->kernels[nd.kernel];
  p.gridDimX = kd.grid[0];
  p.gridDimY = kd.grid[1];
  p.gridDimZ = kd.grid[2];
  p.blockDimX = kd.block[0];
  p.blockDimY = kd.block[1];
  p.blockDimZ = kd.block[2];
  p.sharedMemBytes = kd.sharedMem;
  p.kernelParams = ns.args.empty() ? nullptr : ns.args.data();
  return p;
}

CUDA_MEMSET_NODE_PARAMS memsetParams(const cgc_context_s &ctx,
                                     const NodeDesc &nd) {
  CUDA_MEMSET_NODE_PARAMS p;
  std::memset(&p, 0, sizeof p);
  p.dst = ctx.address(nd.dstRegion, nd.dstOffset, nd.dstBinding);
  p.value = nd.value;
  p.elementSize = 1;
  p.width = nd.bytes;
  p.height = 1;
  p.pitch = 0;
  return p;
}

CUDA_MEMCPY3D memcpyParams(const cgc_context_s &ctx, const NodeDesc &nd) {
  CUDA_MEMCPY3D p;
  std::memset(&p, 0, sizeof p);
  p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  p.srcDevice = ctx.address(nd.srcRegion, nd.srcOffset, nd.srcBinding);
  p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  p.dstDevice = ctx.address(nd.dstRegion, nd.dstOffset, nd.dstBinding);
  p.WidthInBytes = nd.bytes;
  p.Height = 1;
  p.Depth = 1;
  return p;
}

} // namespace rt
} // namespace cgc

namespace {

/// Node order and, per node, the indices of its incoming edges.
std::vector<uint32_t> topoOrder(const GraphDesc &g,
                                std::vector<std::vector<uint32_t>> &inEdges) {
  size_t n = g.nodes.size();
  std::vector<std::vector<uint32_t>> succ(n);
  std::vector<size_t> indeg(n, 0);
  inEdges.assign(n, {});
  for (uint32_t k = 0; k < g.edges.size(); ++k) {
    const auto &e = g.edges[k];
    succ[e.first].push_back(e.second);
    inEdges[e.second].push_back(k);
    ++indeg[e.second];
  }
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
  for (uint32_t i = 0; i < n; ++i)
    if (!indeg[i])
      ready.push(i);
  std::vector<uint32_t> order;
  while (!ready.empty()) {
    uint32_t v = ready.top();
    ready.pop();
    order.push_back(v);
    for (uint32_t s : succ[v])
      if (--indeg[s] == 0)
        ready.push(s);
  }
  return order; // Complete: the format validated acyclicity.
}

bool usesProgrammaticLaunch(const cgc_context_s &ctx, const GraphDesc &gd,
                            uint32_t edge) {
  return ctx.engine->programmaticEdges && gd.isProgrammatic(edge);
}

/// The consumer may launch while its producer runs; the generated kernels
/// wait for their producers' writes (griddepcontrol.wait) first.
cgc_status addProgrammaticEdges(cgc_context_s &ctx, const GraphDesc &gd,
                                GraphState &gs) {
  CUgraphEdgeData data{};
  data.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
  data.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
  for (uint32_t k = 0; k < gd.edges.size(); ++k) {
    if (!usesProgrammaticLaunch(ctx, gd, k))
      continue;
    CUgraphNode from = gs.nodes[gd.edges[k].first].node;
    CUgraphNode to = gs.nodes[gd.edges[k].second].node;
    CGC_CHECK_CU(*ctx.engine->drv,
                 cuGraphAddDependencies(gs.graph, &from, &to, &data, 1));
  }
  return CGC_OK;
}

cgc_status buildGraph(cgc_context_s &ctx, const GraphDesc &gd,
                      GraphState &gs) {
  const Driver &drv = *ctx.engine->drv;
  const auto &kernels = ctx.engine->artifact.manifest.kernels;
  std::vector<std::vector<uint32_t>> inEdges;
  gs.order = topoOrder(gd, inEdges);
  gs.nodes.resize(gd.nodes.size());
  gs.dims = ctx.dims;
  CGC_CHECK_CU(drv, cuGraphCreate(&gs.graph, 0));
  std::vector<CUgraphNode> deps;
  for (uint32_t v : gs.order) {
    const NodeDesc &nd = gd.nodes[v];
    NodeState &ns = gs.nodes[v];
    deps.clear();
    for (uint32_t k : inEdges[v])
      if (!usesProgrammaticLaunch(ctx, gd, k))
        deps.push_back(gs.nodes[gd.edges[k].first].node);
    if (nd.kind == NodeDesc::Kind::Kernel) {
      const KernelDesc &kd = kernels[nd.kernel];
      ns.storage.assign(kd.params.size(), 0);
      for (uint64_t &slot : ns.storage)
        ns.args.push_back(&slot);
      for (const ParamDesc &p : kd.params)
        ns.usesDims |= !p.dim.empty();
      gs.usesDims |= ns.usesDims;
      fillArgs(ctx, kd, ctx.dims, ns);
      CUDA_KERNEL_NODE_PARAMS kp = kernelParams(ctx, nd, ns);
      CGC_CHECK_CU(drv, cuGraphAddKernelNode(&ns.node, gs.graph, deps.data(),
                                             deps.size(), &kp));
    } else if (nd.kind == NodeDesc::Kind::Memset) {
      CUDA_MEMSET_NODE_PARAMS mp = memsetParams(ctx, nd);
      CGC_CHECK_CU(drv, cuGraphAddMemsetNode(&ns.node, gs.graph, deps.data(),
                                             deps.size(), &mp,
                                             ctx.engine->cuContext));
    } else {
      CUDA_MEMCPY3D cp = memcpyParams(ctx, nd);
      CGC_CHECK_CU(drv, cuGraphAddMemcpyNode(&ns.node, gs.graph, deps.data(),
                                             deps.size(), &cp,
                                             ctx.engine->cuContext));
    }
  }
  if (cgc_status s = addProgrammaticEdges(ctx, gd, gs))
    return s;
  CGC_CHECK_CU(drv, cuGraphInstantiateWithFlags(&gs.exec, gs.graph, 0));
  CGC_CHECK_CU(drv, cuGraphUpload(gs.exec, nullptr));
  return CGC_OK;
}

cgc_status createContext(std::unique_ptr<cgc_context_s> &ctx, void *arena,
                         size_t arenaBytes) {
  cgc_engine_s &e = *ctx->engine;
  const auto &m = e.artifact.manifest;
  if (cgc_status s = e.makeCurrent())
    return s;
  for (const auto *list : {&m.inputs, &m.outputs})
    for (const auto &t : *list) {
      TensorView v;
      v.desc = &t;
      v.shape = t.shape;
      v.strides.assign(t.shape.size(), 1);
      for (size_t a = t.shape.size(); a-- > 1;)
        v.strides[a - 1] = v.strides[a] * t.shape[a];
      ctx->views.push_back(std::move(v));
    }
  for (const auto &d : m.dims)
    ctx->dims.push_back(d.max);
  ctx->scratchDims = ctx->dims;
  if (arena) {
    if (reinterpret_cast<uintptr_t>(arena) % 256)
      return fail(CGC_ERROR_INVALID_ARGUMENT, "caller arena not 256-aligned");
    if (arenaBytes < m.arenaSize)
      return fail(CGC_ERROR_INVALID_ARGUMENT,
                  "caller arena has " + std::to_string(arenaBytes) +
                      " bytes, the artifact needs " +
                      std::to_string(m.arenaSize));
    ctx->arena = reinterpret_cast<CUdeviceptr>(arena);
  } else if (m.arenaSize) {
    CGC_CHECK_CU(*e.drv, cuMemAlloc(&ctx->arena, m.arenaSize));
    ctx->ownsArena = true;
    CGC_CHECK_CU(*e.drv, cuMemsetD8(ctx->arena, 0, m.arenaSize));
  }
  ctx->graphs.resize(m.graphs.size());
  for (size_t g = 0; g < m.graphs.size(); ++g)
    if (cgc_status s = buildGraph(*ctx, m.graphs[g], ctx->graphs[g]))
      return s;
  CGC_CHECK_CU(*e.drv, cuCtxSynchronize());
  return CGC_OK;
}

} // namespace

extern "C" {

cgc_status cgc_context_create(cgc_engine engine, void *caller_arena,
                              size_t arena_bytes, cgc_context *ctx) {
  if (!engine || !ctx)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  *ctx = nullptr;
  try {
    auto c = std::make_unique<cgc_context_s>();
    c->engine = engine;
    if (cgc_status s = createContext(c, caller_arena, arena_bytes))
      return s;
    *ctx = c.release();
    return CGC_OK;
  } catch (const std::bad_alloc &) {
    return fail(CGC_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
}

void cgc_context_destroy(cgc_context ctx) { delete ctx; }

} // extern "C"
