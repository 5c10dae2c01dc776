//===- ApplyOptimizer.cpp - The declared optimizer's update, in the graph --===//
//
// Algorithm: after autodiff, for every parameter p with its `<p>.grad`
// output g, in input order, append the update of the graph's declared
// optimizer as IR ops, and make its results outputs that replace their
// persistent targets for the next run:
//   sgd:   d = g (+ wd p); with momentum mu: b' = mu b + d, d = b' (nesterov:
//          d + mu b'); p' = p - lr d                       (PyTorch's SGD)
//   adam:  g (+ wd p); adamw: p (1 - lr wd) first; t' = t + 1;
//          m' = b1 m + (1 - b1) g; v' = b2 v + (1 - b2) g^2;
//          p' = p - lr / (1 - b1^t') m' / (sqrt(v') / sqrt(1 - b2^t') + eps)
// The hyperparameters are `optimizer_state` scalars named `optimizer.lr`,
// `optimizer.momentum`, ..., initialized to the declared values, so the
// caller can set them between replays (cgc_engine_state_write) without a
// compile; a weight decay or momentum of 0 leaves its term out. The
// parameters of group k (the declaration's `groups`, torch.optim's param
// groups after the first) read their own, `optimizer.group<k>.lr`, ... Moments
// are `optimizer_state` inputs `<p>.momentum_buffer`, `<p>.exp_avg` and
// `<p>.exp_avg_sq` (zeros); Adam's step count is `optimizer.step`. Each
// `rng_state` that dropouts read advances its offset by more than the
// largest stream they draw (offset attr + elements, rounded up to 4), so
// every replay draws fresh masks with no host work. The `.grad` outputs
// are dropped (`cgc --gradients` keeps them, without an update).
// A `schedule` (linear or cosine after a linear warmup, transformers'
// rules) multiplies every learning rate by its factor at the update's
// index, an `optimizer.schedule_step` state the update advances: the host
// writes nothing per step.
// `max_grad_norm: c` scales every gradient by min(1, c / (norm + 1e-6)), norm
// their global 2-norm, which becomes the output `optimizer.grad_norm`
// (torch.nn.utils.clip_grad_norm_).
// Dynamic loss scaling (ctx.lossScaling, f16 training; autodiff scaled
// the loss's adjoint by the state `optimizer.loss_scale`): every gradient
// is multiplied by 1 / scale, the step is skipped on the device when one
// is not finite, and the scale follows PyTorch's GradScaler (backoff 0.5
// on a non-finite step, growth 2 after 2000 good steps in a row:
// `optimizer.growth_tracker`; the factors are hyperparameter state).
// Training control, on the device with no host read: `accumulate: k` sums
// the gradients in `<p>.grad_accum` and updates on every k-th replay (an
// `optimizer.micro_step` counter) with their mean (in the last micro-step's
// graph of accumulate-gradients, ctx.microStep Last, the `.grad` outputs are
// the sums already: the mean, updated on every replay); `skip_nonfinite` keeps
// parameters and optimizer state when a gradient holds an inf or NaN. With
// either, the update of every parameter and its optimizer state is built
// inside the `then` arm of one `if` (`optimizer.update`) on that device
// bool, whose `else` arm passes the state through: codegen makes it a
// conditional node, so a replay that does not update reads no parameter,
// and plan-memory writes the arm's results over the state in place.
// A 16-bit (f16, bf16) parameter trains in its own dtype, as a module
// converted with .to(torch.bfloat16) does in PyTorch: its gradient is
// widened to f32 first (accumulation, clipping and the finite check run in
// f32), the update computes in f32, and each value it stores (the
// parameter, its momentum buffer or moments, in the parameter's dtype as
// torch.optim keeps them) is rounded once; the step reads a moment as
// stored, rounded, as PyTorch's in-place update does.
// Requires: a graph with an optimizer, after autodiff. Guarantees: one
// `parameter_update` per float parameter, one `buffer_mutation` per state.
//
//===----------------------------------------------------------------------===//
#include "passes/DerivativeRules.h"
#include "passes/RandomStreams.h"
#include "passes/Pass.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/ErrorHandling.h"

using namespace cgc;

