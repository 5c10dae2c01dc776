//===- Nodes.cpp - Dispatch over node kinds -----------------------------===//
#include "Nodes.h"

namespace cgc {
namespace rt {

using Kind = format::NodeDesc::Kind;
static_assert(format::NodeDesc::NumKinds == 7,
              "a new node kind needs its handlers here and a file of its own");

cgc_status addNode(const NodeSite &site, const Deps &deps) {
  switch (site.desc().kind) {
  case Kind::Kernel: return addKernelNode(site, deps);
  case Kind::Memset: return addMemsetNode(site, deps);
  case Kind::Memcpy: return addMemcpyNode(site, deps);
  case Kind::Conditional: return addConditionalNode(site, deps);
  case Kind::Product: return addProductNode(site, deps);
  case Kind::Convolution: return addConvolutionNode(site, deps);
  case Kind::Collective: return addCollectiveNode(site, deps);
  }
  return fail(CGC_ERROR_INVALID_ARTIFACT, "unknown node kind");
}

cgc_status refreshNode(const NodeSite &site) {
  switch (site.desc().kind) {
  case Kind::Kernel: return refreshKernelNode(site);
  case Kind::Memset: return refreshMemsetNode(site);
  case Kind::Memcpy: return refreshMemcpyNode(site);
  case Kind::Conditional: return refreshConditionalNode(site);
  case Kind::Product: return refreshProductNode(site);
  case Kind::Convolution: return refreshConvolutionNode(site);
  case Kind::Collective: return refreshCollectiveNode(site);
  }
  return fail(CGC_ERROR_INVALID_ARTIFACT, "unknown node kind");
}

cgc_status runNodeEager(const NodeSite &site, CUstream stream) {
  switch (site.desc().kind) {
  case Kind::Kernel: return runKernelNodeEager(site, stream);
  case Kind::Memset: return runMemsetNodeEager(site, stream);
  case Kind::Memcpy: return runMemcpyNodeEager(site, stream);
  case Kind::Conditional: return runConditionalNodeEager(site, stream);
  case Kind::Product: return runProductNodeEager(site, stream);
  case Kind::Convolution: return runConvolutionNodeEager(site, stream);
  case Kind::Collective: return runCollectiveNodeEager(site, stream);
  }
  return fail(CGC_ERROR_INVALID_ARTIFACT, "unknown node kind");
}

bool nodeUsesBinding(const NodeSite &site, const std::string &name) {
  switch (site.desc().kind) {
  case Kind::Kernel: return kernelNodeUsesBinding(site, name);
  case Kind::Memset: return memsetNodeUsesBinding(site, name);
  case Kind::Memcpy: return memcpyNodeUsesBinding(site, name);
  case Kind::Conditional: return conditionalNodeUsesBinding(site, name);
  case Kind::Product: return productNodeUsesBinding(site, name);
  case Kind::Convolution: return convolutionNodeUsesBinding(site, name);
  case Kind::Collective: return collectiveNodeUsesBinding(site, name);
  }
  return false;
}

} // namespace rt
} // namespace cgc
