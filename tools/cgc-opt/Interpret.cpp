//===- Interpret.cpp - cgc-opt's --interpret and --check-equivalence ---------===//
//
//   cgc-opt model.json [--passes=...] --interpret [--inputs in.safetensors]
//           [--outputs out.safetensors [--overwrite]]
//   cgc-opt model.json --passes=... --check-equivalence [--seed N]
//           [--trials K] [--rtol R] [--atol A]
//
// The second form runs the reference interpreter on the graph before and
// after the pipeline with random inputs from each op's valid domain and
// fails when any output differs by more than atol + rtol * |before| (rtol at
// least 4 ulps for f16 and bf16 outputs), or is NaN/Inf on one side only.
//
//===----------------------------------------------------------------------===//
#include "Interpret.h"
#include "PaddedRun.h"

#include "ir/interpreter/Interpreter.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <new>
#include <cmath>
#include <random>
#include <set>

using namespace cgc;
using namespace cgc::interp;
namespace cl = llvm::cl;

static cl::OptionCategory InterpretCategory("Interpreter options");
static cl::opt<bool> Interpret("interpret",
                               cl::desc("Run the graph (after the passes) in "
                                        "the reference interpreter"),
                               cl::cat(InterpretCategory));
static cl::opt<std::string> InputsFile("inputs",
                                       cl::desc("Inputs for --interpret, by name"),
                                       cl::value_desc("in.safetensors"),
                                       cl::cat(InterpretCategory));
static cl::opt<std::string> OutputsFile("outputs",
                                        cl::desc("Write --interpret's outputs here"),
                                        cl::value_desc("out.safetensors"),
                                        cl::cat(InterpretCategory));
static cl::opt<bool> Overwrite("overwrite",
                               cl::desc("Let --outputs replace an existing file"),
                               cl::cat(InterpretCategory));
static cl::opt<bool> CheckEquivalence(
    "check-equivalence",
    cl::desc("Compare the interpreter's results before and after the passes "
             "on random inputs"),
    cl::cat(InterpretCategory));
static cl::opt<bool> GradCheck(
    "gradcheck",
    cl::desc("After --pass=autodiff: compare every '<parameter>.grad' output "
             "with central differences of the loss, the interpreter in "
             "double precision, on random inputs and parameters"),
    cl::cat(InterpretCategory));
static cl::opt<unsigned> GradCheckElements(
    "gradcheck-elements",
    cl::desc("Elements of each parameter perturbed per trial (--gradcheck)"),
    cl::init(12), cl::cat(InterpretCategory));
static cl::opt<uint64_t> Seed("seed", cl::desc("Random input seed (--check-equivalence)"),
                              cl::init(0), cl::cat(InterpretCategory));
static cl::opt<unsigned> Trials("trials", cl::desc("Random trials (--check-equivalence)"),
                                cl::init(3), cl::cat(InterpretCategory));
static cl::opt<double> RTol("rtol", cl::desc("Relative tolerance (--check-equivalence)"),
                            cl::init(1e-5), cl::cat(InterpretCategory));
static cl::opt<double> ATol("atol", cl::desc("Absolute tolerance (--check-equivalence)"),
                            cl::init(1e-6), cl::cat(InterpretCategory));

static cl::opt<uint64_t> MemoryMiB(
    "interpreter-memory",
    cl::desc("The interpreter's budget for live tensors, in MiB "
             "(8 bytes per element; default 8192)"),
    cl::init(8192), cl::value_desc("MiB"), cl::cat(InterpretCategory));

static cl::opt<int64_t> MaxTrips(
    "interpreter-trips",
    cl::desc("Trips after which a `while` without a smaller max_iterations "
             "stops with an error (default 10^7)"),
    cl::init(Limits().whileTrips), cl::cat(InterpretCategory));

static Limits limits() {
  Limits l;
  l.memoryBytes = MemoryMiB << 20;
  l.whileTrips = MaxTrips;
  return l;
}

