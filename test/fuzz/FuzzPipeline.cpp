//===- FuzzPipeline.cpp - Fuzz target: the pass pipeline, checked ---------===//
//
// A model that verifies goes through cgc's default pipeline one pass at a
// time. A pass may refuse with a diagnostic; it must never crash or leave
// a graph that does not verify. When the model is small enough to run,
// the interpreter runs it before and after on the same random inputs and
// the outputs must agree (--check-equivalence: NaN where NaN, otherwise
// within atol 1e-4 + rtol 1e-3).
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "format/ArtifactFormat.h"
#include "ir/Verifier.h"
#include "passes/Pass.h"

#include "llvm/ADT/StringExtras.h"
#include <cmath>
#include <cstdlib>

using namespace cgc;
using namespace cgc::interp;

static bool close(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b))
    return a == b;
  return std::fabs(a - b) <= 1e-4 + 1e-3 * std::fabs(a);
}

static bool same(const Tensor &a, const Tensor &b) {
  if (a.dtype != b.dtype || a.shape != b.shape)
    return false;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (isFloat(a.dtype) ? !close(a.real(i), b.real(i))
                         : a.integer(i) != b.integer(i))
      return false;
  return true;
}

/// Runs the pipeline; false when a pass refused (a diagnostic, not a bug).
static bool runPipeline(Graph &graph, DiagnosticEngine &diag) {
  PassContext ctx{diag, {}};
  llvm::SmallVector<llvm::StringRef, 8> names;
  std::string pipeline = defaultPipeline();
  llvm::StringRef(pipeline).split(names, ',');
  for (llvm::StringRef name : names) {
    ctx.memoryPlan.reset();
    if (!createPass(name)->run(graph, ctx))
      return false;
    if (!verifyGraph(graph, diag))
      abort(); // The pass left an invalid graph.
  }
  return true;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DiagnosticEngine diag(llvm::nulls());
  std::unique_ptr<Graph> before = fuzz::readModel(data, size, diag);
  if (!before)
    return 0;
  std::unique_ptr<Graph> after = before->clone();
  if (!runPipeline(*after, diag) || !fuzz::smallEnoughToRun(*before))
    return 0;
  Limits limits = fuzz::interpreterLimits();
  std::map<std::string, Tensor> inputs;
  std::string error;
  if (!randomInputs(*before, format::fnv1a64(data, size), inputs, error,
                    limits))
    return 0;
  NamedTensors a, b;
  RunError errorBefore, errorAfter;
  if (!runGraph(*before, inputs, a, errorBefore, limits))
    return 0;
  if (!runGraph(*after, inputs, b, errorAfter, limits)) {
    // Fused regions hold copies of their operands: only the budget may
    // stop the optimized graph where the original ran.
    if (errorAfter.message.find("memory budget") == std::string::npos)
      abort();
    return 0;
  }
  if (a.size() != b.size())
    abort();
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first || !same(a[i].second, b[i].second))
      abort(); // The passes changed a result.
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  return fuzz::mutateJsonInput(data, size, maxSize, seed);
}
