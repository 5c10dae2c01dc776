//===- MemoryPlan.cpp - Buffers for every value, nesting included -----------===//
//
// 1. Persistent inputs get consecutive 256-aligned slots in the persistent
//    region; non-splat constants follow them (their bytes ship as data).
//    The operands of a concat that packsState picks (sibling weights that
//    merge-products concatenated) share one slot side by side instead,
//    which is the concat's result: no kernel copies them.
// 2. User inputs and graph outputs get fixed arena slots that live for the
//    whole program, so outputs never alias inputs. An output that reshapes
//    a value the graph computes has that value computed in its slot (the
//    reshape aliases it), not copied there at the end. An update or mutation is
//    written straight into its target's storage when no later node reads
//    the target and no output returns it; otherwise it is computed
//    elsewhere and copied at the end, after the outputs' own copies.
// 3. Walking the nodes in order (regions at their place, see Liveness.h), a
//    reshape shares its operand's buffer (a graph input's too, unless an
//    output changes it), an elementwise node may take over
//    the buffer of a same-shaped operand that dies there (index_copy that
//    of its x, a KV cache updated in place; all_reduce each operand's, so
//    backward's later nodes never wait on a collective to reuse memory),
//    and every other result gets a temporary buffer.
//    - `if`: region inputs share the operands' buffers; each result gets a
//      buffer that both arms write, directly where an arm computes it,
//      else by a copy at the arm's end.
//    - `while`: each carried value gets one slot for the whole loop, which
//      the regions' inputs and the node's results share: the operand's own
//      buffer when the body passes it through unchanged or the operand dies
//      at the loop, else a new buffer filled by a copy before the loop. The
//      body computes a next value straight into its slot when nothing in
//      the body reads the old value later, else copies it at the body's end
//      (through a staging buffer when it is another carried slot's value).
//      A 4-byte scratch buffer counts the trips.
//    - A node whose schedule record (ir/Schedule.h) asks for scratch (a
//      cuBLASLt workspace, the partials between two kernels) gets a buffer
//      of that size live at its node only. Products never write over their
//      operands.
// 4. Temporaries are placed first-fit (lowest offset whose byte range does
//    not overlap a buffer with an overlapping live interval), in order of
//    their first position; the result is deterministic.
//
//===----------------------------------------------------------------------===//
#include "passes/MemoryPlanner.h"
#include "target/Scheduler.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include <algorithm>

using namespace cgc;
using namespace cgc::planner;

bool cgc::isConstantData(const Node &node) {
  return node.getOp() == OpKind::Constant && !splatConstant(node.result());
}

Storage MemoryPlan::storageOf(const Value *v) const {
  assert(bufferOf.count(v) && "a value without planned storage");
  Storage s = buffers[bufferOf.lookup(v)].storage;
  auto packed = offsetInBuffer.find(v);
  if (packed != offsetInBuffer.end()) {
    s.offset += packed->second;
    s.bytes = valueBytes(v);
  }
  return s;
}

llvm::DenseSet<const Value *> cgc::readOnlyState(const Graph &graph) {
  llvm::DenseSet<const Value *> state;
  for (const GraphInput &in : graph.inputs())
    if (isPersistent(in.kind) && !in.perContext &&
        llvm::none_of(graph.outputs, [&](const GraphOutput &o) {
          return updatesState(o.kind) && o.target == in.value->getName();
        }))
      state.insert(in.value);
  return state;
}

bool cgc::mayPackState(const Graph &graph, llvm::ArrayRef<Value *> values,
                       const llvm::DenseSet<const Value *> &readOnly) {
  llvm::SmallPtrSet<const Value *, 8> seen;
  for (unsigned i = 0; i < values.size(); ++i) {
    const Value *v = values[i];
    if (!readOnly.count(v) || !v->getType().isStatic() || !seen.insert(v).second ||
        graph.isOutput(v) || (i + 1 < values.size() && valueBytes(v) % 16 != 0))
      return false;
  }
  return true;
}

bool cgc::readsPackedInPlace(const Use &use) {
  OpKind op = use.user->getOp();
  return !use.user->info().has(ControlFlow) && op != OpKind::Concat && op != OpKind::Reshape;
}

