//===- FuzzSupport.h - Shared pieces of the fuzz targets ---------*- C++ -*-===//
//
// Each fuzz target is one LLVMFuzzerTestOneInput over one entry point (the
// IR reader and verifier, the interpreter, the pass pipeline, the artifact
// reader, the safetensors reader). They are linked twice: with libFuzzer
// (clang, scripts/fuzz.sh) and with ReplayMain.cpp, which feeds the seed
// inputs and every regression input under test/fuzz/regressions/ through
// the same function in the ordinary build (ctest label "fuzz").
//
// The structure-aware part: inputs are JSON (the IR), a header, a JSON
// manifest and blobs (artifacts) or a length-prefixed JSON header and data
// (safetensors). mutateJson() changes one JSON value at a time, with the
// IR's own vocabulary (op mnemonics from Ops.def, dtypes from DTypes.def,
// the document's own names), so mutants stay parseable and reach the
// verifier, the interpreter and the passes instead of the JSON scanner.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TEST_FUZZ_FUZZSUPPORT_H
#define CGC_TEST_FUZZ_FUZZSUPPORT_H

#include "ir/Diagnostics.h"
#include "ir/Graph.h"
#include "ir/interpreter/Interpreter.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

/// libFuzzer's byte-level mutator; absent (null) in the replay build.
extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize)
    __attribute__((weak));

namespace cgc {
namespace fuzz {

/// One structural mutation of JSON \p text; false when \p text is not JSON.
bool mutateJson(std::string &text, uint32_t seed);

/// A custom mutator for JSON inputs: mutateJson, else libFuzzer's bytes.
size_t mutateJsonInput(uint8_t *data, size_t size, size_t maxSize,
                       unsigned seed);

/// Reads and verifies an IR model from bytes (weights not opened); null
/// when it is not a valid model. \p diag must outlive the graph: the
/// graph's locations point into its buffer.
std::unique_ptr<Graph> readModel(const uint8_t *data, size_t size,
                                 DiagnosticEngine &diag);

/// True when the interpreter can run \p graph within a fuzz iteration's
/// time: at most 2^20 elements per value (symbolic dims at their max), 2^12
/// inside `while` bodies (they run up to 1000 times), and 2^26
/// multiply-adds per product, regions included.
bool smallEnoughToRun(const Graph &graph);

/// True when the artifact writer can encode \p graph's initialized state
/// within a fuzz iteration's time under the sanitizers: at most 16 MiB
/// (the seed corpus's linear_b1_8192_bf16 has 128 MiB, which took the
/// writer past libFuzzer's 25 s per input).
bool stateSmallEnoughToWrite(const Graph &graph);

/// Interpreter limits for fuzzing (64 MiB of tensors, 1000 loop trips).
interp::Limits interpreterLimits();

} // namespace fuzz
} // namespace cgc

#endif
