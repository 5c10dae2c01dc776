//===- ExpandConvolution.cpp - conv and pools as window gathers ------------===//
//
// Algorithm: every `conv` node (in regions too), x [N, C, D1..Dd] and
// w [O, C / G, K1..Kd], is replaced, in its dtype, by
//   xp    = x with zeros concatenated before and after each padded dim
//   win   = xp gathered along each spatial dim a at the i64 constant
//           [Ka, Ea] of k * dilation + e * stride (the dim becomes Ka, Ea;
//           a dim whose kernel is 1 with stride 1 and no padding only
//           gains a unit Ka): [N, C, K1, E1, .., Kd, Ed]
//   cols  = win transposed to [C, K1..Kd, N, E1..Ed], reshaped to
//           [G, C / G * K1..Kd, N * E1..Ed] (a static batch N > 1)
//   y     = matmul(w as [G, O / G, C / G * K1..Kd], cols): [G, O / G,
//           N * E1..Ed], reshaped to [O, N, E1..Ed] and transposed to
//           [N, O, E1..Ed], plus the bias as [O, 1..1]
// (a batch of 1 or a symbolic one: cols [N, G, C / G * K1..Kd, E1..Ed],
// the matmul's batch [G] broadcast over [N, G]);
// ops the other passes and codegen know (an im2col whose index
// arithmetic is folded into constants). A max_pool or avg_pool is, in
// this order of choice: a global pool (one unpadded window over every
// spatial axis) a `max` or `sum` over its spatial axes; a window of at
// most kMaxSlicedWindow positions the `maximum` or `add` of one strided
// slice of the padded input (-inf or 0, a ceil_mode overhang too) per
// position, which fuse-views reads in one kernel (a max pool that autodiff
// will differentiate folds with `where(next > max or next is NaN, ...)`
// instead: `where`'s rule gives a window's gradient whole to its first
// maximum, PyTorch's, where `maximum` halves it at each tie; a global
// max pool of so few positions folds so too); any other the same windows
// as a conv reduced with `max` or `sum` over the K axes (whose rule, as
// the global reduction's, splits a tie's gradient evenly). A window of
// -inf only gives its gradient to its first position, padding or not
// (PyTorch: to its first position inside the input). An average divides
// by the count of each window's positions inside the input (or the padded
// input), a scalar when every window has the same. The driver runs it first, with
// expand-attention (driver/Compiler.cpp); it leads the default pipeline.
// A conv, conv_transpose or conv_weight_grad that cuDNN runs
// (target/Scheduler.h's convolutionRunsOnLibrary) stays whole, unless
// autodiff follows (PassContext::differentiated) and conv's derivative
// rule refuses it (a channels_last conv); its bias, if any, moves out to
// an add of the bias as [O, 1..1] (channels_last: [O]), which the fusion
// passes join with what follows. A channels_last
// pool takes its windows along its own spatial axes; a channels_last conv
// is written out channels first between transposes. Any other
// conv_transpose becomes, first, a conv of its input spread by the
// strides (zeros between elements) and padded by dilation (kernel - 1) -
// pads, by its weights regrouped and flipped (expandConvTranspose), which
// is then cuDNN's or written out like any conv. A conv_weight_grad is the
// product of g and x's windows per group (expandConvWeightGrad), the
// weight gradient that autodiff of the written-out conv would give. An
// interpolate is gathers at constant indices (ExpandInterpolate.cpp), but
// for a nearest one that repeats each element a whole number of times
// along a dim: a reshape, a broadcast and a reshape there.
// Requires: a verified graph. Guarantees: no pool or interpolate remains,
// and no conv, conv_transpose or conv_weight_grad but the bias-free ones
// cuDNN runs; each result equals the interpreter's but for the order of
// the f32 sums.
//
//===----------------------------------------------------------------------===//
#include "ir/ConvolutionShape.h"
#include "passes/DerivativeRules.h"
#include "passes/ExpandInterpolate.h"
#include "passes/Pass.h"
#include "passes/ValueBuilder.h"
#include "target/Scheduler.h"

#include <algorithm>
#include <cmath>

using namespace cgc;

