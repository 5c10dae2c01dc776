//===- FuzzCompile.cpp - Fuzz target: lowering and the artifact writer ----===//
//
// A model that verifies is compiled as `cgc -o` does, up to NVRTC: the
// default pipeline, lowering to the graph plan, the CUDA text, and the
// artifact writer with stand-in device code (NVRTC is too slow for a fuzz
// iteration, and what it accepts is not cgc's to check). The compiler may
// refuse with a diagnostic, never crash or report an internal error, and
// an artifact it writes must pass its own reader.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "driver/Compiler.h"
#include "format/ArtifactFormat.h"

#include "llvm/Support/raw_ostream.h"
#include <cstdlib>

using namespace cgc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string messages;
  llvm::raw_string_ostream os(messages);
  DiagnosticEngine diag(os);
  std::unique_ptr<Graph> graph = fuzz::readModel(data, size, diag);
  if (!graph)
    return 0;
  CompileOptions options;
  Compilation compilation;
  std::vector<uint8_t> bytes;
  if (lowerModel(*graph, options, compilation, diag) &&
      fuzz::stateSmallEnoughToWrite(*graph)) {
    (void)programSource(compilation.program);
    DeviceCode code;
    code.cubin = {0x7f, 'E', 'L', 'F'};
    code.ptx = "// stand-in";
    if (writeArtifact(*graph, compilation, code, options, bytes, diag)) {
      format::Artifact artifact;
      std::string error;
      if (!format::parseArtifact(bytes.data(), bytes.size(), artifact, error))
        abort(); // The writer made what the reader refuses.
    }
  }
  if (os.str().find("internal error") != std::string::npos)
    abort();
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  return fuzz::mutateJsonInput(data, size, maxSize, seed);
}
