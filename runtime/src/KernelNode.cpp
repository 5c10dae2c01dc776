//===- KernelNode.cpp - Kernel nodes ------------------------------------===//
//
// A kernel node launches one manifest kernel with its arguments: pointers
// into the arena or the persistent region (or a caller's bound buffer),
// integers (optionally the run-time value of a dim), and the conditional
// handles of its tree (setter kernels).
//
//===----------------------------------------------------------------------===//
#include "Nodes.h"

#include <cstring>

namespace cgc {
namespace rt {

using format::KernelDesc;
using format::ParamDesc;

static const KernelDesc &kernelOf(const NodeSite &site) {
  return site.ctx.engine->artifact.manifest.kernels[site.desc().kernel];
}

/// The 8-byte argument slot of parameter \p p.
static uint64_t argument(const NodeSite &site, const ParamDesc &p) {
  const auto &dimDescs = site.ctx.engine->artifact.manifest.dims;
  uint64_t slot = 0;
  int64_t iv = p.intValue;
  if (!p.dim.empty())
    for (size_t d = 0; d < dimDescs.size(); ++d)
      if (dimDescs[d].name == p.dim)
        iv = site.tree.dims[d];
  switch (p.kind) {
  case ParamDesc::Kind::Ptr: {
    CUdeviceptr a = site.ctx.address(p.region, p.offset, p.binding);
    std::memcpy(&slot, &a, sizeof a);
    return slot;
  }
  case ParamDesc::Kind::I32: {
    int32_t v = static_cast<int32_t>(iv);
    std::memcpy(&slot, &v, sizeof v);
    return slot;
  }
  case ParamDesc::Kind::I64:
    std::memcpy(&slot, &iv, sizeof iv);
    return slot;
  case ParamDesc::Kind::U64:
    return p.uintValue;
  case ParamDesc::Kind::F32:
    std::memcpy(&slot, &p.floatValue, sizeof(float));
    return slot;
  case ParamDesc::Kind::Handle:
    return site.tree.handles[size_t(p.intValue)];
  }
  return 0;
}

static void fillArgs(const NodeSite &site) {
  const KernelDesc &kd = kernelOf(site);
  NodeState &ns = site.state();
  for (size_t i = 0; i < kd.params.size(); ++i)
    ns.storage[i] = argument(site, kd.params[i]);
}

static CUDA_KERNEL_NODE_PARAMS nodeParams(const NodeSite &site) {
  const KernelDesc &kd = kernelOf(site);
  NodeState &ns = site.state();
  CUDA_KERNEL_NODE_PARAMS p;
  std::memset(&p, 0, sizeof p);
  p.kern = site.ctx.engine->kernels[site.desc().kernel];
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

cgc_status addKernelNode(const NodeSite &site, const Deps &deps) {
  const KernelDesc &kd = kernelOf(site);
  NodeState &ns = site.state();
  ns.storage.assign(kd.params.size(), 0);
  for (uint64_t &slot : ns.storage)
    ns.args.push_back(&slot);
  for (const ParamDesc &p : kd.params) {
    ns.usesDims |= !p.dim.empty();
    ns.setsCondition |= p.kind == ParamDesc::Kind::Handle;
  }
  site.tree.usesDims |= ns.usesDims;
  fillArgs(site);
  CUDA_KERNEL_NODE_PARAMS kp = nodeParams(site);
  CGC_CHECK_CU(site.drv(), cuGraphAddKernelNode(&ns.node, site.graph.graph,
                                                deps.data(), deps.size(), &kp));
  return CGC_OK;
}

cgc_status refreshKernelNode(const NodeSite &site) {
  fillArgs(site);
  CUDA_KERNEL_NODE_PARAMS kp = nodeParams(site);
  CGC_CHECK_CU(site.drv(), cuGraphExecKernelNodeSetParams(
                               site.tree.exec, site.state().node, &kp));
  ++site.ctx.counters.node_updates;
  return CGC_OK;
}

cgc_status runKernelNodeEager(const NodeSite &site, CUstream stream) {
  NodeState &ns = site.state();
  if (ns.setsCondition)
    return CGC_OK; // The conditional node reads its predicate itself.
  const KernelDesc &kd = kernelOf(site);
  CGC_CHECK_CU(site.drv(),
               cuLaunchKernel(site.ctx.engine->functions[site.desc().kernel],
                              kd.grid[0], kd.grid[1], kd.grid[2], kd.block[0],
                              kd.block[1], kd.block[2], kd.sharedMem, stream,
                              ns.args.data(), nullptr));
  return CGC_OK;
}

bool kernelNodeUsesBinding(const NodeSite &site, const std::string &name) {
  for (const ParamDesc &p : kernelOf(site).params)
    if (p.binding == name)
      return true;
  return false;
}

} // namespace rt
} // namespace cgc
