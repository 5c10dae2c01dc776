//===- cgc-opt - Runs passes over the JSON IR -------------------------------===//
//
// The test driver for passes: reads an IR file (comments allowed, optionally
// split at `// -----` lines), runs the requested passes with verification
// after each, and prints the result as text or JSON.
//
//===----------------------------------------------------------------------===//
#include "Interpret.h"

#include <algorithm>
#include "cgc/Version.h"
#include "ir/JsonReader.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "codegen/GraphPlan.h"
#include "codegen/Program.h"
#include "passes/Pass.h"
#include "support/ToolSupport.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"

using namespace cgc;
namespace cl = llvm::cl;

static cl::opt<std::string> InputFile(cl::Positional, cl::desc("<input.json>"),
                                      cl::init("-"));
static cl::opt<std::string> OutputFile("o", cl::desc("Output file"),
                                       cl::value_desc("path"), cl::init("-"));
static cl::list<std::string> PassList("pass", cl::desc("Run this pass (repeatable)"),
                                      cl::value_desc("name"));
static cl::opt<std::string> Pipeline("passes", cl::desc("Run these passes, comma-separated"),
                                     cl::value_desc("a,b,c"));
static cl::opt<bool> ListPasses("list-passes", cl::desc("Print every pass name and exit"));
static cl::opt<bool> ListOps("list-ops",
                             cl::desc("Print every op (from ir/Ops.def) and exit; with "
                                      "--emit=json, the ops, their operand counts and "
                                      "attributes, and the dtypes"));
static cl::opt<bool> PrintIR("print-ir", cl::desc("Print the text IR (the default)"));
static cl::opt<std::string> Emit("emit", cl::desc("Output form: text or json"),
                                 cl::init("text"));
static cl::opt<bool> SplitInput("split-input-file",
                                cl::desc("Process chunks separated by '// -----' apart"));
static cl::opt<bool> VerifyEach("verify-each", cl::desc("Verify after every pass"),
                                cl::init(true));
static cl::list<std::string> PrintAfter("print-ir-after",
                                        cl::desc("Print the IR after this pass"),
                                        cl::CommaSeparated);
static cl::opt<bool> PrintAfterAll("print-ir-after-all",
                                   cl::desc("Print the IR after every pass"));
static cl::opt<bool> TimePasses("time-passes", cl::desc("Time each pass"));
static cl::list<std::string> BindDims("bind-dim",
                                      cl::desc("Specialize a symbolic dim (shape-infer)"),
                                      cl::value_desc("B=32"));
static cl::opt<bool> PrintMemoryPlan("print-memory-plan",
                                     cl::desc("Print the memory plan after the passes"));
static cl::opt<bool> PrintGraphPlan("print-graph-plan",
                                    cl::desc("Print the CUDA graph nodes and edges"));
static cl::opt<bool> ExpandAttention(
    "expand-attention",
    cl::desc("Schedule for a target that runs no attention fused: "
             "expand-attention writes every one out (as cgc --train does)"));
static cl::opt<bool> ExpandConvolution(
    "expand-convolution",
    cl::desc("Schedule for a target without cuDNN: expand-convolution writes "
             "every conv out (as cgc --train does)"));
static cl::opt<uint64_t> BucketBytes(
    "bucket-bytes",
    cl::desc("data-parallel: the gradient bytes that close a bucket"),
    cl::init(uint64_t(25) << 20));
static cl::opt<bool> WireBf16(
    "wire-bf16", cl::desc("data-parallel: f32 gradients travel in bf16"));
static cl::opt<std::string> AutocastTo(
    "autocast", cl::desc("autocast: the 16-bit dtype of products (bf16 or f16)"),
    cl::init(""));
static cl::opt<bool> LossScaling(
    "loss-scaling",
    cl::desc("autodiff and apply-optimizer: dynamic loss scaling (as cgc "
             "--train --autocast f16 does)"));
static cl::opt<std::string> MicroStep(
    "micro-step",
    cl::desc("accumulate-gradients: the micro-step to build (accumulate or last)"),
    cl::init(""));
static cl::opt<std::string> Entry(
    "entry",
    cl::desc("Work on this graph of the model: one of its entries, or main"),
    cl::init(""));
static cl::opt<unsigned> ErrorLimit("error-limit", cl::desc("Stop after this many errors"),
                                    cl::init(20));