/// limits() with floats kept in double (gradient checks).
static Limits exactLimits() {
  Limits l = limits();
  l.exactFloats = true;
  return l;
}

bool cgc::interpretModeRequested() {
  return Interpret || CheckEquivalence || GradCheck;
}
bool cgc::checkEquivalenceRequested() { return CheckEquivalence || GradCheck; }

static bool fail(DiagnosticEngine &diag, const std::string &message) {
  diag.error({}, message);
  return false;
}

/// The relative tolerance for outputs of \p dtype: --rtol, but at least
/// four units in the last place of a 16-bit float (a rewrite may round
/// once where the original rounded after every step: rms_norm against
/// its arithmetic in f16).
static double relativeTolerance(DType dtype) {
  switch (dtype) {
  case DType::F16: return std::max<double>(RTol, 4 * 0x1p-10);
  case DType::BF16: return std::max<double>(RTol, 4 * 0x1p-7);
  case DType::F32: case DType::I32: case DType::I64: case DType::Bool: return RTol;
  }
  llvm_unreachable("invalid DType");
}

/// Reports a failed run at the node that failed, when one did.
static bool failRun(DiagnosticEngine &diag, const std::string &what,
                    const RunError &error) {
  if (!error.node)
    return fail(diag, what + ": " + error.message);
  diag.nodeError(*error.node, what + ": " + error.detail);
  return false;
}

static bool readInputs(const Graph &graph, DiagnosticEngine &diag,
                       std::map<std::string, Tensor> &inputs) {
  BudgetScope budget(limits().memoryBytes);
  format::TensorMap tensors;
  std::string error;
  if (!InputsFile.empty() &&
      !format::readSafetensors(InputsFile, tensors, error))
    return fail(diag, "cannot read inputs '" + InputsFile + "': " + error);
  bool ok = true;
  for (const GraphInput &in : graph.inputs()) {
    const std::string &name = in.value->getName();
    auto it = tensors.find(name);
    if (it == tensors.end()) {
      if (!isPersistent(in.kind))
        ok = fail(diag, "input '" + name + "' (" +
                            typeToString(in.value->getType(), graph.dims()) +
                            ") is missing from " +
                            (InputsFile.empty() ? std::string("the inputs (no --inputs given)")
                                                : "'" + InputsFile + "'"));
      continue;
    }
    Tensor t;
    if (!tensorFromData(it->second, t, error))
      ok = fail(diag, "input '" + name + "' in '" + InputsFile + "': " + error);
    inputs[name] = std::move(t);
    tensors.erase(it);
  }
  for (const auto &entry : tensors)
    llvm::errs() << "cgc-opt: warning: '" << InputsFile << "' holds tensor '"
                 << entry.first << "', which is not a graph input\n";
  return ok;
}

static bool interpret(const Graph &graph, DiagnosticEngine &diag) {
  std::map<std::string, Tensor> inputs;
  if (!readInputs(graph, diag, inputs))
    return false;
  NamedTensors outputs;
  RunError runError;
  if (!runGraph(graph, inputs, outputs, runError, limits()))
    return failRun(diag, "interpreter", runError);
  std::string error;
  if (OutputsFile.empty()) {
    for (const auto &[name, tensor] : outputs)
      llvm::outs() << name << " = " << formatTensor(tensor) << "\n";
    return true;
  }
  format::TensorMap tensors;
  for (const auto &[name, tensor] : outputs)
    tensors[name] = tensorToData(tensor);
  if (!format::writeSafetensors(OutputsFile, tensors, error, Overwrite))
    return fail(diag, "cannot write outputs '" + OutputsFile + "': " + error);
  return true;
}

namespace {
struct Difference {
  double abs = 0, rel = 0;
  bool bad = false;
  std::string first; ///< The first failing element, described.
};
} // namespace

