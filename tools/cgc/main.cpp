//===- cgc - The cgc compiler driver ------------------------------------------===//
//
//   cgc model.json                 verify the model and print a summary
//   cgc model.json -o model.cgc    compile it into an artifact
//   cgc --dump-artifact model.cgc  verify an artifact and print its manifest
//   cgc run model.cgc ...          replay an artifact on the GPU
//   cgc bench model.cgc ...        time replays on the GPU
//
// Exit codes: 0 success; 1 invalid input, failed compile or failed run;
// 2 bad command line.
//
//===----------------------------------------------------------------------===//
#include "ir/JsonReader.h"
#include "ir/Verifier.h"
#include "support/ToolSupport.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include <cstring>

using namespace cgc;
namespace cl = llvm::cl;

static cl::opt<std::string> InputFile(cl::Positional, cl::desc("<model.json>"));
static cl::opt<std::string> OutputFile("o", cl::desc("Write the compiled artifact here"),
                                       cl::value_desc("model.cgc"));
static cl::opt<unsigned> ErrorLimit("error-limit", cl::desc("Stop after this many errors"),
                                    cl::init(20));

static void printSummary(const Graph &g) {
  size_t persistent = 0, persistentBytes = 0, nodes = 0;
  for (const GraphInput &in : g.inputs())
    if (isPersistent(in.kind)) {
      ++persistent;
      persistentBytes += in.value->getType().maxElements(g.dims()) *
                         dtypeSize(in.value->getType().dtype);
    }
  nodes = g.nodes().size();
  llvm::outs() << "cgc: '" << g.name << "' is valid: " << g.inputs().size()
               << " inputs (" << persistent << " persistent, " << persistentBytes
               << " bytes), " << nodes << " nodes, " << g.outputs.size()
               << " outputs\n";
}

static int compileMain(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv,
                              "cgc: ahead-of-time CUDA graph compiler\n\n"
                              "  cgc model.json [-o model.cgc]\n"
                              "  cgc --dump-artifact model.cgc\n"
                              "  cgc run model.cgc --inputs in.safetensors "
                              "--outputs out.safetensors\n"
                              "  cgc bench model.cgc\n\n"
                              "Exit codes: 0 success, 1 error, 2 usage error\n");
  if (InputFile.empty()) {
    llvm::errs() << "cgc: error: no input file (see --help)\n";
    return 2;
  }
  DiagnosticEngine diag(llvm::errs(), ErrorLimit);
  std::unique_ptr<Graph> graph = readGraphFile(InputFile, diag, ReadOptions());
  if (!graph || !verifyGraph(*graph, diag))
    return 1;
  if (!OutputFile.empty()) {
    llvm::errs() << "cgc: error: code generation is not available yet\n";
    return 1;
  }
  printSummary(*graph);
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  return compileMain(argc, argv);
}
