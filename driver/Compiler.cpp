//===- Compiler.cpp - The compile driver: IR to .cgc artifact ----------------===//
#include "driver/Compiler.h"

#include "ir/Builder.h"
#include "ir/Initializers.h"

#include <chrono>
#include <cstdlib>

using namespace cgc;

bool cgc::runDefaultPipeline(Graph &graph, const CompileOptions &options,
                             PassContext &ctx) {
  PassManager pm;
  ctx.report = options.report;
  ctx.loopBound = options.maxLoopIterations;
  ctx.dataParallel = options.dataParallelOptions;
  ctx.microStep = options.microStep;
  ctx.lossScaling = options.train && options.autocast == DType::F16;
  using MicroStep = PassContext::MicroStep;
  bool updates = options.train && options.microStep != MicroStep::Accumulate;
  bool ok = (!(options.gradients || options.train) ||
             pm.addPipeline("autodiff", ctx.diag)) &&
            (options.microStep == MicroStep::Whole ||
             pm.addPipeline("accumulate-gradients", ctx.diag)) &&
            (!(updates && options.dataParallel) ||
             pm.addPipeline("data-parallel", ctx.diag)) &&
            (!updates || pm.addPipeline("apply-optimizer", ctx.diag)) &&
            pm.addPipeline(defaultPipeline(options.fuse), ctx.diag) &&
            pm.run(graph, ctx, llvm::nulls());
  if (options.times)
    for (const auto &[pass, ms] : pm.timings())
      options.times->push_back({"pass " + pass, ms});
  return ok;
}

/// Every combination of the bound values, in order (B=8, B=16, ...).
static std::vector<std::map<std::string, int64_t>>
specializations(const CompileOptions &options) {
  std::vector<std::map<std::string, int64_t>> out(1);
  for (const auto &[name, values] : options.bindDims) {
    std::vector<std::map<std::string, int64_t>> next;
    for (const auto &partial : out)
      for (int64_t v : values) {
        next.push_back(partial);
        next.back()[name] = v;
      }
    out = std::move(next);
  }
  return out;
}

static std::string graphName(const std::map<std::string, int64_t> &dims) {
  std::string name;
  for (const auto &[dim, value] : dims)
    name += (name.empty() ? "" : ",") + dim + "=" + std::to_string(value);
  return name.empty() ? "main" : name;
}

/// Checks the bound dims against the model's declarations.
static bool checkBindings(const Graph &model, const CompileOptions &options,
                          DiagnosticEngine &diag) {
  if (options.train && !options.bindDims.empty()) {
    diag.error({}, "--bind-dim with --train is not supported yet (a "
                   "training artifact holds its train and eval graphs)");
    return false;
  }
  for (const auto &[name, values] : options.bindDims) {
    auto index = model.dims().lookup(name);
    if (!index || model.dims().get(*index).dataDependent) {
      diag.error({}, "--bind-dim: the model declares no dim '" + name + "'");
      return false;
    }
    const SymbolicDim &d = model.dims().get(*index);
    for (int64_t v : values)
      if (v < d.min || v > d.max) {
        diag.error({}, "--bind-dim: " + name + "=" + std::to_string(v) +
                           " is outside the declared range [" +
                           std::to_string(d.min) + ", " +
                           std::to_string(d.max) + "]");
        return false;
      }
  }
  for (const GraphInput &in : model.inputs())
    if (isPersistent(in.kind) && !in.value->getType().isStatic()) {
      diag.error(in.loc, "input '" + in.value->getName() +
                             "' is state with a symbolic shape; the graphs "
                             "of one artifact share their state, so its "
                             "shape must be static");
      return false;
    }
  return true;
}

int64_t cgc::largestExtent(Dim d, const DimTable &table,
                           const CompileOptions &options) {
  if (d.isStatic())
    return d.extent();
  auto bound = options.bindDims.find(table.get(d.symbolIndex()).name);
  if (bound == options.bindDims.end())
    return table.upperBound(d);
  return *std::max_element(bound->second.begin(), bound->second.end());
}

/// Bytes of \p type at its largest extents.
static uint64_t slotBytes(const TensorType &type, const DimTable &table,
                          const CompileOptions &options) {
  uint64_t n = 1;
  for (Dim d : type.dims)
    n *= uint64_t(std::max<int64_t>(largestExtent(d, table, options), 0));
  return n * dtypeSize(type.dtype);
}