static void compare(const Tensor &before, const Tensor &after, unsigned trial,
                    Difference &d) {
  if (before.dtype != after.dtype || before.shape != after.shape) {
    if (d.first.empty())
      d.first = "trial " + std::to_string(trial) + ": " + before.typeString() +
                " before, " + after.typeString() + " after";
    d.bad = true;
    return;
  }
  for (int64_t i = 0; i < before.numel(); ++i) {
    if (!isFloat(before.dtype)) { // Integers and bools must be equal.
      int64_t a = before.integer(i), b = after.integer(i);
      if (a != b && d.first.empty())
        d.first = "trial " + std::to_string(trial) + ", element " +
                  std::to_string(i) + ": " + std::to_string(a) + " before, " +
                  std::to_string(b) + " after";
      if (a != b)
        d.abs = d.rel = INFINITY;
      d.bad |= a != b;
      continue;
    }
    double a = before.real(i), b = after.real(i), rtol = relativeTolerance(before.dtype);
    bool ok;
    double abs = 0, rel = 0;
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
      ok = (std::isnan(a) && std::isnan(b)) || a == b;
      if (!ok)
        abs = rel = INFINITY;
    } else {
      abs = std::fabs(a - b);
      rel = abs == 0 ? 0 : abs / std::fabs(a);
      ok = abs <= ATol + rtol * std::fabs(a);
    }
    d.abs = std::max(d.abs, abs);
    d.rel = std::max(d.rel, rel);
    if (!ok && d.first.empty()) {
      char buf[160];
      snprintf(buf, sizeof buf, "trial %u, element %lld: %.9g before, %.9g after",
               trial, (long long)i, a, b);
      d.first = buf;
    }
    d.bad |= !ok;
  }
}

/// Which arms and trip counts the trials took (before the passes), so that
/// a test can show that they took every one.
static void printCoverage(const ControlFlowTrace &trace,
                          llvm::raw_ostream &os) {
  for (const auto &[name, arms] : trace.ifThen) {
    size_t then = llvm::count(arms, true);
    os << "  if '" << name << "': then " << then << " time(s), else "
       << arms.size() - then << "\n";
  }
  for (const auto &[name, trips] : trace.whileTrips) {
    std::set<int64_t> distinct(trips.begin(), trips.end());
    os << "  while '" << name << "': trips";
    llvm::StringRef separator = " ";
    for (int64_t t : distinct) {
      os << separator << t;
      separator = ", ";
    }
    os << "\n";
  }
}

/// Bool inputs (masks, predicates) of trial \p trial are true with this
/// probability: some, none, all, then sparse and dense ones in turn.
static double boolDensity(unsigned trial) {
  static const double densities[] = {0.5, 0.0, 1.0, 0.15, 0.85};
  return densities[trial % std::size(densities)];
}

