//===- Compiler.h - The compile driver: IR to .cgc artifact -----*- C++ -*-===//
//
// The driver sits above codegen/, which it calls. lowerModel() takes each
// graph of the artifact (the model itself; one specialization per
// `--bind-dim` value; one per bucket of a model with symbolic dims, after
// pad-dynamic-shapes; or `--train`'s train and eval graphs), all sharing
// one layout of inputs, outputs and state, through runDefaultPipeline()
// and lowers them into one Program. runDefaultPipeline() runs autodiff
// (with `--gradients` or `--train`) and apply-optimizer (`--train`), then
// defaultPipeline() of passes/PassManager.cpp: shape-infer, canonicalize,
// remove-sync-points, cse, dce, then fuse-epilogue, fuse-rows and
// fuse-elementwise unless `--no-fuse`, then plan-memory, the pass manager
// verifying the graph after each pass. compileModel() also compiles the
// kernels with NVRTC and has writeArtifact() (ArtifactWriter.cpp) fill and
// serialize the manifest. `cgc` stays thin: it calls these entry points.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_DRIVER_COMPILER_H
#define CGC_DRIVER_COMPILER_H

#include "cgc/Version.h"
#include "codegen/GraphPlan.h"
#include "codegen/Nvrtc.h"
#include "codegen/Program.h"
#include "passes/Pass.h"
#include "target/Target.h"

#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cgc {

/// Milliseconds per compile phase, in order (`cgc --time-passes`).
using PhaseTimes = Timings;

/// The line `cgc` prints as a phase starts (`--progress`, or stderr on a
/// terminal): "cgc: phase: <phase>". cgc.compile_file logs these lines.
inline void announcePhase(llvm::raw_ostream *progress, llvm::StringRef phase) {
  if (!progress)
    return;
  *progress << "cgc: phase: " << phase << "\n";
  progress->flush();
}

/// Announces \p phase on \p progress (when set) and appends the time from
/// construction to destruction to \p times (when set).
class PhaseTimer {
public:
  PhaseTimer(PhaseTimes *times, std::string phase,
             llvm::raw_ostream *progress = nullptr)
      : times(times), phase(std::move(phase)),
        start(std::chrono::steady_clock::now()) {
    announcePhase(progress, this->phase);
  }
  ~PhaseTimer() {
    if (times)
      times->push_back({phase, std::chrono::duration<double, std::milli>(
                                   std::chrono::steady_clock::now() - start)
                                   .count()});
  }
  PhaseTimer(const PhaseTimer &) = delete;
  PhaseTimer &operator=(const PhaseTimer &) = delete;

private:
  PhaseTimes *times;
  std::string phase;
  std::chrono::steady_clock::time_point start;
};