namespace {

class ApplyOptimizerPass : public Pass {
public:
  llvm::StringRef name() const override { return "apply-optimizer"; }
  llvm::StringRef summary() const override {
    return "append the declared optimizer's update of every parameter "
           "(after autodiff) and advance the dropout streams";
  }
  bool run(Graph &graph, PassContext &ctx) override;

private:
  Value *state(const std::string &name, const TensorType &type, double init);
  Value *hyper(const char *name, double value);
  bool assignGroups(const std::vector<Value *> &params, DiagnosticEngine &diag);
  void update(Value *target, Value *next, OutputKind kind, bool gated = true);
  Value *store(Value *target, Value *next, OutputKind kind);
  /// \p v in f32, the update's arithmetic (ValueBuilder::cast: v itself
  /// when it is f32).
  Value *widened(Value *v) { return gb->cast(v, DType::F32); }
  Value *accumulated(Value *p, Value *g);
  Value *gate(Value *finite);
  Value *allFinite(llvm::ArrayRef<Value *> gradients);
  void updateLossScale(Value *scale, Value *finite);
  Value *clip(std::vector<Value *> &gradients);
  Value *learningRate(double declared);
  Value *scheduleFactor();
  Value *sgd(Value *p, Value *g);
  Value *adam(Value *p, Value *g);
  Value *adamStep();
  void openGatedUpdate(Value *condition);
  void closeGatedUpdate(GraphBuilder &b);
  Value *local(Value *v);

  Graph *graph = nullptr;
  ValueBuilder *gb = nullptr;
  OptimizerDecl decl;
  llvm::StringMap<Value *> hypers;
  /// The group whose hyperparameters the update being built reads, and
  /// each parameter's group (0: the declaration's own).
  const OptimizerHyper *group = nullptr;
  std::string groupPrefix;
  llvm::DenseMap<Value *, unsigned> groupOf;
  Value *step = nullptr; ///< Adam's t + 1, built once.
  Value *factor = nullptr; ///< The schedule's factor, built once.
  Value *isKth = nullptr; ///< accumulate: this replay updates.
  Value *apply = nullptr; ///< Whether this replay updates (null: always).
  std::vector<GraphOutput> updates;
  /// The gated update: the `if`, its arms' inputs for outer values, and
  /// the (target, next value in the then arm, kind) of each gated update.
  Node *gated = nullptr;
  llvm::DenseMap<Value *, std::pair<Value *, Value *>> armInputs;
  struct GatedUpdate {
    Value *target, *next;
    OutputKind kind;
  };
  std::vector<GatedUpdate> gatedUpdates;
};

} // namespace

/// A new optimizer_state input filled with \p init.
Value *ApplyOptimizerPass::state(const std::string &name, const TensorType &type,
                                 double init) {
  return addOptimizerState(*graph, name, type, init, decl.loc);
}

/// Hyperparameter \p name of the current group as state, read where the
/// update is built.
Value *ApplyOptimizerPass::hyper(const char *name, double value) {
  std::string full = "optimizer." + groupPrefix + name;
  Value *&v = hypers[full];
  if (!v)
    v = state(full, TensorType::scalar(DType::F32), value);
  return local(v);
}

/// Each parameter's group: k for the parameters group k lists (once, in
/// one group), 0 for the rest.
bool ApplyOptimizerPass::assignGroups(const std::vector<Value *> &params,
                                      DiagnosticEngine &diag) {
  llvm::StringMap<Value *> byName;
  for (Value *p : params)
    byName[p->getName()] = p;
  groupOf.clear();
  for (size_t k = 0; k < decl.groups.size(); ++k)
    for (const std::string &name : decl.groups[k].params) {
      Value *p = byName.lookup(name);
      if (!p) {
        diag.error(decl.loc, "apply-optimizer: group " + std::to_string(k + 1) +
                                 " lists '" + name + "', which is no float parameter");
        return false;
      }
      if (!groupOf.try_emplace(p, unsigned(k + 1)).second) {
        diag.error(decl.loc, "apply-optimizer: parameter '" + name +
                                 "' is in two groups");
        return false;
      }
    }
  return true;
}

