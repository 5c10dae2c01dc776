//===- Movement.cpp - transpose, reshape, broadcast_to, concat, slice, ... ---===//
//
// Data movement copies elements without rounding changes. gather is
// numpy.take(data, indices, axis): a negative index wraps once, an index
// still out of range gives 0. embedding is gather on axis 0. one_hot gives
// an all-zero row for an index outside [0, num_classes). pad_packed and
// pack_padded move the real elements between the packed layout and the
// padded one; what they leave unspecified (the padding, or the packed
// tensor past its real elements) they fill with poison (NaN, an index
// past any extent, true), so a leak into real elements shows.
//
//===----------------------------------------------------------------------===//
#include "ir/interpreter/Kernels.h"

#include "ir/OpAttrs.h"

#include "llvm/Support/ErrorHandling.h"
#include <algorithm>
#include <cmath>
#include <numeric>

using namespace cgc;
using namespace cgc::interp;

/// Splits flat index \p i of \p shape into coordinates.
static Shape coords(int64_t i, const Shape &shape) {
  Shape c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return c;
}

static Tensor transpose(const Node &node, const Tensor &x) {
  return permute(x, transposePerm(node, x.rank()));
}

Tensor interp::permute(const Tensor &x, const std::vector<int64_t> &perm) {
  Shape shape;
  for (int64_t p : perm)
    shape.push_back(x.shape[p]);
  Tensor out(x.dtype, shape);
  Shape strides = stridesOf(x.shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    Shape c = coords(i, shape);
    int64_t src = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      src += c[d] * strides[perm[d]];
    out.data[i] = x.data[src];
  }
  return out;
}

static Tensor concat(const Node &node, const Operands &in) {
  unsigned axis = *normalizeAxis(node.intAttr("axis", 0), in[0]->rank());
  Shape shape = in[0]->shape;
  shape[axis] = 0;
  for (const Tensor *t : in)
    shape[axis] += t->shape[axis];
  Tensor out(in[0]->dtype, shape);
  int64_t outer = numElements(Shape(shape.begin(), shape.begin() + axis));
  int64_t inner = numElements(Shape(shape.begin() + axis + 1, shape.end()));
  int64_t pos = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor *t : in) {
      int64_t block = t->shape[axis] * inner;
      std::copy_n(t->data.begin() + o * block, block, out.data.begin() + pos);
      pos += block;
    }
  return out;
}

static Tensor slice(const Node &node, const Tensor &x) {
  auto [starts, ends, axes, steps] = sliceParams(node);
  Shape begin(x.rank(), 0), step(x.rank(), 1), shape = x.shape;
  for (size_t i = 0; i < starts.size(); ++i) {
    unsigned a = *normalizeAxis(axes[i], x.rank());
    SliceRange range = sliceRange(starts[i], ends[i], steps[i], x.shape[a]);
    begin[a] = range.begin;
    step[a] = steps[i];
    shape[a] = range.extent;
  }
  Tensor out(x.dtype, shape);
  Shape strides = stridesOf(x.shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    Shape c = coords(i, shape);
    int64_t src = 0;
    for (size_t d = 0; d < c.size(); ++d)
      src += (begin[d] + c[d] * step[d]) * strides[d];
    out.data[i] = x.data[src];
  }
  return out;
}

static Tensor gather(const Tensor &data, const Tensor &idx, unsigned axis) {
  Shape shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  Tensor out(data.dtype, shape);
  int64_t outer = numElements(Shape(data.shape.begin(), data.shape.begin() + axis));
  int64_t inner = numElements(Shape(data.shape.begin() + axis + 1, data.shape.end()));
  int64_t n = data.shape[axis], count = idx.numel();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j) {
      int64_t k = idx.integer(j);
      if (k < 0)
        k += n;
      bool valid = k >= 0 && k < n;
      for (int64_t q = 0; q < inner; ++q)
        out.data[(o * count + j) * inner + q] =
            valid ? data.data[(o * n + k) * inner + q] : Element();
    }
  return out;
}

/// Calls \p at(to, from) for each element of source's slices j along
/// \p axis (in order of j) and x's element at index[j] it lands on; an
/// index outside [-n, n) lands nowhere.
template <class At>
static void forEachIndexedSlice(const Tensor &x, const Tensor &idx, unsigned axis,
                                At at) {
  int64_t outer = numElements(Shape(x.shape.begin(), x.shape.begin() + axis));
  int64_t inner = numElements(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  int64_t n = x.shape[axis], count = idx.numel();
  for (int64_t j = 0; j < count; ++j) {
    int64_t k = idx.integer(j);
    if (k < 0)
      k += n;
    if (k < 0 || k >= n)
      continue;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t q = 0; q < inner; ++q)
        at((o * n + k) * inner + q, (o * count + j) * inner + q);
  }
}

/// x with source's slices j along \p axis written at index[j], in order of
/// j (the last of duplicates wins); an index outside [-n, n) writes nothing.
static Tensor indexCopy(const Tensor &x, const Tensor &idx,
                        const Tensor &source, unsigned axis) {
  Tensor out = x;
  forEachIndexedSlice(x, idx, axis, [&](int64_t to, int64_t from) {
    out.data[size_t(to)] = source.data[size_t(from)];
  });
  return out;
}

/// index_add: each slice of \p source added to x's slice at its index, in
/// order, each sum rounded to the dtype (integers wrap in 64 bits, then to
/// the dtype); an out-of-range index adds nothing.
static Tensor indexAdd(const Tensor &x, const Tensor &idx, const Tensor &source,
                       unsigned axis) {
  Tensor out = x;
  bool real = isFloat(x.dtype);
  forEachIndexedSlice(x, idx, axis, [&](int64_t to, int64_t from) {
    if (real)
      out.setReal(to, out.real(to) + source.real(from));
    else
      out.setInt(to, int64_t(uint64_t(out.integer(to)) + uint64_t(source.integer(from))));
  });
  return out;
}

