//===- ConvolutionPlans.cpp - Convolutions planned at engine load --------===//
//
// An engine whose artifact has convolutions loads cuDNN (Cudnn.h), creates
// one handle and, per convolution, builds a backend operation graph of the
// convolution and its epilogue (ConvolutionGraph.cpp).
//
// cuDNN's heuristic (mode A; mode FALLBACK if A yields nothing usable)
// then offers engine configurations, best first. In that order, each is
// kept if its engine's numerical notes allow it (never nondeterministic,
// unless CGC_CONVOLUTION_NONDETERMINISTIC=1; never down-converted inputs;
// no tensor cores for an f32 convolution without allow_tf32, which would
// be TF32), its execution plan finalizes
// (runtime-compiled engines compile here, with NVRTC) and the plan's
// workspace fits the artifact's reserve, until CGC_CONVOLUTION_CANDIDATES
// (default 4; 1 when timing is off) are kept. ConvolutionTuning.cpp times
// them and keeps one; where an earlier load on this GPU timed the same
// convolution (TuningMemory.h), only the configuration it chose is
// finalized, if cuDNN still offers it. Convolutions with the same shapes, layouts, dtype,
// epilogue, alignments and workspace share one graph and plan. Nothing is
// run on the GPU here; the handle's calls need the engine's context
// current, which engine load makes it.
//
//===----------------------------------------------------------------------===//
#include "ConvolutionGraph.h"
#include "Internal.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

using cgc::format::ConvolutionDesc;
using cgc::format::ConvolutionStep;
using cgc::format::Manifest;
using cgc::format::PointerDesc;

namespace {

using namespace cgc::rt;

constexpr long kDefaultCandidates = 4, kMaxCandidates = 64;

/// How many usable candidates planning keeps per convolution.
long candidateLimit() {
  if (!convolutionTuningEnabled())
    return 1;
  return envCount("CGC_CONVOLUTION_CANDIDATES", kDefaultCandidates, kMaxCandidates);
}

/// "1,64,56,56".
std::string joined(const std::vector<int64_t> &values) {
  std::string out;
  for (int64_t v : values)
    out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

/// What makes two convolutions plan alike (they then share the plan).
std::string planKey(const cgc_engine_s &e, const ConvolutionDesc &c) {
  const Manifest &m = e.artifact.manifest;
  std::string key = std::string(cgc::format::convolutionOperationName(c.operation)) + " " +
                    c.dtype + (c.allowTf32 ? "+tf32" : "");
  for (const std::vector<int64_t> *v :
       {&c.xDims, &c.xStrides, &c.wDims, &c.wStrides, &c.yDims, &c.yStrides,
        &c.prePadding, &c.postPadding, &c.strides, &c.dilations})
    key += " " + joined(*v);
  for (const ConvolutionStep &step : c.epilogue)
    key += std::string(" ") + cgc::format::stepOpName(step.op) + "(" +
           cgc::format::stepOperandName(step.operand) + ")" +
           (step.operand == ConvolutionStep::Operand::None
                ? ""
                : std::to_string(guaranteedAlignment(m, step.pointer)));
  key += " " + std::to_string(c.workspaceBytes);
  for (const PointerDesc *p : {&c.x, &c.w, &c.y})
    key += " " + std::to_string(guaranteedAlignment(m, *p));
  return key;
}

/// Why configurations were not kept, for the message when none is.
struct Refusals {
  size_t offered = 0, notes = 0, finalize = 0, workspace = 0;
  int64_t leastWorkspace = -1;
  std::string lastFinalize, heuristic;
};

/// The engine configurations the heuristic in \p mode offers for \p graph,
/// best first (the caller destroys them); none, with \p why, on failure.
std::vector<cudnnBackendDescriptor_t>
heuristicConfigs(const Cudnn &dnn, cudnnBackendDescriptor_t graph,
                 cudnnBackendHeurMode_t mode, std::string &why) {
  std::vector<cudnnBackendDescriptor_t> configs;
  cudnnBackendDescriptor_t heur = nullptr;
  int64_t count = 0, got = 0;
  CallChain calls;
  calls
      .then("cudnnBackendCreateDescriptor",
            [&] {
              return dnn.cudnnBackendCreateDescriptor(
                  CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur);
            })
      .then("cudnnBackendSetAttribute",
            [&] {
              return dnn.cudnnBackendSetAttribute(
                  heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
            })
      .then("cudnnBackendSetAttribute",
            [&] {
              return dnn.cudnnBackendSetAttribute(
                  heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                  &mode);
            })
      .then("cudnnBackendFinalize",
            [&] { return dnn.cudnnBackendFinalize(heur); })
      .then("cudnnBackendGetAttribute", [&] {
        return dnn.cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                            &count, nullptr);
      });
  for (int64_t i = 0; calls.ok() && i < count; ++i)
    calls.then("cudnnBackendCreateDescriptor", [&] {
      cudnnBackendDescriptor_t config = nullptr;
      cudnnStatus_t st = dnn.cudnnBackendCreateDescriptor(
          CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &config);
      if (st == CUDNN_STATUS_SUCCESS)
        configs.push_back(config);
      return st;
    });
  if (count > 0)
    calls.then("cudnnBackendGetAttribute", [&] {
      return dnn.cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                          &got, configs.data());
    });
  if (!calls.ok()) {
    why = dnn.errorText(calls.api, calls.status);
    got = 0;
  }
  while (int64_t(configs.size()) > std::max<int64_t>(got, 0)) {
    dnn.cudnnBackendDestroyDescriptor(configs.back());
    configs.pop_back();
  }
  if (heur)
    dnn.cudnnBackendDestroyDescriptor(heur);
  return configs;
}

/// CGC_CONVOLUTION_NONDETERMINISTIC=1 in the environment: the user takes
/// engines whose results may differ from run to run in their last bits
/// (a backward data or filter that adds with atomics), as PyTorch does by
/// default.
bool nondeterminismAllowed() {
  const char *value = std::getenv("CGC_CONVOLUTION_NONDETERMINISTIC");
  return value && std::strcmp(value, "1") == 0;
}

/// Whether an engine with these numerical notes may run \p c: never with
/// down-converted inputs, not nondeterministic (unless the user allows
/// it), and no tensor cores for f32 without allow_tf32 (they would compute
/// in TF32).
bool notesAllow(const ConvolutionDesc &c,
                const cudnnBackendNumericalNote_t *notes, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    if ((notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC && !nondeterminismAllowed()) ||
        notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)
      return false;
    if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && c.dtype == "f32" &&
        !c.allowTf32)
      return false;
  }
  return true;
}

