//===- Convolution.cpp - conv, max_pool, avg_pool, interpolate -----------===//
//
// out[n, o, e] = b[o] + sum over the input channels c of o's group and the
// kernel offsets k of x[n, c, e * stride - before + k * dilation] w[o, c', k]
// (c' = c within the group), a position outside x reading 0; per spatial
// dim, in double, rounded once to the result's dtype. A pool takes the
// positions of each window inside x: their max (NaN if any is NaN; -inf
// if none), or their sum over the count of those inside x (with
// count_include_pad: inside the padded input). A channels_last op is the
// same op on its operands with the channels moved to axis 1, its result
// moved back. A conv_transpose scatters each input element's products with
// its kernel into the output; a conv_weight_grad sums, per weight, the
// products of the inputs it met with the result's gradients there. An
// interpolate applies ir/Interpolation.h's taps dim by dim.
//
//===----------------------------------------------------------------------===//
#include "ir/ConvolutionShape.h"
#include "ir/Interpolation.h"
#include "ir/interpreter/Kernels.h"

#include <cmath>

using namespace cgc;
using namespace cgc::interp;

namespace {
/// Row-major walk over the extents \p ext: the coordinates of index \p i.
void coordinates(int64_t i, const std::vector<int64_t> &ext, std::vector<int64_t> &c) {
  for (size_t a = ext.size(); a-- > 0;) {
    c[a] = i % ext[a];
    i /= ext[a];
  }
}

/// The flat index into \p extents of the position that window position
/// \p e and kernel offset \p k meet (e * stride - before + k * dilation
/// per dim); false when it falls outside. conv reads x there (extents: the
/// input's); conv_transpose writes the output there (input position e).
bool windowPosition(const std::vector<int64_t> &e, const std::vector<int64_t> &k,
                    const ConvolutionShape &s, const std::vector<int64_t> &extents,
                    int64_t &at) {
  at = 0;
  for (size_t a = 0; a < e.size(); ++a) {
    int64_t pos = e[a] * s.strides[a] - s.before[a] + k[a] * s.dilations[a];
    if (pos < 0 || pos >= extents[a])
      return false;
    at = at * extents[a] + pos;
  }
  return true;
}

int64_t count(const std::vector<int64_t> &ext) {
  int64_t n = 1;
  for (int64_t e : ext)
    n *= e;
  return n;
}
} // namespace

/// max_pool and avg_pool.
static Tensor evalPool(const Node &node, const Tensor &x, const ConvolutionShape &s) {
  size_t d = s.in.size();
  bool max = node.getOp() == OpKind::MaxPool;
  bool includePad = node.boolAttr("count_include_pad", false);
  int64_t batch = x.shape[0], inSize = count(s.in), outSize = count(s.out),
          kernelSize = count(s.kernel);
  Shape result{batch, s.channels};
  result.insert(result.end(), s.out.begin(), s.out.end());
  Tensor out(x.dtype, result);
  std::vector<int64_t> e(d), k(d);
  for (int64_t plane = 0; plane < batch * s.channels; ++plane)
    for (int64_t p = 0; p < outSize; ++p) {
      coordinates(p, s.out, e);
      double acc = max ? -INFINITY : 0.0;
      int64_t counted = 0;
      for (int64_t q = 0; q < kernelSize; ++q) {
        coordinates(q, s.kernel, k);
        int64_t at = 0;
        bool inside = true, inPadded = true;
        for (size_t a = 0; a < d; ++a) {
          int64_t pos = e[a] * s.strides[a] - s.before[a] + k[a] * s.dilations[a];
          inside &= pos >= 0 && pos < s.in[a];
          inPadded &= pos < s.in[a] + s.after[a];
          at = at * s.in[a] + pos;
        }
        counted += includePad ? inPadded : inside;
        if (!inside)
          continue;
        double v = x.real(plane * inSize + at);
        acc = max ? (std::isnan(acc) || std::isnan(v) ? NAN : std::max(acc, v)) : acc + v;
      }
      out.setReal(plane * outSize + p, max ? acc : acc / double(counted));
    }
  out.round();
  return out;
}