bool cgc::packsState(const Node &concat,
                     const llvm::DenseSet<const Value *> &readOnly) {
  const Graph &graph = *concat.getParent();
  auto packsHere = [&](const Value *v) {
    return llvm::all_of(v->uses(), [&](const Use &u) {
      return u.user == &concat || readsPackedInPlace(u);
    });
  };
  return concat.getOp() == OpKind::Concat && !graph.isRegion() &&
         concat.intAttr("axis", -1) == 0 && !graph.isOutput(concat.result()) &&
         llvm::all_of(concat.getOperands(), packsHere) &&
         mayPackState(graph, concat.getOperands(), readOnly);
}

uint64_t cgc::valueBytes(const Value *v) {
  const Graph *g = v->getDef() ? v->getDef()->getParent() : nullptr;
  int64_t n = v->getType().isStatic() || !g
                  ? v->getType().numElements()
                  : v->getType().maxElements(g->dims());
  return uint64_t(std::max<int64_t>(n, 0)) * dtypeSize(v->getType().dtype);
}

const std::vector<Copy> &MemoryPlan::copiesAtExit(const Graph &g) const {
  static const std::vector<Copy> none;
  auto it = exitCopies.find(&g);
  return it == exitCopies.end() ? none : it->second;
}

const std::vector<Copy> &MemoryPlan::copiesBefore(const Node &loop) const {
  static const std::vector<Copy> none;
  auto it = entryCopies.find(&loop);
  return it == entryCopies.end() ? none : it->second;
}


bool Planner::updateInPlace(Value *v, Value *target) const {
  Node *def = v->getDef();
  if (!def || def->getParent() != &g || claimed.count(v) ||
      isConstantData(*def) || def->getOp() == OpKind::Reshape ||
      valueBytes(v) != valueBytes(target))
    return false;
  // An output that gives the target back (or copies it into other
  // state) reads it at the exit, after any write in place.
  if (llvm::any_of(g.outputs, [&](const GraphOutput &o) {
        return o.value == target &&
               !(updatesState(o.kind) && o.target == target->getName());
      }))
    return false;
  if (def->getOp() == OpKind::If)
    return ifUpdatesInPlace(*def, v, target);
  int at = live.span(def).start;
  for (const Use &u : target->uses()) {
    int user = live.span(u.user).end;
    if (user > at)
      return false;
    if (user == at && !mayWriteOverOperand(*def, target, v))
      return false;
  }
  return true;
}

/// An `if` result \p v that updates \p target (apply-optimizer's gated
/// update) goes straight into the target's storage when nothing else reads
/// the target from the `if` on, the `if` takes it as one operand, and each
/// arm either passes that operand through (the state stays as it is: no
/// copy) or computes its output where it may write over it.
bool Planner::ifUpdatesInPlace(const Node &n, const Value *v,
                               const Value *target) const {
  int operand = -1;
  for (const Use &u : target->uses()) {
    if (u.user != &n) {
      if (live.span(u.user).end >= live.span(&n).start)
        return false;
      continue;
    }
    if (operand >= 0 || u.operandIndex == 0)
      return false;
    operand = int(u.operandIndex);
  }
  if (operand < 0)
    return false;
  unsigned k = 0;
  while (n.result(k) != v)
    ++k;
  for (unsigned r = 0; r < n.numRegions(); ++r) {
    const Graph &arm = n.region(r);
    const Value *old = arm.inputs()[operand - 1].value;
    Value *out = arm.outputs[k].value;
    if (out != old && !mayWriteOver(arm, old, k, out))
      return false;
  }
  return true;
}