static bool checkEquivalence(const Graph &before, const Graph &after,
                             DiagnosticEngine &diag) {
  llvm::raw_ostream &os = llvm::outs();
  os << "check-equivalence: " << Trials << " trial(s), seed " << Seed
     << ", bool inputs true with p = 0.5, 0, 1, 0.15, 0.85 in turn"
     << ", rtol " << RTol << " (f16 at least 4 ulps, bf16 likewise), atol " << ATol
     << "\n";
  std::vector<Difference> diffs(before.outputs.size());
  ControlFlowTrace trace;
  for (unsigned trial = 0; trial < Trials; ++trial) {
    std::map<std::string, Tensor> inputs;
    std::string error;
    if (!randomInputs(before, Seed * 1000003ull + trial, inputs, error,
                      limits(), boolDensity(trial)))
      return fail(diag, error);
    NamedTensors a, b;
    RunError runError;
    if (!runGraph(before, inputs, a, runError, limits(), &trace))
      return failRun(diag, "interpreter (before the passes), trial " +
                               std::to_string(trial), runError);
    bool padded = isPaddedGraph(after);
    std::map<std::string, Tensor> afterInputs;
    std::map<std::string, std::pair<int64_t, int64_t>> sizes;
    if (padded && !paddedInputs(before, after, inputs, afterInputs, sizes, trial, error))
      return fail(diag, error);
    for (const auto &[dim, size] : sizes)
      os << "  trial " << trial << ": " << dim << " = " << size.first
         << " in bucket " << size.second << "\n";
    if (!runGraph(after, padded ? afterInputs : inputs, b, runError, limits()))
      return failRun(diag, "interpreter (after the passes), trial " +
                               std::to_string(trial), runError);
    for (size_t i = 0; i < a.size(); ++i) {
      auto it = std::find_if(b.begin(), b.end(),
                             [&](const auto &o) { return o.first == a[i].first; });
      if (it == b.end()) {
        diffs[i].bad = true;
        diffs[i].first = "the output is gone after the passes";
        continue;
      }
      compare(a[i].second,
              padded ? realPart(it->second, a[i].second.shape,
                                crossesPacked(before.outputs[i].value->getType(),
                                              before.dims()))
                     : it->second,
              trial, diffs[i]);
    }
  }
  bool ok = true;
  for (size_t i = 0; i < diffs.size(); ++i) {
    os << "  output '" << before.outputs[i].name << "': max abs diff "
       << llvm::format("%g", diffs[i].abs) << ", max rel diff "
       << llvm::format("%g", diffs[i].rel)
       << (diffs[i].bad ? "  MISMATCH (" + diffs[i].first + ")" : "") << "\n";
    ok &= !diffs[i].bad;
  }
  printCoverage(trace, os);
  os << "check-equivalence: " << (ok ? "PASS" : "FAIL") << "\n";
  os.flush();
  if (!ok)
    diag.error({}, "the passes changed the graph's results");
  return ok;
}

/// Random values in [-1, 1) for every float parameter (their initializers
/// would check one point only), deterministic in \p seed.
static void randomParameters(const Graph &g, uint64_t seed,
                             std::map<std::string, Tensor> &inputs) {
  std::mt19937_64 rng(seed);
  for (const GraphInput &in : g.inputs()) {
    const TensorType &type = in.value->getType();
    if (in.kind != InputKind::Parameter || !isFloat(type.dtype) || !type.isStatic())
      continue;
    Tensor t(type.dtype, Shape(type.dims.size()));
    for (unsigned d = 0; d < type.rank(); ++d)
      t.shape[d] = type.dims[d].extent();
    t.data.resize(size_t(type.numElements()));
    for (Element &v : t.data)
      v = Element::ofReal(double(rng() >> 11) * 0x1p-52 - 1.0);
    inputs[in.value->getName()] = std::move(t);
  }
}

namespace {
/// How far one parameter's gradient is from the finite differences.
struct GradDifference {
  double abs = 0, rel = 0;
  unsigned checked = 0;
  std::string first;
};
} // namespace

/// The loss of \p g (its `loss` output) on \p inputs, in double.
static bool lossOf(const Graph &g, const std::map<std::string, Tensor> &inputs,
                   double &loss, RunError &error) {
  NamedTensors out;
  if (!runGraph(g, inputs, out, error, exactLimits()))
    return false;
  for (const GraphOutput &o : g.outputs)
    if (o.kind == OutputKind::Loss)
      for (const auto &[name, t] : out)
        if (name == o.name)
          loss = t.real(0);
  return true;
}

