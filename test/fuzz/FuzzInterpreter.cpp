//===- FuzzInterpreter.cpp - Fuzz target: the reference interpreter -------===//
//
// A model that verifies runs in the interpreter on random inputs (the seed
// comes from the input's bytes) within fuzz limits: it must give outputs of
// the declared types or an error, never crash. Models too large to run in
// a fuzz iteration are skipped (smallEnoughToRun).
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "format/ArtifactFormat.h"

#include <cstdlib>

using namespace cgc;
using namespace cgc::interp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DiagnosticEngine diag(llvm::nulls());
  std::unique_ptr<Graph> graph = fuzz::readModel(data, size, diag);
  if (!graph || !fuzz::smallEnoughToRun(*graph))
    return 0;
  std::map<std::string, Tensor> inputs;
  std::string error;
  if (!randomInputs(*graph, format::fnv1a64(data, size), inputs, error,
                    fuzz::interpreterLimits()))
    return 0;
  NamedTensors outputs;
  RunError runError;
  if (!runGraph(*graph, inputs, outputs, runError, fuzz::interpreterLimits()))
    return 0;
  if (outputs.size() != graph->outputs.size())
    abort();
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].second.dtype != graph->outputs[i].value->getType().dtype ||
        outputs[i].second.numel() != numElements(outputs[i].second.shape))
      abort(); // An output of the wrong type.
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  return fuzz::mutateJsonInput(data, size, maxSize, seed);
}
