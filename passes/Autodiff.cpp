//===- Autodiff.cpp - Reverse-mode gradients of the loss -----------------===//
//
// Algorithm: reverse mode over the top-level graph. The one `loss` output
// (a float scalar) gets the adjoint 1; nodes are visited from the last to
// the first, and each node whose result has an adjoint gives its operands
// theirs by its rule (DerivativeRules.cpp), summed where a value has
// several readers. Every float `parameter` input then gets an output
// `<name>.grad` (zeros when the loss does not depend on it). The backward
// ops are ordinary IR ops appended after the forward ones, so cse, dce and
// the fusion passes treat them like the rest.
// Saving versus recomputing: the backward ops read the forward values they
// need (operands, and results where a rule is cheaper on them: exp, tanh,
// sigmoid, sqrt, softmax, div); plan-memory keeps those alive. Nothing is
// recomputed, except that cross_entropy's rule recomputes its softmax and
// layernorm's its mean and variance.
// An `if` differentiates through its explicit operands: its adjoint is an
// `if` on the same predicate (`<if>.bwd`) that takes the operands and the
// adjoints of the results, and whose arms recompute their forward arm and
// run reverse mode over it, yielding the adjoints of the float operands
// (zeros for those an arm does not read). Its arms' forward values are
// recomputed, not saved: the taken arm is known on the device only.
// With dynamic loss scaling (ctx.lossScaling, f16 training) the loss's
// adjoint is the state `optimizer.loss_scale` (lossScale()) instead of 1:
// every gradient comes out scaled, and apply-optimizer unscales it.
// Requires: a verified graph with exactly one `loss` output, a float
// scalar; no `while` that the loss depends on, and no control flow nested
// in a differentiated `if` arm (refused: reverse mode through a loop needs
// every trip's values). Guarantees: the outputs so far, then one gradient
// output per float parameter, in input order; an op without a rule on the
// path to the loss is refused with a located error naming it.
//
//===----------------------------------------------------------------------===//
#include "passes/DerivativeRules.h"
#include "passes/Pass.h"

#include "ir/Initializers.h"

using namespace cgc;

namespace {

class AutodiffPass : public Pass {
public:
  llvm::StringRef name() const override { return "autodiff"; }
  llvm::StringRef summary() const override {
    return "append the gradients of the loss with respect to every "
           "parameter as outputs (reverse mode)";
  }
  bool run(Graph &graph, PassContext &ctx) override;

private:
  const GraphOutput *findLoss(const Graph &graph, DiagnosticEngine &diag);
  bool backward(Graph &graph, const GraphOutput &loss, ValueBuilder &gb, bool scaled,
                DiagnosticEngine &diag);
  bool reverse(llvm::ArrayRef<Node *> nodes, ValueBuilder &gb,
               DiagnosticEngine &diag);
  bool ifAdjoints(Node &n, ValueBuilder &gb, DiagnosticEngine &diag);
  bool differentiateArm(const Graph &forward, Graph &arm, Node &n,
                        ValueBuilder &gb, DiagnosticEngine &diag);
  void accumulate(Value *v, Value *g, ValueBuilder &gb);
  bool addGradientOutputs(Graph &graph, GraphBuilder &builder,
                          DiagnosticEngine &diag);

  llvm::DenseMap<const Value *, Value *> adjoint;
};

} // namespace

const GraphOutput *AutodiffPass::findLoss(const Graph &graph,
                                          DiagnosticEngine &diag) {
  const GraphOutput *loss = nullptr;
  for (const GraphOutput &o : graph.outputs) {
    if (o.kind != OutputKind::Loss)
      continue;
    if (loss) {
      diag.error(o.loc, "autodiff: output '" + o.name +
                            "' is a second loss; the graph must have one");
      return nullptr;
    }
    loss = &o;
  }
  if (!loss) {
    diag.error({}, "autodiff: the graph has no output of kind \"loss\"");
    return nullptr;
  }
  const TensorType &type = loss->value->getType();
  if (type.rank() != 0 || !isFloat(type.dtype)) {
    diag.error(loss->loc, "autodiff: the loss '" + loss->name +
                              "' must be a float scalar, not " +
                              typeToString(type, graph.dims()));
    return nullptr;
  }
  return loss;
}