/// The shared slot sizes: user inputs, then outputs, in order (an update
/// takes its state's slot, as plan-memory numbers them).
static PlanLayout sharedLayout(const Graph &model,
                               const CompileOptions &options) {
  PlanLayout layout;
  for (const GraphInput &in : model.inputs())
    if (!isPersistent(in.kind))
      layout.slotBytes.push_back(
          slotBytes(in.value->getType(), model.dims(), options));
  for (const GraphOutput &o : model.outputs)
    if (!updatesState(o.kind))
      layout.slotBytes.push_back(
          slotBytes(o.value->getType(), model.dims(), options));
  return layout;
}

/// The target every pass of a compile schedules for: \p options' arch and
/// policies (training writes every attention out; its convolutions follow
/// the policy, their derivatives cuDNN's backward operations).
static Target targetOf(const CompileOptions &options) {
  return targetFor(options.arch, options.productPolicy,
                   options.train ? AttentionPolicy::Expand : options.attentionPolicy,
                   options.convolutionPolicy);
}

/// Runs the pipeline on \p unit, lowers it into \p out and makes the next
/// graph's constants follow its state.
static bool lowerUnit(CompiledGraph &unit, const CompileOptions &options,
                      PlanLayout &layout, Compilation &out,
                      DiagnosticEngine &diag) {
  PassContext ctx{diag, unit.dims};
  ctx.layout = layout;
  ctx.target = targetOf(options);
  ctx.differentiated = options.train || options.gradients || options.overTrainingState;
  announcePhase(options.progress, "passes on graph '" + unit.name + "'");
  if (!runDefaultPipeline(*unit.ir, options, ctx))
    return false;
  PhaseTimer timer(options.times, "lower graph '" + unit.name + "'", options.progress);
  if (!lowerGraph(*unit.ir, *ctx.memoryPlan, unit.name, out.program, diag))
    return false;
  out.program.graphs.back().dims = unit.dims;
  layout.persistentBase = ctx.memoryPlan->persistentSize;
  unit.plan = std::move(ctx.memoryPlan);
  out.graphs.push_back(std::move(unit));
  return true;
}

/// Gives \p eval (the forward graph, or the micro-step graph) the inputs
/// and outputs of \p train, in its order, so both graphs share every slot
/// and state tensor: the inputs apply-optimizer added join it, each update
/// becomes its target itself (eval leaves the state as it is) unless
/// \p keepUpdates and eval updates that target too (the micro-step's
/// gradient sums, running statistics and dropout streams), and an output
/// of the step alone (apply-optimizer's gradient norm) is zeros in eval.
static bool matchTrainingSignature(Graph &eval, const Graph &train,
                                   DiagnosticEngine &diag, bool keepUpdates = false) {
  for (size_t i = 0; i < train.inputs().size(); ++i) {
    const GraphInput &in = train.inputs()[i];
    if (i < eval.inputs().size()) {
      if (eval.inputs()[i].value->getName() != in.value->getName())
        break;
      continue;
    }
    GraphInput copy = in;
    copy.value = eval.addInput(in.value->getName(), in.value->getType());
    eval.input(i) = copy;
  }
  std::vector<GraphOutput> outputs;
  for (const GraphOutput &o : train.outputs) {
    bool update = updatesState(o.kind);
    const GraphOutput *same = nullptr;
    for (const GraphOutput &e : eval.outputs)
      if (e.name == o.name)
        same = &e;
    bool ownUpdate = keepUpdates && update && same && updatesState(same->kind);
    GraphOutput copy = ownUpdate ? *same : update ? o : same ? *same : GraphOutput();
    if (update && !ownUpdate)
      copy.value = eval.lookupValue(o.target);
    else if (!same && o.value->getType().isStatic()) {
      GraphBuilder b(eval, diag);
      const TensorType &t = o.value->getType();
      Node *zeros = b.create(OpKind::Fill, o.name, {},
                             {{"dtype", t.dtype},
                              {"shape", std::vector<Dim>(t.dims.begin(), t.dims.end())},
                              {"value", numberOf(t.dtype, Element())}});
      copy = o;
      copy.value = zeros ? zeros->result() : nullptr;
    }
    if (!copy.value || eval.inputs().size() != train.inputs().size()) {
      diag.error(o.loc, "cgc --train: the eval graph cannot share output '" +
                            o.name + "' and the inputs of the train graph");
      return false;
    }
    outputs.push_back(copy);
  }
  eval.outputs = std::move(outputs);
  return true;
}

