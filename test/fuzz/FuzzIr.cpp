//===- FuzzIr.cpp - Fuzz target: JSON reader, verifier, printers ----------===//
//
// Any bytes: the reader and the verifier must answer with diagnostics,
// never crash. A model they accept must print, and its JSON form must read
// back into a model that verifies and prints the same (the round trip).
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "ir/Printer.h"

#include "llvm/Support/raw_ostream.h"
#include <cstdlib>

using namespace cgc;

static std::string printed(const Graph &graph) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printGraph(graph, os);
  return os.str();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DiagnosticEngine diag(llvm::nulls());
  std::unique_ptr<Graph> graph = fuzz::readModel(data, size, diag);
  if (!graph)
    return 0;
  std::string json = writeGraphJson(*graph);
  DiagnosticEngine diagAgain(llvm::nulls());
  std::unique_ptr<Graph> again = fuzz::readModel(
      reinterpret_cast<const uint8_t *>(json.data()), json.size(), diagAgain);
  if (!again || printed(*again) != printed(*graph))
    abort(); // The JSON writer and the reader disagree.
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  return fuzz::mutateJsonInput(data, size, maxSize, seed);
}
