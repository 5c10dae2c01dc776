//===- CollectiveNode.cpp - Collective nodes (NCCL) ----------------------===//
//
// A collective node runs one manifest bucket: ncclGroupStart, one in-place
// ncclAllReduce per buffer (ncclSum, or ncclAvg for a mean) on the engine's
// communicator, ncclGroupEnd. Like a product, the node is that call
// captured into a child graph node (CapturedCall.cpp); NCCL's capture
// brings its own nodes (its kernel and, with graph mixing on, an event
// wait and record) and a user object that keeps its persistent plan alive,
// which the child graph's clone keeps too. The validator keeps collectives
// out of conditional bodies. A buffer that is a graph input or output
// (an all_reduce written by hand) follows its binding: the group is
// captured again at the new address, as a product is. Eager runs issue the
// same group on the caller's stream.
//
//===----------------------------------------------------------------------===//
#include "Nodes.h"
#include "Ranks.h"

namespace cgc {
namespace rt {

using format::CollectiveDesc;

static const CollectiveDesc &collectiveOf(const NodeSite &site) {
  return site.ctx.engine->artifact.manifest.collectives[site.desc().collective];
}

static ncclDataType_t ncclType(const std::string &dtype) {
  return dtype == "f16" ? ncclFloat16 : dtype == "bf16" ? ncclBfloat16 : ncclFloat32;
}

static ncclRedOp_t ncclReduction(CollectiveDesc::Reduction r) {
  switch (r) {
  case CollectiveDesc::Reduction::Sum: return ncclSum;
  case CollectiveDesc::Reduction::Mean: return ncclAvg;
  }
  return ncclSum; // Not a Reduction value: the validator refused it.
}

static std::string collectiveLabel(const cgc_engine_s &e, size_t index) {
  return "collective " + std::to_string(index) + " (node '" +
         e.artifact.manifest.collectives[index].source.node + "')";
}

/// The bucket's group on \p stream (under the ranks' lock: never on an
/// aborted communicator).
static cgc_status execute(const NodeSite &site, CUstream stream) {
  cgc_engine_s &e = *site.ctx.engine;
  return issueJoined(e, [&]() -> cgc_status {
    const Ranks &r = *e.ranks;
    const CollectiveDesc &c = collectiveOf(site);
    ncclResult_t res = r.nccl->ncclGroupStart();
    if (res == ncclSuccess) {
      for (const CollectiveDesc::Buffer &b : c.buffers) {
        void *data = reinterpret_cast<void *>(
            site.ctx.address(b.data.region, b.data.offset, b.data.binding));
        res = r.nccl->ncclAllReduce(data, data, size_t(b.count), ncclType(b.dtype),
                                    ncclReduction(c.reduction), r.comm, stream);
        if (res != ncclSuccess)
          break;
      }
      ncclResult_t end = r.nccl->ncclGroupEnd();
      res = res == ncclSuccess ? end : res;
    }
    if (res != ncclSuccess)
      return fail(CGC_ERROR_COLLECTIVE,
                  collectiveLabel(e, site.desc().collective) + ": " +
                      r.nccl->errorText("ncclAllReduce", res, r.comm));
    return CGC_OK;
  });
}

static cgc_status captureCollective(const NodeSite &site, CUgraph &graph) {
  return captureCall(site, execute, graph);
}

cgc_status addCollectiveNode(const NodeSite &site, const Deps &deps) {
  return addCapturedNode(site, deps, captureCollective);
}

cgc_status refreshCollectiveNode(const NodeSite &site) {
  return refreshCapturedNode(site, captureCollective, collectiveLabel,
                             site.desc().collective);
}

cgc_status runCollectiveNodeEager(const NodeSite &site, CUstream stream) {
  return execute(site, stream);
}

bool collectiveNodeUsesBinding(const NodeSite &site, const std::string &name) {
  for (const CollectiveDesc::Buffer &b : collectiveOf(site).buffers)
    if (b.data.binding == name)
      return true;
  return false;
}

} // namespace rt
} // namespace cgc
