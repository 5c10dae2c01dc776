//===- MemoryPlanner.h - The memory planner, for its two files -*- C++ -*-===//
//
// Private to passes/: MemoryPlan.cpp plans graphs, values and state,
// MemoryPlanRegions.cpp the results and carried values of `if` and
// `while` (the algorithm is in MemoryPlan.cpp's opening comment).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_PASSES_MEMORYPLANNER_H
#define CGC_PASSES_MEMORYPLANNER_H

#include "ir/PointwiseFusion.h"
#include "passes/Liveness.h"
#include "passes/MemoryPlan.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include <algorithm>

namespace cgc::planner {

inline uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/// Pointwise nodes read operand element i only to write result element i
/// (a fusion with index moves reads elsewhere: ir/PointwiseFusion.h).
inline bool isPointwise(const Node &n) { return computesPerElement(n); }

/// Whether \p n may compute its result \p r in the buffer of its operand
/// \p v: it reads an element of v only to write r's element at the same
/// place (pointwise over a same-shaped operand; index_copy's and
/// index_add's x, which they then leave as it is but for the copied or
/// added slices; all_reduce's operand k,
/// its result k, unless the operand is reduced twice; a fusion with index
/// moves over an operand it reads only at the element it writes).
inline bool mayWriteOverOperand(const Node &n, const Value *v, const Value *r) {
  if (isPointwise(n))
    return v->getType().dims == r->getType().dims &&
           (n.getOp() != OpKind::Dropout || n.operand(0) == v);
  if (n.getOp() == OpKind::Fusion) // With index moves: ir/PointwiseFusion.h.
    return v->getType().dims == r->getType().dims && readsOnlyInPlace(n, v);
  if (n.getOp() == OpKind::IndexCopy || n.getOp() == OpKind::IndexAdd)
    return n.operand(0) == v && n.operand(1) != v && n.operand(2) != v;
  if (n.info().has(Collective)) // NCCL reduces in place: result k over operand k.
    for (unsigned k = 0; k < n.numResults(); ++k)
      if (n.result(k) == r)
        return n.operand(k) == v &&
               llvm::count(n.getOperands(), v) == 1;
  return false;
}


class Planner {
public:
  Planner(Graph &g, MemoryPlan &plan, const PlanLayout &layout,
          DiagnosticEngine &diag)
      : g(g), plan(plan), layout(layout), diag(diag), live(g) {}
  bool run();

private:
  bool isReadOnlyInput(const Value *v) const;
  void packState();
  void foldAttentionViews();
  unsigned newBuffer(Value *v, uint64_t bytes, Storage::Region region,
                     int start, int end, bool fixed) {
    Buffer b;
    b.storage.region = region;
    b.storage.bytes = bytes;
    b.size = alignUp(std::max<uint64_t>(bytes, 1), kBufferAlignment);
    b.start = start;
    b.end = end;
    b.fixed = fixed;
    plan.buffers.push_back(b);
    if (v)
      join(v, plan.buffers.size() - 1, end);
    return plan.buffers.size() - 1;
  }
  /// A fixed arena slot for the \p slot-th input or output.
  unsigned newSlot(Value *v, unsigned slot, int start, std::string binding) {
    unsigned b = newBuffer(nullptr, valueBytes(v), Storage::Region::Arena,
                           start, live.last(), /*fixed=*/true);
    Buffer &buf = plan.buffers[b];
    if (slot < layout.slotBytes.size())
      buf.size = alignUp(std::max<uint64_t>(layout.slotBytes[slot], 1),
                         kBufferAlignment);
    buf.storage.binding = std::move(binding);
    return b;
  }
  void join(Value *v, unsigned buffer, int end) {
    plan.bufferOf[v] = buffer;
    plan.buffers[buffer].values.push_back(v);
    plan.buffers[buffer].end = std::max(plan.buffers[buffer].end, end);
  }
  unsigned bufferOf(const Value *v) const { return plan.bufferOf.lookup(v); }
  /// Copies \p v into buffer \p to; resolved once \p v is planned.
  void addCopy(std::vector<Copy> &list, const Value *v, unsigned to,
               std::string output = "") {
    list.push_back({v, 0, to, std::move(output)});
  }

  bool claimOutputs();
  Value *reshapedIntoOutput(Value *v) const;
  bool updateInPlace(Value *v, Value *target) const;
  bool ifUpdatesInPlace(const Node &n, const Value *v,
                        const Value *target) const;
  bool takeOperand(Node &n, Value *r, llvm::DenseSet<unsigned> &taken);
  void planGraph(Graph &graph);
  void planResult(Node &n, Value *r, llvm::DenseSet<unsigned> &taken);
  void planScratch(Node &n);
  unsigned resultBuffer(Value *r);
  bool claimInto(const Graph &region, Value *v, unsigned buffer);
  void planIf(Node &n);
  unsigned carriedSlot(Node &n, unsigned k);
  bool bodyMayWriteSlot(const Graph &body, unsigned k, Value *v) const;
  bool mayWriteOver(const Graph &region, const Value *old, unsigned k,
                    Value *v) const;
  void planWhile(Node &n);
  void resolveCopies();
  void place();

  Graph &g;
  MemoryPlan &plan;
  const PlanLayout &layout;
  DiagnosticEngine &diag;
  bool unscheduled = false;
  Liveness live;
  llvm::DenseMap<Value *, unsigned> claimed;
  /// The operands of packed concats: the concat's result.
  llvm::DenseMap<const Value *, Value *> packedInto;
  /// Each node folded into an attention: the value whose bytes its result
  /// shares (the viewed tensor, or the attention's result).
  llvm::DenseMap<const Node *, const Value *> foldedInto;
  /// Top-level values an exit copy reads (an output or a state update
  /// computed elsewhere): live to the end, whatever reads them before.
  llvm::DenseSet<const Value *> copiedAtExit;
  int lastUse(const Value *v) const {
    return copiedAtExit.count(v) ? live.last() : live.lastUse(v);
  }
};

} // namespace cgc::planner

#endif