namespace {

int64_t product(const std::vector<int64_t> &values) {
  int64_t n = 1;
  for (int64_t v : values)
    n *= v;
  return n;
}

/// \p x with \p before and \p after elements of \p fill along \p axis.
Value *padAxis(ValueBuilder &vb, Value *x, unsigned axis, int64_t before, int64_t after,
               double fill) {
  std::vector<Value *> parts;
  auto border = [&](int64_t extent) {
    std::vector<Dim> dims(x->getType().dims.begin(), x->getType().dims.end());
    dims[axis] = Dim::fixed(extent);
    DType dtype = x->getType().dtype;
    return vb.op(OpKind::Fill, {},
                 {{"dtype", dtype}, {"shape", dims}, {"value", Number::ofReal(fill)}}, "border");
  };
  if (before)
    parts.push_back(border(before));
  parts.push_back(x);
  if (after)
    parts.push_back(border(after));
  if (parts.size() == 1)
    return x;
  return vb.op(OpKind::Concat, parts, {{"axis", int64_t(axis)}}, "pad");
}

/// y plus \p bias [O] as [O, 1..1] (channels first, \p d spatial dims).
Value *addChannelBias(ValueBuilder &vb, Value *y, Value *bias, int64_t outChannels, size_t d) {
  std::vector<Dim> column(d + 1, Dim::fixed(1));
  column[0] = Dim::fixed(outChannels);
  return vb.add(y, vb.reshape(bias, column, "bias"));
}

/// The windows of spatial dim \p a (at \p axis of \p x): axis becomes
/// [kernel, out].
Value *windows(ValueBuilder &vb, Value *x, unsigned axis, const ConvolutionShape &s,
               size_t a) {
  int64_t k = s.kernel[a], e = s.out[a];
  if (k == 1 && s.strides[a] == 1 && s.before[a] == 0 && s.after[a] == 0) {
    std::vector<Dim> dims;
    for (unsigned i = 0; i < x->getType().rank(); ++i) {
      if (i == axis)
        dims.push_back(Dim::fixed(1));
      dims.push_back(x->getType().dims[i]);
    }
    return vb.reshape(x, dims, "unit");
  }
  std::vector<int64_t> at;
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < e; ++j)
      at.push_back(i * s.dilations[a] + j * s.strides[a]);
  return vb.gatherAt(x, axis, at, {Dim::fixed(k), Dim::fixed(e)}, "at", "windows");
}

/// [N, C, K1, E1, .., Kd, Ed] (channels_last: [N, K1, E1, .., Kd, Ed,
/// C]): \p x's windows, its padding (and a ceil pool's overhang) read as
/// \p fill. Spatial dim a's K axis is windowAxis(s, a).
unsigned windowAxis(const ConvolutionShape &s, size_t a) {
  return unsigned((s.channelsLast ? 1 : 2) + 2 * a);
}

Value *allWindows(ValueBuilder &vb, Value *x, const ConvolutionShape &s, double fill) {
  size_t d = s.in.size();
  for (size_t a = 0; a < d; ++a)
    x = padAxis(vb, x, spatialAxis(s.channelsLast, a), s.before[a],
                s.after[a] + s.overhang[a], fill);
  for (size_t a = 0; a < d; ++a)
    x = windows(vb, x, windowAxis(s, a), s, a);
  return x;
}

std::vector<Dim> resultDims(Dim batch, int64_t channels, const ConvolutionShape &s) {
  std::vector<Dim> dims{batch, Dim::fixed(channels)};
  for (int64_t e : s.out)
    dims.push_back(Dim::fixed(e));
  return dims;
}