/// Makes \p graph the model's graph named --entry (an entry, or "main"
/// without its entries).
static bool selectEntry(std::unique_ptr<Graph> &graph, DiagnosticEngine &diag) {
  if (Entry.empty())
    return true;
  std::string names = "main";
  for (auto &entry : graph->entries) {
    names += ", " + entry->name;
    if (entry->name != Entry)
      continue;
    std::unique_ptr<Graph> chosen = std::move(entry);
    graph = std::move(chosen);
    return true;
  }
  if (Entry == "main") {
    graph->entries.clear();
    return true;
  }
  diag.error({}, "--entry=" + Entry + ": the model has no graph of that name (it has " +
                     names + ")");
  return false;
}

/// Processes one chunk; appends its output to \p out.
static bool processChunk(uint32_t bufferId, llvm::StringRef baseDir,
                         DiagnosticEngine &diag, std::string &out) {
  ReadOptions options;
  options.allowComments = true;
  std::unique_ptr<Graph> graph = readGraphBuffer(bufferId, baseDir, diag, options);
  if (!graph || !verifyGraph(*graph, diag) || !selectEntry(graph, diag))
    return false;
  std::unique_ptr<Graph> reference; // untouched copy for --check-equivalence
  if (checkEquivalenceRequested() &&
      (!(reference = readGraphBuffer(bufferId, baseDir, diag, options)) ||
       !selectEntry(reference, diag)))
    return false;
  PassManagerOptions pmOptions;
  pmOptions.verifyEach = VerifyEach;
  pmOptions.printAfterAll = PrintAfterAll;
  pmOptions.printAfter.insert(PrintAfter.begin(), PrintAfter.end());
  pmOptions.timePasses = TimePasses;
  PassManager pm(pmOptions);
  for (const std::string &name : PassList)
    if (!pm.addPipeline(name, diag))
      return false;
  if (!pm.addPipeline(Pipeline, diag))
    return false;
  llvm::raw_string_ostream os(out);
  PassContext ctx{diag, {}};
  if (ExpandAttention)
    ctx.target.attention = AttentionPolicy::Expand;
  if (ExpandConvolution)
    ctx.target.convolution = ConvolutionPolicy::Expand;
  ctx.dataParallel.bucketBytes = std::max<uint64_t>(BucketBytes, 1);
  ctx.dataParallel.wireType = WireBf16 ? DType::BF16 : DType::F32;
  if (AutocastTo == "bf16" || AutocastTo == "f16")
    ctx.autocast = AutocastTo == "bf16" ? DType::BF16 : DType::F16;
  else if (!AutocastTo.empty()) {
    diag.error({}, "--autocast expects bf16 or f16, got '" + AutocastTo + "'");
    return false;
  }
  ctx.lossScaling = LossScaling;
  ctx.differentiated = pm.holds("autodiff");
  if (MicroStep == "accumulate" || MicroStep == "last")
    ctx.microStep = MicroStep == "last" ? PassContext::MicroStep::Last
                                        : PassContext::MicroStep::Accumulate;
  else if (!MicroStep.empty()) {
    diag.error({}, "--micro-step expects accumulate or last, got '" + MicroStep + "'");
    return false;
  }
  for (llvm::StringRef binding : BindDims) {
    auto [name, text] = binding.split('=');
    int64_t value;
    if (text.getAsInteger(10, value)) {
      diag.error({}, "--bind-dim expects NAME=INTEGER, got '" + binding + "'");
      return false;
    }
    ctx.dimBindings[name.str()] = value;
  }
  if (!pm.run(*graph, ctx, os))
    return false;
  for (const auto &entry : graph->entries)
    if (!pm.run(*entry, ctx, os))
      return false;
  if (interpretModeRequested())
    return runInterpretMode(*graph, reference.get(), diag);
  if (PrintMemoryPlan || PrintGraphPlan) {
    // The plan plan-memory left, else one made now (after the schedule
    // records it reserves scratch for).
    if (!ctx.memoryPlan) {
      PassManager plan;
      if (!plan.addPipeline("schedule,plan-memory", diag) ||
          !plan.run(*graph, ctx, llvm::nulls()))
        return false;
    }
    if (PrintMemoryPlan)
      printMemoryPlan(*graph, *ctx.memoryPlan, os);
    if (PrintGraphPlan) {
      Program program;
      if (!lowerGraph(*graph, *ctx.memoryPlan, "main", program, diag))
        return false;
      dropUnusedKernels(program);
      printGraphPlan(program, os);
    }
    if (!PrintIR)
      return true;
  }
  if (Emit == "json")
    os << writeGraphJson(*graph);
  else
    printGraph(*graph, os);
  return true;
}

