//===- Verifier.h - Structural and type invariants --------------*- C++ -*-===//
//
// verifyGraph checks what every pass must preserve: operands are defined
// before use in the same graph, names are unique, operand and region
// counts and attribute kinds match Ops.def, every stored type equals what
// the type rules give, and outputs are defined; and the size limits below,
// before any pass, the interpreter or codegen allocates a tensor.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_VERIFIER_H
#define CGC_IR_VERIFIER_H

#include "ir/Diagnostics.h"
#include "ir/Graph.h"

namespace cgc {

/// The largest tensor, at its largest extents: 16 GiB.
constexpr uint64_t kMaxTensorBytes = uint64_t(16) << 30;
/// The most state with seeded initializers (normal, uniform, zeros, ones)
/// a model may have: the artifact that holds its initial values is read
/// whole, at most 1 GiB. State from the weights file is not counted: it may
/// stay beside the artifact (driver/ArtifactWriter.cpp).
constexpr uint64_t kMaxInitializedBytes = uint64_t(1) << 30;
/// Nodes of one graph or region.
constexpr size_t kMaxNodesPerGraph = size_t(1) << 20;

bool verifyGraph(Graph &graph, DiagnosticEngine &diag);

} // namespace cgc

#endif