/// Reads the engine of \p config: its global index, and whether its
/// numerical notes allow it for \p c (false if they cannot be read).
bool engineAllowed(const Cudnn &dnn, const ConvolutionDesc &c,
                   cudnnBackendDescriptor_t config, int64_t &engineId) {
  cudnnBackendDescriptor_t engine = nullptr;
  if (dnn.cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR,
                                       &engine) != CUDNN_STATUS_SUCCESS)
    return false;
  constexpr int64_t kMaxNotes = 32; // Room for notes of later versions.
  cudnnBackendNumericalNote_t notes[kMaxNotes];
  int64_t count = 0, n = 0;
  bool ok =
      dnn.cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                   &engine) == CUDNN_STATUS_SUCCESS &&
      dnn.cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                   CUDNN_TYPE_INT64, 1, &n,
                                   &engineId) == CUDNN_STATUS_SUCCESS &&
      dnn.cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                   CUDNN_TYPE_NUMERICAL_NOTE, kMaxNotes, &count,
                                   notes) == CUDNN_STATUS_SUCCESS &&
      notesAllow(c, notes, std::min(count, kMaxNotes));
  dnn.cudnnBackendDestroyDescriptor(engine);
  return ok;
}

/// "eng<id>" and each knob choice of \p config, "_k<type>=<value>".
std::string configTag(const Cudnn &dnn, cudnnBackendDescriptor_t config,
                      int64_t engineId) {
  std::string tag = "eng" + std::to_string(engineId);
  constexpr int64_t kMaxKnobs = 64; // More than any version's knob types.
  cudnnBackendDescriptor_t knobs[kMaxKnobs] = {};
  int64_t created = 0, count = 0;
  while (created < kMaxKnobs && dnn.cudnnBackendCreateDescriptor(
                                    CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR,
                                    &knobs[created]) == CUDNN_STATUS_SUCCESS)
    ++created;
  if (created == kMaxKnobs &&
      dnn.cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, kMaxKnobs,
                                   &count, knobs) == CUDNN_STATUS_SUCCESS)
    for (int64_t i = 0; i < std::min(count, kMaxKnobs); ++i) {
      cudnnBackendKnobType_t type;
      int64_t value = 0, n = 0;
      if (dnn.cudnnBackendGetAttribute(
              knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE,
              1, &n, &type) == CUDNN_STATUS_SUCCESS &&
          dnn.cudnnBackendGetAttribute(
              knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1,
              &n, &value) == CUDNN_STATUS_SUCCESS)
        tag += "_k" + std::to_string(int(type)) + "=" + std::to_string(value);
    }
  for (int64_t i = 0; i < created; ++i)
    dnn.cudnnBackendDestroyDescriptor(knobs[i]);
  return tag;
}

