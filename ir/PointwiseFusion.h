//===- PointwiseFusion.h - What a fusion body may hold -----------*- C++ -*-===//
//
// A `fusion` runs as one kernel of one thread per element of its result.
// Its body holds elementwise ops, sources and dropouts, and may hold index
// moves: movement ops whose every result element is one operand element at
// coordinates computed from the result's (transpose, reshape, broadcast_to,
// slice, concat). A body without index moves is per element: element i of
// a result reads only element i of same-shaped operands, so plan-memory
// may write the result over such an operand. The type rule, fuse-views,
// plan-memory and codegen ask these predicates.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_POINTWISEFUSION_H
#define CGC_IR_POINTWISEFUSION_H

#include "ir/Graph.h"

#include "llvm/ADT/DenseMap.h"

namespace cgc {

/// The most value evaluations per element a fusion body with index moves
/// may need (viewEvaluations): codegen writes one statement per
/// evaluation, and a concat asks each operand at its own coordinates, so a
/// chain of concats that each read one value twice would double the
/// kernel's text per level.
constexpr uint64_t kMaxViewEvaluations = 256;

/// Whether concat \p node repeats one value (its operands are one value):
/// a kernel asks that value once, at the coordinate modulo its extent.
bool repeatsOneOperand(const Node &node);

/// How many times each value is evaluated per element of a kernel.
using EvaluationCounts = llvm::DenseMap<const Value *, uint64_t>;

/// Adds to \p counts the evaluations of \p node's operands that its
/// results' counts ask for: each distinct operand once per evaluation, a
/// concat's operands once each (each at its own coordinates; one value
/// repeated: once), a fusion's
/// through its body (whose values are counted too). Returns the
/// evaluations of \p node's results and body values.
uint64_t propagateEvaluations(const Node &node, EvaluationCounts &counts);

/// The evaluations per element a fusion body needs at most: its values'
/// and its inputs' (loads), each result asked once.
uint64_t viewEvaluations(const Graph &body);

/// transpose, reshape, broadcast_to, slice or concat with static types.
bool isIndexMove(const Node &node);

/// Whether a fusion body holds an index move.
bool movesElements(const Graph &body);

/// An elementwise op, a dropout, or a `fusion` whose body holds no index
/// move: result element i reads element i of each same-shaped operand.
bool computesPerElement(const Node &node);

/// Whether `fusion` \p fusion reads operand \p v only at the element each
/// thread writes: every body value read from it is read by elementwise ops
/// of its own shape, and so on up to results (so plan-memory may write a
/// result of v's shape over v even when other operands are read through
/// index moves).
bool readsOnlyInPlace(const Node &fusion, const Value *v);

} // namespace cgc

#endif