/// conv, channels first.
static Tensor evalConv(const Tensor &x, const Tensor &w, const Tensor *bias,
                       const ConvolutionShape &s) {
  size_t d = s.in.size();
  int64_t batch = x.shape[0], perGroupIn = s.channels / s.groups,
          perGroupOut = s.outChannels / s.groups;
  int64_t inSize = count(s.in), outSize = count(s.out), kernelSize = count(s.kernel);
  Shape result{batch, s.outChannels};
  result.insert(result.end(), s.out.begin(), s.out.end());
  Tensor out(x.dtype, result);
  std::vector<int64_t> e(d), k(d);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t o = 0; o < s.outChannels; ++o) {
      int64_t group = o / perGroupOut;
      for (int64_t p = 0; p < outSize; ++p) {
        coordinates(p, s.out, e);
        double acc = bias ? bias->real(o) : 0.0;
        for (int64_t c = 0; c < perGroupIn; ++c) {
          int64_t channel = group * perGroupIn + c;
          for (int64_t q = 0; q < kernelSize; ++q) {
            coordinates(q, s.kernel, k);
            int64_t at;
            if (windowPosition(e, k, s, s.in, at))
              acc += x.real((n * s.channels + channel) * inSize + at) *
                     w.real((o * perGroupIn + c) * kernelSize + q);
          }
        }
        out.setReal((n * s.outChannels + o) * outSize + p, acc);
      }
    }
  out.round();
  return out;
}

/// conv_transpose: every input element x[n, c, i] scatters x * w[c, o', k]
/// into out[n, o, i * stride - before + k * dilation] (o = o' in c's
/// group), positions outside the result dropped; plus the bias.
static Tensor evalConvTranspose(const Tensor &x, const Tensor &w, const Tensor *bias,
                                const ConvolutionShape &s) {
  size_t d = s.in.size();
  int64_t batch = x.shape[0], perGroupIn = s.channels / s.groups,
          perGroupOut = s.outChannels / s.groups;
  int64_t inSize = count(s.in), outSize = count(s.out), kernelSize = count(s.kernel);
  Shape result{batch, s.outChannels};
  result.insert(result.end(), s.out.begin(), s.out.end());
  std::vector<double> acc(size_t(batch * s.outChannels * outSize), 0.0);
  std::vector<int64_t> i(d), k(d);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < s.channels; ++c)
      for (int64_t p = 0; p < inSize; ++p) {
        coordinates(p, s.in, i);
        double v = x.real((n * s.channels + c) * inSize + p);
        for (int64_t q = 0; q < kernelSize; ++q) {
          coordinates(q, s.kernel, k);
          int64_t at;
          if (!windowPosition(i, k, s, s.out, at))
            continue;
          for (int64_t o = 0; o < perGroupOut; ++o) {
            int64_t channel = c / perGroupIn * perGroupOut + o;
            acc[size_t((n * s.outChannels + channel) * outSize + at)] +=
                v * w.real((c * perGroupOut + o) * kernelSize + q);
          }
        }
      }
  Tensor out(x.dtype, result);
  for (int64_t j = 0; j < out.numel(); ++j)
    out.setReal(j, acc[size_t(j)] + (bias ? bias->real(j / outSize % s.outChannels) : 0.0));
  out.round();
  return out;
}

