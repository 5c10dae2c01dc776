//===- MemoryPlanPrinter.cpp - The text form of a memory plan ----------------===//
//
// One line per value: `%name arena|persistent offset=O size=S live=[a,b]`
// plus `alias=`/`inplace=`; region values are indented under
// `region <node>.<index>:` lines; copies and trip counters are printed where
// the program runs them (`copy %src -> dest ...`, `counter %loop ...`).
//
//===----------------------------------------------------------------------===//
#include "passes/Liveness.h"
#include "passes/MemoryPlan.h"

using namespace cgc;

namespace {
class PlanPrinter {
public:
  PlanPrinter(const Graph &g, const MemoryPlan &plan, llvm::raw_ostream &os)
      : plan(plan), live(g), os(os) {}
  void graph(const Graph &g, unsigned depth);

private:
  void storage(const Storage &s) {
    os << (s.region == Storage::Region::Persistent ? " persistent" : " arena")
       << " offset=" << s.offset << " size=" << s.bytes;
  }
  void value(const Value *v, unsigned depth);
  void copies(const std::vector<Copy> &list, unsigned depth);

  const MemoryPlan &plan;
  Liveness live;
  llvm::raw_ostream &os;
};
} // namespace

void PlanPrinter::value(const Value *v, unsigned depth) {
  if (!plan.hasStorage(v))
    return;
  const Buffer &b = plan.buffers[plan.bufferOf.lookup(v)];
  os.indent(2 * depth) << "%" << v->getName()
                       << (b.storage.region == Storage::Region::Persistent
                               ? " persistent"
                               : " arena")
                       << " offset=" << plan.storageOf(v).offset
                       << " size=" << valueBytes(v);
  if (b.storage.region == Storage::Region::Arena)
    os << " live=[" << live.definition(v) << ","
       << (b.fixed ? b.end : live.lastUse(v)) << "]";
  if (const Value *a = plan.aliasOf.lookup(v))
    os << " alias=%" << a->getName();
  if (const Value *a = plan.inPlaceOf.lookup(v))
    os << " inplace=%" << a->getName();
  if (v->getDef() && plan.packedConcats.count(v->getDef()))
    os << " packed";
  os << "\n";
}

void PlanPrinter::copies(const std::vector<Copy> &list, unsigned depth) {
  for (const Copy &c : list) {
    const Storage &to = plan.buffers[c.to].storage;
    os.indent(2 * depth) << "copy ";
    if (c.source)
      os << "%" << c.source->getName();
    else
      os << "staging";
    os << " -> " << (c.output.empty() ? "" : c.output + " ");
    os << (to.region == Storage::Region::Persistent ? "persistent" : "arena")
       << " offset=" << to.offset << " size=" << to.bytes << "\n";
  }
}

void PlanPrinter::graph(const Graph &g, unsigned depth) {
  for (const GraphInput &in : g.inputs())
    value(in.value, depth);
  for (const auto &n : g.nodes()) {
    copies(plan.copiesBefore(*n), depth);
    auto counter = plan.tripCounter.find(n.get());
    if (counter != plan.tripCounter.end()) {
      os.indent(2 * depth) << "counter %" << n->getName();
      storage(plan.buffers[counter->second].storage);
      os << "\n";
    }
    auto scratch = plan.scratch.find(n.get());
    if (scratch != plan.scratch.end()) {
      // A cuBLASLt workspace, or the partials between two kernels.
      bool library = n->schedule()->strategy == Strategy::LibraryProduct;
      os.indent(2 * depth) << (library ? "workspace %" : "partials %")
                           << n->getName();
      storage(plan.buffers[scratch->second].storage);
      os << "\n";
    }
    for (unsigned r = 0; n->info().has(ControlFlow) && r < n->numRegions();
         ++r) {
      os.indent(2 * depth) << "region " << n->getName() << "." << r << ":\n";
      graph(n->region(r), depth + 1);
    }
    for (unsigned r = 0; r < n->numResults(); ++r)
      value(n->result(r), depth);
  }
  copies(plan.copiesAtExit(g), depth);
}

void cgc::printMemoryPlan(const Graph &graph, const MemoryPlan &plan,
                          llvm::raw_ostream &os) {
  PlanPrinter(graph, plan, os).graph(graph, 0);
  os << "arena size=" << plan.arenaSize
     << " persistent size=" << plan.persistentSize << "\n";
}
