//===- ShapeInference.cpp - Propagate types, optionally binding dims ---------===//
//
// Algorithm: (1) for each requested binding `B=n` (cgc-opt --bind-dim),
// check that `B` is a declared dim and n is within its bounds, then
// replace `B` by n in the graph's input types and in shape attributes;
// (2) walk the nodes in order (regions first) and recompute every result
// type from the type rules, storing it. Symbolic dims propagate through
// every op this way, and types stay correct after rewrites that changed an
// operand.
// Requires: a graph whose nodes are in topological order.
// Guarantees: every stored type equals what its op's type rule gives;
// bound dims no longer appear anywhere.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/TypeRules.h"

using namespace cgc;

namespace {
using Bindings = std::map<unsigned, int64_t>;

class ShapeInferencePass : public Pass {
public:
  llvm::StringRef name() const override { return "shape-infer"; }
  llvm::StringRef summary() const override {
    return "recompute every result type; bind dims given by --bind-dim";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    Bindings bindings;
    if (!resolveBindings(graph, ctx, bindings))
      return false;
    return infer(graph, bindings, ctx.diag);
  }

private:
  static bool resolveBindings(Graph &graph, PassContext &ctx,
                              Bindings &bindings) {
    for (const auto &[name, value] : ctx.dimBindings) {
      auto symbol = graph.dims().lookup(name);
      if (!symbol || graph.dims().get(*symbol).dataDependent) {
        ctx.diag.error({}, "shape-infer: graph '" + graph.name +
                               "' has no dim named '" + name + "'");
        return false;
      }
      const SymbolicDim &dim = graph.dims().get(*symbol);
      if (value < dim.min || value > dim.max) {
        ctx.diag.error({}, "shape-infer: dim '" + name + "' = " +
                               llvm::Twine(value) + " is outside its bounds [" +
                               llvm::Twine(dim.min) + ", " +
                               llvm::Twine(dim.max) + "]");
        return false;
      }
      bindings[*symbol] = value;
    }
    return true;
  }

  static Dim bind(Dim d, const Bindings &bindings) {
    if (d.isStatic())
      return d;
    auto it = bindings.find(d.symbolIndex());
    return it == bindings.end() ? d : Dim::fixed(it->second);
  }

  static void bindValue(Value *v, const Bindings &bindings) {
    TensorType type = v->getType();
    for (Dim &d : type.dims)
      d = bind(d, bindings);
    v->setType(type);
  }

  static void bindAttrs(Node &node, const Bindings &bindings) {
    for (const auto &[key, attr] : node.attrs())
      if (auto *dims = std::get_if<std::vector<Dim>>(&attr)) {
        std::vector<Dim> bound = *dims;
        for (Dim &d : bound)
          d = bind(d, bindings);
        node.setAttr(key, bound);
      }
  }

  static bool infer(Graph &graph, const Bindings &bindings,
                    DiagnosticEngine &diag) {
    for (const GraphInput &in : graph.inputs())
      bindValue(in.value, bindings);
    for (const auto &node : graph.nodes()) {
      bindAttrs(*node, bindings);
      for (unsigned i = 0; i < node->numRegions(); ++i)
        if (!infer(node->region(i), bindings, diag))
          return false;
      llvm::SmallVector<TensorType, 2> types;
      if (!inferResultTypes(*node, types, diag))
        return false;
      for (unsigned r = 0; r < types.size(); ++r)
        node->result(r)->setType(types[r]);
    }
    return true;
  }
};
} // namespace

std::unique_ptr<Pass> cgc::createShapeInferencePass() {
  return std::make_unique<ShapeInferencePass>();
}
