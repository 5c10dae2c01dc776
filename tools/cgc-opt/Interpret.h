//===- Interpret.h - cgc-opt's --interpret and --check-equivalence -*- C++ -*-===//
#ifndef CGC_TOOLS_CGC_OPT_INTERPRET_H
#define CGC_TOOLS_CGC_OPT_INTERPRET_H

#include "ir/Diagnostics.h"
#include "ir/Graph.h"

namespace cgc {

/// True when --interpret or --check-equivalence was given.
bool interpretModeRequested();
/// True when --check-equivalence was given: the caller then reads a second,
/// untouched copy of the graph before running the pipeline.
bool checkEquivalenceRequested();
/// After the pipeline: --interpret runs \p graph on --inputs and writes
/// --outputs (or prints the outputs); --check-equivalence compares
/// \p reference (before the pipeline) with \p graph on random inputs.
/// Reports go to stdout; false on any error or mismatch.
bool runInterpretMode(const Graph &graph, const Graph *reference,
                      DiagnosticEngine &diag);

} // namespace cgc

#endif