/// The product of the weights and the windows \p x ([N, C, K1, E1, ..,
/// Kd, Ed]) as [N, O, E1..Ed]. A static batch of more than one joins the
/// positions' axis: one product per group, [O / G, C / G * K] x [C / G *
/// K, N * E], whose weight gradient is one product too (reducing over N
/// and E together), where a product per image would read the weights N
/// times (a matrix-vector product per image once E is small) and leave
/// autodiff N partial weight gradients to sum.
Value *convProduct(ValueBuilder &vb, Value *x, Value *w, Dim batch,
                   const ConvolutionShape &s) {
  size_t d = s.in.size();
  bool joinBatch = batch.isStatic() && batch.extent() > 1;
  std::vector<int64_t> perm{1};
  for (size_t a = 0; a < d; ++a)
    perm.push_back(int64_t(2 + 2 * a));
  perm.insert(joinBatch ? perm.end() : perm.begin(), 0);
  for (size_t a = 0; a < d; ++a)
    perm.push_back(int64_t(3 + 2 * a));
  bool ordered = std::is_sorted(perm.begin(), perm.end());
  if (!ordered)
    x = vb.op(OpKind::Transpose, {x}, {{"perm", perm}}, "cols");
  int64_t g = s.groups, reduced = s.channels / g * product(s.kernel),
          positions = product(s.out);
  Value *weights = vb.reshape(w, {Dim::fixed(g), Dim::fixed(s.outChannels / g),
                                  Dim::fixed(reduced)}, "weights");
  if (!joinBatch) {
    Value *cols = vb.reshape(x, {batch, Dim::fixed(g), Dim::fixed(reduced),
                                 Dim::fixed(positions)}, "cols");
    return vb.reshape(vb.matmul(weights, cols, false, false),
                      resultDims(batch, s.outChannels, s), "out");
  }
  Value *cols = vb.reshape(x, {Dim::fixed(g), Dim::fixed(reduced),
                               Dim::fixed(batch.extent() * positions)}, "cols");
  std::vector<Dim> channelsFirst = resultDims(batch, s.outChannels, s);
  std::swap(channelsFirst[0], channelsFirst[1]);
  Value *y = vb.reshape(vb.matmul(weights, cols, false, false), channelsFirst, "out");
  std::vector<int64_t> back{1, 0};
  for (size_t a = 0; a < d; ++a)
    back.push_back(int64_t(2 + a));
  return vb.op(OpKind::Transpose, {y}, {{"perm", back}}, "out");
}

Value *expandConv(ValueBuilder &vb, Value *input, Value *w, Value *bias,
                  const ConvolutionShape &s) {
  Value *x = allWindows(vb, input, s, 0.0);
  if (!x)
    return nullptr;
  Value *y = convProduct(vb, x, w, input->getType().dims[0], s);
  return bias ? addChannelBias(vb, y, bias, s.outChannels, s.in.size()) : y;
}

/// conv_weight_grad(x, g) as products of g and x's windows [N, C, K1, E1,
/// .., Kd, Ed]: per group, [O / G, N * E] x [N * E, C / G * K] (a static
/// batch: the windows transposed to [C, K.., N, E..], g to [O, N, E..]); a
/// symbolic batch takes one product per image, [N, G, O / G, E] x [N, G,
/// E, C / G * K], summed over N.
Value *expandConvWeightGrad(ValueBuilder &vb, const Node &n, const ConvolutionShape &s) {
  size_t d = s.in.size();
  Value *x = allWindows(vb, n.operand(0), s, 0.0), *g = n.operand(1);
  if (!x)
    return nullptr;
  Dim batch = g->getType().dims[0];
  int64_t groups = s.groups, reduced = s.channels / groups * product(s.kernel),
          positions = product(s.out);
  Dim perGroupOut = Dim::fixed(s.outChannels / groups);
  std::vector<Dim> dw{Dim::fixed(s.outChannels), Dim::fixed(s.channels / groups)};
  for (int64_t k : s.kernel)
    dw.push_back(Dim::fixed(k));
  std::vector<int64_t> kernelFirst{1}, positionsLast;
  for (size_t a = 0; a < d; ++a) {
    kernelFirst.push_back(int64_t(2 + 2 * a));
    positionsLast.push_back(int64_t(3 + 2 * a));
  }
  if (batch.isStatic()) {
    std::vector<int64_t> cols = kernelFirst, grads{1, 0};
    cols.push_back(0);
    cols.insert(cols.end(), positionsLast.begin(), positionsLast.end());
    for (size_t a = 0; a < d; ++a)
      grads.push_back(int64_t(2 + a));
    Dim joined = Dim::fixed(batch.extent() * positions);
    Value *c = vb.reshape(vb.op(OpKind::Transpose, {x}, {{"perm", cols}}, "cols"),
                          {Dim::fixed(groups), Dim::fixed(reduced), joined}, "cols");
    Value *gt = vb.reshape(vb.op(OpKind::Transpose, {g}, {{"perm", grads}}, "grads"),
                           {Dim::fixed(groups), perGroupOut, joined}, "grads");
    return vb.reshape(vb.matmul(gt, c, false, true), dw, "dw");
  }
  std::vector<int64_t> cols{0};
  cols.insert(cols.end(), kernelFirst.begin(), kernelFirst.end());
  cols.insert(cols.end(), positionsLast.begin(), positionsLast.end());
  Value *c = vb.reshape(vb.op(OpKind::Transpose, {x}, {{"perm", cols}}, "cols"),
                        {batch, Dim::fixed(groups), Dim::fixed(reduced), Dim::fixed(positions)},
                        "cols");
  Value *gt = vb.reshape(g, {batch, Dim::fixed(groups), perGroupOut, Dim::fixed(positions)},
                         "grads");
  Value *perImage = vb.matmul(gt, c, false, true);
  return vb.reshape(vb.sum(perImage, {0}, false), dw, "dw");
}

