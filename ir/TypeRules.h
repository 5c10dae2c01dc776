//===- TypeRules.h - Result types of every op -------------------*- C++ -*-===//
//
// inferResultTypes() computes the result types of a node from its operand
// types, attributes and regions, or reports why it cannot (rank, dtype,
// shape and attribute errors) through the DiagnosticEngine. The reader uses
// it to type the graph; the verifier re-runs it to check passes.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_TYPERULES_H
#define CGC_IR_TYPERULES_H

#include "ir/Diagnostics.h"
#include "ir/Graph.h"

#include "llvm/ADT/SmallVector.h"

namespace cgc {

/// Fills \p results with one type per result; false (with an error
/// reported at the node) when the node is ill-typed.
bool inferResultTypes(Node &node, llvm::SmallVectorImpl<TensorType> &results,
                      DiagnosticEngine &diag);

/// Reduction axes of a node (attribute `axes`, default all), normalized
/// and sorted; empty on an invalid attribute.
llvm::SmallVector<unsigned, 4> reductionAxes(const Node &node, unsigned rank);

/// The axes reduction \p node reduces: argmax's `axis`, the others'
/// reductionAxes; normalized and sorted, empty on an invalid attribute.
llvm::SmallVector<unsigned, 4> reducedAxes(const Node &node, unsigned rank);

} // namespace cgc

#endif
