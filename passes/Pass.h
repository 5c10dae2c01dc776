//===- Pass.h - The pass interface and the pass manager ---------*- C++ -*-===//
//
// A Pass rewrites a Graph in place and reports failures through the
// PassContext's DiagnosticEngine. The PassManager runs a pipeline, verifies
// the graph after each pass (unless told not to), prints the IR after
// chosen passes and times them.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_PASSES_PASS_H
#define CGC_PASSES_PASS_H

#include "ir/Diagnostics.h"
#include "ir/Graph.h"
#include "passes/MemoryPlan.h"
#include "target/Target.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace cgc {

struct PassContext {
  explicit PassContext(DiagnosticEngine &diag,
                       std::map<std::string, int64_t> dimBindings = {})
      : diag(diag), dimBindings(std::move(dimBindings)) {}

  DiagnosticEngine &diag;
  /// Symbolic dims to specialize (`--bind-dim=B=32`), for shape-infer.
  std::map<std::string, int64_t> dimBindings;
  /// The memory plan of the graph as it is now: set by plan-memory, dropped
  /// by the pass manager before any other pass runs. Codegen takes it.
  std::unique_ptr<MemoryPlan> memoryPlan;
  /// Arena slots shared with the other graphs of one artifact.
  PlanLayout layout;
  /// The GPU the schedule pass (and the fusion passes' queries to the
  /// scheduling library) schedule for.
  Target target;
  /// Passes that rewrite for the device say what they did, as notes
  /// (remove-sync-points; `cgc --report`).
  bool report = false;
  /// The device bound remove-sync-points gives a `while` without
  /// max_iterations (`cgc --max-loop-iterations`).
  int64_t loopBound = 10000000;
  /// What data-parallel makes (`cgc --data-parallel`).
  struct DataParallel {
    /// A bucket closes once its gradients hold this many bytes
    /// (`--bucket-mb`; torch DDP's default, 25 MiB).
    uint64_t bucketBytes = uint64_t(25) << 20;
    /// The dtype f32 gradients travel in (`--data-parallel-dtype`).
    DType wireType = DType::F32;
  } dataParallel;
  /// Which micro-step of `accumulate: k` a graph is: Whole (one graph
  /// that accumulates and updates on every k-th replay, decided on the
  /// device), or, under data parallelism, where the collective must run
  /// once per k micro-batches and never inside an `if`, Accumulate (adds
  /// the gradients to their sums, no update) and Last (adds, then the
  /// mean is reduced over the ranks and applied): accumulate-gradients.
  enum class MicroStep : uint8_t { Whole, Accumulate, Last };
  MicroStep microStep = MicroStep::Whole;
  /// The 16-bit dtype autocast lowers products to (`cgc --autocast`); f32:
  /// none.
  DType autocast = DType::F32;
  /// Dynamic loss scaling (f16 training): autodiff seeds the loss's
  /// adjoint with the state `optimizer.loss_scale`, apply-optimizer unscales,
  /// skips non-finite steps and updates the scale (GradScaler's rules).
  bool lossScaling = false;
  /// Autodiff will differentiate the graph, or has, or the graph shares a
  /// training step's state (`cgc --train`, `--gradients`; cgc-opt: a
  /// pipeline with autodiff): expand-convolution keeps a max pool's window
  /// reductions, whose gradient splits a tie evenly over its window, where
  /// the maximum of slices would split it unevenly, and writes out the
  /// convolutions conv's derivative rule refuses; layout keeps the
  /// convolutions channels first, as their derivatives are.
  bool differentiated = false;
};

class Pass {
public:
  virtual ~Pass() = default;
  /// The command-line name (kebab-case).
  virtual llvm::StringRef name() const = 0;
  virtual llvm::StringRef summary() const = 0;
  /// False after reporting an error; the pipeline stops there.
  virtual bool run(Graph &graph, PassContext &ctx) = 0;
};

#define CGC_PASS(Name, Factory) std::unique_ptr<Pass> Factory();
#include "passes/PassRegistry.def"

/// Runs \p fn on the regions of every `if` and `while` of \p graph
/// (graphs of their own at run time), innermost first, then on \p graph;
/// stops at the first false.
bool forEachGraphInnermostFirst(Graph &graph,
                                llvm::function_ref<bool(Graph &)> fn);

/// The one node of \p g that reads \p v, when v is not one of g's
/// results and has no other reader; else null.
Node *soleUser(const Graph &g, const Value *v);

/// Every registered pass name, in registry order.
std::vector<std::string> registeredPassNames();
/// The pipeline `cgc` runs before codegen, as "a,b,c"; without \p fuse,
/// no fusion pass.
std::string defaultPipeline(bool fuse = true);
/// Null when \p name is not registered.
std::unique_ptr<Pass> createPass(llvm::StringRef name);

/// Milliseconds per named step, in order.
using Timings = std::vector<std::pair<std::string, double>>;
/// `===-- title --===`, one line per step, then the total.
void printTimings(llvm::StringRef title, const Timings &timings,
                  llvm::raw_ostream &os);

struct PassManagerOptions {
  bool verifyEach = true;
  bool printAfterAll = false;
  std::set<std::string> printAfter;
  bool timePasses = false;
};

class PassManager {
public:
  explicit PassManager(PassManagerOptions options = {})
      : options(std::move(options)) {}

  void addPass(std::unique_ptr<Pass> pass) { passes.push_back(std::move(pass)); }
  /// Parses "a,b,c" into passes; reports unknown names and returns false.
  bool addPipeline(llvm::StringRef pipeline, DiagnosticEngine &diag);
  bool run(Graph &graph, PassContext &ctx, llvm::raw_ostream &irStream);
  size_t size() const { return passes.size(); }
  /// Whether the pipeline holds the pass named \p name.
  bool holds(llvm::StringRef name) const {
    return llvm::any_of(passes, [&](const auto &p) { return p->name() == name; });
  }
  /// Milliseconds per pass of the last run, in order.
  const Timings &timings() const { return lastTimings; }

private:
  PassManagerOptions options;
  Timings lastTimings;
  std::vector<std::unique_ptr<Pass>> passes;
};

} // namespace cgc

#endif