/// \p x with stride - 1 zeros between the elements of \p axis.
Value *spreadAxis(ValueBuilder &vb, Value *x, unsigned axis, int64_t stride) {
  if (stride == 1)
    return x;
  std::vector<Dim> dims(x->getType().dims.begin(), x->getType().dims.end());
  int64_t extent = dims[axis].extent();
  std::vector<Dim> unit = dims;
  unit.insert(unit.begin() + axis + 1, Dim::fixed(1));
  Value *spread = padAxis(vb, vb.reshape(x, unit, "spread"), axis + 1, 0, stride - 1, 0.0);
  dims[axis] = Dim::fixed(extent * stride);
  return vb.slice(vb.reshape(spread, dims, "spread"), axis, 0, (extent - 1) * stride + 1,
                  "slice");
}

/// conv_transpose as a conv: x spread by the strides, convolved at stride
/// 1 with padding dilation (kernel - 1) - pads (and output_padding after;
/// a negative padding cut off x instead) by the weights [C, O / G, K..]
/// regrouped to [O, C / G, K..] and flipped along every spatial dim; the
/// bias added after. The conv is cuDNN's or written out in turn.
Value *expandConvTranspose(ValueBuilder &vb, const Node &n, const ConvolutionShape &s) {
  Value *x = n.operand(0);
  size_t d = s.in.size();
  std::vector<int64_t> pads(2 * d);
  for (size_t a = 0; a < d && x; ++a) {
    unsigned axis = unsigned(2 + a);
    x = spreadAxis(vb, x, axis, s.strides[a]);
    int64_t span = s.dilations[a] * (s.kernel[a] - 1);
    int64_t low = span - s.before[a], high = span - s.after[a] + s.outputPadding[a];
    pads[a] = std::max<int64_t>(low, 0);
    pads[d + a] = std::max<int64_t>(high, 0);
    if (x && (low < 0 || high < 0)) {
      int64_t extent = x->getType().dims[axis].extent();
      x = vb.slice(x, axis, std::max<int64_t>(-low, 0),
                   extent - std::max<int64_t>(-high, 0), "slice");
    }
  }
  int64_t g = s.groups, in = s.channels / g, out = s.outChannels / g;
  std::vector<Dim> grouped{Dim::fixed(g), Dim::fixed(in), Dim::fixed(out)}, regrouped;
  for (int64_t k : s.kernel)
    grouped.push_back(Dim::fixed(k));
  std::vector<int64_t> perm{0, 2, 1};
  for (size_t a = 0; a < d; ++a)
    perm.push_back(int64_t(3 + a));
  Value *w = vb.op(OpKind::Transpose, {vb.reshape(n.operand(1), grouped, "weights")},
                   {{"perm", perm}}, "weights");
  // Flipped along every spatial dim at once: the window's positions
  // merged into one axis, reversed (one gather), split again.
  int64_t window = product(s.kernel);
  w = vb.reshape(w, {Dim::fixed(s.outChannels), Dim::fixed(in), Dim::fixed(window)},
                 "weights");
  if (window > 1) {
    std::vector<int64_t> reversed;
    for (int64_t k = window; k-- > 0;)
      reversed.push_back(k);
    w = vb.gatherAt(w, 2, reversed, {Dim::fixed(window)}, "flip", "flipped");
  }
  regrouped = {Dim::fixed(s.outChannels), Dim::fixed(in)};
  for (int64_t k : s.kernel)
    regrouped.push_back(Dim::fixed(k));
  w = vb.reshape(w, regrouped, "weights");
  Value *y = vb.op(OpKind::Conv, {x, w},
                   {{"strides", std::vector<int64_t>(d, 1)},
                    {"pads", pads},
                    {"dilations", s.dilations},
                    {"groups", g}},
                   "conv");
  return n.numOperands() == 3 ? addChannelBias(vb, y, n.operand(2), s.outChannels, d) : y;
}