/// conv_weight_grad: dw[o, c', k] = sum over n and the output positions
/// e of x[n, c, e * stride - before + k * dilation] g[n, o, e] (c = c' in
/// o's group), positions outside x reading 0; in double, rounded once.
static Tensor evalConvWeightGrad(const Tensor &x, const Tensor &g, const ConvolutionShape &s) {
  size_t d = s.in.size();
  int64_t batch = x.shape[0], perGroupIn = s.channels / s.groups,
          perGroupOut = s.outChannels / s.groups;
  int64_t inSize = count(s.in), outSize = count(s.out), kernelSize = count(s.kernel);
  Shape result{s.outChannels, perGroupIn};
  result.insert(result.end(), s.kernel.begin(), s.kernel.end());
  Tensor out(x.dtype, result);
  std::vector<int64_t> e(d), k(d);
  for (int64_t o = 0; o < s.outChannels; ++o)
    for (int64_t c = 0; c < perGroupIn; ++c) {
      int64_t channel = o / perGroupOut * perGroupIn + c;
      for (int64_t q = 0; q < kernelSize; ++q) {
        coordinates(q, s.kernel, k);
        double acc = 0.0;
        for (int64_t p = 0; p < outSize; ++p) {
          coordinates(p, s.out, e);
          int64_t at;
          if (!windowPosition(e, k, s, s.in, at))
            continue;
          for (int64_t n = 0; n < batch; ++n)
            acc += x.real((n * s.channels + channel) * inSize + at) *
                   g.real((n * s.outChannels + o) * outSize + p);
        }
        out.setReal((o * perGroupIn + c) * kernelSize + q, acc);
      }
    }
  out.round();
  return out;
}

/// interpolate: the taps of each spatial dim applied in turn, in double,
/// rounded once.
static Tensor evalInterpolate(const Node &node, const Tensor &x) {
  std::vector<double> values(size_t(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i)
    values[size_t(i)] = x.real(i);
  Shape shape = x.shape;
  for (size_t a = 0; a + 2 < x.rank(); ++a) {
    InterpolationTaps taps = interpolationTaps(node, a, shape[2 + a]);
    int64_t outer = 1, inner = 1, in = shape[2 + a], out = int64_t(taps.low.size());
    for (size_t d = 0; d < 2 + a; ++d)
      outer *= shape[d];
    for (size_t d = 3 + a; d < shape.size(); ++d)
      inner *= shape[d];
    std::vector<double> next(size_t(outer * out * inner));
    for (int64_t p = 0; p < outer; ++p)
      for (int64_t o = 0; o < out; ++o)
        for (int64_t q = 0; q < inner; ++q) {
          double w = taps.weight[size_t(o)];
          double lo = values[size_t((p * in + taps.low[size_t(o)]) * inner + q)];
          double hi = values[size_t((p * in + taps.high[size_t(o)]) * inner + q)];
          next[size_t((p * out + o) * inner + q)] = w == 0 ? lo : (1 - w) * lo + w * hi;
        }
    values = std::move(next);
    shape[2 + a] = out;
  }
  Tensor result(x.dtype, shape);
  for (int64_t i = 0; i < result.numel(); ++i)
    result.setReal(i, values[size_t(i)]);
  result.round();
  return result;
}

Tensor interp::evalConvolution(const Node &node, const Operands &in) {
  if (node.getOp() == OpKind::Interpolate)
    return evalInterpolate(node, *in[0]);
  std::string why;
  ConvolutionShape s = *convolutionShape(node, why); // verified
  bool last = s.channelsLast;
  unsigned rank = in[0]->rank();
  auto first = [&](const Tensor &t) {
    return last ? permute(t, channelsFirstPerm(rank)) : t;
  };
  const Tensor *bias = in.size() > 2 ? in[2] : nullptr;
  if (node.getOp() == OpKind::ConvTranspose)
    return evalConvTranspose(*in[0], *in[1], bias, s);
  if (node.getOp() == OpKind::ConvWeightGrad)
    return evalConvWeightGrad(*in[0], *in[1], s);
  Tensor out = node.getOp() == OpKind::Conv ? evalConv(first(*in[0]), first(*in[1]), bias, s)
                                            : evalPool(node, first(*in[0]), s);
  return last ? permute(out, channelsLastPerm(rank)) : out;
}