/// Graph "train.accumulate" of a data-parallel step with `accumulate: k`:
/// micro-steps 1 to k-1 (the gradients added to their sums, no collective,
/// no update), over \p train's state.
static bool lowerMicroStep(std::unique_ptr<Graph> micro, const Graph &train,
                           const CompileOptions &options, PlanLayout &layout,
                           Compilation &out, DiagnosticEngine &diag) {
  CompiledGraph unit;
  unit.name = "train.accumulate";
  unit.owned = std::move(micro);
  unit.ir = unit.owned.get();
  CompileOptions accumulate = options;
  accumulate.microStep = PassContext::MicroStep::Accumulate;
  // Its own passes first (they add the sums' state), then train's
  // signature, then the rest of the pipeline.
  PassManager pm;
  PassContext ctx{diag, {}};
  ctx.target = targetOf(options);
  ctx.report = options.report;
  ctx.microStep = accumulate.microStep;
  ctx.lossScaling = options.autocast == DType::F16;
  if (!pm.addPipeline("autodiff,accumulate-gradients", diag) ||
      !pm.run(*unit.ir, ctx, llvm::nulls()) ||
      !matchTrainingSignature(*unit.ir, train, diag, /*keepUpdates=*/true))
    return false;
  accumulate.train = accumulate.gradients = false;
  accumulate.overTrainingState = true;
  accumulate.microStep = PassContext::MicroStep::Whole; // Done above.
  return lowerUnit(unit, accumulate, layout, out, diag);
}

/// `cgc --train`: graph "train" (forward, backward, update) and graph
/// "eval" (the forward graph with dropout off), over one state; with
/// `--data-parallel` and `accumulate: k`, "train" is the k-th micro-step
/// and "train.accumulate" the others (accumulate-gradients).
static bool lowerTraining(Graph &model, const CompileOptions &requested,
                          Compilation &out, DiagnosticEngine &diag) {
  std::unique_ptr<Graph> forward = model.clone();
  CompileOptions options = requested;
  std::unique_ptr<Graph> micro;
  if (options.dataParallel && model.optimizer && model.optimizer->accumulate > 1) {
    micro = model.clone();
    options.microStep = PassContext::MicroStep::Last;
  }
  PlanLayout layout;
  layout.packState = false; // The eval graph reads the state train updates.
  CompiledGraph train;
  train.name = "train";
  train.ir = &model;
  if (!lowerUnit(train, options, layout, out, diag))
    return false;
  if (micro && !lowerMicroStep(std::move(micro), model, requested, layout, out, diag))
    return false;
  PassManager pm;
  PassContext ctx{diag, {}};
  if (!pm.addPipeline("eval-mode", diag) ||
      !pm.run(*forward, ctx, llvm::nulls()) ||
      !matchTrainingSignature(*forward, model, diag))
    return false;
  CompiledGraph eval;
  eval.name = "eval";
  eval.owned = std::move(forward);
  eval.ir = eval.owned.get();
  CompileOptions inference = options;
  inference.train = inference.gradients = false;
  inference.overTrainingState = true;
  inference.microStep = PassContext::MicroStep::Whole;
  if (!lowerUnit(eval, inference, layout, out, diag))
    return false;
  dropUnusedKernels(out.program);
  return true;
}

/// A model with symbolic dims and no `--bind-dim`: pad-dynamic-shapes
/// runs on it once, and \p options binds every symbolic dim to each of its
/// buckets (its max without buckets), one graph per combination.
static bool padModel(Graph &model, CompileOptions &options,
                     DiagnosticEngine &diag) {
  PassManager pm;
  PassContext ctx{diag, {}};
  if (!pm.addPipeline("pad-dynamic-shapes", diag) ||
      !pm.run(model, ctx, llvm::nulls()))
    return false;
  for (unsigned i = 0; i < model.dims().size(); ++i) {
    const SymbolicDim &d = model.dims().get(i);
    if (d.dataDependent)
      continue;
    options.bindDims[d.name] =
        d.buckets.empty() ? std::vector<int64_t>{d.max} : d.buckets;
  }
  return true;
}

static bool hasSymbolicDims(const Graph &model) {
  for (unsigned i = 0; i < model.dims().size(); ++i)
    if (!model.dims().get(i).dataDependent)
      return true;
  return false;
}