/// argtopk: each row's indices in rank order (a stable sort: of equal
/// elements the lower index first; a NaN the largest), the first k.
static Tensor argTopK(const Node &node, const Tensor &x) {
  int64_t n = x.shape.back(), k = node.intAttr("k", 1);
  bool largest = node.boolAttr("largest", true), real = isFloat(x.dtype);
  Shape shape = x.shape;
  shape.back() = k;
  Tensor out(DType::I64, shape);
  int64_t rows = n ? x.numel() / n : 0;
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    auto before = [&](int64_t a, int64_t b) {
      if (!real) {
        int64_t va = x.integer(r * n + a), vb = x.integer(r * n + b);
        return largest ? va > vb : va < vb;
      }
      double va = x.real(r * n + a), vb = x.real(r * n + b);
      if (std::isnan(va) || std::isnan(vb)) // A NaN ranks as the largest.
        return largest ? !std::isnan(vb) : !std::isnan(va);
      return largest ? va > vb : va < vb;
    };
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), before);
    for (int64_t j = 0; j < k; ++j)
      out.setInt(r * k + j, order[size_t(j)]);
  }
  return out;
}

/// The packed tensor's index of each real element of the padded \p x (-1
/// for padding): its coordinates in row-major order of the real shape.
static std::vector<int64_t> packedIndices(const Node &node, const Operands &in) {
  const Tensor &x = *in[0];
  Shape real = x.shape;
  std::vector<int64_t> axes = node.intsAttr("axes");
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t n = in[k + 1]->integer(0);
    if (n < 0 || n > x.shape[size_t(axes[k])])
      fail("real extent " + std::to_string(n) + " of axis " +
           std::to_string(axes[k]) + " is outside [0, " +
           std::to_string(x.shape[size_t(axes[k])]) + "]");
    real[size_t(axes[k])] = n;
  }
  std::vector<int64_t> at(size_t(x.numel()), -1);
  for (int64_t i = 0; i < x.numel(); ++i) {
    Shape c = coords(i, x.shape);
    int64_t flat = 0;
    bool inside = true;
    for (size_t d = 0; d < c.size(); ++d) {
      inside &= c[d] < real[d];
      flat = flat * real[d] + c[d];
    }
    at[size_t(i)] = inside ? flat : -1;
  }
  return at;
}

static Tensor packing(const Node &node, const Operands &in) {
  const Tensor &x = *in[0];
  Tensor out(x.dtype, x.shape);
  Element poison = isFloat(x.dtype)          ? Element::ofReal(std::nan(""))
                   : x.dtype == DType::Bool ? Element::ofInt(1)
                                            : Element::ofInt(int64_t(1) << 30);
  std::fill(out.data.begin(), out.data.end(), poison);
  std::vector<int64_t> at = packedIndices(node, in);
  bool pad = node.getOp() == OpKind::PadPacked;
  for (size_t i = 0; i < at.size(); ++i)
    if (at[i] >= 0)
      pad ? out.data[i] = x.data[size_t(at[i])] : out.data[size_t(at[i])] = x.data[i];
  return out;
}

static Tensor oneHot(const Node &node, const Tensor &idx) {
  int64_t classes = node.intAttr("num_classes", 0);
  Shape shape = idx.shape;
  shape.push_back(classes);
  Tensor out(node.result()->getType().dtype, shape);
  for (int64_t i = 0; i < idx.numel(); ++i) {
    int64_t k = idx.integer(i);
    if (k >= 0 && k < classes)
      out.setReal(i * classes + k, 1); // 1 of any dtype.
  }
  return out;
}

Tensor interp::evalMovement(const Node &node, const Operands &in,
                            const DimEnv &env) {
  const Tensor &x = *in[0];
  switch (node.getOp()) {
  case OpKind::Transpose:
    return transpose(node, x);
  case OpKind::Reshape: {
    Tensor out = x;
    out.shape = env.resolve(std::get<std::vector<Dim>>(*node.attr("shape")));
    if (numElements(out.shape) != x.numel())
      fail("cannot reshape " + x.typeString() + " to " +
           shapeString(out.shape));
    return out;
  }
  case OpKind::BroadcastTo: {
    Shape shape = env.resolve(std::get<std::vector<Dim>>(*node.attr("shape")));
    if (broadcastShape(x.shape, shape) != shape)
      fail("cannot broadcast " + x.typeString() + " to " + shapeString(shape));
    Tensor out(x.dtype, shape);
    BroadcastMap map(x.shape, shape);
    for (int64_t i = 0; i < out.numel(); ++i)
      out.data[i] = x.data[map(i)];
    return out;
  }
  case OpKind::Concat:
    return concat(node, in);
  case OpKind::Slice:
    return slice(node, x);
  case OpKind::Gather:
    return gather(x, *in[1], *normalizeAxis(node.intAttr("axis", 0), x.rank()));
  case OpKind::Embedding:
    return gather(x, *in[1], 0);
  case OpKind::OneHot:
    return oneHot(node, x);
  case OpKind::IndexCopy:
    return indexCopy(x, *in[1], *in[2],
                     *normalizeAxis(node.intAttr("axis", 0), x.rank()));
  case OpKind::ArgTopK:
    return argTopK(node, x);
  case OpKind::IndexAdd:
    return indexAdd(x, *in[1], *in[2], *normalizeAxis(node.intAttr("axis", 0), x.rank()));
  case OpKind::PadPacked: case OpKind::PackPadded:
    return packing(node, in);
#define CGC_MOVEMENT_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not a movement op");
}