static bool gradCheck(const Graph &before, const Graph &after,
                      DiagnosticEngine &diag) {
  llvm::raw_ostream &os = llvm::outs();
  os << "gradcheck: " << Trials << " trial(s), seed " << Seed << ", "
     << GradCheckElements << " element(s) per parameter, central differences "
     << "in double, rtol 1e-4, atol 1e-6\n";
  std::map<std::string, GradDifference> diffs;
  for (unsigned trial = 0; trial < Trials; ++trial) {
    std::map<std::string, Tensor> inputs;
    std::string error;
    uint64_t seed = Seed * 1000003ull + trial;
    if (!randomInputs(before, seed, inputs, error, limits(), boolDensity(trial)))
      return fail(diag, error);
    randomParameters(before, seed, inputs);
    NamedTensors grads;
    RunError runError;
    if (!runGraph(after, inputs, grads, runError, exactLimits()))
      return failRun(diag, "gradcheck (the gradients), trial " + std::to_string(trial),
                     runError);
    for (const auto &[name, grad] : grads) {
      llvm::StringRef param = llvm::StringRef(name);
      if (!param.consume_back(".grad") || !inputs.count(param.str()))
        continue;
      Tensor &x = inputs[param.str()];
      GradDifference &d = diffs[param.str()];
      int64_t n = x.numel(), step = std::max<int64_t>(1, n / GradCheckElements);
      for (int64_t i = (trial * 7) % step; i < n; i += step) {
        double saved = x.real(i), eps = 1e-6 * std::max(1.0, std::fabs(saved));
        double plus = 0, minus = 0;
        x.data[i] = Element::ofReal(saved + eps); // Exact floats: unrounded.
        bool ok = lossOf(before, inputs, plus, runError);
        x.data[i] = Element::ofReal(saved - eps);
        ok = ok && lossOf(before, inputs, minus, runError);
        x.data[i] = Element::ofReal(saved);
        if (!ok)
          return failRun(diag, "gradcheck (the loss)", runError);
        double fd = (plus - minus) / (2 * eps), got = grad.real(i);
        double abs = std::fabs(fd - got), rel = fd == 0 ? 0 : abs / std::fabs(fd);
        d.abs = std::max(d.abs, abs);
        d.rel = std::max(d.rel, rel);
        ++d.checked;
        if (abs > 1e-6 + 1e-4 * std::fabs(fd) && d.first.empty()) {
          char buf[200];
          snprintf(buf, sizeof buf, "trial %u, element %lld: %.9g by differences, %.9g by autodiff",
                   trial, (long long)i, fd, got);
          d.first = buf;
        }
      }
    }
  }
  bool ok = !diffs.empty();
  for (const auto &[name, d] : diffs) {
    os << "  parameter '" << name << "': " << d.checked
       << " element(s), max abs diff " << llvm::format("%g", d.abs)
       << ", max rel diff " << llvm::format("%g", d.rel)
       << (d.first.empty() ? "" : "  MISMATCH (" + d.first + ")") << "\n";
    ok &= d.first.empty();
  }
  if (diffs.empty())
    os << "  no '<parameter>.grad' outputs (run --pass=autodiff)\n";
  os << "gradcheck: " << (ok ? "PASS" : "FAIL") << "\n";
  os.flush();
  if (!ok)
    diag.error({}, "autodiff's gradients differ from finite differences");
  return ok;
}

/// runInterpretMode's choice of mode.
static bool runMode(const Graph &graph, const Graph *reference,
                    DiagnosticEngine &diag) {
  if (GradCheck) {
    if (!reference)
      return fail(diag, "--gradcheck: no reference graph");
    return gradCheck(*reference, graph, diag);
  }
  if (CheckEquivalence) {
    if (!reference)
      return fail(diag, "--check-equivalence: no reference graph");
    return checkEquivalence(*reference, graph, diag);
  }
  return interpret(graph, diag);
}

bool cgc::runInterpretMode(const Graph &graph, const Graph *reference,
                           DiagnosticEngine &diag) {
  // The interpreter holds every intermediate value in host memory: a model
  // past what the process may allocate is an error, not an abort. (LLVM's
  // InitLLVM installs a new-handler that aborts; while interpreting, a
  // failed allocation throws std::bad_alloc instead.)
  std::new_handler llvmHandler = std::set_new_handler(nullptr);
  bool ok = false;
  try {
    ok = runMode(graph, reference, diag);
  } catch (const std::bad_alloc &) {
    ok = fail(diag, "the interpreter ran out of host memory (it keeps every "
                    "intermediate value of the graph)");
  }
  std::set_new_handler(llvmHandler);
  return ok;
}
