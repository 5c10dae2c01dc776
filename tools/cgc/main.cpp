//===- cgc - The cgc compiler driver ------------------------------------------===//
//
//   cgc model.json                 verify the model and print a summary
//   cgc model.json -o model.cgc    compile it into an artifact
//   cgc model.onnx -o model.cgc    import an ONNX model (python/cgc), then compile
//   cgc model.json --emit=cuda     print the generated CUDA program
//   cgc model.json --emit=dot      print the CUDA graph as Graphviz
//   cgc model.json --emit=ir       print each graph's IR after the pipeline,
//                                  schedule records included
//   cgc --dump-artifact model.cgc  verify an artifact and print its manifest
//   cgc run model.cgc ...          replay an artifact on the GPU
//   cgc bench model.cgc ...        time replays on the GPU
//   cgc cache info|list|clear|trim the compile cache (driver/CompileCache.h)
//   cgc --version                  print cgc's version (project() in CMake)
//
// Exit codes: 0 success; 1 invalid input, failed compile or failed run;
// 2 bad command line.
//
//===----------------------------------------------------------------------===//
#include "cgc/Version.h"
#include "driver/CompileCache.h"
#include "driver/Compiler.h"
#include "format/ArtifactFormat.h"
#include "format/WeightsFile.h"
#include "ir/JsonReader.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "support/ToolSupport.h"
#include "CacheCommand.h"
#include "OnnxImport.h"
#ifdef CGC_HAVE_RUN_COMMANDS
#include "RunCommands.h"
#endif

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <cstring>

using namespace cgc;
namespace cl = llvm::cl;

static cl::opt<std::string> InputFile(cl::Positional, cl::desc("<model.json | model.onnx>"));
static cl::opt<std::string> OutputFile("o", cl::desc("Write the compiled artifact here"),
                                       cl::value_desc("model.cgc"));
static cl::opt<std::string> Arch("arch", cl::desc("Target GPU architecture"),
                                 cl::value_desc("sm_XX"), cl::init("sm_90"));
static cl::opt<std::string> Emit("emit", cl::desc("Print instead of compiling: cuda, dot or ir"),
                                 cl::value_desc("cuda|dot"));
static cl::opt<bool> NoFuse("no-fuse", cl::desc("Keep one kernel per op"));
static cl::opt<bool> Progress(
    "progress",
    cl::desc("Print a line to stderr as each compile phase starts (the "
             "default on a terminal): reading, passes, lowering, NVRTC, "
             "writing"));
static cl::opt<bool> Quiet(
    "quiet", cl::desc("Print only errors, warnings and notes: no phase lines "
                      "(even on a terminal or with --progress) and no summary"));
static cl::opt<bool> TimePasses(
    "time-passes",
    cl::desc("Print the time of every compile phase: reading, each pass, "
             "lowering, the CUDA text, NVRTC, the artifact writer"));
static cl::alias NoFuseO0("O0", cl::desc("Alias for --no-fuse"), cl::aliasopt(NoFuse));
static cl::opt<bool> AllowTf32("allow-tf32",
                               cl::desc("Let f32 matrix products use TF32 tensor cores"));
static cl::opt<bool> LibraryProducts(
    "library-products",
    cl::desc("Run every matrix product cuBLASLt can run with cuBLASLt, "
             "not only those the cost rule gives it"));
static cl::opt<bool> TiledProducts(
    "tiled-products",
    cl::desc("Run every f32 matrix product of one batch with cgc's tiled "
             "kernel, not only those the cost rule gives it (how "
             "bench/product_rule.py measures the rule)"));
static cl::opt<bool> MmaProducts(
    "mma-products",
    cl::desc("Run every f16/bf16 matrix product cgc's tensor-core kernel can "
             "run with it, not only those the cost rule gives it (how "
             "bench/product_rule.py --mma measures the rule)"));
static cl::opt<bool> ExpandAttention(
    "expand-attention",
    cl::desc("Write every attention out as products and a softmax, not "
             "only those the fused attention kernel does not run"));
static cl::opt<bool> ExpandConvolution(
    "expand-convolution",
    cl::desc("Write every conv out as window gathers and products, not only "
             "those cuDNN cannot run"));
static cl::opt<ProgrammaticEdges> ProgrammaticEdgesOption(
    "programmatic-edges",
    cl::desc("Which kernel-to-kernel edges launch programmatically (how the "
             "rule in codegen/GraphPlan.h is measured)"),
    cl::values(clEnumValN(ProgrammaticEdges::Rule, "rule",
                          "those the rule picks (default)"),
               clEnumValN(ProgrammaticEdges::None, "none", "none"),
               clEnumValN(ProgrammaticEdges::All, "all",
                          "every kernel-to-kernel edge")),
    cl::init(ProgrammaticEdges::Rule));