bool Planner::claimOutputs() {
  llvm::StringMap<const GraphOutput *> updaters;
  unsigned slot = 0;
  for (const GraphInput &in : g.inputs())
    slot += !isPersistent(in.kind);
  for (const GraphOutput &o : g.outputs) {
    Value *v = o.value;
    if (updatesState(o.kind)) {
      // Both would write the target's one storage: the result would depend
      // on which write lands last.
      auto [first, inserted] = updaters.try_emplace(o.target, &o);
      if (!inserted) {
        diag.error(o.loc, "output '" + o.name + "' updates '" + o.target +
                              "', which output '" + first->second->name +
                              "' already updates; a step may write each "
                              "state tensor once");
        diag.note(first->second->loc, "the first update is here");
        return false;
      }
      const GraphInput *target = nullptr;
      for (const GraphInput &in : g.inputs())
        if (in.value->getName() == o.target)
          target = &in;
      if (!target || !isPersistent(target->kind)) {
        diag.error(o.loc, "output '" + o.name + "' updates '" + o.target +
                              "', which is not a persistent graph input");
        return false;
      }
      unsigned buffer = bufferOf(target->value);
      plan.outputBuffer.push_back(buffer);
      if (v == target->value)
        continue; // The state stays as it is (an eval graph's updates).
      if (updateInPlace(v, target->value)) {
        claimed[v] = buffer;
      } else {
        addCopy(plan.exitCopies[&g], v, buffer, o.name);
        copiedAtExit.insert(v);
      }
      continue;
    }
    Node *def = v->getDef();
    bool own = def && def->getParent() == &g && !claimed.count(v) &&
               !isConstantData(*def);
    Value *viewed = own ? reshapedIntoOutput(v) : nullptr;
    Node *first = viewed ? viewed->getDef() : def;
    unsigned buffer =
        newSlot(v, slot++, own ? live.span(first).start : 0, o.name);
    plan.outputBuffer.push_back(buffer);
    if (own) {
      claimed[v] = buffer;
      if (viewed)
        claimed[viewed] = buffer;
    } else {
      addCopy(plan.exitCopies[&g], v, buffer, o.name);
      copiedAtExit.insert(v);
    }
  }
  // The copies into state last: an output's copy reads state as it was.
  std::stable_partition(plan.exitCopies[&g].begin(), plan.exitCopies[&g].end(),
                        [&](const Copy &c) {
                          return plan.buffers[c.to].storage.region != Storage::Region::Persistent;
                        });
  return true;
}

/// The value output \p v reshapes, when it may be computed straight into
/// the output's slot (the reshape then aliases it: no copy at the exit): a
/// value of this graph's own nodes (through attention's folded result
/// transposes, to the attention that writes them), no output, input,
/// constant, control flow, packed weight or reshape itself, claimed by
/// nothing else.
Value *Planner::reshapedIntoOutput(Value *v) const {
  Node *def = v->getDef();
  if (def->getOp() != OpKind::Reshape)
    return nullptr;
  Value *u = def->operand(0);
  while (u->getDef()) {
    auto folded = foldedInto.find(u->getDef());
    if (folded == foldedInto.end())
      break;
    u = const_cast<Value *>(folded->second);
  }
  Node *producer = u->getDef();
  if (!producer || producer->getParent() != &g || claimed.count(u) || g.isOutput(u) ||
      isConstantData(*producer) || producer->getOp() == OpKind::Reshape ||
      producer->getOp() == OpKind::If || producer->getOp() == OpKind::While ||
      plan.packedConcats.count(producer) || valueBytes(u) != valueBytes(v))
    return nullptr;
  return u;
}

bool Planner::takeOperand(Node &n, Value *r, llvm::DenseSet<unsigned> &taken) {
  int at = live.span(&n).start;
  for (unsigned k = 0; k < n.numOperands(); ++k) {
    Value *op = n.operand(k);
    if (!mayWriteOverOperand(n, op, r))
      continue;
    auto it = plan.bufferOf.find(op);
    if (it == plan.bufferOf.end())
      continue;
    Buffer &b = plan.buffers[it->second];
    if (b.fixed || b.storage.region != Storage::Region::Arena ||
        b.end > at || taken.count(it->second) ||
        op->getType().dims != r->getType().dims ||
        valueBytes(op) != valueBytes(r))
      continue;
    // A fusion with index moves may read another operand in the same
    // bytes (an alias: a reshape) at other elements.
    bool shared = false;
    for (unsigned j = 0; j < n.numOperands(); ++j)
      shared |= n.operand(j) != op && plan.bufferOf.count(n.operand(j)) &&
                plan.bufferOf.lookup(n.operand(j)) == it->second;
    if (shared && !computesPerElement(n))
      continue;
    taken.insert(it->second);
    plan.inPlaceOf[r] = op;
    join(r, it->second, lastUse(r));
    return true;
  }
  return false;
}

