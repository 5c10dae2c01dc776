//===- Liveness.cpp - One numbering of the nodes across nesting --------------===//
#include "passes/Liveness.h"

#include <algorithm>

using namespace cgc;

Liveness::Liveness(const Graph &top) { number(top); }

/// Regions that run as graphs of their own (not a fusion's body, which is
/// one kernel at one position).
static unsigned plannedRegions(const Node *n) {
  return n->info().has(ControlFlow) ? n->numRegions() : 0;
}

void Liveness::number(const Graph &g) {
  for (const auto &owned : g.nodes()) {
    const Node *n = owned.get();
    Span s;
    s.start = count++;
    for (unsigned r = 0; r < plannedRegions(n); ++r) {
      const Graph &region = n->region(r);
      for (const GraphInput &in : region.inputs())
        regionInputStart[in.value] = s.start;
      number(region);
    }
    s.end = plannedRegions(n) ? count++ : s.start;
    spans[n] = s;
    for (unsigned r = 0; r < plannedRegions(n); ++r)
      for (const GraphOutput &o : n->region(r).outputs) {
        int &end = regionOutputEnd[o.value];
        end = std::max(end, s.end);
      }
  }
}

int Liveness::definition(const Value *v) const {
  if (const Node *def = v->getDef())
    return span(def).start;
  auto it = regionInputStart.find(v);
  return it == regionInputStart.end() ? 0 : it->second;
}

int Liveness::lastUse(const Value *v) const {
  int end = definition(v);
  for (const Use &u : v->uses())
    end = std::max(end, span(u.user).end);
  auto it = regionOutputEnd.find(v);
  if (it != regionOutputEnd.end())
    end = std::max(end, it->second);
  return end;
}
