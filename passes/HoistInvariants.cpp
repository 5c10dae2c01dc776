//===- HoistInvariants.cpp - Parameter math to the start of the graph ------===//
//
// Algorithm: a node of the top-level graph is invariant when it is no
// `if` or `while`, draws no random numbers (a fusion's dropout reads an
// rng state its update changes), is no sync point, and every operand (a
// source has none) is
// a graph input that is persistent and that no output updates (a
// parameter or buffer of an inference graph), or an invariant node's
// result. The invariant nodes whose results are small (at most 64 KiB
// each: per-channel vectors, not converted weights, which would then stay
// live from the start) move to the start of the graph in their order; the others keep theirs (a stable topological sort). The kernels
// of values computed from parameters alone (a batch norm's scale and
// shift for the convolution after it) then sit next to each other, where
// kernel batching (codegen/KernelBatching.cpp) runs up to 16 of them as
// one kernel, instead of one small kernel before each convolution.
// Requires: a verified graph, after the fusion passes. Guarantees: the
// same nodes and values, in a valid order.
//
//===----------------------------------------------------------------------===//
#include "passes/FusionBuilder.h"
#include "passes/MemoryPlan.h"
#include "passes/Pass.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

using namespace cgc;

namespace {

/// Invariant nodes deeper than this keep their order among themselves.
constexpr unsigned kMaxLevel = 64;
/// The largest result a hoisted node may have: a per-channel vector, not a
/// copy of a weight (which would stay live from the graph's start).
constexpr uint64_t kMaxHoistedBytes = 64 * 1024;

bool mayHoist(const Node &n) {
  OpFamily family = n.info().family;
  return family != ControlFlow && family != Random && family != SyncPoint &&
         family != Collective;
}

class HoistInvariantsPass : public Pass {
public:
  llvm::StringRef name() const override { return "hoist-invariants"; }
  llvm::StringRef summary() const override {
    return "move what parameters alone compute to the start of the graph";
  }
  bool run(Graph &graph, PassContext &) override {
    llvm::DenseSet<const Value *> invariant = readOnlyState(graph);
    llvm::DenseMap<Node *, unsigned> position, levels;
    unsigned count = unsigned(graph.nodes().size());
    for (unsigned i = 0; i < count; ++i) {
      Node *n = graph.nodes()[i].get();
      bool computable = mayHoist(*n) && llvm::all_of(n->getOperands(), [&](Value *v) {
                          return invariant.count(v) != 0;
                        });
      if (computable)
        for (unsigned r = 0; r < n->numResults(); ++r)
          invariant.insert(n->result(r));
      // A large result would stay live from the start: it keeps its place.
      bool hoisted = computable;
      for (unsigned r = 0; r < n->numResults(); ++r)
        hoisted &= valueBytes(n->result(r)) <= kMaxHoistedBytes;
      // By depth among the invariant nodes, so that no invariant kernel
      // sits between two others it does not read (each would close a
      // batch): a batch norm's rsqrt(var + eps) * weight for every layer,
      // then every layer's scale and shift.
      unsigned depth = 0;
      for (Value *v : n->getOperands())
        if (Node *d = v->getDef())
          depth = std::max(depth, levels.lookup(d) + 1);
      levels[n] = depth = std::min(depth, kMaxLevel);
      position[n] = hoisted ? depth * count + i : (kMaxLevel + 1) * count + i;
      // (count is the top-level node count: keys fit 32 bits up to 66M nodes.)
    }
    sortStably(graph, position);
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> cgc::createHoistInvariantsPass() {
  return std::make_unique<HoistInvariantsPass>();
}