/// The passes that run once on the whole model before any other, so that
/// autodiff, eval-mode and pad-dynamic-shapes see only the ops they know;
/// autocast first, so that the layout and attention choices see its
/// 16-bit products.
/// A model autodiff will differentiate keeps batch_norm for eval-mode
/// (lowerTraining) and for autodiff (its own rule); the default pipeline
/// writes it out after.
static bool prepareModel(Graph &model, const CompileOptions &options,
                         DiagnosticEngine &diag) {
  PassManager pm;
  PassContext ctx{diag, {}};
  ctx.target = targetOf(options);
  ctx.autocast = options.autocast;
  ctx.differentiated = options.train || options.gradients;
  std::string first = ctx.differentiated ? "autocast," : "autocast,expand-batch-norm,";
  return pm.addPipeline(first + "expand-attention,layout,trim-conv-taps,expand-convolution", diag) &&
         pm.run(model, ctx, llvm::nulls());
}

bool cgc::slotsAgree(const Compilation &c) {
  const CompiledGraph &first = c.graphs.front();
  auto same = [](const Storage &a, const Storage &b) {
    return a.region == b.region && a.offset == b.offset;
  };
  for (const CompiledGraph &g : c.graphs) {
    for (unsigned i = 0; i < first.ir->inputs().size(); ++i)
      if (!same(g.plan->storageOf(g.ir->inputs()[i].value),
                first.plan->storageOf(first.ir->inputs()[i].value)))
        return false;
    for (unsigned i = 0; i < first.ir->outputs.size(); ++i)
      if (!same(g.plan->buffers[g.plan->outputBuffer[i]].storage,
                first.plan->buffers[first.plan->outputBuffer[i]].storage))
        return false;
  }
  return true;
}

/// A model with entries: graph "main" and a graph per entry over one
/// layout, each lowered from its own copy. State packing (merge-products'
/// weights side by side) must come out alike in every graph; where it does
/// not, they are all lowered again without it.
static bool lowerEntries(const Graph &model, const CompileOptions &options,
                         Compilation &out, DiagnosticEngine &diag) {
  if (!options.bindDims.empty() || hasSymbolicDims(model)) {
    diag.error({}, "a model with entries takes no symbolic dims or --bind-dim "
                   "yet (its graphs are one static layout)");
    return false;
  }
  std::vector<const Graph *> graphs{&model};
  for (const auto &entry : model.entries)
    graphs.push_back(entry.get());
  for (bool pack : {true, false}) {
    Compilation attempt;
    attempt.program = out.program; // lowerModel's settings, no graph yet
    PlanLayout layout = sharedLayout(model, options);
    layout.packState = pack;
    for (const Graph *g : graphs) {
      CompiledGraph unit;
      unit.name = g == &model ? "main" : g->name;
      unit.owned = g->clone();
      unit.owned->entries.clear();
      unit.ir = unit.owned.get();
      if (!lowerUnit(unit, options, layout, attempt, diag))
        return false;
    }
    if (slotsAgree(attempt)) {
      out = std::move(attempt);
      dropUnusedKernels(out.program);
      return true;
    }
  }
  diag.error({}, "internal error: the graphs of the model and its entries put "
                 "an input or output at different offsets");
  return false;
}

/// Per-context state and entries are for inference graphs.
static bool checkTrainingScope(const Graph &model, const CompileOptions &options,
                               DiagnosticEngine &diag) {
  if (!options.train)
    return true;
  if (!model.entries.empty()) {
    diag.error({}, "cgc --train: a model with entries is not supported (a "
                   "training artifact holds its train and eval graphs)");
    return false;
  }
  for (const GraphInput &in : model.inputs())
    if (in.perContext) {
      diag.error(in.loc, "cgc --train: input '" + in.value->getName() +
                             "' has scope \"context\"; training state is the "
                             "engine's");
      return false;
    }
  return true;
}

/// `--gradients` compiles static shapes only: the gradient outputs autodiff
/// adds are not in a padded or bound model's signature yet.
static bool checkGradientDims(const Graph &model, const CompileOptions &options,
                              DiagnosticEngine &diag) {
  if (!options.gradients || options.train)
    return true;
  for (const GraphInput &in : model.inputs())
    if (!in.value->getType().isStatic()) {
      diag.error(in.loc, "cgc --gradients: input '" + in.value->getName() +
                             "' has symbolic type " +
                             typeToString(in.value->getType(), model.dims()) +
                             "; gradients of a model with symbolic dims are not "
                             "supported yet (give the input a static shape)");
      return false;
    }
  return true;
}

