//===- Reductions.cpp - sum, mean, max, min, argmax, cumsum, matmul, linear --===//
//
// Float reductions accumulate in double and round once; integer ones
// accumulate exactly in int64 (sum wraps). Over an empty set, sum
// gives 0, mean NaN, max -inf and min +inf (integers: the dtype's lowest /
// highest value). max/min propagate NaN; argmax takes the first maximum
// (a NaN counts as the maximum).
//
//===----------------------------------------------------------------------===//
#include "ir/interpreter/Kernels.h"

#include "ir/TypeRules.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include <cmath>
#include <limits>

using namespace cgc;
using namespace cgc::interp;


/// Calls f(outIndex, inIndex) for every input element, where outIndex is
/// the element's position in the reduced (keepdim) result.
template <typename F>
static void forEachReduced(const Shape &shape,
                           llvm::ArrayRef<unsigned> axes, F f) {
  Shape outShape = shape;
  for (unsigned a : axes)
    outShape[a] = 1;
  Shape outStrides = stridesOf(outShape);
  int64_t n = numElements(shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, o = 0;
    for (size_t d = shape.size(); d-- > 0;) {
      int64_t c = rest % shape[d];
      rest /= shape[d];
      if (outShape[d] != 1)
        o += c * outStrides[d];
    }
    f(o, i);
  }
}

Tensor interp::evalScan(const Node &node, const Operands &in) {
  const Tensor &x = *in[0];
  unsigned axis = *normalizeAxis(node.intAttr("axis", 0), x.rank());
  Tensor out(x.dtype, x.shape);
  Shape strides = stridesOf(x.shape);
  int64_t stride = strides[axis], extent = x.shape[axis];
  bool integer = isInteger(x.dtype);
  for (int64_t i = 0; i < x.numel(); ++i) {
    bool first = (i / stride) % extent == 0;
    if (integer)
      out.setInt(i, int64_t(uint64_t(first ? 0 : out.integer(i - stride)) +
                            uint64_t(x.integer(i))));
    else
      out.data[i] = Element::ofReal((first ? 0 : out.real(i - stride)) +
                                    x.real(i));
  }
  out.round();
  return out;
}