/// Checks the command line before any input is read; a mistake there exits
/// with status 2 (usage), not 1 (bad input).
static bool checkCommandLine() {
  auto fail = [](const llvm::Twine &message) {
    llvm::errs() << "cgc-opt: error: " << message << "\n";
    return false;
  };
  if (Emit != "text" && Emit != "json")
    return fail("--emit must be 'text' or 'json'");
  if (OutputFile.empty())
    return fail("-o needs a path ('-' for standard output)");
  std::vector<std::string> names(PassList.begin(), PassList.end());
  names.insert(names.end(), PrintAfter.begin(), PrintAfter.end());
  llvm::SmallVector<llvm::StringRef, 8> pipeline;
  llvm::StringRef(Pipeline).split(pipeline, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef name : pipeline)
    names.push_back(name.trim().str());
  for (const std::string &name : names)
    if (!createPass(name))
      return fail("unknown pass '" + name + "' (cgc-opt --list-passes)");
  for (llvm::StringRef binding : BindDims) {
    auto [name, text] = binding.split('=');
    int64_t value;
    if (name.empty() || text.getAsInteger(10, value))
      return fail("--bind-dim expects NAME=INTEGER, got '" + binding + "'");
  }
  return true;
}

/// Splits at lines starting with `// -----`; each chunk keeps its line
/// numbers by starting with as many newlines as lines precede it.
static std::vector<std::string> splitChunks(llvm::StringRef text) {
  std::vector<std::string> chunks(1);
  unsigned line = 0;
  while (!text.empty()) {
    auto [current, rest] = text.split('\n');
    ++line;
    if (current.startswith("// -----"))
      chunks.push_back(std::string(line, '\n'));
    else
      chunks.back() += current.str() + "\n";
    text = rest;
  }
  return chunks;
}

/// --list-ops: the op table as text (names) or JSON; test/python/
/// op-names.test checks every op and dtype name the Python package writes
/// against it.
static int listOps() {
  if (Emit != "json") {
    for (unsigned k = 0; k < NumOpKinds; ++k)
      llvm::outs() << mnemonic(OpKind(k)) << "\n";
    return 0;
  }
  llvm::json::Array ops, dtypes;
  for (unsigned k = 0; k < NumOpKinds; ++k) {
    const OpInfo &info = opInfo(OpKind(k));
    ops.push_back(llvm::json::Object{{"name", info.mnemonic},
                                     {"min_operands", info.minOperands},
                                     {"max_operands", info.maxOperands},
                                     {"attrs", info.attrSchema},
                                     {"regions", info.regionNames}});
  }
#define CGC_DTYPE(Enum, ...) dtypes.push_back(dtypeName(DType::Enum));
#include "format/DTypes.def"
  llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                             {"ops", std::move(ops)},
                                             {"dtypes", std::move(dtypes)}}))
               << "\n";
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::SetVersionPrinter(
      [](llvm::raw_ostream &os) { os << kCompilerVersion << "\n"; });
  if (!cl::ParseCommandLineOptions(argc, argv, "cgc-opt: run cgc passes over JSON IR\n", &llvm::errs()))
    return 2;
  if (ListOps)
    return listOps();
  if (ListPasses) {
    for (const std::string &name : registeredPassNames())
      llvm::outs() << name << "\n";
    return 0;
  }
  if (!checkCommandLine())
    return 2;
  DiagnosticEngine diag(llvm::errs(), ErrorLimit);
  std::unique_ptr<llvm::MemoryBuffer> buffer =
      readIRFile(InputFile, diag, ReadOptions());
  if (!buffer)
    return 1;
  llvm::StringRef dir = llvm::sys::path::parent_path(InputFile);
  std::string baseDir = InputFile == "-" || dir.empty() ? "." : dir.str();
  std::vector<std::string> chunks;
  if (SplitInput)
    chunks = splitChunks(buffer->getBuffer());
  else
    chunks.push_back(buffer->getBuffer().str());
  std::string out;
  bool ok = true;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (i)
      out += "// -----\n";
    uint32_t id = diag.addBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(chunks[i], InputFile));
    ok = processChunk(id, baseDir, diag, out) && ok;
  }
  if (!ok) {
    // Like mlir-opt: on standard output the chunks that did succeed are
    // still printed; a file is never written by a failed run.
    if (OutputFile == "-")
      llvm::outs() << out;
    return 1;
  }
  std::string error;
  if (!writeFileAtomically(OutputFile, out, /*overwrite=*/true, error)) {
    llvm::errs() << "cgc-opt: error: " << error << "\n";
    return 1;
  }
  return 0;
}
