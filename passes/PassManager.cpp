//===- PassManager.cpp - Runs pipelines of passes ----------------------------===//
#include "passes/Pass.h"

#include "ir/Printer.h"
#include "ir/Verifier.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Format.h"
#include <chrono>

using namespace cgc;

namespace {
struct Registration {
  const char *name;
  std::unique_ptr<Pass> (*factory)();
};
} // namespace

static const Registration Registry[] = {
#define CGC_PASS(Name, Factory) {Name, Factory},
#include "passes/PassRegistry.def"
};

Node *cgc::soleUser(const Graph &g, const Value *v) {
  if (g.isOutput(v) || v->uses().size() != 1)
    return nullptr;
  Node *user = v->uses().front().user;
  return user->getParent() == &g ? user : nullptr;
}

bool cgc::forEachGraphInnermostFirst(Graph &graph,
                                     llvm::function_ref<bool(Graph &)> fn) {
  for (const auto &node : graph.nodes())
    if (node->info().has(ControlFlow))
      for (unsigned r = 0; r < node->numRegions(); ++r)
        if (!forEachGraphInnermostFirst(node->region(r), fn))
          return false;
  return fn(graph);
}

std::string cgc::defaultPipeline(bool fuse) {
  std::string pipeline = "expand-batch-norm,expand-attention,layout,trim-conv-taps,expand-convolution,expand-mse-loss,shape-infer,canonicalize,remove-sync-points,cse,dce";
  if (fuse)
    pipeline += ",form-attention,form-rms-norm,merge-products,fuse-epilogue,fuse-convolution-epilogue,fuse-rows,fuse-elementwise,fuse-views,"
                "hoist-invariants";
  return pipeline + ",schedule,plan-memory";
}

std::vector<std::string> cgc::registeredPassNames() {
  std::vector<std::string> names;
  for (const Registration &r : Registry)
    names.push_back(r.name);
  return names;
}

std::unique_ptr<Pass> cgc::createPass(llvm::StringRef name) {
  for (const Registration &r : Registry)
    if (name == r.name)
      return r.factory();
  return nullptr;
}

bool PassManager::addPipeline(llvm::StringRef pipeline, DiagnosticEngine &diag) {
  llvm::SmallVector<llvm::StringRef, 8> names;
  pipeline.split(names, ',', -1, /*KeepEmpty=*/false);
  bool ok = true;
  for (llvm::StringRef name : names) {
    std::unique_ptr<Pass> pass = createPass(name.trim());
    if (!pass) {
      diag.error({}, "unknown pass '" + name.trim() +
                         "' (see --list-passes)");
      ok = false;
      continue;
    }
    addPass(std::move(pass));
  }
  return ok;
}

bool PassManager::run(Graph &graph, PassContext &ctx,
                      llvm::raw_ostream &irStream) {
  using Clock = std::chrono::steady_clock;
  Timings &timings = lastTimings;
  timings.clear();
  bool ok = true;
  for (auto &pass : passes) {
    auto start = Clock::now();
    ctx.memoryPlan.reset(); // Any pass may change the graph.
    unsigned errorsBefore = ctx.diag.errorCount(); // Earlier inputs' count too.
    ok = pass->run(graph, ctx) && ctx.diag.errorCount() == errorsBefore;
    timings.push_back({pass->name().str(),
                       std::chrono::duration<double, std::milli>(Clock::now() -
                                                                 start)
                           .count()});
    if (!ok)
      break;
    if (options.verifyEach && !verifyGraph(graph, ctx.diag)) {
      ctx.diag.error({}, "the graph is invalid after pass '" + pass->name() +
                             "'");
      ok = false;
      break;
    }
    if (options.printAfterAll || options.printAfter.count(pass->name().str())) {
      irStream << "// -----// IR after " << pass->name() << " //----- //\n";
      printGraph(graph, irStream);
    }
  }
  if (options.timePasses)
    printTimings("pass execution timing", timings, llvm::errs());
  return ok;
}

void cgc::printTimings(llvm::StringRef title, const Timings &timings,
                       llvm::raw_ostream &os) {
  os << "===-- " << title << " --===\n";
  double total = 0;
  for (const auto &[name, ms] : timings) {
    os << llvm::format("  %10.3f ms  ", ms) << name << "\n";
    total += ms;
  }
  os << llvm::format("  %10.3f ms  ", total) << "total\n";
}
