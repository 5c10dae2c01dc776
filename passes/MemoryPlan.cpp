//===- MemoryPlan.cpp - Liveness and offsets in one arena --------------------===//
//
// 1. Persistent inputs get consecutive 256-aligned slots in the persistent
//    region; non-splat constants follow them (their bytes ship as data).
// 2. User inputs and graph outputs get fixed arena slots that live for the
//    whole graph, so outputs never alias inputs. An update or mutation is
//    written straight into its target's storage when no later node reads
//    the target; otherwise it is computed elsewhere and copied at the end.
// 3. Walking the nodes in order, a reshape shares its operand's buffer, an
//    elementwise node may take over the buffer of a same-shaped operand that
//    dies there, and every other result gets a temporary buffer.
// 4. Temporaries are placed first-fit (lowest offset whose byte range does
//    not overlap a buffer with an overlapping live interval), in order of
//    their first node; the result is deterministic.
//
//===----------------------------------------------------------------------===//
#include "passes/MemoryPlan.h"

#include "llvm/ADT/StringMap.h"

#include "llvm/ADT/DenseSet.h"
#include <algorithm>

using namespace cgc;

static uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool cgc::isConstantData(const Node &node) {
  return node.getOp() == OpKind::Constant && !splatConstant(node.result());
}

uint64_t cgc::valueBytes(const Value *v) {
  const Graph *g = v->getDef() ? v->getDef()->getParent() : nullptr;
  int64_t n = v->getType().isStatic() || !g
                  ? v->getType().numElements()
                  : v->getType().maxElements(g->dims());
  return uint64_t(std::max<int64_t>(n, 0)) * dtypeSize(v->getType().dtype);
}

namespace {
class Planner {
public:
  Planner(Graph &g, MemoryPlan &plan, DiagnosticEngine &diag)
      : g(g), plan(plan), diag(diag) {}
  bool run();

private:
  int lastUse(const Value *v, int def) const {
    int end = def;
    for (const Use &u : v->uses())
      if (index.count(u.user))
        end = std::max(end, index.lookup(u.user));
    return end;
  }
  unsigned newBuffer(Value *v, Storage::Region region, int start, int end,
                     bool fixed) {
    Buffer b;
    b.storage.region = region;
    b.storage.bytes = v ? valueBytes(v) : 0;
    b.size = alignUp(std::max<uint64_t>(b.storage.bytes, 1), kBufferAlignment);
    b.start = start;
    b.end = end;
    b.fixed = fixed;
    plan.buffers.push_back(b);
    if (v)
      join(v, plan.buffers.size() - 1, end);
    return plan.buffers.size() - 1;
  }
  void join(Value *v, unsigned buffer, int end) {
    plan.bufferOf[v] = buffer;
    plan.buffers[buffer].values.push_back(v);
    plan.buffers[buffer].end = std::max(plan.buffers[buffer].end, end);
  }
  bool claimOutputs();
  bool updateInPlace(Value *v, Value *target) const;
  bool takeOperand(Node &n, Value *r, int i, llvm::DenseSet<unsigned> &taken);
  void place();

  Graph &g;
  MemoryPlan &plan;
  DiagnosticEngine &diag;
  llvm::DenseMap<const Node *, int> index;
  llvm::DenseMap<Value *, unsigned> claimed;
  int last = 0;
};
} // namespace

/// Pointwise nodes read operand element i only to write result element i.
static bool isPointwise(const Node &n) {
  return n.info().has(Elementwise) || n.getOp() == OpKind::Fusion ||
         n.getOp() == OpKind::Dropout;
}

bool Planner::updateInPlace(Value *v, Value *target) const {
  Node *def = v->getDef();
  if (!def || def->getParent() != &g || claimed.count(v) ||
      isConstantData(*def) || def->getOp() == OpKind::Reshape ||
      valueBytes(v) != valueBytes(target))
    return false;
  int at = index.lookup(def);
  for (const Use &u : target->uses()) {
    int user = index.count(u.user) ? index.lookup(u.user) : last + 1;
    if (user > at)
      return false;
    if (user == at && !(isPointwise(*def) &&
                        target->getType().dims == v->getType().dims))
      return false;
  }
  return true;
}

bool Planner::claimOutputs() {
  llvm::StringMap<const GraphOutput *> updaters;
  for (const GraphOutput &o : g.outputs) {
    Value *v = o.value;
    bool update = o.kind == OutputKind::ParameterUpdate ||
                  o.kind == OutputKind::BufferMutation;
    if (update) {
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
      unsigned buffer = plan.bufferOf.lookup(target->value);
      plan.outputBuffer.push_back(buffer);
      if (updateInPlace(v, target->value))
        claimed[v] = buffer;
      else
        plan.copies.push_back({v, buffer, o.name});
      continue;
    }
    Node *def = v->getDef();
    bool own = def && def->getParent() == &g && !claimed.count(v) &&
               !isConstantData(*def);
    int start = own ? index.lookup(def) : 0;
    unsigned buffer = newBuffer(nullptr, Storage::Region::Arena, start, last,
                                /*fixed=*/true);
    plan.buffers[buffer].storage.bytes = valueBytes(v);
    plan.buffers[buffer].size =
        alignUp(std::max<uint64_t>(valueBytes(v), 1), kBufferAlignment);
    plan.outputBuffer.push_back(buffer);
    if (own)
      claimed[v] = buffer;
    else
      plan.copies.push_back({v, buffer, o.name});
  }
  return true;
}

