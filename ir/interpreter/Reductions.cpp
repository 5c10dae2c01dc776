//===- Reductions.cpp - sum, mean, max, min, argmax, cumsum, matmul, linear --===//
//
// Reductions accumulate in double and round once. Over an empty set, sum
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

static double lowest(DType d) {
  if (d == DType::I32) return -2147483648.0;
  if (d == DType::I64) return -9223372036854775808.0;
  return -INFINITY;
}
static double highest(DType d) {
  if (d == DType::I32) return 2147483647.0;
  if (d == DType::I64) return 9223372036854775807.0;
  return INFINITY;
}

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
    double prev = first ? 0 : out.data[i - stride];
    out.data[i] = integer ? double(int64_t(uint64_t(toInt64(prev)) +
                                           uint64_t(toInt64(x.data[i]))))
                          : prev + x.data[i];
  }
  out.round();
  return out;
}

/// The accumulator's value before the first element.
static double startValue(OpKind op, DType dtype) {
  switch (op) {
  case OpKind::Sum: case OpKind::Mean: case OpKind::ArgMax: return 0;
  case OpKind::Max: return lowest(dtype);
  case OpKind::Min: return highest(dtype);
  case OpKind::Prod: return 1;
#define CGC_REDUCTION_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not a reduction");
}

/// Folds \p v, element number \p k of its row, into \p acc; argmax keeps
/// the maximum so far in \p best.
static void accumulate(OpKind op, double v, int64_t k, double &acc,
                       double &best) {
  switch (op) {
  case OpKind::Sum: case OpKind::Mean:
    acc += v;
    return;
  case OpKind::Max:
    acc = std::isnan(acc) || std::isnan(v) ? NAN : std::max(acc, v);
    return;
  case OpKind::Min:
    acc = std::isnan(acc) || std::isnan(v) ? NAN : std::min(acc, v);
    return;
  case OpKind::Prod:
    acc *= v;
    return;
  case OpKind::ArgMax:
    if (k == 0 || (!std::isnan(best) && (std::isnan(v) || v > best))) {
      best = v;
      acc = double(k);
    }
    return;
#define CGC_REDUCTION_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not a reduction");
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
  Tensor acc(dtype, keptShape);
  std::fill(acc.data.begin(), acc.data.end(), startValue(op, dtype));
  std::vector<int64_t> position(acc.numel(), 0); // elements seen per row
  std::vector<double> best(acc.numel(), 0);
  if (op == OpKind::ArgMax && count == 0 && acc.numel() > 0)
    fail("argmax over an empty axis");
  forEachReduced(x.shape, axes, [&](int64_t o, int64_t i) {
    accumulate(op, x.data[i], position[o]++, acc.data[o], best[o]);
  });
  switch (op) {
  case OpKind::Mean:
    for (double &a : acc.data)
      a /= double(count);
    break;
  case OpKind::Sum: case OpKind::Max: case OpKind::Min: case OpKind::Prod:
  case OpKind::ArgMax:
    break;
#define CGC_REDUCTION_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("not a reduction");
  }
  if (!node.boolAttr("keepdim", false)) {
    Shape reduced;
    for (unsigned d = 0; d < x.rank(); ++d)
      if (!llvm::is_contained(axes, d))
        reduced.push_back(x.shape[d]);
    acc.shape = reduced;
  }
  acc.round();
  return acc;
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
        double s = in.size() == 3 ? in[2]->data[j] : 0.0;
        for (int64_t q = 0; q < k; ++q)
          s += a.data[r * k + q] * b.data[j * k + q];
        out.data[r * n + j] = s;
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
    const double *pa = a.data.data() + mapA(p) * sizeA;
    const double *pb = b.data.data() + mapB(p) * sizeB;
    double *po = out.data.data() + p * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q)
          s += (ta ? pa[q * m + i] : pa[i * k + q]) *
               (tb ? pb[j * k + q] : pb[q * n + j]);
        po[i * n + j] = s;
      }
  }
  out.round();
  return out;
}
