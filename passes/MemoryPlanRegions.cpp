//===- MemoryPlanRegions.cpp - Buffers for `if` and `while` ---------------===//
//
// The memory planner's part for regions (MemoryPlan.cpp opens with the
// whole algorithm): an `if`'s results, one buffer both arms write; a
// `while`'s carried values, one slot per value for the whole loop, and
// the copies that fill and swap them.
//
//===----------------------------------------------------------------------===//
#include "passes/MemoryPlanner.h"

using namespace cgc;
using namespace cgc::planner;

/// The buffer of a region node's result: its claimed slot or a new one.
unsigned Planner::resultBuffer(Value *r) {
  auto claim = claimed.find(r);
  if (claim != claimed.end()) {
    join(r, claim->second, lastUse(r));
    return claim->second;
  }
  return newBuffer(r, valueBytes(r), Storage::Region::Arena,
                   live.definition(r), lastUse(r), false);
}

/// Lets \p region compute its output \p v straight into \p buffer, or
/// copies it there at the region's end.
bool Planner::claimInto(const Graph &region, Value *v, unsigned buffer) {
  auto own = plan.bufferOf.find(v);
  if (own != plan.bufferOf.end() && own->second == buffer)
    return true; // Passed through in its own buffer (an update left as is).
  Node *def = v->getDef();
  if (def && def->getParent() == &region && !claimed.count(v) &&
      !isConstantData(*def)) {
    claimed[v] = buffer;
    return true;
  }
  addCopy(plan.exitCopies[&region], v, buffer);
  return false;
}

void Planner::planIf(Node &n) {
  std::vector<unsigned> results;
  for (unsigned k = 0; k < n.numResults(); ++k)
    results.push_back(resultBuffer(n.result(k)));
  for (unsigned r = 0; r < n.numRegions(); ++r) {
    Graph &arm = n.region(r);
    for (unsigned i = 0; i < arm.inputs().size(); ++i) {
      Value *in = arm.inputs()[i].value;
      join(in, bufferOf(n.operand(i + 1)), lastUse(in));
    }
    for (unsigned k = 0; k < arm.outputs.size(); ++k)
      claimInto(arm, arm.outputs[k].value, results[k]);
    planGraph(arm);
  }
}

/// The slot of carried value \p k of loop \p n for the whole loop.
unsigned Planner::carriedSlot(Node &n, unsigned k) {
  Span s = live.span(&n);
  Value *op = n.operand(k), *result = n.result(k);
  const Graph &body = n.region(1);
  int end = std::max(s.end, lastUse(result));
  auto claim = claimed.find(result);
  if (claim != claimed.end()) {
    addCopy(plan.entryCopies[&n], op, claim->second);
    return claim->second;
  }
  unsigned own = bufferOf(op);
  const Buffer &b = plan.buffers[own];
  bool passedThrough = body.outputs[k].value == body.inputs()[k].value;
  bool dies = !b.fixed && b.storage.region == Storage::Region::Arena &&
              b.end <= s.end && llvm::count(n.getOperands(), op) == 1 &&
              !(op->getDef() && isConstantData(*op->getDef()));
  if (passedThrough || dies)
    return own;
  unsigned slot = newBuffer(nullptr, valueBytes(op), Storage::Region::Arena,
                            s.start, end, false);
  addCopy(plan.entryCopies[&n], op, slot);
  return slot;
}

/// Whether the body may compute \p v, its next value of slot \p k, straight
/// into the slot: nothing reads the old value after \p v is computed.
bool Planner::bodyMayWriteSlot(const Graph &body, unsigned k,
                               Value *v) const {
  return mayWriteOver(body, body.inputs()[k].value, k, v);
}

/// Whether \p region may compute its output \p k, \p v, in the buffer of
/// its input \p old: v is its own value, no other output is old, and
/// nothing reads old after v is computed (v's node itself only when it
/// reads old element by element).
bool Planner::mayWriteOver(const Graph &region, const Value *old, unsigned k,
                           Value *v) const {
  const Node *def = v->getDef();
  if (!def || def->getParent() != &region || claimed.count(v) ||
      isConstantData(*def) || def->getOp() == OpKind::Reshape)
    return false;
  for (unsigned j = 0; j < region.outputs.size(); ++j)
    if (j != k && region.outputs[j].value == old)
      return false; // The old value is copied into slot j at the end.
  int at = live.span(def).start;
  for (const Use &u : old->uses()) {
    int user = live.span(u.user).end;
    if (user > at || (user == at && !mayWriteOverOperand(*def, old, v)))
      return false;
  }
  return true;
}

void Planner::planWhile(Node &n) {
  Span s = live.span(&n);
  Graph &cond = n.region(0), &body = n.region(1);
  std::vector<unsigned> slots;
  for (unsigned k = 0; k < n.numOperands(); ++k) {
    unsigned slot = carriedSlot(n, k);
    slots.push_back(slot);
    int end = std::max(s.end, lastUse(n.result(k)));
    join(n.result(k), slot, end);
    join(cond.inputs()[k].value, slot, end);
    join(body.inputs()[k].value, slot, end);
  }
  // The caller reads the count after the run (cgc_context_loop_trips):
  // the counter is never reused.
  plan.tripCounter[&n] =
      newBuffer(nullptr, 4, Storage::Region::Arena, s.start, live.last(), true);
  // Next values: straight into their slots, by a copy, or staged when the
  // next value is another slot's current one (a swap must read first).
  std::vector<Copy> &exit = plan.exitCopies[&body];
  std::vector<Copy> direct;
  for (unsigned k = 0; k < body.outputs.size(); ++k) {
    Value *v = body.outputs[k].value;
    if (v == body.inputs()[k].value)
      continue;
    if (bodyMayWriteSlot(body, k, v)) {
      claimed[v] = slots[k];
      continue;
    }
    if (!plan.hasStorage(v) || !llvm::is_contained(slots, bufferOf(v))) {
      addCopy(direct, v, slots[k]);
      continue;
    }
    unsigned staging = newBuffer(nullptr, valueBytes(v), Storage::Region::Arena,
                                 s.end, s.end, false);
    addCopy(exit, v, staging);
    direct.push_back({nullptr, staging, slots[k], ""});
  }
  exit.insert(exit.end(), direct.begin(), direct.end());
  planGraph(cond);
  planGraph(body);
}
