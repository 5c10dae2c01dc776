//===- FusionBuilder.h - Replace a group of nodes by one fusion node -*- C++ -*-===//
//
// What fuse-elementwise and fuse-rows share: a group of nodes becomes one
// node of a fused kind whose body holds copies of the members (same names,
// attributes and locations), splat sources read by a member cloned in;
// results are the members' values read outside the group or returned, and
// take over their names. sortStably() then rebuilds the graph's order.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_PASSES_FUSIONBUILDER_H
#define CGC_PASSES_FUSIONBUILDER_H

#include "ir/Builder.h"
#include "ir/Graph.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace cgc {

using NodeSet = llvm::SetVector<Node *>;

/// Ops per fusion: one generated kernel holds at most this many (the bound
/// on its size, and so on NVRTC's time for it).
constexpr size_t kMaxFusedOps = 64;

/// An elementwise op or dropout with static operand and result types: what
/// a fusion or a row_fusion's prologue and epilogue may hold.
bool isFusiblePerElement(const Node &n);
/// Whether \p n is a dropout whose rng state is computed by a node of
/// \p members: a kernel reads the state as two scalars from memory, so the
/// two never share a fused node.
bool readsRngFrom(const Node &n, const NodeSet &members);

/// True for a constant or fill that carries one value for every element.
bool isSplatSource(const Node &n);
/// True for an iota of a static shape: a pointwise kernel computes it from
/// the element's coordinates, so each fusion reading it holds its own copy.
bool isIotaSource(const Node &n);
/// Whether the value of a group member is read outside the group or
/// returned: it becomes a result of the fusion.
bool isExternal(const Graph &graph, const NodeSet &members, const Value *v);
/// Replaces \p members (in node order) by one \p kind node named \p name,
/// created at the end of \p graph; the members and the splat sources (and,
/// in a `fusion`, iotas) left with no reader join \p dead (each source
/// once: \p erasedSources).
/// Null after an error.
Node *buildFusionNode(Graph &graph, const NodeSet &members, OpKind kind,
                      const std::string &name, GraphBuilder &builder,
                      std::vector<Node *> &dead,
                      llvm::DenseSet<Node *> &erasedSources);
/// Replaces \p chain (nodes in node order, each read only by later members
/// but the last) by one \p kind node at the place of its last member,
/// named after \p origin, whose body holds copies of the members; each
/// outside value they read becomes one body input. The members join \p dead and the result
/// takes the last member's name. What fuse-epilogue and
/// fuse-convolution-epilogue build. The first \p shared members are copied
/// but stay (other chains copy them too; the caller erases them once
/// unread). False after an error.
bool buildChainFusion(Graph &graph, llvm::ArrayRef<Node *> chain, OpKind kind,
                      const Node &origin, GraphBuilder &builder,
                      std::vector<Node *> &dead, size_t shared = 0);
/// Reorders \p graph topologically, taking among the ready nodes the one of
/// the smallest key: its \p position, or its index for a node without one.
void sortStably(Graph &graph, const llvm::DenseMap<Node *, unsigned> &position);

} // namespace cgc

#endif