bool Planner::takeOperand(Node &n, Value *r, int i,
                          llvm::DenseSet<unsigned> &taken) {
  if (!isPointwise(n))
    return false;
  unsigned operands = n.getOp() == OpKind::Dropout ? 1 : n.numOperands();
  for (unsigned k = 0; k < operands; ++k) {
    Value *op = n.operand(k);
    auto it = plan.bufferOf.find(op);
    if (it == plan.bufferOf.end())
      continue;
    Buffer &b = plan.buffers[it->second];
    if (b.fixed || b.end > i || taken.count(it->second) ||
        op->getType().dims != r->getType().dims ||
        valueBytes(op) != valueBytes(r))
      continue;
    taken.insert(it->second);
    plan.inPlaceOf[r] = op;
    join(r, it->second, lastUse(r, i));
    return true;
  }
  return false;
}

bool Planner::run() {
  for (unsigned i = 0; i < g.nodes().size(); ++i)
    index[g.nodes()[i].get()] = i;
  last = std::max<int>(int(g.nodes().size()) - 1, 0);
  for (const GraphInput &in : g.inputs())
    newBuffer(in.value,
              isPersistent(in.kind) ? Storage::Region::Persistent
                                    : Storage::Region::Arena,
              0, last, /*fixed=*/true);
  if (!claimOutputs())
    return false;
  for (unsigned i = 0; i < g.nodes().size(); ++i) {
    Node &n = *g.nodes()[i];
    llvm::DenseSet<unsigned> taken;
    for (unsigned k = 0; k < n.numResults(); ++k) {
      Value *r = n.result(k);
      auto claim = claimed.find(r);
      if (claim != claimed.end()) {
        join(r, claim->second, last);
      } else if (isConstantData(n)) {
        newBuffer(r, Storage::Region::Persistent, 0, last, true);
        plan.constantData.push_back(&n);
      } else if (n.getOp() == OpKind::Reshape && n.operand(0)->getDef() &&
                 plan.bufferOf.count(n.operand(0)) &&
                 !isConstantData(*n.operand(0)->getDef())) {
        plan.aliasOf[r] = n.operand(0);
        join(r, plan.bufferOf.lookup(n.operand(0)), lastUse(r, i));
      } else if (!takeOperand(n, r, i, taken)) {
        newBuffer(r, Storage::Region::Arena, i, lastUse(r, i), false);
      }
    }
  }
  place();
  return true;
}

void Planner::place() {
  uint64_t persistent = 0, arena = 0;
  std::vector<unsigned> placed;
  for (unsigned b = 0; b < plan.buffers.size(); ++b) {
    Buffer &buf = plan.buffers[b];
    if (buf.storage.region == Storage::Region::Persistent) {
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
                            DiagnosticEngine &diag) {
  plan = MemoryPlan();
  return Planner(graph, plan, diag).run();
}

void cgc::printMemoryPlan(const Graph &graph, const MemoryPlan &plan,
                          llvm::raw_ostream &os) {
  llvm::DenseMap<const Node *, int> index;
  for (unsigned i = 0; i < graph.nodes().size(); ++i)
    index[graph.nodes()[i].get()] = i;
  auto print = [&](const Value *v) {
    if (!plan.hasStorage(v))
      return;
    const Buffer &b = plan.buffers[plan.bufferOf.lookup(v)];
    bool persistent = b.storage.region == Storage::Region::Persistent;
    os << "%" << v->getName() << (persistent ? " persistent" : " arena")
       << " offset=" << b.storage.offset << " size=" << valueBytes(v);
    if (!persistent) {
      int def = v->getDef() ? index.lookup(v->getDef()) : 0;
      int end = def;
      for (const Use &u : v->uses())
        if (index.count(u.user))
          end = std::max(end, index.lookup(u.user));
      os << " live=[" << def << "," << (b.fixed ? b.end : end) << "]";
    }
    if (const Value *a = plan.aliasOf.lookup(v))
      os << " alias=%" << a->getName();
    if (const Value *a = plan.inPlaceOf.lookup(v))
      os << " inplace=%" << a->getName();
    os << "\n";
  };
  for (const GraphInput &in : graph.inputs())
    print(in.value);
  for (const auto &n : graph.nodes())
    for (unsigned r = 0; r < n->numResults(); ++r)
      print(n->result(r));
  for (const FinalCopy &c : plan.copies) {
    const Storage &s = plan.buffers[c.buffer].storage;
    os << "copy %" << c.source->getName() << " -> " << c.output
       << (s.region == Storage::Region::Persistent ? " persistent" : " arena")
       << " offset=" << s.offset << " size=" << s.bytes << "\n";
  }
  os << "arena size=" << plan.arenaSize
     << " persistent size=" << plan.persistentSize << "\n";
}