/// Per output position, the window positions an average divides by:
/// those inside the input, or (count_include_pad) the padded input.
std::vector<Number> divisors(const Node &n, const ConvolutionShape &s, bool &uniform) {
  bool includePad = n.boolAttr("count_include_pad", false);
  std::vector<int64_t> perDim[3];
  for (size_t a = 0; a < s.in.size(); ++a)
    for (int64_t e = 0; e < s.out[a]; ++e) {
      int64_t c = 0;
      for (int64_t k = 0; k < s.kernel[a]; ++k) {
        int64_t pos = e * s.strides[a] - s.before[a] + k * s.dilations[a];
        c += includePad ? pos < s.in[a] + s.after[a] : pos >= 0 && pos < s.in[a];
      }
      perDim[a].push_back(c);
    }
  std::vector<Number> out;
  uniform = true;
  int64_t positions = product(s.out);
  for (int64_t p = 0; p < positions; ++p) {
    int64_t rest = p, c = 1;
    for (size_t a = s.in.size(); a-- > 0;) {
      c *= perDim[a][size_t(rest % s.out[a])];
      rest /= s.out[a];
    }
    out.push_back(Number::ofReal(double(c)));
    uniform &= c == int64_t(out.front().real());
  }
  return out;
}

/// The most window positions a pool takes as strided slices (poolBySlices):
/// 3x3 and 2x2x2 windows; a larger window gathers. (A padded 4x4 window
/// once kept fuse-views busy for minutes, the pipeline fuzzer's finding;
/// the cause was an iterator that ir/PointwiseFusion.cpp's evaluation
/// count invalidated, fixed since: 16 slices fuse in milliseconds now, but
/// slices against gathers for larger windows are not measured yet.)
constexpr int64_t kMaxSlicedWindow = 9;

/// \p padded (\p x with its padding and overhang) at window position
/// \p position (row-major over the kernel) of every output: along each
/// spatial axis, k * dilation + e * stride for e < out.
Value *windowSlice(ValueBuilder &vb, Value *padded, const ConvolutionShape &s,
                   int64_t position) {
  std::vector<int64_t> starts, ends, axes, steps;
  for (size_t a = s.in.size(); a-- > 0;) {
    int64_t k = position % s.kernel[a];
    position /= s.kernel[a];
    int64_t start = k * s.dilations[a];
    starts.insert(starts.begin(), start);
    ends.insert(ends.begin(), start + (s.out[a] - 1) * s.strides[a] + 1);
    axes.insert(axes.begin(), int64_t(spatialAxis(s.channelsLast, a)));
    steps.insert(steps.begin(), s.strides[a]);
  }
  return vb.op(OpKind::Slice, {padded},
               {{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}}, "window");
}

/// \p y, or \p next where it is greater or NaN: the maximum so far, whose
/// gradient (`where`'s) goes whole to the first maximum of the fold (the
/// last NaN), as PyTorch's max pool gives it; `maximum` would halve it at
/// each tie.
Value *firstMaximum(ValueBuilder &vb, Value *y, Value *next) {
  Value *nan = vb.op(OpKind::Ne, {next, next}, {}, "nan");
  Value *greater = vb.op(OpKind::Gt, {next, y}, {}, "greater");
  Value *takes = vb.op(OpKind::LogicalOr, {greater, nan}, {}, "takes");
  return vb.op(OpKind::Where, {takes, next, y}, {}, "max");
}