/// Keeps \p config among convolution \p index's candidates if its engine
/// suits the convolution, its tag is \p wanted (when given), its plan
/// finalizes and fits the workspace; otherwise destroys it and counts why
/// in \p r (a configuration not wanted is not counted).
void tryCandidate(cgc_engine_s &e, size_t index,
                  cudnnBackendDescriptor_t config, const std::string *wanted,
                  Refusals &r) {
  const Cudnn &dnn = *e.dnn;
  const ConvolutionDesc &c = convolutionOf(e, index);
  ConvolutionCandidate candidate;
  candidate.config = config;
  auto discard = [&] {
    if (candidate.plan)
      dnn.cudnnBackendDestroyDescriptor(candidate.plan);
    dnn.cudnnBackendDestroyDescriptor(config);
  };
  if (!engineAllowed(dnn, c, config, candidate.engineId)) {
    ++r.notes;
    return discard();
  }
  candidate.tag = configTag(dnn, config, candidate.engineId);
  if (wanted && candidate.tag != *wanted)
    return discard();
  int64_t n = 0;
  CallChain calls;
  calls
      .then("cudnnBackendCreateDescriptor",
            [&] {
              return dnn.cudnnBackendCreateDescriptor(
                  CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &candidate.plan);
            })
      .then("cudnnBackendSetAttribute",
            [&] {
              return dnn.cudnnBackendSetAttribute(
                  candidate.plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                  CUDNN_TYPE_HANDLE, 1, &e.dnnHandle);
            })
      .then("cudnnBackendSetAttribute",
            [&] {
              return dnn.cudnnBackendSetAttribute(
                  candidate.plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config);
            })
      .then("cudnnBackendFinalize",
            [&] { return dnn.cudnnBackendFinalize(candidate.plan); })
      .then("cudnnBackendGetAttribute", [&] {
        return dnn.cudnnBackendGetAttribute(
            candidate.plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
            CUDNN_TYPE_INT64, 1, &n, &candidate.workspace);
      });
  if (!calls.ok()) {
    ++r.finalize;
    r.lastFinalize = "eng" + std::to_string(candidate.engineId) + ": " +
                     dnn.errorText(calls.api, calls.status);
    return discard();
  }
  if (candidate.workspace < 0 ||
      uint64_t(candidate.workspace) > c.workspaceBytes) {
    ++r.workspace;
    if (r.leastWorkspace < 0 || candidate.workspace < r.leastWorkspace)
      r.leastWorkspace = candidate.workspace;
    return discard();
  }
  e.convolutions[index].candidates.push_back(std::move(candidate));
}

/// The failure when no configuration is usable, with what became of them.
std::string noEngineMessage(const cgc_engine_s &e, size_t index,
                            const Refusals &r) {
  const ConvolutionDesc &c = convolutionOf(e, index);
  std::string why = "cuDNN's heuristics (modes A and FALLBACK) offered " +
                    std::to_string(r.offered) + " engine configuration" +
                    (r.offered == 1 ? "" : "s");
  if (!r.heuristic.empty())
    why += " (" + r.heuristic + ")";
  if (r.notes)
    why += "; " + std::to_string(r.notes) +
           " refused for their numerical notes (nondeterministic, "
           "down-converted inputs" +
           (c.dtype == "f32" && !c.allowTf32 ? ", TF32" : "") + ")";
  if (r.finalize)
    why += "; " + std::to_string(r.finalize) +
           " did not finalize (the last: " + r.lastFinalize + ")";
  if (r.workspace)
    why +=
        "; " + std::to_string(r.workspace) +
        " need more workspace (the least: " + std::to_string(r.leastWorkspace) +
        " bytes)";
  return convolutionLabel(e, index) + ": cuDNN " + e.dnn->versionText() +
         " has no engine for this convolution on this GPU within the " +
         std::to_string(c.workspaceBytes) + "-byte workspace: " + why;
}