/// \p next replaces \p target after the replay; a gated update (computed
/// in the then arm of the gated `if`) keeps the old value on a replay that
/// does not update.
void ApplyOptimizerPass::update(Value *target, Value *next, OutputKind kind,
                                bool isGated) {
  if (next && isGated && gated)
    gatedUpdates.push_back({target, next, kind});
  else if (next)
    updates.push_back({target->getName() + ".next", next, kind,
                       target->getName(), decl.loc});
}

/// \p next (f32) replaces \p target, rounded to the target's dtype;
/// returns the value as stored.
Value *ApplyOptimizerPass::store(Value *target, Value *next, OutputKind kind) {
  Value *stored = gb->cast(next, target->getType().dtype);
  update(target, stored, kind);
  return stored;
}

/// The value that stands for outer value \p v where the update is being
/// built: v itself, or the then arm's input that the gated `if` passes it
/// to (added on first use, to both arms).
Value *ApplyOptimizerPass::local(Value *v) {
  if (!gated || !v)
    return v;
  auto it = armInputs.find(v);
  if (it != armInputs.end())
    return it->second.first;
  gated->addOperand(v);
  Value *then = gated->region(0).addInput(v->getName(), v->getType());
  Value *otherwise = gated->region(1).addInput(v->getName(), v->getType());
  armInputs[v] = {then, otherwise};
  return then;
}

/// Starts the gated `if` on \p condition; the updates built next go into
/// its then arm.
void ApplyOptimizerPass::openGatedUpdate(Value *condition) {
  GraphBuilder &b = gb->builder();
  gated = b.createWithRegions(OpKind::If, "optimizer.update", {condition});
  b.setInsertionPointToEnd(gated->region(0));
}

/// Ends the gated `if`: the then arm yields the next values, the else arm
/// the current ones, and the if's results become the updates.
void ApplyOptimizerPass::closeGatedUpdate(GraphBuilder &b) {
  std::vector<std::string> names;
  for (const GatedUpdate &u : gatedUpdates) {
    local(u.target);
    Value *old = armInputs[u.target].second;
    gated->region(0).outputs.push_back(
        {u.next->getName(), u.next, OutputKind::Output, "", {}});
    gated->region(1).outputs.push_back(
        {old->getName(), old, OutputKind::Output, "", {}});
    names.push_back(u.target->getName() + ".updated");
  }
  b.setInsertionPointToEnd(*graph);
  if (!b.addResults(*gated, names))
    return gb->fail();
  for (size_t k = 0; k < gatedUpdates.size(); ++k)
    updates.push_back({gatedUpdates[k].target->getName() + ".next",
                       gated->result(k), gatedUpdates[k].kind,
                       gatedUpdates[k].target->getName(), decl.loc});
}

/// accumulate = k: the mean of the k gradients summed in `<p>.grad_accum`,
/// which restarts from 0 on the k-th replay.
Value *ApplyOptimizerPass::accumulated(Value *p, Value *g) {
  if (!isKth) {
    Value *micro = state("optimizer.micro_step", TensorType::scalar(DType::F32), 0);
    Value *next = gb->add(micro, gb->fill(1.0, DType::F32));
    isKth = gb->op(OpKind::Ge, {next, gb->fill(double(decl.accumulate), DType::F32)});
    update(micro, gb->where(isKth, gb->fill(0.0, DType::F32), next),
           OutputKind::BufferMutation, /*gated=*/false);
  }
  Value *sum = state(p->getName() + ".grad_accum", g->getType(), 0);
  Value *total = gb->add(sum, g);
  update(sum, gb->where(isKth, gb->fill(0.0, DType::F32), total),
         OutputKind::BufferMutation, /*gated=*/false);
  return gb->scale(total, 1.0 / double(decl.accumulate));
}

/// Whether every gradient is finite (sum(g * 0) is 0 exactly then).
Value *ApplyOptimizerPass::allFinite(llvm::ArrayRef<Value *> gradients) {
  Value *poison = nullptr;
  for (Value *g : gradients) {
    Value *s = gb->op(OpKind::Sum, {gb->scale(g, 0.0)});
    poison = poison ? gb->add(poison, s) : s;
  }
  return poison ? gb->op(OpKind::Eq, {poison, gb->fill(0.0, DType::F32)}) : nullptr;
}

