//===- PaddedRun.cpp - Running a padded graph on real-sized inputs --------===//
//
// --check-equivalence of pad-dynamic-shapes: the graph before the pass
// runs at the real sizes; the padded graph runs at each symbolic dim's
// bucket (the smallest that holds the real extent, as the runtime picks)
// with the real extents in its `dim_size` inputs and its inputs padded
// with poison (NaN; for integers an out-of-range index in even trials, 0,
// an index in range of every axis, in odd ones), so any padding that
// leaks into a real element shows; its outputs are then cut to the real
// shapes.
// Inputs and outputs with a symbolic dim after axis 0 cross the padded
// graph's boundary packed: the real elements first, poison behind them.
//
//===----------------------------------------------------------------------===//
#include "PaddedRun.h"

#include <cmath>

using namespace cgc;
using namespace cgc::interp;

bool cgc::isPaddedGraph(const Graph &g) {
  return llvm::any_of(g.inputs(), [](const GraphInput &in) {
    return in.kind == InputKind::DimSize;
  });
}

/// The smallest bucket of \p d holding \p real (its max without buckets).
static int64_t bucketOf(const SymbolicDim &d, int64_t real) {
  for (int64_t b : d.buckets)
    if (b >= real)
      return b;
  return d.max;
}

/// For each element of a \p front tensor, its flat index in a tensor of
/// the larger \p padded shape that holds it at the front of every axis.
static std::vector<int64_t> frontIndices(const Shape &front, const Shape &padded) {
  Shape inner = stridesOf(front), outer = stridesOf(padded);
  std::vector<int64_t> at(size_t(numElements(front)), 0);
  for (int64_t i = 0; i < int64_t(at.size()); ++i)
    for (size_t a = 0; a < front.size(); ++a)
      at[size_t(i)] += (i / inner[a]) % front[a] * outer[a];
  return at;
}

/// \p from's elements at the front of every axis of a \p shape tensor (or,
/// \p packed, at the front of its flat elements), the rest poison (for
/// integers 0 when \p inRange, else 2^30).
static Tensor padTo(const Tensor &from, const Shape &shape, bool packed, bool inRange) {
  Tensor out(from.dtype, shape);
  Element poison = isFloat(from.dtype)          ? Element::ofReal(std::nan(""))
                   : from.dtype == DType::Bool ? Element::ofInt(1)
                                               : Element::ofInt(inRange ? 0 : 1 << 30);
  std::fill(out.data.begin(), out.data.end(), poison);
  if (packed) {
    std::copy(from.data.begin(), from.data.end(), out.data.begin());
    return out;
  }
  std::vector<int64_t> at = frontIndices(from.shape, shape);
  for (size_t i = 0; i < at.size(); ++i)
    out.data[at[i]] = from.data[i];
  return out;
}

bool cgc::paddedInputs(const Graph &before, const Graph &after,
                       const std::map<std::string, Tensor> &real,
                       std::map<std::string, Tensor> &padded,
                       std::map<std::string, std::pair<int64_t, int64_t>> &sizes,
                       unsigned trial, std::string &error) {
  const DimTable &dims = before.dims();
  std::map<unsigned, int64_t> extent;
  for (const GraphInput &in : before.inputs()) {
    auto it = real.find(in.value->getName());
    if (it == real.end())
      continue;
    const TensorType &t = in.value->getType();
    for (unsigned a = 0; a < t.rank(); ++a)
      if (!t.dims[a].isStatic())
        extent[t.dims[a].symbolIndex()] = it->second.shape[a];
  }
  for (const auto &[index, value] : extent)
    sizes[dims.get(index).name] = {value, bucketOf(dims.get(index), value)};
  for (const GraphInput &in : after.inputs()) {
    const std::string &name = in.value->getName();
    if (in.kind == InputKind::DimSize) {
      auto size = sizes.find(name.substr(4)); // "dim.<D>"
      if (size == sizes.end())
        return error = "no real extent for '" + name + "'", false;
      Tensor t(DType::I64, {});
      t.data[0] = Element::ofInt(size->second.first);
      padded[name] = t;
      continue;
    }
    auto it = real.find(name);
    if (it == real.end())
      continue;
    const TensorType &t = in.value->getType();
    Shape shape = it->second.shape;
    for (unsigned a = 0; a < t.rank(); ++a)
      if (!t.dims[a].isStatic())
        shape[a] = sizes[dims.get(t.dims[a].symbolIndex()).name].second;
    padded[name] = shape == it->second.shape
                       ? it->second
                       : padTo(it->second, shape, crossesPacked(t, dims), trial % 2 == 1);
  }
  return true;
}

Tensor cgc::realPart(const Tensor &padded, const Shape &shape, bool packed) {
  if (padded.shape == shape || padded.rank() != shape.size())
    return padded;
  Tensor out(padded.dtype, shape);
  if (packed) {
    std::copy(padded.data.begin(), padded.data.begin() + out.numel(), out.data.begin());
    return out;
  }
  std::vector<int64_t> at = frontIndices(shape, padded.shape);
  for (size_t i = 0; i < at.size(); ++i)
    out.data[i] = padded.data[at[i]];
  return out;
}