/// The pool as the elementwise maximum (or sum) of its window positions'
/// strided slices of the padded input, folded in row-major window order:
/// fuse-views makes one kernel of it that reads each output's window where
/// it lies (window gathers and a reduction would write the windows out).
/// \p differentiated: a max folds with firstMaximum.
Value *poolBySlices(ValueBuilder &vb, Value *input, const ConvolutionShape &s, bool max,
                    bool differentiated) {
  Value *padded = input;
  for (size_t a = 0; a < s.in.size(); ++a)
    padded = padAxis(vb, padded, spatialAxis(s.channelsLast, a), s.before[a],
                     s.after[a] + s.overhang[a], max ? -INFINITY : 0.0);
  Value *y = windowSlice(vb, padded, s, 0);
  for (int64_t p = 1; p < product(s.kernel); ++p) {
    Value *next = windowSlice(vb, padded, s, p);
    y = !max            ? vb.op(OpKind::Add, {y, next}, {}, "sum")
        : differentiated ? firstMaximum(vb, y, next)
                         : vb.op(OpKind::Maximum, {y, next}, {}, "max");
  }
  return y;
}

/// One window over the whole of every spatial axis, unpadded.
bool isGlobalPool(const ConvolutionShape &s) {
  for (size_t a = 0; a < s.in.size(); ++a)
    if (s.out[a] != 1 || s.kernel[a] != s.in[a] || s.dilations[a] != 1 || s.before[a] != 0 ||
        s.after[a] != 0 || s.overhang[a] != 0)
      return false;
  return true;
}

/// A global pool: one reduction over the spatial axes (a run), keeping them
/// as units.
Value *globalPool(ValueBuilder &vb, Value *input, const ConvolutionShape &s, bool max) {
  std::vector<int64_t> axes;
  for (size_t a = 0; a < s.in.size(); ++a)
    axes.push_back(int64_t(spatialAxis(s.channelsLast, a)));
  return vb.op(max ? OpKind::Max : OpKind::Sum, {input}, {{"axes", axes}, {"keepdim", true}},
               max ? "max" : "sum");
}

/// The pool as window gathers and one reduction per kernel axis, the last
/// first: each reduction is over one run of dims, which the row and column
/// kernels take (the axes together are not one run).
Value *poolByGathers(ValueBuilder &vb, Value *input, const ConvolutionShape &s, bool max) {
  Value *y = allWindows(vb, input, s, max ? -INFINITY : 0.0);
  for (size_t a = s.in.size(); a-- > 0;)
    y = vb.op(max ? OpKind::Max : OpKind::Sum, {y},
              {{"axes", std::vector<int64_t>{int64_t(windowAxis(s, a))}}, {"keepdim", false}},
              max ? "max" : "sum");
  return y;
}

/// \p differentiated: autodiff follows (PassContext::differentiated).
Value *expandPool(ValueBuilder &vb, const Node &n, Value *input, const ConvolutionShape &s,
                  bool differentiated) {
  bool max = n.getOp() == OpKind::MaxPool;
  DType dtype = input->getType().dtype;
  // An average of f16 or bf16 sums and divides in f32 and rounds once (the
  // sums over each window axis would round in between).
  bool widen = !max && dtype != DType::F32;
  if (widen)
    input = vb.cast(input, DType::F32, "f32");
  bool sliced = product(s.kernel) <= kMaxSlicedWindow;
  // A differentiated global max of few positions folds too: the
  // reduction's rule would split a tie evenly.
  bool global = isGlobalPool(s) && !(max && differentiated && sliced);
  Value *y = global   ? globalPool(vb, input, s, max)
             : sliced ? poolBySlices(vb, input, s, max, differentiated)
                      : poolByGathers(vb, input, s, max);
  if (max || !y)
    return y;
  bool uniform = false;
  std::vector<Number> counts = divisors(n, s, uniform);
  DType sums = y->getType().dtype;
  auto narrow = [&](Value *v) { return vb.cast(v, dtype, "narrow"); };
  if (uniform)
    return narrow(vb.div(y, vb.fill(counts.front().real(), sums, "count")));
  std::vector<Dim> dims;
  for (int64_t e : s.out)
    dims.push_back(Dim::fixed(e));
  if (s.channelsLast)
    dims.push_back(Dim::fixed(1)); // [E..., 1] against [N, E..., C].
  Value *count = vb.op(OpKind::Constant, {},
                       {{"dtype", sums}, {"shape", dims}, {"value", counts}}, "count");
  return narrow(vb.div(y, count));
}