/// Whether this replay updates: on the k-th replay of an accumulation, and
/// only if \p finite (when the gradients are checked).
Value *ApplyOptimizerPass::gate(Value *finite) {
  Value *go = isKth;
  if (finite)
    go = go ? gb->op(OpKind::LogicalAnd, {go, finite}) : finite;
  return go;
}

/// GradScaler's update, on every replay that steps (each replay, or the
/// k-th of an accumulation): a non-finite step multiplies the scale by
/// backoff_factor (0.5) and restarts the count of good steps; the
/// growth_interval-th good step in a row (2000) multiplies it by
/// growth_factor (2) and restarts the count.
void ApplyOptimizerPass::updateLossScale(Value *scale, Value *finite) {
  Value *tracker = state("optimizer.growth_tracker", TensorType::scalar(DType::F32), 0);
  Value *counted = gb->add(tracker, gb->fill(1.0, DType::F32));
  Value *grow = gb->op(OpKind::Ge, {counted, hyper("growth_interval", 2000.0)});
  Value *zero = gb->fill(0.0, DType::F32);
  // Grown only while the grown scale is finite (scale * 0 is 0 exactly then).
  Value *grown = gb->mul(scale, hyper("growth_factor", 2.0));
  Value *grownFinite = gb->op(OpKind::Eq, {gb->scale(grown, 0.0), zero});
  Value *nextScale = gb->where(
      finite, gb->where(gb->op(OpKind::LogicalAnd, {grow, grownFinite}), grown, scale),
      gb->mul(scale, hyper("backoff_factor", 0.5)));
  Value *nextTracker = gb->where(finite, gb->where(grow, zero, counted), zero);
  if (isKth) {
    nextScale = gb->where(isKth, nextScale, scale);
    nextTracker = gb->where(isKth, nextTracker, tracker);
  }
  update(scale, nextScale, OutputKind::BufferMutation, /*gated=*/false);
  update(tracker, nextTracker, OutputKind::BufferMutation, /*gated=*/false);
}

/// max_grad_norm = c: every gradient scaled by min(1, c / (norm + 1e-6)),
/// norm the 2-norm of all of them together (torch.nn.utils.clip_grad_norm_);
/// returns the norm (before clipping).
Value *ApplyOptimizerPass::clip(std::vector<Value *> &gradients) {
  Value *squares = nullptr;
  for (Value *g : gradients) {
    Value *s = gb->op(OpKind::Sum, {gb->mul(g, g)});
    squares = squares ? gb->add(squares, s) : s;
  }
  Value *norm = gb->op(OpKind::Sqrt, {squares});
  Value *coef = gb->div(hyper("max_grad_norm", decl.maxGradNorm),
                        gb->add(norm, gb->fill(1e-6, DType::F32)));
  coef = gb->op(OpKind::Minimum, {coef, gb->fill(1.0, DType::F32)});
  for (Value *&g : gradients)
    g = gb->mul(g, coef);
  return norm;
}

/// The schedule's factor at this update's index t (a state counting the
/// updates, advanced by this one), transformers' rules:
/// t < W: t / max(1, W); then linear: max(0, (T - t) / max(1, T - W)),
/// cosine: max(0, (1 + cos(pi (t - W) / max(1, T - W))) / 2).
Value *ApplyOptimizerPass::scheduleFactor() {
  if (factor)
    return factor;
  auto k = [&](double v) { return gb->fill(v, DType::F32); };
  Value *count = state("optimizer.schedule_step", TensorType::scalar(DType::F32), 0);
  Value *t = local(count);
  update(count, gb->add(t, k(1)), OutputKind::BufferMutation);
  double w = double(decl.warmupSteps), total = double(decl.totalSteps);
  Value *warm = gb->scale(t, 1.0 / std::max(1.0, w));
  Value *span = k(std::max(1.0, total - w));
  Value *decay = nullptr;
  switch (decl.lrSchedule) {
  case OptimizerDecl::LrSchedule::Linear:
    decay = gb->div(gb->sub(k(total), t), span);
    break;
  case OptimizerDecl::LrSchedule::Cosine: {
    Value *progress = gb->div(gb->sub(t, k(w)), span);
    decay = gb->scale(gb->add(k(1), gb->op(OpKind::Cos, {gb->scale(progress, M_PI)})), 0.5);
    break;
  }
  case OptimizerDecl::LrSchedule::Constant:
    llvm_unreachable("learningRate() applies no factor without a schedule");
  }
  decay = gb->op(OpKind::Maximum, {decay, k(0)});
  factor = gb->where(gb->op(OpKind::Lt, {t, k(w)}), warm, decay);
  return factor;
}

