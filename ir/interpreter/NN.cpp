//===- NN.cpp - softmax, layernorm, dropout, losses and sync points ----------===//
//
// softmax/log_softmax subtract the row maximum first. layernorm normalizes
// over dims [axis, rank) with the biased variance. dropout keeps element i
// iff philoxUniform(seed, offset, i) >= p and scales kept elements by
// float(1 / (1 - p)). cross_entropy averages over rows whose target is not
// ignore_index (0 when none are left).
//
//===----------------------------------------------------------------------===//
#include "ir/interpreter/Kernels.h"

#include "ir/Initializers.h"
#include "ir/Philox.h"

#include "llvm/Support/ErrorHandling.h"
#include <cmath>

using namespace cgc;
using namespace cgc::interp;

/// Calls f(base, stride, extent) for every 1-D line along \p axis.
template <typename F>
static void forEachLine(const Shape &shape, unsigned axis, F f) {
  int64_t inner = numElements(Shape(shape.begin() + axis + 1, shape.end()));
  int64_t outer = numElements(Shape(shape.begin(), shape.begin() + axis));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t q = 0; q < inner; ++q)
      f(o * shape[axis] * inner + q, inner, shape[axis]);
}

static Tensor softmax(const Node &node, const Tensor &x) {
  unsigned axis = *normalizeAxis(node.intAttr("axis", -1), x.rank());
  bool log = node.getOp() == OpKind::LogSoftmax;
  Tensor out(x.dtype, x.shape);
  forEachLine(x.shape, axis, [&](int64_t base, int64_t stride, int64_t n) {
    double m = -INFINITY;
    for (int64_t k = 0; k < n; ++k)
      m = std::isnan(m) || std::isnan(x.real(base + k * stride))
              ? NAN
              : std::max(m, x.real(base + k * stride));
    double s = 0;
    for (int64_t k = 0; k < n; ++k)
      s += std::exp(x.real(base + k * stride) - m);
    for (int64_t k = 0; k < n; ++k) {
      double d = x.real(base + k * stride) - m;
      out.setReal(base + k * stride, log ? d - std::log(s) : std::exp(d) / s);
    }
  });
  out.round();
  return out;
}

/// layernorm (centered) and rms_norm (not): over dims axis..rank-1 in
/// double, the result rounded once.
static Tensor layerNorm(const Node &node, const Operands &in) {
  bool centered = node.getOp() == OpKind::LayerNorm;
  const Tensor &x = *in[0];
  unsigned axis = *normalizeAxis(node.intAttr("axis", -1), x.rank());
  double eps = node.floatAttr("eps", 1e-5);
  int64_t n = numElements(Shape(x.shape.begin() + axis, x.shape.end()));
  Tensor out(x.dtype, x.shape);
  int64_t rows = numElements(Shape(x.shape.begin(), x.shape.begin() + axis));
  for (int64_t r = 0; r < rows; ++r) {
    auto p = [&](int64_t k) { return x.real(r * n + k); };
    double mean = 0, var = 0;
    for (int64_t k = 0; k < n && centered; ++k)
      mean += p(k);
    mean /= double(n);
    for (int64_t k = 0; k < n; ++k)
      var += (p(k) - mean) * (p(k) - mean);
    var /= double(n);
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t k = 0; k < n; ++k) {
      double y = (p(k) - mean) * inv;
      if (in.size() > 1)
        y *= in[1]->real(k);
      if (in.size() > 2)
        y += in[2]->real(k);
      out.setReal(r * n + k, y);
    }
  }
  out.round();
  return out;
}

/// batch_norm: each channel c of x [N, C, ...] normalized by its batch
/// statistics (training: mean and biased variance over every axis but 1,
/// in double) or by running_mean[c] and running_var[c], then scaled and
/// shifted: (x - mean) * (rsqrt(var + eps) * weight) + bias with each
/// step rounded to x's dtype (docs/ir.md: what expand-batch-norm writes).
static Tensor batchNorm(const Node &node, const Operands &in) {
  const Tensor &x = *in[0];
  auto r = [&](double v) { return roundValue(x.dtype, v); };
  double eps = r(node.floatAttr("eps", 1e-5));
  bool training = node.boolAttr("training", false);
  int64_t channels = x.shape[1];
  int64_t inner = numElements(Shape(x.shape.begin() + 2, x.shape.end()));
  int64_t outer = x.shape[0];
  Tensor out(x.dtype, x.shape);
  for (int64_t c = 0; c < channels; ++c) {
    auto each = [&](auto f) {
      for (int64_t n = 0; n < outer; ++n)
        for (int64_t k = 0; k < inner; ++k)
          f((n * channels + c) * inner + k);
    };
    double mean = in[3]->real(c), var = in[4]->real(c);
    if (training) {
      double count = double(outer * inner), sum = 0, squares = 0;
      each([&](int64_t i) { sum += x.real(i); });
      mean = sum / count;
      each([&](int64_t i) { squares += (x.real(i) - mean) * (x.real(i) - mean); });
      var = squares / count;
      mean = r(mean);
      var = r(var);
    }
    double scale = r(r(1.0 / std::sqrt(r(var + eps))) * in[1]->real(c));
    double shift = in[2]->real(c);
    each([&](int64_t i) { out.setReal(i, r(r(r(x.real(i) - mean) * scale) + shift)); });
  }
  out.round();
  return out;
}

