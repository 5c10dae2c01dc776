//===- OpAttrs.h - Attribute values with their defaults applied -*- C++ -*-===//
//
// The meaning of attributes with defaults (transpose's `perm`, slice's
// `axes` and `steps`) and of Python-style slice bounds is defined here once,
// for the type rules, the interpreter, the passes and codegen.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_OPATTRS_H
#define CGC_IR_OPATTRS_H

#include "ir/Graph.h"

#include <cstdint>
#include <vector>

namespace cgc {

/// transpose's `perm`, reversed axes when absent.
std::vector<int64_t> transposePerm(const Node &node, unsigned rank);
/// Whether an all_reduce averages (`reduction` "mean") rather than sums
/// (its default, "sum"; its type rule refuses other values).
bool allReduceAverages(const Node &allReduce);
/// An attention's `scale`, or 1 / sqrt(E) of its static width when unset.
double attentionScale(const Node &attention);

/// slice's attributes with `axes` (0..n-1) and `steps` (1s) defaulted.
struct SliceParams {
  std::vector<int64_t> starts, ends, axes, steps;
};
SliceParams sliceParams(const Node &node);

/// The first index and the element count of `start:end:step` over an axis
/// of \p n elements: negative indices count from the end, then both clamp
/// to [0, n]; \p step is positive.
struct SliceRange {
  int64_t begin;
  int64_t extent;
};
SliceRange sliceRange(int64_t start, int64_t end, int64_t step, int64_t n);

} // namespace cgc

#endif