/// The current group's learning rate, times the schedule's factor.
Value *ApplyOptimizerPass::learningRate(double declared) {
  Value *lr = hyper("lr", declared);
  if (decl.lrSchedule == OptimizerDecl::LrSchedule::Constant)
    return lr;
  return gb->mul(lr, scheduleFactor());
}

Value *ApplyOptimizerPass::sgd(Value *param, Value *g) {
  Value *p = widened(local(param)), *d = local(g);
  const OptimizerHyper &h = *group;
  if (h.weightDecay > 0)
    d = gb->add(d, gb->mul(hyper("weight_decay", h.weightDecay), p));
  if (h.momentum > 0) {
    Value *mu = hyper("momentum", h.momentum);
    Value *buffer = state(param->getName() + ".momentum_buffer", param->getType(), 0);
    Value *next = widened(store(buffer, gb->add(gb->mul(mu, widened(local(buffer))), d),
                                OutputKind::BufferMutation));
    d = h.nesterov ? gb->add(d, gb->mul(mu, next)) : next;
  }
  return gb->sub(p, gb->mul(learningRate(h.lr), d));
}

Value *ApplyOptimizerPass::adamStep() {
  if (!step) {
    Value *t = state("optimizer.step", TensorType::scalar(DType::F32), 0);
    step = gb->add(local(t), gb->fill(1.0, DType::F32));
    update(t, step, OutputKind::BufferMutation);
  }
  return step;
}

Value *ApplyOptimizerPass::adam(Value *param, Value *grad) {
  const OptimizerHyper &h = *group;
  Value *p = widened(local(param)), *g = local(grad), *lr = learningRate(h.lr);
  Value *one = gb->fill(1.0, DType::F32);
  if (h.weightDecay > 0) {
    Value *wd = hyper("weight_decay", h.weightDecay);
    if (decl.kind == OptimizerDecl::Kind::AdamW)
      p = gb->mul(p, gb->sub(one, gb->mul(lr, wd)));
    else
      g = gb->add(g, gb->mul(wd, p));
  }
  Value *b1 = hyper("beta1", h.beta1), *b2 = hyper("beta2", h.beta2);
  Value *m = state(param->getName() + ".exp_avg", param->getType(), 0);
  Value *v = state(param->getName() + ".exp_avg_sq", param->getType(), 0);
  Value *m2 = widened(store(
      m, gb->add(gb->mul(b1, widened(local(m))), gb->mul(gb->sub(one, b1), g)),
      OutputKind::BufferMutation));
  Value *v2 = widened(store(
      v, gb->add(gb->mul(b2, widened(local(v))), gb->mul(gb->sub(one, b2), gb->mul(g, g))),
      OutputKind::BufferMutation));
  Value *t = adamStep();
  Value *bc1 = gb->sub(one, gb->op(OpKind::Pow, {b1, t}));
  Value *bc2 = gb->sub(one, gb->op(OpKind::Pow, {b2, t}));
  Value *denom = gb->add(gb->div(gb->op(OpKind::Sqrt, {v2}), gb->op(OpKind::Sqrt, {bc2})),
                         hyper("eps", h.eps));
  return gb->sub(p, gb->mul(gb->div(lr, bc1), gb->div(m2, denom)));
}