/// A channels_last conv is written out channels first between transposes.
Value *expand(ValueBuilder &vb, const Node &n, const ConvolutionShape &s,
              bool differentiated) {
  if (n.getOp() == OpKind::ConvWeightGrad)
    return expandConvWeightGrad(vb, n, s);
  if (n.getOp() != OpKind::Conv)
    return expandPool(vb, n, n.operand(0), s, differentiated);
  unsigned rank = n.result()->getType().rank();
  auto first = [&](Value *v) {
    if (!s.channelsLast)
      return v;
    return vb.op(OpKind::Transpose, {v}, {{"perm", channelsFirstPerm(rank)}},
                 "channels_first");
  };
  ConvolutionShape channelsFirst = s;
  channelsFirst.channelsLast = false;
  Value *y = expandConv(vb, first(n.operand(0)), first(n.operand(1)),
                        n.numOperands() == 3 ? n.operand(2) : nullptr, channelsFirst);
  if (!s.channelsLast || !y)
    return y;
  return vb.op(OpKind::Transpose, {y}, {{"perm", channelsLastPerm(rank)}},
               "channels_last");
}

/// A conv that cuDNN runs, its bias (if any) added after it.
Value *withoutBias(ValueBuilder &vb, const Node &n) {
  Value *y = vb.clone(n, {n.operand(0), n.operand(1)});
  if (n.numOperands() == 2 || !y)
    return y;
  // [O, 1..1] broadcasts over [N, O, E...]; [O] itself over [N, E..., O].
  std::vector<Dim> dims = {n.operand(2)->getType().dims[0]};
  if (!n.boolAttr("channels_last", false))
    dims.resize(n.result()->getType().rank() - 1, Dim::fixed(1));
  return vb.add(y, vb.reshape(n.operand(2), dims, "bias"));
}

/// The most window positions (kernel x output extent) of one spatial dim
/// that the pass writes as a constant.
constexpr int64_t kMaxWindowPositions = int64_t(1) << 24;

std::string tooLarge(const ConvolutionShape &s) {
  for (size_t a = 0; a < s.in.size(); ++a)
    if (s.kernel[a] > kMaxWindowPositions / s.out[a])
      return "spatial dim " + std::to_string(a) + " has " + std::to_string(s.kernel[a]) +
             " x " + std::to_string(s.out[a]) +
             " window positions; expand-convolution writes at most 2^24 per dim";
  return "";
}

class ExpandConvolutionPass : public Pass {
public:
  llvm::StringRef name() const override { return "expand-convolution"; }
  llvm::StringRef summary() const override {
    return "write every conv and pool out as window gathers and a product or reduction";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    // Where autodiff follows, only the convolutions conv's rule takes.
    auto onLibrary = [&](const Node &n) {
      return convolutionRunsOnLibrary(n, ctx.target) &&
             !(ctx.differentiated && !convolutionDerivativeRefusal(n).empty());
    };
    // conv_transpose first: the convs it becomes are then rewritten below.
    bool transposed = rewriteEach(
        graph, ctx.diag,
        [&](const Node &n) { return n.getOp() == OpKind::ConvTranspose && !onLibrary(n); },
        [&](ValueBuilder &vb, const Node &n) -> Value * {
          std::string why;
          auto shape = convolutionShape(n, why);
          if (!shape) {
            ctx.diag.nodeError(n, why);
            return nullptr;
          }
          return expandConvTranspose(vb, n, *shape);
        });
    return transposed && rewriteEach(
        graph, ctx.diag,
        [&](const Node &n) {
          return n.info().family == Convolution &&
                 !(onLibrary(n) && n.numOperands() == 2);
        },
        [&](ValueBuilder &vb, const Node &n) -> Value * {
          if (onLibrary(n))
            return withoutBias(vb, n);
          if (n.getOp() == OpKind::Interpolate)
            return expandInterpolate(vb, n);
          std::string why;
          auto shape = convolutionShape(n, why);
          if (shape)
            why = tooLarge(*shape);
          if (!shape || !why.empty()) {
            ctx.diag.nodeError(n, why);
            return nullptr;
          }
          return expand(vb, n, *shape, ctx.differentiated);
        });
  }
};

} // namespace

std::unique_ptr<Pass> cgc::createExpandConvolutionPass() {
  return std::make_unique<ExpandConvolutionPass>();
}