static cl::opt<bool> Report(
    "report",
    cl::desc("Say what became of every sync point (item, nonzero, "
             "masked_select) and every while without max_iterations"));
static cl::opt<bool> Gradients(
    "gradients",
    cl::desc("Append the gradient of the loss with respect to every parameter "
             "as an output '<parameter>.grad' (the autodiff pass)"));
static cl::opt<bool> Train(
    "train",
    cl::desc("Compile a training step: the forward graph, its backward pass "
             "(autodiff) and the update of the declared optimizer "
             "(apply-optimizer), replayed step after step"));
static cl::opt<bool> DataParallel(
    "data-parallel",
    cl::desc("With --train: average every gradient over the ranks of a "
             "data-parallel run (NCCL all-reduces inside the graph, "
             "docs/distributed.md)"));
static cl::opt<double> BucketMb(
    "bucket-mb",
    cl::desc("With --data-parallel: the gradient bytes of one all-reduce "
             "bucket, in MiB (default 25)"),
    cl::init(25.0));
static cl::opt<std::string> DataParallelDType(
    "data-parallel-dtype",
    cl::desc("With --data-parallel: the dtype f32 gradients travel in "
             "(f32 or bf16; default f32)"),
    cl::init("f32"));
static cl::opt<std::string> Autocast(
    "autocast",
    cl::desc("Mixed precision as PyTorch autocast does it: products in bf16 "
             "or f16, its float32 ops in f32, parameters in f32 (bf16 or "
             "f16; f16 with --train scales the loss dynamically, as "
             "GradScaler does)"),
    cl::init(""));
static cl::opt<int64_t> MaxLoopIterations(
    "max-loop-iterations",
    cl::desc("The device trip bound of a while without max_iterations "
             "(1 to 2147483647)"),
    cl::init(10000000));
static cl::opt<bool> WeightsBeside(
    "weights-beside",
    cl::desc("Leave the weights in the IR's weights file, beside the "
             "artifact (the file must be in -o's folder or below); done "
             "anyway past the state an artifact holds"));
static cl::opt<uint64_t> ArtifactStateLimit(
    "artifact-state-limit",
    cl::desc("Most bytes of initial state the artifact carries (default and "
             "at most 1 GiB; smaller for tests)"),
    cl::init(uint64_t(1) << 30));
static cl::opt<bool> NoCache(
    "no-cache",
    cl::desc("Neither read nor write the compile cache (also CGC_CACHE=0)"));
static cl::opt<bool> DumpArtifact("dump-artifact",
                                  cl::desc("Verify an artifact and print its manifest"));
static cl::list<std::string>
    BindDims("bind-dim",
             cl::desc("Compile one graph per value of a symbolic dim"),
             cl::value_desc("NAME=V1,V2,..."));
static cl::list<std::string>
    OnnxShapes("shape",
               cl::desc("The static shape of an ONNX input with dynamic dims "
                        "(passed to the importer)"),
               cl::value_desc("NAME=D,D,..."));
static cl::opt<unsigned> ErrorLimit("error-limit", cl::desc("Stop after this many errors"),
                                    cl::init(20));

static void printSummary(const Graph &g) {
  size_t persistent = 0, persistentBytes = 0;
  for (const GraphInput &in : g.inputs())
    if (isPersistent(in.kind)) {
      ++persistent;
      persistentBytes += in.value->getType().maxElements(g.dims()) *
                         dtypeSize(in.value->getType().dtype);
    }
  llvm::outs() << "cgc: '" << g.name << "' is valid: " << g.inputs().size()
               << " inputs (" << persistent << " persistent, " << persistentBytes
               << " bytes), " << g.nodes().size() << " nodes, " << g.outputs.size()
               << " outputs\n";
}

static int dumpArtifact() {
  format::Artifact artifact;
  std::string error;
  if (!format::loadArtifactFile(InputFile, artifact, error)) {
    llvm::errs() << "cgc: error: " << error << "\n";
    return 1;
  }
  llvm::outs() << format::dumpManifest(artifact);
  // The weights beside it are checked as the runtime checks them at load.
  const format::WeightsFileDesc &weights = artifact.manifest.weightsFile;
  if (weights.path.empty())
    return 0;
  format::MappedWeights mapped;
  if (!mapped.open(format::weightsPathBeside(InputFile, weights.path),
                   &weights, error)) {
    llvm::errs() << "cgc: error: " << error << "\n";
    return 1;
  }
  llvm::outs() << "weights file checked: size and checksum match\n";
  return 0;
}