/// A graph input that no output changes (an eval graph's updates give the
/// state back as it is): a reshape of it reads its slot (the caller's
/// buffer, when bound) as it is. A reshape of one that an update changes
/// is a copy, so that no read through it can come after an update written
/// in place (updateInPlace sees the input's own readers only).
bool Planner::isReadOnlyInput(const Value *v) const {
  bool input = llvm::any_of(g.inputs(), [&](const GraphInput &in) { return in.value == v; });
  return input && llvm::none_of(g.outputs, [&](const GraphOutput &o) {
           return updatesState(o.kind) && o.target == v->getName() && o.value != v;
         });
}

void Planner::planResult(Node &n, Value *r, llvm::DenseSet<unsigned> &taken) {
  auto claim = claimed.find(r);
  auto folded = foldedInto.find(&n);
  if (plan.packedConcats.count(&n)) {
    // Planned with the state (packState).
  } else if (folded != foldedInto.end()) {
    join(r, bufferOf(folded->second), lastUse(r));
  } else if (claim != claimed.end()) {
    // An output's reshape of a value computed into the output's slot.
    if (n.getOp() == OpKind::Reshape && plan.bufferOf.count(n.operand(0)) &&
        plan.bufferOf.lookup(n.operand(0)) == claim->second)
      plan.aliasOf[r] = n.operand(0);
    join(r, claim->second, lastUse(r));
  } else if (isConstantData(n)) {
    newBuffer(r, valueBytes(r), Storage::Region::Persistent, 0, live.last(),
              true);
    plan.constantData.push_back(&n);
  } else if (n.getOp() == OpKind::Reshape && plan.bufferOf.count(n.operand(0)) &&
             (n.operand(0)->getDef() ? !isConstantData(*n.operand(0)->getDef())
                                     : isReadOnlyInput(n.operand(0)))) {
    plan.aliasOf[r] = n.operand(0);
    join(r, bufferOf(n.operand(0)), lastUse(r));
  } else if (!takeOperand(n, r, taken)) {
    newBuffer(r, valueBytes(r), Storage::Region::Arena, live.span(&n).start,
              lastUse(r), false);
  }
}

void Planner::planGraph(Graph &graph) {
  for (const auto &owned : graph.nodes()) {
    Node &n = *owned;
    if (n.getOp() == OpKind::If) {
      planIf(n);
      continue;
    }
    if (n.getOp() == OpKind::While) {
      planWhile(n);
      continue;
    }
    llvm::DenseSet<unsigned> taken;
    for (unsigned k = 0; k < n.numResults(); ++k)
      planResult(n, n.result(k), taken);
    planScratch(n);
  }
}

void Planner::planScratch(Node &n) {
  const Schedule *record = n.schedule();
  if (!record && needsSchedule(n)) {
    diag.nodeError(n, "has no schedule record; plan-memory reserves the "
                      "scratch the schedule pass records (run 'schedule' "
                      "first)");
    unscheduled = true;
  }
  if (!record || !(*record)[ScheduleField::Scratch])
    return;
  int at = live.span(&n).start;
  plan.scratch[&n] = newBuffer(nullptr, uint64_t((*record)[ScheduleField::Scratch]),
                               Storage::Region::Arena, at, at, false);
}

void Planner::resolveCopies() {
  auto resolve = [&](std::vector<Copy> &list) {
    for (Copy &c : list)
      if (c.source)
        c.from = bufferOf(c.source);
  };
  for (auto &entry : plan.exitCopies)
    resolve(entry.second);
  for (auto &entry : plan.entryCopies)
    resolve(entry.second);
}

/// Lays the operands of each concat that packsState picks side by side:
/// one persistent buffer holds the concat's result, each operand a range
/// of it (at the place of the first of them in input order).
void Planner::packState() {
  if (!layout.packState)
    return;
  llvm::DenseSet<const Value *> readOnly = readOnlyState(g);
  for (const auto &n : g.nodes()) {
    if (!packsState(*n, readOnly))
      continue;
    plan.packedConcats.insert(n.get());
    uint64_t offset = 0;
    for (Value *v : n->getOperands()) {
      packedInto[v] = n->result();
      plan.offsetInBuffer[v] = offset;
      offset += valueBytes(v);
    }
  }
}

/// The views the attention nodes of the graph (and its regions) read and
/// write in place (target/AttentionLayout.h): each folded node's value
/// joins the buffer of the tensor it views.
void Planner::foldAttentionViews() {
  plan.attention = attentionLayouts(g);
  for (const auto &[node, views] : plan.attention.views)
    for (const AttentionView &view : views)
      for (const Node *f : view.folded)
        foldedInto[f] = view.base;
}