void AutodiffPass::accumulate(Value *v, Value *g, ValueBuilder &gb) {
  if (!g || !isFloat(v->getType().dtype))
    return;
  Value *&slot = adjoint[v];
  slot = slot ? gb.add(slot, g) : g;
}

bool AutodiffPass::backward(Graph &graph, const GraphOutput &loss,
                            ValueBuilder &gb, bool scaled, DiagnosticEngine &diag) {
  std::vector<Node *> forward;
  for (const auto &owned : graph.nodes())
    forward.push_back(owned.get());
  gb.setBase(loss.name + ".seed");
  adjoint[loss.value] = scaled ? gb.cast(lossScale(graph), loss.value->getType().dtype)
                               : gb.fill(1.0, loss.value->getType().dtype);
  return reverse(forward, gb, diag);
}

Value *cgc::lossScale(Graph &graph) {
  for (const GraphInput &in : graph.inputs())
    if (in.value->getName() == kLossScale)
      return in.value;
  return addOptimizerState(graph, kLossScale, TensorType::scalar(DType::F32),
                           kInitialLossScale, Location());
}

/// Visits \p nodes from the last to the first, giving the operands of each
/// node whose results have adjoints theirs.
bool AutodiffPass::reverse(llvm::ArrayRef<Node *> nodes, ValueBuilder &gb,
                           DiagnosticEngine &diag) {
  for (Node *n : llvm::reverse(nodes)) {
    Value *g = nullptr;
    for (unsigned r = 0; r < n->numResults() && !g; ++r)
      g = adjoint.lookup(n->result(r));
    if (!g)
      continue;
    gb.setOrigin(*n);
    if (n->getOp() == OpKind::If) {
      if (!ifAdjoints(*n, gb, diag))
        return false;
      continue;
    }
    std::string why;
    std::vector<Value *> operands;
    if (n->getOp() == OpKind::While)
      why = "reverse mode through a while needs every trip's values; not "
            "supported yet";
    if (n->numResults() != 1 || !why.empty() ||
        !operandAdjoints(*n, g, gb, operands, why)) {
      diag.nodeError(*n, (why.empty() ? "no derivative rule for " +
                                            mnemonic(n->getOp()).str() + " yet"
                                      : why) +
                             " (autodiff: the loss depends on it)");
      return false;
    }
    for (unsigned i = 0; i < operands.size(); ++i)
      accumulate(n->operand(i), operands[i], gb);
    if (gb.hasFailed())
      return false; // A rule's op failed its type rule (reported).
  }
  return true;
}

/// The adjoint of `if` \p n: an `if` on its predicate over its operands and
/// its results' adjoints, each arm differentiating its forward arm.
bool AutodiffPass::ifAdjoints(Node &n, ValueBuilder &gb,
                              DiagnosticEngine &diag) {
  GraphBuilder &b = gb.builder();
  Graph &outer = *n.getParent();
  std::vector<Value *> operands(n.getOperands().begin(), n.getOperands().end());
  for (unsigned r = 0; r < n.numResults(); ++r) {
    Value *v = n.result(r);
    if (!isFloat(v->getType().dtype))
      continue;
    Value *g = adjoint.lookup(v);
    if (!g) {
      gb.setBase(v->getName() + ".adj");
      g = gb.zeros(v->getType());
    }
    operands.push_back(g);
  }
  Node *bwd = b.createWithRegions(OpKind::If, n.getName() + ".bwd", operands);
  if (!bwd)
    return false;
  for (unsigned r = 0; r < 2; ++r)
    if (!differentiateArm(n.region(r), bwd->region(r), n, gb, diag))
      return false;
  b.setInsertionPointToEnd(outer);
  std::vector<std::string> names;
  std::vector<unsigned> differentiated;
  for (unsigned i = 1; i < n.numOperands(); ++i)
    if (isFloat(n.operand(i)->getType().dtype)) {
      names.push_back(n.operand(i)->getName() + ".adj");
      differentiated.push_back(i);
    }
  if (!b.addResults(*bwd, names))
    return false;
  for (unsigned k = 0; k < differentiated.size(); ++k)
    accumulate(n.operand(differentiated[k]), bwd->result(k), gb);
  return !gb.hasFailed();
}

