//===- ExpandInterpolate.cpp - interpolate as gathers and index moves ------===//
//
// Part of expand-convolution (ExpandConvolution.cpp): an `interpolate`
// written out, per spatial dim whose taps (ir/Interpolation.h) move
// anything, as a gather of its taps at a constant i64 index, mixed by
// constant weights where it is linear; a nearest one that repeats each
// element a whole number of times is a reshape, a broadcast and a reshape
// there (index moves fuse-views reads through).
//
//===----------------------------------------------------------------------===//
#include "passes/ExpandInterpolate.h"

#include "ir/Interpolation.h"

#include <algorithm>

using namespace cgc;

namespace {

/// The whole factor f by which nearest taps \p low repeat each of \p in
/// input indices (output o reads o / f), or 0.
int64_t repeatFactor(const std::vector<int64_t> &low, int64_t in) {
  int64_t out = int64_t(low.size());
  if (out % in != 0)
    return 0;
  int64_t f = out / in;
  for (int64_t o = 0; o < out; ++o)
    if (low[size_t(o)] != o / f)
      return 0;
  return f;
}

/// \p x with each element along \p axis repeated \p factor times in place:
/// [.., S, ..] as [.., S, 1, ..], broadcast to [.., S, f, ..] and merged,
/// index moves fuse-views reads through (a gather would be written out).
Value *repeatEach(ValueBuilder &vb, Value *x, unsigned axis, int64_t factor) {
  Value *unit = vb.unitAfter(x, axis, "unit");
  std::vector<Dim> wide(unit->getType().dims.begin(), unit->getType().dims.end());
  wide[axis + 1] = Dim::fixed(factor);
  std::vector<Dim> merged(x->getType().dims.begin(), x->getType().dims.end());
  merged[axis] = Dim::fixed(merged[axis].extent() * factor);
  Value *repeated = vb.op(OpKind::BroadcastTo, {unit}, {{"shape", wide}}, "repeated");
  return vb.reshape(repeated, merged, "resized");
}

} // namespace

/// interpolate: per spatial dim whose taps move anything, a gather of the
/// low taps (nearest; repeatEach where they repeat each index a whole
/// number of times), or of the low and the high taps mixed as low +
/// (high - low) * weight with the weights a constant [E, 1..1] (linear;
/// in f32 for f16 and bf16, rounded once at the end).
Value *cgc::expandInterpolate(ValueBuilder &vb, const Node &n) {
  Value *x = n.operand(0);
  DType dtype = x->getType().dtype;
  bool linear = n.strAttr("mode", "nearest") == "linear";
  if (linear)
    x = vb.cast(x, DType::F32, "f32");
  size_t d = n.operand(0)->getType().rank() - 2;
  auto gather = [&](const std::vector<int64_t> &at, size_t a) {
    return vb.gatherAt(x, unsigned(2 + a), at, {Dim::fixed(int64_t(at.size()))}, "taps",
                    "resized");
  };
  for (size_t a = 0; a < d && x; ++a) {
    int64_t in = n.operand(0)->getType().dims[2 + a].extent();
    InterpolationTaps taps = interpolationTaps(n, a, in);
    if (taps.isIdentity(in))
      continue;
    bool mixes = std::any_of(taps.weight.begin(), taps.weight.end(),
                             [](double w) { return w != 0; });
    if (int64_t factor = mixes ? 0 : repeatFactor(taps.low, in)) {
      x = repeatEach(vb, x, unsigned(2 + a), factor);
      continue;
    }
    Value *low = gather(taps.low, a);
    if (!mixes) {
      x = low;
      continue;
    }
    std::vector<Number> weights;
    for (double w : taps.weight)
      weights.push_back(Number::ofReal(w));
    std::vector<Dim> column(d - a, Dim::fixed(1));
    column[0] = Dim::fixed(int64_t(weights.size()));
    Value *w = vb.op(OpKind::Constant, {},
                     {{"dtype", DType::F32}, {"shape", column}, {"value", weights}}, "taps");
    x = vb.add(low, vb.mul(vb.sub(gather(taps.high, a), low), w));
  }
  return vb.cast(x, dtype);
}