/// Keeps up to \p limit usable candidates of convolution \p index's
/// \p graph (only one tagged \p wanted, when given), mode A's first, else
/// mode FALLBACK's.
void collectCandidates(cgc_engine_s &e, size_t index,
                       cudnnBackendDescriptor_t graph, long limit,
                       const std::string *wanted, Refusals &r) {
  ConvolutionPlan &plan = e.convolutions[index];
  for (cudnnBackendHeurMode_t mode :
       {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    std::string why;
    std::vector<cudnnBackendDescriptor_t> configs =
        heuristicConfigs(*e.dnn, graph, mode, why);
    if (!why.empty())
      r.heuristic += (r.heuristic.empty() ? "" : "; ") + why;
    r.offered += configs.size();
    for (cudnnBackendDescriptor_t config : configs) {
      if (long(plan.candidates.size()) < limit)
        tryCandidate(e, index, config, wanted, r);
      else
        e.dnn->cudnnBackendDestroyDescriptor(config);
    }
    if (!plan.candidates.empty())
      break;
  }
}

/// What the tuning memory knows convolution \p index's choice by: cuDNN's
/// version, what planning keeps and what makes convolutions plan alike.
std::string memoryKey(const cgc_engine_s &e, size_t index, long limit) {
  return "cuDNN " + std::to_string(e.dnn->version) + " candidates=" +
         std::to_string(limit) + " nondeterministic=" +
         (nondeterminismAllowed() ? "1" : "0") + " convolution " +
         planKey(e, convolutionOf(e, index));
}

/// Builds convolution \p index's graph and keeps up to \p limit usable
/// candidates; with timing on and a configuration an earlier load timed
/// for it remembered (TuningMemory.h), only that one when cuDNN still
/// offers it and its plan finalizes.
cgc_status planConvolution(cgc_engine_s &e, size_t index, long limit) {
  ConvolutionPlan &plan = e.convolutions[index];
  plan.owner = index;
  cudnnBackendDescriptor_t graph = nullptr;
  if (cgc_status s = buildConvolutionGraph(e, index, graph))
    return s;
  Refusals r;
  if (convolutionTuningEnabled()) {
    plan.memoryKey = memoryKey(e, index, limit);
    if (const std::string *tag = e.tuning.recall(plan.memoryKey)) {
      Refusals ignored;
      collectCandidates(e, index, graph, 1, tag, ignored);
      plan.timed = plan.remembered = !plan.candidates.empty();
    }
  }
  if (plan.candidates.empty())
    collectCandidates(e, index, graph, limit, nullptr, r);
  if (plan.candidates.empty())
    return fail(CGC_ERROR_UNSUPPORTED, noEngineMessage(e, index, r));
  plan.usable = int32_t(plan.candidates.size());
  return CGC_OK;
}

} // namespace

