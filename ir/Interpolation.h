//===- Interpolation.h - interpolate's source taps per output index -*- C++ -*-===//
//
// `interpolate` resizes each spatial dim of x [N, C, S1..Sd] to `sizes`
// (docs/ir.md). Along one dim, output index o reads input index low[o]
// (nearest), or low[o] and high[o] mixed as (1 - weight[o]) * x[low] +
// weight[o] * x[high] (linear): the interpreter applies these taps dim by
// dim, and expand-convolution writes them as gathers at constant indices.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_INTERPOLATION_H
#define CGC_IR_INTERPOLATION_H

#include "ir/Graph.h"

#include <string>
#include <vector>

namespace cgc {

struct InterpolationTaps {
  std::vector<int64_t> low, high;
  std::vector<double> weight; ///< Of high; all zero for nearest.
  /// Whether there are \p in outputs, each o reading input index o alone
  /// (nothing to do).
  bool isIdentity(int64_t in) const;
};

/// Checks interpolate's attributes against x's spatial extents \p in;
/// false with \p why naming the bad one.
bool checkInterpolation(const Node &n, const std::vector<int64_t> &in, std::string &why);

/// The taps of spatial dim \p a (extent \p in) of a checked interpolate.
InterpolationTaps interpolationTaps(const Node &n, size_t a, int64_t in);

} // namespace cgc

#endif // CGC_IR_INTERPOLATION_H