/// --emit=cuda, --emit=dot and --emit=ir: the program the artifact would
/// hold, or its graphs as lowered.
static int emitText(Graph &graph, const CompileOptions &options,
                    DiagnosticEngine &diag) {
  Compilation compilation;
  if (!lowerModel(graph, options, compilation, diag))
    return 1;
  if (Emit == "cuda")
    llvm::outs() << programSource(compilation.program);
  else if (Emit == "ir")
    for (const CompiledGraph &g : compilation.graphs)
      printGraph(*g.ir, llvm::outs());
  else
    printGraphDot(compilation.program, graph.name, llvm::outs());
  return 0;
}

/// The compile cache this compile may use: none with --no-cache, and none
/// for --report, --time-passes (which ask about the compile itself) and
/// --weights-beside (whose artifact needs its weights file).
static CompileCache cacheFor(const CompileOptions &options) {
  if (NoCache || Report || TimePasses || options.weightsBeside)
    return CompileCache();
  return CompileCache::fromEnvironment();
}

/// The weights file \p graph reads, relative to the IR at \p modelPath.
static std::string weightsPathOf(const Graph &graph, llvm::StringRef modelPath) {
  if (graph.weightsFile.empty())
    return "";
  llvm::SmallString<256> path(llvm::sys::path::parent_path(modelPath));
  llvm::sys::path::append(path, graph.weightsFile);
  return path.str().str();
}

/// Whether \p bytes hold their weights (none left in a file beside).
static bool selfContained(const std::vector<uint8_t> &bytes) {
  format::Manifest manifest;
  std::string error;
  return format::parseArtifactManifest(bytes.data(), bytes.size(), manifest, error,
                                       /*verifyChecksum=*/false) &&
         manifest.weightsFile.path.empty();
}

static int writeArtifactFile(llvm::StringRef bytes, const CompileOptions &options) {
  std::string error;
  PhaseTimer timer(options.times, "write " + OutputFile, options.progress);
  if (!writeFileAtomically(OutputFile, bytes, /*overwrite=*/true, error)) {
    llvm::errs() << "cgc: error: " << error << "\n";
    return 1;
  }
  return 0;
}

static int compile(Graph &graph, llvm::StringRef modelPath,
                   const CompileOptions &options, DiagnosticEngine &diag) {
  CompileCache cache = cacheFor(options);
  std::string key, note, error;
  if (cache.enabled())
    key = cache.keyOf(modelPath, weightsPathOf(graph, modelPath), options, error);
  if (!key.empty()) {
    std::unique_ptr<llvm::MemoryBuffer> entry = cache.lookup(key, note);
    if (!note.empty())
      llvm::errs() << "cgc: note: " << note << "\n";
    if (entry) {
      if (int status = writeArtifactFile(entry->getBuffer(), options))
        return status;
      if (!Quiet)
        llvm::errs() << "cgc: wrote " << OutputFile << " from the compile cache ("
                     << cache.folder() << ")\n";
      return 0;
    }
  }
  CompileResult result;
  if (!compileModel(graph, options, diag, result))
    return 1;
  llvm::StringRef bytes(reinterpret_cast<const char *>(result.bytes.data()),
                        result.bytes.size());
  if (int status = writeArtifactFile(bytes, options))
    return status;
  if (!key.empty() && selfContained(result.bytes) &&
      !cache.store(key, result.bytes, error))
    llvm::errs() << "cgc: warning: " << error << " (the artifact is written)\n";
  if (Quiet)
    return 0;
  llvm::errs() << "cgc: wrote " << OutputFile << ": " << result.graphs
               << (result.graphs == 1 ? " graph, " : " graphs, ")
               << result.kernels
               << " kernels, " << result.graphNodes << " graph nodes, arena "
               << result.arenaBytes << " bytes, persistent "
               << result.persistentBytes << " bytes, compiled in "
               << llvm::format("%.1f", result.compileMs) << " ms\n";
  return 0;
}

/// --autocast; false after a usage error.
static bool autocastOption(CompileOptions &options) {
  if (Autocast.empty())
    return true;
  if (Autocast != "bf16" && Autocast != "f16") {
    llvm::errs() << "cgc: --autocast: '" << Autocast << "' is not bf16 or f16\n";
    return false;
  }
  options.autocast = Autocast == "bf16" ? DType::BF16 : DType::F16;
  return true;
}

