//===- AccumulateGradients.cpp - One micro-step of `accumulate: k` ---------===//
//
// Algorithm: after autodiff, for every `<p>.grad` output g of a float
// parameter p, read the state `<p>.grad_accum` (zeros at first; f32, also
// for a 16-bit p, whose g is widened, as apply-optimizer sums on one
// device) and add g to it, right after the node that computes g (so that
// backward's order, which data-parallel buckets by, is kept). Then, by
// ctx.microStep:
//   Accumulate: the sum replaces the state (`<p>.grad_accum.next`), the
//               `.grad` outputs go, and the dropout streams advance
//               (RandomStreams.h): a micro-step with no update;
//   Last:       the `.grad` output becomes the sum and the state restarts
//               at zero; data-parallel then averages it over the ranks
//               and apply-optimizer divides by k and updates, on every
//               replay of this graph.
// `cgc --train --data-parallel` with `accumulate: k` compiles both: graph
// `train.accumulate` for micro-steps 1 to k-1 and `train` for the k-th, so
// that the collectives run once per k micro-batches, at the top level of a
// graph (never in an `if`). The caller picks the graph (the host counts
// the calls; nothing is read back).
// Requires: autodiff's outputs, an optimizer with accumulate > 1 and
// ctx.microStep Accumulate or Last. Guarantees: one `<p>.grad_accum` state
// and its update per float parameter with a gradient.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"
#include "passes/RandomStreams.h"
#include "passes/ValueBuilder.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

using namespace cgc;

namespace {

class AccumulateGradientsPass : public Pass {
public:
  llvm::StringRef name() const override { return "accumulate-gradients"; }
  llvm::StringRef summary() const override {
    return "add each gradient to its running sum: a micro-step without an "
           "update, or the last, whose sums the update reads";
  }
  bool run(Graph &graph, PassContext &ctx) override;

private:
  /// sum + g, built right after g's node; the sum's state input is new.
  Value *addToSum(Graph &graph, Value *p, Value *g, const Location &loc,
                  DiagnosticEngine &diag);
  /// The node after each node (null after the last), as of the pass's start.
  llvm::DenseMap<const Node *, Node *> following;
};

} // namespace

/// The sum's type: \p p's shape in f32.
static TensorType sumType(const Value *p) {
  TensorType type = p->getType();
  type.dtype = DType::F32;
  return type;
}

Value *AccumulateGradientsPass::addToSum(Graph &graph, Value *p, Value *g,
                                         const Location &loc, DiagnosticEngine &diag) {
  Value *sum = addOptimizerState(graph, p->getName() + ".grad_accum", sumType(p), 0, loc);
  GraphBuilder b(graph, diag);
  b.setInsertionPointToEnd(graph);
  if (Node *after = following.lookup(g->getDef()))
    b.setInsertionPoint(*after);
  ValueBuilder vb(b);
  vb.setBase(p->getName() + ".grad_accum");
  return vb.add(sum, vb.cast(g, DType::F32));
}

bool AccumulateGradientsPass::run(Graph &graph, PassContext &ctx) {
  const OptimizerDecl *decl = graph.optimizer ? &*graph.optimizer : nullptr;
  if (!decl || decl->accumulate <= 1 || ctx.microStep == PassContext::MicroStep::Whole) {
    ctx.diag.error(decl ? decl->loc : Location(),
                   "accumulate-gradients: needs an optimizer with accumulate > 1 "
                   "and a micro-step to build (Accumulate or Last)");
    return false;
  }
  bool last = ctx.microStep == PassContext::MicroStep::Last;
  following.clear();
  for (size_t i = 0; i + 1 < graph.nodes().size(); ++i)
    following[graph.nodes()[i].get()] = graph.nodes()[i + 1].get();
  llvm::StringMap<Value *> parameters;
  for (const GraphInput &in : graph.inputs())
    if (in.kind == InputKind::Parameter && isFloat(in.value->getType().dtype))
      parameters[in.value->getName()] = in.value;
  std::vector<GraphOutput> kept, sums;
  for (const GraphOutput &o : std::vector<GraphOutput>(graph.outputs)) {
    llvm::StringRef name = o.name;
    Value *p = o.kind == OutputKind::Output && name.consume_back(".grad")
                   ? parameters.lookup(name)
                   : nullptr;
    if (!p) {
      kept.push_back(o);
      continue;
    }
    Value *total = addToSum(graph, p, o.value, decl->loc, ctx.diag);
    if (!total)
      return false;
    std::string state = p->getName() + ".grad_accum";
    GraphBuilder b(graph, ctx.diag);
    b.setInsertionPointToEnd(graph);
    ValueBuilder vb(b);
    vb.setBase(state + ".reset");
    Value *next = last ? vb.zeros(sumType(p)) : total;
    if (!next)
      return false;
    sums.push_back({state + ".next", next, OutputKind::BufferMutation, state, decl->loc});
    if (last)
      kept.push_back({o.name, total, o.kind, o.target, o.loc});
  }
  if (!last) {
    GraphBuilder b(graph, ctx.diag);
    b.setInsertionPointToEnd(graph);
    ValueBuilder vb(b);
    vb.setBase("rng.advance");
    for (auto [stream, next] : advancedStreams(graph, vb))
      sums.push_back({stream->getName() + ".next", next, OutputKind::BufferMutation,
                      stream->getName(), decl->loc});
    if (vb.hasFailed())
      return false;
  }
  kept.insert(kept.end(), sums.begin(), sums.end());
  graph.outputs = std::move(kept);
  return true;
}

std::unique_ptr<Pass> cgc::createAccumulateGradientsPass() {
  return std::make_unique<AccumulateGradientsPass>();
}