bool Planner::run() {
  packState();
  foldAttentionViews();
  unsigned slot = 0;
  for (const GraphInput &in : g.inputs()) {
    if (in.perContext) { // The context's own copy: a fixed arena buffer.
      newBuffer(in.value, valueBytes(in.value), Storage::Region::Arena, 0,
                live.last(), /*fixed=*/true);
      continue;
    }
    if (isPersistent(in.kind)) {
      auto packed = packedInto.find(in.value);
      if (packed == packedInto.end()) {
        newBuffer(in.value, valueBytes(in.value), Storage::Region::Persistent, 0,
                  live.last(), /*fixed=*/true);
      } else if (!plan.bufferOf.count(packed->second)) {
        Value *whole = packed->second;
        unsigned b = newBuffer(whole, valueBytes(whole), Storage::Region::Persistent,
                               0, live.last(), /*fixed=*/true);
        for (Value *v : whole->getDef()->getOperands())
          join(v, b, live.last());
      }
      continue;
    }
    join(in.value, newSlot(in.value, slot++, 0, in.value->getName()),
         live.last());
  }
  if (!claimOutputs())
    return false;
  planGraph(g);
  if (unscheduled)
    return false;
  resolveCopies();
  place();
  if (plan.arenaSize + plan.persistentSize <= kMaxDeviceBytes)
    return true;
  // Located at the value of the largest buffer.
  const Buffer *largest = &plan.buffers.front();
  for (const Buffer &b : plan.buffers)
    if (b.size > largest->size && !b.values.empty())
      largest = &b;
  Location at;
  if (!largest->values.empty()) {
    const Value *v = largest->values[0];
    if (v->getDef())
      at = v->getDef()->getLoc();
    for (const GraphInput &in : g.inputs())
      if (in.value == v)
        at = in.loc;
  }
  diag.error(at, "graph '" + g.name + "' needs " +
                     llvm::Twine(plan.arenaSize) + " bytes of arena and " +
                     llvm::Twine(plan.persistentSize) +
                     " of state; cgc plans at most " +
                     llvm::Twine(kMaxDeviceBytes >> 30) +
                     " GiB, more than one GPU holds (the largest buffer "
                     "is here)");
  return false;
}

void Planner::place() {
  uint64_t persistent = 0, arena = 0;
  std::vector<unsigned> placed;
  for (unsigned b = 0; b < plan.buffers.size(); ++b) {
    Buffer &buf = plan.buffers[b];
    if (buf.storage.region == Storage::Region::Persistent) {
      bool constant = llvm::any_of(buf.values, [](const Value *v) {
        return v->getDef() && isConstantData(*v->getDef());
      });
      if (constant && persistent < layout.persistentBase)
        persistent = layout.persistentBase;
      buf.storage.offset = persistent;
      persistent += buf.size;
    } else if (buf.fixed) {
      buf.storage.offset = arena;
      arena += buf.size;
      placed.push_back(b);
    }
  }
  std::vector<unsigned> temps;
  for (unsigned b = 0; b < plan.buffers.size(); ++b)
    if (!plan.buffers[b].fixed)
      temps.push_back(b);
  std::stable_sort(temps.begin(), temps.end(), [&](unsigned a, unsigned b) {
    return plan.buffers[a].start < plan.buffers[b].start;
  });
  for (unsigned t : temps) {
    Buffer &buf = plan.buffers[t];
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (unsigned p : placed) {
      const Buffer &o = plan.buffers[p];
      if (o.fixed || (o.start <= buf.end && buf.start <= o.end))
        busy.push_back({o.storage.offset, o.storage.offset + o.size});
    }
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (const auto &[lo, hi] : busy) {
      if (offset + buf.size <= lo)
        break;
      offset = std::max(offset, hi);
    }
    buf.storage.offset = offset;
    arena = std::max(arena, offset + buf.size);
    placed.push_back(t);
  }
  plan.arenaSize = arena;
  plan.persistentSize = persistent;
}

bool cgc::computeMemoryPlan(Graph &graph, MemoryPlan &plan,
                            DiagnosticEngine &diag, const PlanLayout &layout) {
  plan = MemoryPlan();
  return Planner(graph, plan, layout, diag).run();
}