/// Fills \p arm (an arm of n's adjoint `if`): its inputs mirror the
/// adjoint's operands, it recomputes \p forward, runs reverse mode from
/// the float results' adjoints and yields the float operands' adjoints.
bool AutodiffPass::differentiateArm(const Graph &forward, Graph &arm, Node &n,
                                    ValueBuilder &gb, DiagnosticEngine &diag) {
  GraphBuilder &b = gb.builder();
  llvm::DenseMap<Value *, Value *> mapped;
  for (const GraphInput &in : forward.inputs())
    mapped[in.value] = arm.addInput(in.value->getName(), in.value->getType());
  auto saved = std::move(adjoint);
  adjoint.clear();
  b.setInsertionPointToEnd(arm);
  std::vector<Node *> recomputed;
  for (const auto &owned : forward.nodes()) {
    if (owned->numRegions()) {
      diag.nodeError(*owned, "control flow nested in a differentiated `if` "
                             "arm is not supported yet (autodiff: the loss "
                             "depends on it)");
      return false;
    }
    std::vector<Value *> ops;
    for (Value *v : owned->getOperands())
      ops.push_back(mapped.lookup(v));
    Node *copy = b.clone(*owned, ops);
    if (!copy)
      return false;
    mapped[owned->result()] = copy->result();
    recomputed.push_back(copy);
  }
  for (unsigned r = 0; r < n.numResults(); ++r) {
    const Value *v = n.result(r);
    if (!isFloat(v->getType().dtype))
      continue;
    Value *seed = arm.addInput(v->getName() + ".adj", v->getType());
    accumulate(mapped.lookup(forward.outputs[r].value), seed, gb);
  }
  bool ok = reverse(recomputed, gb, diag);
  for (unsigned i = 0; ok && i < forward.inputs().size(); ++i) {
    Value *in = mapped.lookup(forward.inputs()[i].value);
    if (!isFloat(in->getType().dtype))
      continue;
    Value *g = adjoint.lookup(in);
    if (!g) {
      gb.setBase(in->getName() + ".zero");
      g = gb.zeros(in->getType());
    }
    arm.outputs.push_back(
        {g ? g->getName() : "", g, OutputKind::Output, "", {}});
  }
  adjoint = std::move(saved);
  return ok && !gb.hasFailed();
}

bool AutodiffPass::addGradientOutputs(Graph &graph, GraphBuilder &builder,
                                      DiagnosticEngine &diag) {
  for (const GraphInput &in : graph.inputs()) {
    const TensorType &type = in.value->getType();
    if (in.kind != InputKind::Parameter || !isFloat(type.dtype))
      continue;
    std::string name = in.value->getName() + ".grad";
    for (const GraphOutput &o : graph.outputs)
      if (o.name == name) {
        diag.error(o.loc, "autodiff: output '" + name +
                              "' exists already; gradients are named so");
        return false;
      }
    Value *g = adjoint.lookup(in.value);
    if (!g) {
      Node *zeros = builder.create(
          OpKind::Fill, name, {},
          {{"dtype", type.dtype},
           {"shape", std::vector<Dim>(type.dims.begin(), type.dims.end())},
           {"value", numberOf(type.dtype, Element())}});
      if (!zeros)
        return false;
      g = zeros->result();
    }
    graph.outputs.push_back({name, g, OutputKind::Output, "", in.loc});
  }
  return true;
}

bool AutodiffPass::run(Graph &graph, PassContext &ctx) {
  adjoint.clear();
  const GraphOutput *loss = findLoss(graph, ctx.diag);
  if (!loss)
    return false;
  GraphBuilder builder(graph, ctx.diag);
  builder.setInsertionPointToEnd(graph);
  ValueBuilder gb(builder);
  GraphOutput seed = *loss; // graph.outputs grows below.
  return backward(graph, seed, gb, ctx.lossScaling, ctx.diag) &&
         addGradientOutputs(graph, builder, ctx.diag);
}

std::unique_ptr<Pass> cgc::createAutodiffPass() {
  return std::make_unique<AutodiffPass>();
}