/// After prepareModel, an entry holds every input as \p model does: the
/// layout pass decides per graph whether to keep a weight transposed, and
/// the graphs share its one stored copy.
static bool sameInputs(const Graph &entry, const Graph &model,
                       DiagnosticEngine &diag) {
  for (size_t i = 0; i < model.inputs().size(); ++i) {
    const GraphInput &a = model.inputs()[i], &b = entry.inputs()[i];
    if (a.value->getType() == b.value->getType() &&
        a.init.permutation == b.init.permutation)
      continue;
    diag.error(b.loc, "input '" + a.value->getName() + "' would be held as " +
                          typeToString(b.value->getType(), entry.dims()) +
                          " by entry '" + entry.name + "' but as " +
                          typeToString(a.value->getType(), model.dims()) +
                          " by the model (the layout pass chose differently "
                          "for each graph); entries must read it alike");
    return false;
  }
  return true;
}

bool cgc::lowerModel(Graph &model, const CompileOptions &requested,
                     Compilation &out, DiagnosticEngine &diag) {
  if (!checkBindings(model, requested, diag) ||
      !checkTrainingScope(model, requested, diag) ||
      !checkGradientDims(model, requested, diag) ||
      !prepareModel(model, requested, diag))
    return false;
  for (const auto &entry : model.entries)
    if (!prepareModel(*entry, requested, diag) || !sameInputs(*entry, model, diag))
      return false;
  out.program.allowTf32 = requested.allowTf32;
  out.program.batchKernels = requested.fuse;
  out.program.programmaticEdges = requested.programmaticEdges;
  out.program.multiprocessors = multiprocessorsOf(requested.arch);
  if (requested.train)
    return lowerTraining(model, requested, out, diag);
  if (!model.entries.empty())
    return lowerEntries(model, requested, out, diag);
  CompileOptions options = requested;
  out.padded = options.bindDims.empty() && hasSymbolicDims(model);
  if (out.padded && !padModel(model, options, diag))
    return false;
  out.bindDims = options.bindDims;
  bool shared = !options.bindDims.empty();
  PlanLayout layout = shared ? sharedLayout(model, options) : PlanLayout();
  for (const auto &dims : specializations(options)) {
    CompiledGraph unit;
    unit.name = graphName(dims);
    unit.dims = dims;
    if (shared) {
      unit.owned = model.clone();
      unit.ir = unit.owned.get();
    } else {
      unit.ir = &model;
    }
    if (!lowerUnit(unit, options, layout, out, diag))
      return false;
    out.program.graphs.back().padded = out.padded;
  }
  dropUnusedKernels(out.program);
  return true;
}

void cgc::reportNvrtcFailure(const Program &program, const std::string &log,
                             DiagnosticEngine &diag) {
  if (const Kernel *culprit = kernelOfDiagnostic(program, log)) {
    diag.nodeError(*culprit->node, "NVRTC failed to compile kernel '" +
                                       culprit->name + "':\n" + log);
    return;
  }
  diag.error({}, "NVRTC failed to compile the generated program:\n" + log);
}

bool cgc::compileModel(Graph &model, const CompileOptions &options,
                       DiagnosticEngine &diag, CompileResult &result) {
  auto start = std::chrono::steady_clock::now();
  Compilation compilation;
  if (!lowerModel(model, options, compilation, diag))
    return false;
  const Program &program = compilation.program;
  std::string source;
  {
    PhaseTimer timer(options.times, "CUDA text");
    source = programSource(program);
  }
  DeviceCode code;
  {
    PhaseTimer timer(options.times,
                     "NVRTC (" + std::to_string(program.kernels.size()) +
                         " kernels; cubin and PTX in parallel)",
                     options.progress);
    if (!compileWithNvrtc(source, options.arch, code)) {
      reportNvrtcFailure(program, code.log, diag);
      return false;
    }
  }
  {
    PhaseTimer timer(options.times, "artifact writer", options.progress);
    if (!writeArtifact(model, compilation, code, options, result.bytes, diag))
      return false;
  }
  result.graphs = program.graphs.size();
  result.kernels = program.kernels.size();
  result.graphNodes = program.numSteps();
  for (const CompiledGraph &g : compilation.graphs) {
    result.arenaBytes = std::max(result.arenaBytes, g.plan->arenaSize);
    result.persistentBytes =
        std::max(result.persistentBytes, g.plan->persistentSize);
  }
  result.compileMs = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  return true;
}