namespace cgc {
namespace rt {

std::string convolutionLabel(const cgc_engine_s &e, size_t index) {
  const ConvolutionDesc &c = convolutionOf(e, index);
  std::string epilogue;
  for (const ConvolutionStep &step : c.epilogue)
    epilogue += (epilogue.empty() ? "" : "+") + std::string(format::stepOpName(step.op)) +
                (step.operand == ConvolutionStep::Operand::Full ? "(full)" : "");
  int64_t groups = c.xDims[1] / c.wDims[1];
  return "convolution " + std::to_string(index) + " (node '" + c.source.node +
         "', " + format::convolutionOperationName(c.operation) + " " + c.dtype +
         (c.allowTf32 ? "+tf32" : "") + " x " +
         joined(c.xDims) + " w " + joined(c.wDims) + " y " + joined(c.yDims) +
         (channelsLast(c.xStrides) ? " nhwc" : " nchw") + " pad " +
         joined(c.prePadding) + "/" + joined(c.postPadding) + " stride " +
         joined(c.strides) + " dilation " + joined(c.dilations) + " groups " +
         std::to_string(groups) + " epilogue " +
         (epilogue.empty() ? "none" : epilogue) + ")";
}

void adoptCandidates(cgc_engine_s &e) {
  for (ConvolutionPlan &plan : e.convolutions) {
    const ConvolutionPlan &owner = e.convolutions[plan.owner];
    if (owner.candidates.empty())
      continue;
    const ConvolutionCandidate &chosen = owner.candidates.front();
    plan.plan = chosen.plan;
    plan.engineId = chosen.engineId;
    plan.workspaceUsed = chosen.workspace;
    plan.tag = chosen.tag;
    plan.usable = owner.usable;
    plan.timed = owner.timed;
    plan.remembered = owner.remembered;
  }
}

cgc_status planConvolutions(cgc_engine_s &e) {
  size_t count = e.artifact.manifest.convolutions.size();
  if (count == 0)
    return CGC_OK;
  std::string reason;
  e.dnn = getCudnn(reason);
  if (!e.dnn)
    return fail(CGC_ERROR_UNSUPPORTED,
                "this artifact runs " + std::to_string(count) +
                    (count == 1 ? " convolution" : " convolutions") +
                    " with cuDNN, but " + reason);
  CGC_CHECK_DNN(*e.dnn,
                "cuDNN " + e.dnn->versionText() + " (" + e.dnn->library + ")",
                cudnnCreate(&e.dnnHandle));
  e.convolutions.resize(count);
  long limit = candidateLimit();
  std::map<std::string, size_t> owners; // plan key -> the owner
  for (size_t i = 0; i < count; ++i) {
    auto [it, fresh] = owners.emplace(planKey(e, convolutionOf(e, i)), i);
    e.convolutions[i].owner = it->second;
    if (fresh)
      if (cgc_status s = planConvolution(e, i, limit))
        return s;
  }
  adoptCandidates(e);
  return CGC_OK;
}

void releaseConvolutions(cgc_engine_s &e) {
  if (!e.dnn)
    return;
  const Cudnn &dnn = *e.dnn;
  for (ConvolutionPlan &plan : e.convolutions) {
    for (const ConvolutionCandidate &c : plan.candidates) {
      if (c.plan)
        dnn.cudnnBackendDestroyDescriptor(c.plan);
      if (c.config)
        dnn.cudnnBackendDestroyDescriptor(c.config);
    }
    for (auto it = plan.graph.rbegin(); it != plan.graph.rend(); ++it)
      dnn.cudnnBackendDestroyDescriptor(*it);
  }
  e.convolutions.clear();
  if (e.dnnHandle)
    dnn.cudnnDestroy(e.dnnHandle);
  e.dnnHandle = nullptr;
}

ConvolutionStream::ConvolutionStream(const cgc_engine_s &e, CUstream stream)
    : e_(e), lock_(e.dnnMutex),
      status_(e.dnn->cudnnSetStream(e.dnnHandle, stream)) {}

ConvolutionStream::~ConvolutionStream() {
  e_.dnn->cudnnSetStream(e_.dnnHandle, nullptr);
}

cudnnStatus_t executeConvolution(const cgc_engine_s &e, size_t index,
                                 cudnnBackendDescriptor_t plan,
                                 const ConvolutionOperands &o,
                                 const char *&api) {
  const ConvolutionDesc &c = convolutionOf(e, index);
  const Cudnn &dnn = *e.dnn;
  int64_t uids[3 + format::kMaxConvolutionSteps];
  void *pointers[3 + format::kMaxConvolutionSteps];
  int64_t n = 0;
  auto add = [&](int64_t uid, void *pointer) {
    uids[n] = uid;
    pointers[n++] = pointer;
  };
  add(kUidX, o.x);
  add(kUidW, o.w);
  add(kUidY, o.y);
  for (size_t k = 0; k < c.epilogue.size(); ++k)
    if (c.epilogue[k].operand != ConvolutionStep::Operand::None)
      add(kUidStep + int64_t(k), o.steps[k]);
  void *workspace = o.workspace;
  cudnnBackendDescriptor_t pack = nullptr;
  CallChain calls;
  calls
      .then("cudnnBackendCreateDescriptor",
            [&] {
              return dnn.cudnnBackendCreateDescriptor(
                  CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
            })
      .then("cudnnBackendSetAttribute",
            [&] {
              return dnn.cudnnBackendSetAttribute(
                  pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n,
                  uids);
            })
      .then("cudnnBackendSetAttribute",
            [&] {
              return dnn.cudnnBackendSetAttribute(
                  pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                  CUDNN_TYPE_VOID_PTR, n, pointers);
            })
      .then("cudnnBackendSetAttribute",
            [&] {
              return dnn.cudnnBackendSetAttribute(
                  pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR,
                  1, &workspace);
            })
      .then("cudnnBackendFinalize",
            [&] { return dnn.cudnnBackendFinalize(pack); })
      .then("cudnnBackendExecute",
            [&] { return dnn.cudnnBackendExecute(e.dnnHandle, plan, pack); });
  if (pack)
    dnn.cudnnBackendDestroyDescriptor(pack);
  api = calls.api;
  return calls.status;
}

} // namespace rt
} // namespace cgc
