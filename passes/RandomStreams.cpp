//===- RandomStreams.cpp - Advancing the dropout streams per replay --------===//
#include "passes/RandomStreams.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>

using namespace cgc;

/// Each top-level input that the dropouts of \p g (regions included) read
/// as their stream, with the largest stream they draw; \p outer maps the
/// values of \p g to the top-level inputs they are.
static void streamsOf(const Graph &g, const DimTable &dims,
                      const llvm::DenseMap<const Value *, Value *> &outer,
                      llvm::DenseMap<Value *, int64_t> &advance) {
  for (const auto &owned : g.nodes()) {
    const Node &n = *owned;
    if (n.getOp() == OpKind::Dropout && n.numOperands() >= 2)
      if (Value *stream = outer.lookup(n.operand(1))) {
        int64_t drawn = (n.result()->getType().maxElements(dims) + 3) / 4 * 4;
        int64_t &a = advance[stream];
        a = std::max(a, n.intAttr("offset", 0) + drawn);
      }
    unsigned first = n.getOp() == OpKind::If ? 1 : 0; // if: the predicate
    for (unsigned r = 0; r < n.numRegions(); ++r) {
      const Graph &region = n.region(r);
      llvm::DenseMap<const Value *, Value *> inner;
      for (unsigned i = 0; i < region.inputs().size() && first + i < n.numOperands(); ++i)
        if (Value *v = outer.lookup(n.operand(first + i)))
          inner[region.inputs()[i].value] = v;
      streamsOf(region, dims, inner, advance);
    }
  }
}

std::vector<std::pair<Value *, Value *>> cgc::advancedStreams(Graph &graph,
                                                             ValueBuilder &vb) {
  llvm::DenseMap<Value *, int64_t> advance;
  llvm::DenseMap<const Value *, Value *> top;
  for (const GraphInput &in : graph.inputs())
    top[in.value] = in.value;
  streamsOf(graph, graph.dims(), top, advance);
  std::vector<std::pair<Value *, Value *>> out;
  for (const GraphInput &in : graph.inputs()) {
    auto it = advance.find(in.value);
    if (in.kind != InputKind::RngState || it == advance.end())
      continue;
    Value *by = vb.op(OpKind::Constant, {},
                      {{"dtype", DType::I64},
                       {"shape", std::vector<Dim>{Dim::fixed(2)}},
                       {"value", std::vector<Number>{Number::ofInt(0),
                                                    Number::ofInt(int64_t(it->second))}}});
    out.push_back({in.value, vb.add(in.value, by)});
  }
  return out;
}
