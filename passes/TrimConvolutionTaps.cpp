//===- TrimConvolutionTaps.cpp - Drop the taps that read only padding ------===//
//
// Algorithm: for every `conv` node (in regions too) whose spatial dims and
// weight are static, per spatial dim of input extent D, kernel K, stride
// s, dilation r, padding (before, after) and output extent E: tap k reads
// the positions o s - before + k r for o in [0, E), and is live when one
// of them lies in [0, D). When the live taps of some dim are not all K
// (first live lo, last live hi), the conv is replaced by a conv of the
// same attributes over the weight's taps [lo, hi] of each dim (a slice),
// where the first window's tap lo reads position first and the last
// window's tap hi reads last, padded by before' = max(0, -first) and
// after' = max(0, last - (D - 1)), over the input less the positions
// before first (a slice, when first > 0: only with a dilation) and, when
// a whole stride of them would make one more window, the ones after last.
// Its output extents are E again.
// Why: a tap that only ever reads padding multiplies zeros. In the late
// layers of a network over small images (a CIFAR ResNet's 1x1 and 2x2
// feature maps under 3x3 kernels padded by 1) most taps are such, and
// the convolution, its data gradient and its weight gradient do up to 9x
// the work of the taps that count (cuDNN runs a 1x1 window as a matrix
// product). The dropped taps' weight gradient is then the slice's
// adjoint: zeros, as PyTorch's is there (x's padding times g).
// A dim with no live tap (every window in the padding: the result is the
// bias) or whose live taps are all K stays as it is.
// It runs in the pipelines before expand-convolution (driver/Compiler.cpp's
// prepareModel and the default pipeline), so that cuDNN, the written-out
// windows and autodiff all see the trimmed conv.
// Requires: a verified graph. Guarantees: the same results, but for a
// non-finite weight in a dropped tap (inf or NaN times padding's zero
// no longer reaches the output) and the order of the sums; no conv
// keeps a tap that reads only padding before its first live tap or after
// its last (one between live taps, with a stride, stays).
//
//===----------------------------------------------------------------------===//
#include "ir/ConvolutionShape.h"
#include "passes/Pass.h"
#include "passes/ValueBuilder.h"

using namespace cgc;

namespace {

/// The live taps of one spatial dim and the input positions they read.
struct LiveTaps {
  int64_t lo = 0, hi = -1, first = 0, last = -1, stride = 1;
  bool any() const { return hi >= lo; }
};

LiveTaps liveTaps(const ConvolutionShape &s, size_t a) {
  LiveTaps t;
  for (int64_t k = 0; k < s.kernel[a]; ++k) {
    // Tap k reads start + o s for o in [0, E); the first of those >= 0
    // is at o0.
    int64_t start = k * s.dilations[a] - s.before[a];
    int64_t o0 = start >= 0 ? 0 : (-start + s.strides[a] - 1) / s.strides[a];
    if (o0 >= s.out[a] || start + o0 * s.strides[a] >= s.in[a])
      continue;
    if (!t.any())
      t.lo = k;
    t.hi = k;
  }
  if (!t.any()) // no live tap: the dim stays whole
    t.lo = 0, t.hi = s.kernel[a] - 1;
  t.stride = s.strides[a];
  t.first = t.lo * s.dilations[a] - s.before[a];
  t.last = (s.out[a] - 1) * s.strides[a] - s.before[a] + t.hi * s.dilations[a];
  return t;
}

/// Each spatial dim's live taps of \p n, a conv with static spatial dims
/// and weight; none when it is not one or no dim loses a tap.
llvm::Optional<std::vector<LiveTaps>> tapsToTrim(const Node &n) {
  if (n.getOp() != OpKind::Conv || !n.operand(1)->getType().isStatic())
    return llvm::None;
  std::string why;
  auto s = convolutionShape(n, why);
  if (!s)
    return llvm::None;
  const TensorType &x = n.operand(0)->getType();
  bool trims = false;
  std::vector<LiveTaps> taps;
  for (size_t a = 0; a < s->in.size(); ++a) {
    if (!x.dims[spatialAxis(s->channelsLast, a)].isStatic())
      return llvm::None;
    taps.push_back(liveTaps(*s, a));
    trims |= taps.back().hi - taps.back().lo + 1 < s->kernel[a];
  }
  if (!trims)
    return llvm::None;
  return taps;
}

Value *trim(ValueBuilder &vb, const Node &n) {
  std::vector<LiveTaps> taps = *tapsToTrim(n);
  bool channelsLast = n.boolAttr("channels_last", false);
  Value *x = n.operand(0), *w = n.operand(1);
  size_t d = taps.size();
  std::vector<int64_t> pads(2 * d), axes, starts, ends, readAxes, readStarts, readEnds;
  for (size_t a = 0; a < d; ++a) {
    const LiveTaps &t = taps[a];
    unsigned axis = spatialAxis(channelsLast, a);
    int64_t extent = x->getType().dims[axis].extent();
    if (t.hi - t.lo + 1 < w->getType().dims[axis].extent()) {
      axes.push_back(axis);
      starts.push_back(t.lo);
      ends.push_back(t.hi + 1);
    }
    // Positions before the first read shift the windows: cut them; the
    // ones after the last read only when a whole stride of them would
    // make one more window.
    int64_t from = std::max<int64_t>(t.first, 0), to = extent - 1;
    if (extent - 1 - t.last >= t.stride)
      to = t.last;
    if (from > 0 || to < extent - 1) {
      readAxes.push_back(axis);
      readStarts.push_back(from);
      readEnds.push_back(to + 1);
    }
    pads[a] = std::max<int64_t>(0, -t.first);
    pads[d + a] = std::max<int64_t>(0, t.last - (extent - 1));
  }
  w = vb.op(OpKind::Slice, {w}, {{"axes", axes}, {"starts", starts}, {"ends", ends}}, "taps");
  if (!readAxes.empty())
    x = vb.op(OpKind::Slice, {x}, {{"axes", readAxes}, {"starts", readStarts}, {"ends", readEnds}},
              "read");
  AttrMap attrs(n.attrs().begin(), n.attrs().end());
  attrs["pads"] = pads;
  std::vector<Value *> operands{x, w};
  if (n.numOperands() == 3)
    operands.push_back(n.operand(2));
  return vb.op(OpKind::Conv, operands, attrs);
}

class TrimConvolutionTapsPass : public Pass {
public:
  llvm::StringRef name() const override { return "trim-conv-taps"; }
  llvm::StringRef summary() const override {
    return "drop the kernel taps of a conv that read only padding";
  }
  bool run(Graph &graph, PassContext &ctx) override {
    return rewriteEach(
        graph, ctx.diag, [](const Node &n) { return tapsToTrim(n).hasValue(); }, trim);
  }
};

} // namespace

std::unique_ptr<Pass> cgc::createTrimConvolutionTapsPass() {
  return std::make_unique<TrimConvolutionTapsPass>();
}
