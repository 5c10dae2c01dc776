//===- Nodes.h - What the runtime does with each node kind ------*- C++ -*-===//
//
// Each node kind of the artifact is handled in one file (KernelNode.cpp,
// MemsetNode.cpp, MemcpyNode.cpp, ConditionalNode.cpp, ProductNode.cpp,
// ConvolutionNode.cpp, CollectiveNode.cpp; the last three capture a
// library call, CapturedCall.cpp),
// with four operations:
//   add          create the node in its graph after its dependencies (a
//                conditional node also builds its bodies);
//   refresh      push the parameters that depend on caller bindings or dims
//                into the instantiated graph;
//   runEager     do the node's work on a stream without a graph;
//   usesBinding  whether the node touches the bound input or output `name`.
// Nodes.cpp dispatches on the kind with exhaustive switches, so a kind
// without handlers does not compile.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_RUNTIME_NODES_H
#define CGC_RUNTIME_NODES_H

#include "Internal.h"

namespace cgc {
namespace rt {

/// Where a node lives.
struct NodeSite {
  cgc_context_s &ctx;
  GraphState &graph;
  TreeState &tree;
  uint32_t index;

  const format::NodeDesc &desc() const { return graph.desc->nodes[index]; }
  NodeState &state() const { return graph.nodes[index]; }
  const Driver &drv() const { return *ctx.engine->drv; }
};
using Deps = std::vector<CUgraphNode>;

cgc_status addKernelNode(const NodeSite &site, const Deps &deps);
cgc_status refreshKernelNode(const NodeSite &site);
cgc_status runKernelNodeEager(const NodeSite &site, CUstream stream);
bool kernelNodeUsesBinding(const NodeSite &site, const std::string &name);

cgc_status addMemsetNode(const NodeSite &site, const Deps &deps);
cgc_status refreshMemsetNode(const NodeSite &site);
cgc_status runMemsetNodeEager(const NodeSite &site, CUstream stream);
bool memsetNodeUsesBinding(const NodeSite &site, const std::string &name);

cgc_status addMemcpyNode(const NodeSite &site, const Deps &deps);
cgc_status refreshMemcpyNode(const NodeSite &site);
cgc_status runMemcpyNodeEager(const NodeSite &site, CUstream stream);
bool memcpyNodeUsesBinding(const NodeSite &site, const std::string &name);

/// Creates the node's handle in its graph; buildGraph calls it for every
/// conditional node before adding any node (setters take the handle).
cgc_status createConditionalHandle(const NodeSite &site);
cgc_status addConditionalNode(const NodeSite &site, const Deps &deps);
cgc_status refreshConditionalNode(const NodeSite &site);
cgc_status runConditionalNodeEager(const NodeSite &site, CUstream stream);
bool conditionalNodeUsesBinding(const NodeSite &site, const std::string &name);

/// A node's one library call, issued on \p stream at the context's current
/// addresses (a product's cublasLtMatmul, a convolution's
/// cudnnBackendExecute).
using LibraryCall = cgc_status (*)(const NodeSite &site, CUstream stream);
/// Captures a node's library call into a new graph (the caller destroys it).
using Capture = cgc_status (*)(const NodeSite &site, CUgraph &graph);
/// Names the node's product or convolution in messages (productLabel).
using CallLabel = std::string (*)(const cgc_engine_s &e, size_t index);
// Library calls captured into child graph nodes (CapturedCall.cpp).
/// The context's stream for captures, made on first use.
cgc_status captureStreamOf(cgc_context_s &ctx, CUstream &stream);
/// Captures \p call on the capture stream, in thread-local mode, into a
/// new graph (the caller destroys it).
cgc_status captureCall(const NodeSite &site, LibraryCall call, CUgraph &graph);
/// Adds the node as a child graph node holding what \p capture captures.
cgc_status addCapturedNode(const NodeSite &site, const Deps &deps,
                           Capture capture);
/// Captures again at the context's current addresses and updates the child
/// graph in the instantiated graph; \p label names the node's product or
/// convolution \p index if that fails.
cgc_status refreshCapturedNode(const NodeSite &site, Capture capture,
                               CallLabel label, size_t index);

/// Creates the context's matmul descriptor of every product (before any
/// graph is built).
cgc_status createProductDescs(cgc_context_s &ctx);
cgc_status addProductNode(const NodeSite &site, const Deps &deps);
cgc_status refreshProductNode(const NodeSite &site);
cgc_status runProductNodeEager(const NodeSite &site, CUstream stream);
bool productNodeUsesBinding(const NodeSite &site, const std::string &name);

cgc_status addConvolutionNode(const NodeSite &site, const Deps &deps);
cgc_status refreshConvolutionNode(const NodeSite &site);
cgc_status runConvolutionNodeEager(const NodeSite &site, CUstream stream);
bool convolutionNodeUsesBinding(const NodeSite &site, const std::string &name);

cgc_status addCollectiveNode(const NodeSite &site, const Deps &deps);
cgc_status refreshCollectiveNode(const NodeSite &site);
cgc_status runCollectiveNodeEager(const NodeSite &site, CUstream stream);
bool collectiveNodeUsesBinding(const NodeSite &site, const std::string &name);

// The dispatchers (Nodes.cpp).
cgc_status addNode(const NodeSite &site, const Deps &deps);
cgc_status refreshNode(const NodeSite &site);
cgc_status runNodeEager(const NodeSite &site, CUstream stream);
bool nodeUsesBinding(const NodeSite &site, const std::string &name);

/// Builds graph state \p state of tree \p tree into \p graph: its nodes in
/// topological order with their edges (Context.cpp).
cgc_status buildGraph(cgc_context_s &ctx, uint32_t tree, uint32_t state,
                      CUgraph graph);
/// Runs graph state \p state node by node on \p stream (Run.cpp).
cgc_status runGraphEager(cgc_context_s &ctx, uint32_t tree, uint32_t state,
                         CUstream stream);

} // namespace rt
} // namespace cgc

#endif
