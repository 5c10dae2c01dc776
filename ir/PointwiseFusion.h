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

namespace cgc {

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