struct CompileOptions {
  std::string arch = "sm_90";
  bool fuse = true;
  /// f32 products may run on TF32 tensor cores (recorded per product in
  /// the artifact). Off by default: f32 means full fp32.
  bool allowTf32 = false;
  /// Who decides how products run (`--library-products`,
  /// `--tiled-products`, `--mma-products`); the schedule pass's target
  /// takes it.
  ProductPolicy productPolicy = ProductPolicy::CostRule;
  /// Whether attention the fused kernel runs stays whole
  /// (`--expand-attention` writes every one out). Training expands every
  /// one whatever this says: autodiff has no rule for the op.
  AttentionPolicy attentionPolicy = AttentionPolicy::FusedWhereFaster;
  /// Whether the convolutions cuDNN can run stay whole
  /// (`--expand-convolution` writes every one out), in training too: their
  /// derivatives are cuDNN's backward operations.
  ConvolutionPolicy convolutionPolicy = ConvolutionPolicy::LibraryWherePossible;
  /// Which kernel edges may launch programmatically
  /// (`--programmatic-edges`; codegen/Program.h).
  ProgrammaticEdges programmaticEdges = ProgrammaticEdges::Rule;
  /// Symbolic dims to specialize, each with the values to compile a graph
  /// for (`--bind-dim B=8,16,64`); the artifact gets one graph per
  /// combination. Empty: one graph, "main".
  std::map<std::string, std::vector<int64_t>> bindDims;
  /// When set, every phase's time is appended here: each pass (per graph
  /// when there are several), lowering, the CUDA text, NVRTC, the writer.
  PhaseTimes *times = nullptr;
  /// When set, each phase is announced here as it starts (announcePhase).
  llvm::raw_ostream *progress = nullptr;
  /// Passes say what they rewrote for the device, as notes (`--report`:
  /// every sync point and how it was removed).
  bool report = false;
  /// The trip bound of a `while` without max_iterations
  /// (`--max-loop-iterations`).
  int64_t maxLoopIterations = 10000000;
  /// Run autodiff first: every parameter's gradient becomes an output
  /// (`--gradients`).
  bool gradients = false;
  /// Compile a training step: autodiff, then the declared optimizer's
  /// update (`--train`).
  bool train = false;
  /// With train: average the gradients over the ranks of a data-parallel
  /// run (`--data-parallel`, the data-parallel pass: its bucket size and
  /// the gradients' dtype on the wire).
  bool dataParallel = false;
  /// Mixed precision (`--autocast`, the autocast pass): bf16 or f16
  /// products and PyTorch autocast's f32 ops; f32: none.
  DType autocast = DType::F32;
  PassContext::DataParallel dataParallelOptions;
  /// Set by the driver per graph of a data-parallel step with
  /// `accumulate: k` (accumulate-gradients): its micro-step graph and its
  /// last; Whole otherwise.
  PassContext::MicroStep microStep = PassContext::MicroStep::Whole;
  /// Set by the driver for the other graphs over a training step's state
  /// ("eval", "train.accumulate"): their convolutions keep the train
  /// graph's layout (channels first), and so its weights'.
  bool overTrainingState = false;
  /// Leave the weights (state from the IR's weights file) in that file,
  /// beside the artifact, instead of copying them in (`--weights-beside`).
  /// Done anyway when the state would exceed artifactStateLimit.
  bool weightsBeside = false;
  /// The most bytes of initial values an artifact carries
  /// (`--artifact-state-limit`, for tests; at most and by default 1 GiB:
  /// the runtime reads an artifact whole).
  uint64_t artifactStateLimit = uint64_t(1) << 30;
  /// Where the artifact will be written (`-o`): a weights file left beside
  /// it is named relative to its folder.
  std::string artifactPath;
};

/// One graph of the artifact after the pipeline.
struct CompiledGraph {
  std::string name;
  std::map<std::string, int64_t> dims;
  std::unique_ptr<Graph> owned; ///< A specialized copy of the model.
  Graph *ir = nullptr;          ///< The graph that was lowered.
  std::unique_ptr<MemoryPlan> plan;
};

/// Everything between the IR and the bytes, for the tools to print.
struct Compilation {
  std::vector<CompiledGraph> graphs;
  Program program;
  /// The dims the graphs are specialized to: `--bind-dim`'s values, or
  /// each symbolic dim's buckets when the model is padded.
  std::map<std::string, std::vector<int64_t>> bindDims;
  /// pad-dynamic-shapes ran: graphs are buckets, real sizes on the device.
  bool padded = false;
};

/// Whether every graph of \p c puts each input and output (state
/// included) where the first graph does.
bool slotsAgree(const Compilation &c);

struct CompileResult {
  std::vector<uint8_t> bytes;
  size_t graphs = 0, kernels = 0, graphNodes = 0;
  uint64_t arenaBytes = 0, persistentBytes = 0;
  double compileMs = 0;
};

/// The largest extent axis \p d takes in any graph of the artifact: a
/// bound dim's largest value, else the dim's upper bound.
int64_t largestExtent(Dim d, const DimTable &table,
                      const CompileOptions &options);

/// Runs the default pass pipeline on \p graph; the memory plan is left in
/// \p ctx.
bool runDefaultPipeline(Graph &graph, const CompileOptions &options,
                        PassContext &ctx);
/// Pipeline and lowering of every graph of the artifact.
bool lowerModel(Graph &model, const CompileOptions &options,
                Compilation &out, DiagnosticEngine &diag);
/// Reports an NVRTC failure, with its log, at the IR node of the first
/// kernel the log names (kernelOfDiagnostic), else without a location.
void reportNvrtcFailure(const Program &program, const std::string &log,
                        DiagnosticEngine &diag);
/// The whole compile; \p result.bytes is the artifact.
bool compileModel(Graph &model, const CompileOptions &options,
                  DiagnosticEngine &diag, CompileResult &result);

/// Fills and serializes the manifest (ArtifactWriter.cpp).
bool writeArtifact(const Graph &model, const Compilation &compilation,
                   const DeviceCode &code, const CompileOptions &options,
                   std::vector<uint8_t> &bytes, DiagnosticEngine &diag);

} // namespace cgc

#endif