bool ApplyOptimizerPass::run(Graph &g, PassContext &ctx) {
  if (!g.optimizer) {
    ctx.diag.error({}, "apply-optimizer: the graph declares no \"optimizer\"");
    return false;
  }
  graph = &g;
  decl = *g.optimizer;
  hypers.clear();
  step = factor = nullptr;
  updates.clear();
  gated = nullptr;
  armInputs.clear();
  gatedUpdates.clear();
  GraphBuilder b(g, ctx.diag);
  b.setInsertionPointToEnd(g);
  ValueBuilder grads(b);
  gb = &grads;
  llvm::StringMap<Value *> gradient;
  std::vector<GraphOutput> kept;
  for (const GraphOutput &o : g.outputs) {
    llvm::StringRef name = o.name;
    if (name.consume_back(".grad") && o.kind == OutputKind::Output)
      gradient[name] = o.value;
    else
      kept.push_back(o);
  }
  std::vector<Value *> params, effective;
  for (const GraphInput &in : g.inputs())
    if (in.kind == InputKind::Parameter && isFloat(in.value->getType().dtype))
      params.push_back(in.value);
  isKth = apply = nullptr;
  // The last micro-step's graph: accumulate-gradients made each `.grad`
  // the sum of the k gradients; the update runs on every replay of it.
  bool accumulatedAlready = ctx.microStep == PassContext::MicroStep::Last;
  // Dynamic loss scaling: autodiff seeded the loss's adjoint with the
  // scale, so every gradient is unscaled by 1 / scale first.
  Value *scale = ctx.lossScaling ? g.lookupValue(kLossScale) : nullptr;
  if (ctx.lossScaling && !scale) {
    ctx.diag.error(decl.loc, "apply-optimizer: loss scaling, but autodiff did not "
                             "scale the loss (no state '" + std::string(kLossScale) + "')");
    return false;
  }
  Value *unscale = scale ? grads.div(grads.fill(1.0, DType::F32), scale) : nullptr;
  if (!assignGroups(params, ctx.diag))
    return false;
  for (Value *p : params) {
    Value *grad = gradient.lookup(p->getName());
    if (!grad) {
      ctx.diag.error({}, "apply-optimizer: parameter '" + p->getName() +
                             "' has no gradient output (run autodiff first)");
      return false;
    }
    grads.setBase(p->getName() + ".accumulate");
    grad = widened(grad);
    effective.push_back(decl.accumulate <= 1 ? grad
                        : accumulatedAlready ? grads.scale(grad, 1.0 / double(decl.accumulate))
                                             : accumulated(p, grad));
    if (scale) {
      grads.setBase(p->getName() + ".unscale");
      effective.back() = grads.mul(effective.back(), unscale);
    }
  }
  groupPrefix.clear();
  if (decl.maxGradNorm > 0 && !params.empty()) {
    grads.setBase("optimizer.clip");
    Value *norm = clip(effective);
    kept.push_back({"optimizer.grad_norm", norm, OutputKind::Output, "", decl.loc});
  }
  grads.setBase("optimizer.gate");
  Value *finite = decl.skipNonFinite || scale ? allFinite(effective) : nullptr;
  apply = gate(finite);
  if (scale && finite) {
    grads.setBase("optimizer.loss_scale");
    updateLossScale(scale, finite);
  }
  if (apply)
    openGatedUpdate(apply);
  for (size_t i = 0; i < params.size(); ++i) {
    Value *p = params[i];
    grads.setBase(p->getName() + ".step");
    unsigned k = groupOf.lookup(p);
    group = k ? &decl.groups[k - 1].hyper : &decl;
    groupPrefix = k ? "group" + std::to_string(k) + "." : "";
    store(p, decl.kind == OptimizerDecl::Kind::Sgd ? sgd(p, effective[i])
                                                   : adam(p, effective[i]),
          OutputKind::ParameterUpdate);
  }
  if (gated && !grads.hasFailed())
    closeGatedUpdate(b);
  grads.setBase("rng.advance");
  for (auto [stream, next] : advancedStreams(g, grads))
    update(stream, next, OutputKind::BufferMutation, /*gated=*/false);
  if (grads.hasFailed())
    return false;
  kept.insert(kept.end(), updates.begin(), updates.end());
  g.outputs = std::move(kept);
  return true;
}

std::unique_ptr<Pass> cgc::createApplyOptimizerPass() {
  return std::make_unique<ApplyOptimizerPass>();
}
