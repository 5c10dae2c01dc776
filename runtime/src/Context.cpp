//===- Context.cpp - Execution contexts: arena, graphs, replay -----------===//
//
// A context owns an arena and one instantiated CUDA graph per top-level
// manifest graph, built node by node with the manifest's edges (no empty
// nodes, no stream capture except of the one library call of a product or
// convolution node; each kind is added by its file, see Nodes.h),
// conditional bodies built into the body graphs their nodes own, then
// instantiated and uploaded once. Replay, eager launch and rebinding are
// in Run.cpp.
//
//===----------------------------------------------------------------------===//
#include "Nodes.h"
#include "Ranks.h"

#include <algorithm>
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
  --engine->contexts;
  const Driver &drv = *engine->drv;
  engine->makeCurrent();
  for (size_t t = 0; t < trees.size(); ++t) {
    if (trees[t].exec)
      drv.cuGraphExecDestroy(trees[t].exec);
    if (graphs[t].graph) // Bodies belong to their conditional nodes.
      drv.cuGraphDestroy(graphs[t].graph);
  }
  for (cublasLtMatmulDesc_t desc : productDescs)
    if (desc)
      engine->lt->cublasLtMatmulDescDestroy(desc);
  if (captureStream)
    drv.cuStreamDestroy(captureStream);
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
cgc_status addProgrammaticEdges(cgc_context_s &ctx, const GraphState &gs) {
  const GraphDesc &gd = *gs.desc;
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

/// Builds top-level graph \p index and every body below it, then
/// instantiates and uploads it.
cgc_status buildTree(cgc_context_s &ctx, uint32_t index) {
  const Driver &drv = *ctx.engine->drv;
  TreeState &tree = ctx.trees[index];
  tree.handles.assign(ctx.graphs[index].desc->handles, 0);
  tree.dims = ctx.dims;
  CUgraph graph = nullptr;
  CGC_CHECK_CU(drv, cuGraphCreate(&graph, 0));
  ++ctx.counters.graphs_created;
  ctx.graphs[index].graph = graph;
  if (cgc_status s = buildGraph(ctx, index, index, graph))
    return s;
  CGC_CHECK_CU(drv, cuGraphInstantiateWithFlags(&tree.exec, graph, 0));
  ++ctx.counters.graphs_instantiated;
  CGC_CHECK_CU(drv, cuGraphUpload(tree.exec, nullptr));
  return CGC_OK;
}

/// A padded artifact: the address of each `dim_size` input. After the
/// arena is set.
cgc_status setUpPadding(cgc_context_s &ctx) {
  const auto &m = ctx.engine->artifact.manifest;
  ctx.writtenDims.assign(m.dims.size(), -1);
  if (std::none_of(m.graphs.begin(), m.graphs.end(),
                   [](const GraphDesc &g) { return g.padded; }))
    return CGC_OK;
  for (const auto &t : m.inputs)
    for (size_t d = 0; d < m.dims.size(); ++d)
      if (t.kind == "dim_size" && t.name == "dim." + m.dims[d].name) {
        CUstreamBatchMemOpParams op{};
        op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
        op.writeValue.address = ctx.address(t.region, t.offset, "");
        ctx.dimWrites.push_back(op);
        ctx.dimWriteDims.push_back(d);
      }
  return CGC_OK;
}

/// Gives every manifest graph and body its state and its tree.
void assignTrees(cgc_context_s &ctx) {
  const auto &m = ctx.engine->artifact.manifest;
  ctx.graphs.resize(m.graphs.size() + m.bodies.size());
  ctx.trees.resize(m.graphs.size());
  for (uint32_t g = 0; g < m.graphs.size(); ++g)
    ctx.graphs[g].desc = &m.graphs[g];
  for (uint32_t b = 0; b < m.bodies.size(); ++b)
    ctx.graphs[ctx.bodyState(b)].desc = &m.bodies[b];
  // The validator made the bodies trees under the top-level graphs.
  for (uint32_t g = 0; g < m.graphs.size(); ++g) {
    std::vector<int64_t> &bound = ctx.trees[g].bound;
    bound.assign(m.dims.size(), -1);
    for (const auto &[name, value] : m.graphs[g].dimValues)
      for (size_t d = 0; d < m.dims.size(); ++d)
        if (m.dims[d].name == name)
          bound[d] = value;
    std::vector<uint32_t> pending{g};
    while (!pending.empty()) {
      uint32_t s = pending.back();
      pending.pop_back();
      ctx.graphs[s].tree = g;
      ctx.trees[g].members.push_back(s);
      for (const NodeDesc &nd : ctx.graphs[s].desc->nodes)
        for (uint32_t b : nd.bodies)
          pending.push_back(ctx.bodyState(b));
    }
  }
}

} // namespace

namespace cgc {
namespace rt {

cgc_status buildGraph(cgc_context_s &ctx, uint32_t tree, uint32_t state,
                      CUgraph graph) {
  GraphState &gs = ctx.graphs[state];
  const GraphDesc &gd = *gs.desc;
  gs.graph = graph;
  std::vector<std::vector<uint32_t>> inEdges;
  gs.order = topoOrder(gd, inEdges);
  gs.nodes.resize(gd.nodes.size());
  for (uint32_t v = 0; v < gd.nodes.size(); ++v)
    if (gd.nodes[v].kind == NodeDesc::Kind::Conditional)
      if (cgc_status s = createConditionalHandle({ctx, gs, ctx.trees[tree], v}))
        return s;
  Deps deps;
  for (uint32_t v : gs.order) {
    deps.clear();
    for (uint32_t k : inEdges[v])
      if (!usesProgrammaticLaunch(ctx, gd, k))
        deps.push_back(gs.nodes[gd.edges[k].first].node);
    if (cgc_status s = addNode({ctx, gs, ctx.trees[tree], v}, deps))
      return s;
  }
  return addProgrammaticEdges(ctx, gs);
}

} // namespace rt
} // namespace cgc

namespace {

cgc_status createContext(std::unique_ptr<cgc_context_s> &ctx, void *arena,
                         size_t arenaBytes) {
  cgc_engine_s &e = *ctx->engine;
  const auto &m = e.artifact.manifest;
  if (cgc_status s = requireRanks(e))
    return s;
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
      v.dimOfAxis.assign(t.shape.size(), -1);
      for (size_t a = 0; a < t.shapeDims.size(); ++a)
        for (size_t d = 0; d < m.dims.size(); ++d)
          if (t.shapeDims[a] == m.dims[d].name)
            v.dimOfAxis[a] = int32_t(d);
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
  if (cgc_status s = resetContextState(*ctx, nullptr))
    return s;
  if (cgc_status s = setUpPadding(*ctx))
    return s;
  if (cgc_status s = createProductDescs(*ctx))
    return s;
  assignTrees(*ctx);
  for (uint32_t g = 0; g < m.graphs.size(); ++g)
    if (cgc_status s = buildTree(*ctx, g))
      return s;
  // The arena's memset and the uploads ran on the legacy stream. Not
  // cuCtxSynchronize: it fails while another thread captures a library
  // call (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), and the capture streams
  // are non-blocking, so the legacy stream never waits for them.
  CGC_CHECK_CU(*e.drv, cuStreamSynchronize(nullptr));
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
    ++engine->contexts; // Until ~cgc_context_s, also on failure.
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