/// The accumulator's value before the first element (for an integer
/// dtype, max and min start from its lowest and highest value).
static double startValue(OpKind op) {
  switch (op) {
  case OpKind::Sum: case OpKind::Mean: case OpKind::ArgMax: return 0;
  case OpKind::Max: return -INFINITY;
  case OpKind::Min: return INFINITY;
  case OpKind::Prod: return 1;
#define CGC_REDUCTION_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not a reduction");
}

/// The running state of one reduced row: the accumulator as a double (float
/// input) or an int64 (integer input, exact; sums wrap in 64 bits), and
/// argmax's maximum so far.
struct Accumulator {
  double real = 0;
  int64_t integer = 0;
  double bestReal = 0;
  int64_t bestInteger = 0;
  int64_t seen = 0; ///< Elements folded in so far.
};

/// Folds float element \p v into \p acc.
static void accumulateReal(OpKind op, double v, Accumulator &acc) {
  int64_t k = acc.seen++;
  switch (op) {
  case OpKind::Sum: case OpKind::Mean:
    acc.real += v;
    return;
  case OpKind::Max:
    acc.real = std::isnan(acc.real) || std::isnan(v) ? NAN : std::max(acc.real, v);
    return;
  case OpKind::Min:
    acc.real = std::isnan(acc.real) || std::isnan(v) ? NAN : std::min(acc.real, v);
    return;
  case OpKind::Prod:
    acc.real *= v;
    return;
  case OpKind::ArgMax:
    if (k == 0 ||
        (!std::isnan(acc.bestReal) && (std::isnan(v) || v > acc.bestReal))) {
      acc.bestReal = v;
      acc.integer = k;
    }
    return;
#define CGC_REDUCTION_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not a reduction");
}

/// Folds integer element \p v into \p acc (sum, max, min and argmax: the
/// reductions Ops.def allows on integers).
static void accumulateInteger(OpKind op, int64_t v, Accumulator &acc) {
  int64_t k = acc.seen++;
  switch (op) {
  case OpKind::Sum:
    acc.integer = int64_t(uint64_t(acc.integer) + uint64_t(v));
    return;
  case OpKind::Max:
    acc.integer = k == 0 ? v : std::max(acc.integer, v);
    return;
  case OpKind::Min:
    acc.integer = k == 0 ? v : std::min(acc.integer, v);
    return;
  case OpKind::ArgMax:
    if (k == 0 || v > acc.bestInteger) {
      acc.bestInteger = v;
      acc.integer = k;
    }
    return;
  case OpKind::Mean: case OpKind::Prod:
    break; // Float only (Ops.def).
#define CGC_REDUCTION_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not an integer reduction");
}

/// The value of an empty integer max/min: the dtype's lowest/highest value.
static int64_t emptyInteger(OpKind op, DType dtype) {
  bool i32 = dtype == DType::I32;
  if (op == OpKind::Max)
    return i32 ? INT32_MIN : INT64_MIN;
  if (op == OpKind::Min)
    return i32 ? INT32_MAX : INT64_MAX;
  return 0;
}

Tensor interp::evalReduction(const Node &node, const Operands &in) {
  const Tensor &x = *in[0];
  OpKind op = node.getOp();
  DType dtype = node.result()->getType().dtype;
  llvm::SmallVector<unsigned, 4> axes = reducedAxes(node, x.rank());
  Shape keptShape = x.shape;
  int64_t count = 1;
  for (unsigned a : axes) {
    keptShape[a] = 1;
    count *= x.shape[a];
  }
  Tensor out(dtype, keptShape);
  std::vector<Accumulator> acc(size_t(out.numel()));
  for (Accumulator &a : acc)
    a.real = startValue(op);
  if (op == OpKind::ArgMax && count == 0 && out.numel() > 0)
    fail("argmax over an empty axis");
  bool integer = !isFloat(x.dtype);
  forEachReduced(x.shape, axes, [&](int64_t o, int64_t i) {
    if (integer)
      accumulateInteger(op, x.integer(i), acc[size_t(o)]);
    else
      accumulateReal(op, x.real(i), acc[size_t(o)]);
  });
  for (int64_t o = 0; o < out.numel(); ++o) {
    const Accumulator &a = acc[size_t(o)];
    switch (op) {
    case OpKind::Mean:
      out.setReal(o, a.real / double(count));
      break;
    case OpKind::ArgMax:
      out.setInt(o, a.integer);
      break;
    case OpKind::Sum: case OpKind::Max: case OpKind::Min: case OpKind::Prod:
      if (!integer)
        out.setReal(o, a.real);
      else
        out.setInt(o, a.seen ? a.integer : emptyInteger(op, dtype));
      break;
#define CGC_REDUCTION_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
      llvm_unreachable("not a reduction");
    }
  }
  if (!node.boolAttr("keepdim", false)) {
    Shape reduced;
    for (unsigned d = 0; d < x.rank(); ++d)
      if (!llvm::is_contained(axes, d))
        reduced.push_back(x.shape[d]);
    out.shape = reduced;
  }
  return out;
}

Tensor interp::evalMatMul(const Node &node, const Operands &in) {
  const Tensor &a = *in[0], &b = *in[1];
  DType dtype = node.result()->getType().dtype;
  switch (node.getOp()) {
  case OpKind::Linear: {
    int64_t k = a.shape.back(), n = b.shape[0];
    Shape shape = a.shape;
    shape.back() = n;
    Tensor out(dtype, shape);
    int64_t rows = numElements(Shape(a.shape.begin(), a.shape.end() - 1));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j) {
        double s = in.size() == 3 ? in[2]->real(j) : 0.0;
        for (int64_t q = 0; q < k; ++q)
          s += a.real(r * k + q) * b.real(j * k + q);
        out.setReal(r * n + j, s);
      }
    out.round();
    return out;
  }
  case OpKind::MatMul:
    break;
#define CGC_MATMUL_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("not a product");
  }
  bool ta = node.boolAttr("transpose_a", false);
  bool tb = node.boolAttr("transpose_b", false);
  size_t ra = a.rank(), rb = b.rank();
  int64_t m = a.shape[ra - (ta ? 1 : 2)], k = a.shape[ra - (ta ? 2 : 1)];
  int64_t n = b.shape[rb - (tb ? 2 : 1)];
  Shape batchA(a.shape.begin(), a.shape.end() - 2);
  Shape batchB(b.shape.begin(), b.shape.end() - 2);
  Shape batch = broadcastShape(batchA, batchB);
  Shape shape = batch;
  shape.push_back(m);
  shape.push_back(n);
  Tensor out(dtype, shape);
  BroadcastMap mapA(batchA, batch), mapB(batchB, batch);
  int64_t sizeA = a.shape[ra - 2] * a.shape[ra - 1];
  int64_t sizeB = b.shape[rb - 2] * b.shape[rb - 1];
  for (int64_t p = 0; p < numElements(batch); ++p) {
    int64_t pa = mapA(p) * sizeA, pb = mapB(p) * sizeB, po = p * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q)
          s += a.real(pa + (ta ? q * m + i : i * k + q)) *
               b.real(pb + (tb ? j * k + q : q * n + j));
        out.setReal(po + i * n + j, s);
      }
  }
  out.round();
  return out;
}