/// --data-parallel and its options; false after a usage error.
static bool dataParallelOptions(CompileOptions &options) {
  bool given = BucketMb.getNumOccurrences() || DataParallelDType.getNumOccurrences();
  if ((DataParallel || given) && !Train) {
    llvm::errs() << "cgc: --data-parallel" << (given ? "'s options need" : " needs")
                 << " --train\n";
    return false;
  }
  if (given && !DataParallel) {
    llvm::errs() << "cgc: --bucket-mb and --data-parallel-dtype need --data-parallel\n";
    return false;
  }
  options.dataParallel = DataParallel;
  if (!(BucketMb > 0 && BucketMb <= 4096)) {
    llvm::errs() << "cgc: --bucket-mb: " << llvm::format("%g", double(BucketMb))
                 << " is outside (0, 4096]\n";
    return false;
  }
  options.dataParallelOptions.bucketBytes =
      std::max<uint64_t>(1, uint64_t(BucketMb * double(1 << 20)));
  if (DataParallelDType != "f32" && DataParallelDType != "bf16") {
    llvm::errs() << "cgc: --data-parallel-dtype: '" << DataParallelDType
                 << "' is not f32 or bf16\n";
    return false;
  }
  options.dataParallelOptions.wireType =
      DataParallelDType == "bf16" ? DType::BF16 : DType::F32;
  return true;
}

/// `--bind-dim B=8,16,64` (repeatable, one dim each).
static bool parseBindDims(CompileOptions &options) {
  for (llvm::StringRef binding : BindDims) {
    auto [name, list] = binding.split('=');
    llvm::SmallVector<llvm::StringRef, 8> texts;
    list.split(texts, ',');
    std::vector<int64_t> &values = options.bindDims[name.str()];
    if (!values.empty()) {
      llvm::errs() << "cgc: error: --bind-dim names '" << name << "' twice\n";
      return false;
    }
    for (llvm::StringRef text : texts) {
      int64_t v;
      if (name.empty() || text.trim().getAsInteger(10, v)) {
        llvm::errs() << "cgc: error: --bind-dim expects NAME=V1,V2,..., got '"
                     << binding << "'\n";
        return false;
      }
      if (llvm::is_contained(values, v)) {
        llvm::errs() << "cgc: error: --bind-dim gives " << name << "=" << v
                     << " twice\n";
        return false;
      }
      values.push_back(v);
    }
  }
  return true;
}

