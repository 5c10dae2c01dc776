//===- Verifier.h - Structural and type invariants --------------*- C++ -*-===//
//
// verifyGraph checks what every pass must preserve: operands are defined
// before use in the same graph, names are unique, operand and region
// counts and attribute kinds match Ops.def, every stored type equals what
// the type rules give, and outputs are defined.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_VERIFIER_H
#define CGC_IR_VERIFIER_H

#include "ir/Diagnostics.h"
#include "ir/Graph.h"

namespace cgc {

bool verifyGraph(Graph &graph, DiagnosticEngine &diag);

} // namespace cgc

#endif