static Tensor dropout(const Node &node, const Operands &in) {
  const Tensor &x = *in[0];
  double p = node.floatAttr("p", 0);
  uint64_t seed = uint64_t(node.intAttr("seed", 0));
  uint64_t offset = uint64_t(node.intAttr("offset", 0));
  if (in.size() == 2) {
    seed = uint64_t(in[1]->integer(0));
    offset += uint64_t(in[1]->integer(1));
  }
  double scale = double(float(1.0 / (1.0 - p)));
  Tensor out(x.dtype, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    out.setReal(i, double(philoxUniform(seed, offset, uint64_t(i))) >= p
                       ? x.real(i) * scale
                       : 0.0);
  out.round();
  return out;
}

static Tensor reduceLoss(const std::string &reduction, Tensor &&unreduced,
                         double count) {
  if (reduction == "none") {
    unreduced.round();
    return std::move(unreduced);
  }
  Tensor out(unreduced.dtype, {});
  double sum = 0;
  for (int64_t i = 0; i < unreduced.numel(); ++i)
    sum += unreduced.real(i);
  if (reduction == "mean")
    sum = count > 0 ? sum / count : (unreduced.numel() ? 0.0 : NAN);
  out.setReal(0, sum);
  return out;
}

static Tensor mseLoss(const Node &node, const Operands &in) {
  Tensor d(in[0]->dtype, in[0]->shape);
  for (int64_t i = 0; i < d.numel(); ++i) {
    double e = in[0]->real(i) - in[1]->real(i);
    d.data[i] = Element::ofReal(e * e); // Rounded by reduceLoss.
  }
  return reduceLoss(node.strAttr("reduction", "mean"), std::move(d),
                    double(d.numel()));
}

static Tensor crossEntropy(const Node &node, const Operands &in) {
  const Tensor &logits = *in[0], &target = *in[1];
  int64_t rows = logits.shape[0], classes = logits.shape[1];
  int64_t ignore = node.intAttr("ignore_index", -100);
  Tensor loss(logits.dtype, {rows});
  double counted = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t t = target.integer(r);
    if (t == ignore)
      continue;
    if (t < 0 || t >= classes)
      fail("target " + std::to_string(t) + " of row " + std::to_string(r) +
           " is outside [0, " + std::to_string(classes) + ")");
    auto p = [&](int64_t c) { return logits.real(r * classes + c); };
    double m = -INFINITY;
    for (int64_t c = 0; c < classes; ++c)
      m = std::isnan(m) || std::isnan(p(c)) ? NAN : std::max(m, p(c));
    double s = 0;
    for (int64_t c = 0; c < classes; ++c)
      s += std::exp(p(c) - m);
    // (m - p[t]) + log(s): the difference first, so logits of 1e8 keep it.
    loss.data[r] = Element::ofReal((m - p(t)) + std::log(s));
    counted += 1;
  }
  std::string reduction = node.strAttr("reduction", "mean");
  if (reduction == "mean" && counted == 0) {
    Tensor zero(logits.dtype, {});
    return zero;
  }
  return reduceLoss(reduction, std::move(loss), counted);
}

Tensor interp::evalNN(const Node &node, const Operands &in) {
  switch (node.getOp()) {
  case OpKind::Softmax: case OpKind::LogSoftmax:
    return softmax(node, *in[0]);
  case OpKind::LayerNorm: case OpKind::RmsNorm:
    return layerNorm(node, in);
  case OpKind::BatchNorm:
    return batchNorm(node, in);
  case OpKind::Dropout:
    return dropout(node, in);
  case OpKind::MseLoss:
    return mseLoss(node, in);
  case OpKind::CrossEntropy:
    return crossEntropy(node, in);
#define CGC_NORMALIZATION_OP(...)
#define CGC_LOSS_OP(...)
#define CGC_RANDOM_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not a normalization, loss or dropout");
}

/// The coordinates of \p x's first \p maxCount nonzero elements.
static Tensor nonZero(const Tensor &x, int64_t maxCount) {
  Tensor out(DType::I64, {0, int64_t(x.rank())});
  for (int64_t i = 0; i < x.numel() && out.shape[0] < maxCount; ++i) {
    if (!x.nonzero(i))
      continue;
    int64_t rest = i;
    size_t at = out.data.size();
    out.data.resize(at + x.rank());
    for (size_t d = x.rank(); d-- > 0;) {
      out.data[at + d] = Element::ofInt(rest % x.shape[d]);
      rest /= x.shape[d];
    }
    ++out.shape[0];
  }
  return out;
}

static Tensor maskedSelect(const Tensor &x, const Tensor &mask) {
  Tensor out(x.dtype, {0});
  for (int64_t i = 0; i < x.numel(); ++i)
    if (mask.nonzero(i))
      out.data.push_back(x.data[i]);
  out.shape[0] = out.numel();
  return out;
}

Tensor interp::evalSyncPoint(const Node &node, const Operands &in) {
  const Tensor &x = *in[0];
  switch (node.getOp()) {
  case OpKind::Item: {
    Tensor out(x.dtype, {});
    out.data[0] = x.data[0];
    return out;
  }
  case OpKind::MaskedSelect:
    return maskedSelect(x, *in[1]);
  case OpKind::NonZero:
    return nonZero(x, node.intAttr("max_count", INT64_MAX));
#define CGC_SYNC_POINT_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not a sync point");
}