static int compileMain(int argc, char **argv) {
  cl::SetVersionPrinter(
      [](llvm::raw_ostream &os) { os << kCompilerVersion << "\n"; });
  if (!cl::ParseCommandLineOptions(argc, argv,
                              "cgc: ahead-of-time CUDA graph compiler\n\n"
                              "  cgc model.json [-o model.cgc] [--arch=sm_90] [--no-fuse] [--allow-tf32]\n"
                              "      [--library-products | --tiled-products | --mma-products]\n"
                              "      [--expand-attention] [--programmatic-edges=rule|none|all]\n"
                              "      [--bind-dim NAME=V1,V2,...] [--weights-beside]\n"
                              "  cgc model.onnx -o model.cgc   (ONNX: python/cgc imports it)\n"
                              "  cgc model.json --emit=cuda|dot|ir\n"
                              "  cgc --dump-artifact model.cgc\n"
                              "  cgc run model.cgc --inputs in.safetensors "
                              "--outputs out.safetensors\n"
                              "  cgc bench model.cgc\n\n"
                              "Exit codes: 0 success, 1 error, 2 usage error\n",
                              &llvm::errs()))
    return 2;
  if (InputFile.empty()) {
    llvm::errs() << "cgc: error: no input file (see --help)\n";
    return 2;
  }
  if (DumpArtifact)
    return dumpArtifact();
  if (!Emit.empty() && Emit != "cuda" && Emit != "dot" && Emit != "ir") {
    llvm::errs() << "cgc: error: --emit must be 'cuda', 'dot' or 'ir'\n";
    return 2;
  }
  unsigned archNumber = 0;
  if (!llvm::StringRef(Arch).startswith("sm_") ||
      llvm::StringRef(Arch).drop_front(3).getAsInteger(10, archNumber) ||
      archNumber < 50) {
    llvm::errs() << "cgc: error: --arch must look like sm_90 (sm_50 or "
                    "newer), got '" << Arch << "'\n";
    return 2;
  }
  if (OutputFile.getNumOccurrences() && OutputFile.empty()) {
    llvm::errs() << "cgc: error: -o needs a path\n";
    return 2;
  }
  if (!OnnxShapes.empty() && !isOnnxModel(InputFile)) {
    llvm::errs() << "cgc: error: --shape gives the dims of an ONNX model's "
                    "inputs; the input is not a .onnx file\n";
    return 2;
  }
  bool sameFile = false;
  if (!OutputFile.empty() &&
      !llvm::sys::fs::equivalent(InputFile, OutputFile, sameFile) && sameFile) {
    llvm::errs() << "cgc: error: the output " << OutputFile
                 << " is the input file; refusing to overwrite it\n";
    return 1;
  }
  DiagnosticEngine diag(llvm::errs(), ErrorLimit);
  PhaseTimes times;
  llvm::raw_ostream *progress =
      !Quiet && (Progress || llvm::errs().is_displayed()) ? &llvm::errs() : nullptr;
  std::unique_ptr<Graph> graph;
  std::string modelPath = InputFile;
  OnnxImport onnxImport;
  if (isOnnxModel(InputFile)) {
    PhaseTimer timer(&times, "import ONNX", progress);
    std::string error;
    int status = 1;
    if (!onnxImport.run(InputFile, OnnxShapes, error, status)) {
      if (!error.empty())
        llvm::errs() << InputFile << ": error: " << error << "\n";
      return status;
    }
    modelPath = onnxImport.jsonPath();
    // Errors in the imported IR name the .onnx file, never the temporary
    // JSON; the importer stamps each node with its ONNX node (`loc`).
    diag.showLocationsAs(InputFile);
  }
  {
    PhaseTimer timer(&times, "read and verify " + modelPath, progress);
    graph = readGraphFile(modelPath, diag, ReadOptions());
    if (!graph || !verifyGraph(*graph, diag))
      return 1;
  }
  CompileOptions options;
  if (TimePasses)
    options.times = &times;
  options.progress = progress;
  options.arch = Arch;
  options.fuse = !NoFuse;
  options.allowTf32 = AllowTf32;
  options.report = Report;
  options.gradients = Gradients;
  options.train = Train;
  if (!dataParallelOptions(options) || !autocastOption(options))
    return 2;
  options.weightsBeside = WeightsBeside;
  options.artifactPath = OutputFile;
  if (ArtifactStateLimit > (uint64_t(1) << 30)) {
    llvm::errs() << "cgc: error: --artifact-state-limit is at most "
                 << (uint64_t(1) << 30) << " bytes\n";
    return 2;
  }
  options.artifactStateLimit = ArtifactStateLimit;
  if (MaxLoopIterations < 1 || MaxLoopIterations > 2147483647) {
    diag.error({}, "--max-loop-iterations: " +
                       std::to_string(MaxLoopIterations) +
                       " is outside [1, 2147483647]");
    return 2;
  }
  options.maxLoopIterations = MaxLoopIterations;
  if (int(LibraryProducts) + int(TiledProducts) + int(MmaProducts) > 1) {
    llvm::errs() << "cgc: --library-products, --tiled-products and "
                    "--mma-products exclude each other\n";
    return 2;
  }
  if (LibraryProducts)
    options.productPolicy = ProductPolicy::LibraryOnly;
  if (TiledProducts)
    options.productPolicy = ProductPolicy::TiledWherePossible;
  if (MmaProducts)
    options.productPolicy = ProductPolicy::MmaWherePossible;
  if (ExpandAttention)
    options.attentionPolicy = AttentionPolicy::Expand;
  if (ExpandConvolution)
    options.convolutionPolicy = ConvolutionPolicy::Expand;
  options.programmaticEdges = ProgrammaticEdgesOption;
  if (!parseBindDims(options))
    return 2;
  int status = 0;
  if (!Emit.empty())
    status = emitText(*graph, options, diag);
  else if (!OutputFile.empty())
    status = compile(*graph, modelPath, options, diag);
  else
    printSummary(*graph);
  if (TimePasses)
    printTimings("cgc compile timing", times, llvm::errs());
  return status;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  if (argc >= 2 && !std::strcmp(argv[1], "cache"))
    return cgcCacheMain(argc - 1, argv + 1);
  if (argc >= 2 && (!std::strcmp(argv[1], "run") || !std::strcmp(argv[1], "bench"))) {
#ifdef CGC_HAVE_RUN_COMMANDS
    return !std::strcmp(argv[1], "run") ? cgcRunMain(argc - 1, argv + 1)
                                        : cgcBenchMain(argc - 1, argv + 1);
#else
    llvm::errs() << "cgc: error: this build has no runtime ('" << argv[1]
                 << "' is unavailable)\n";
    return 2;
#endif
  }
  return compileMain(argc, argv);
}
