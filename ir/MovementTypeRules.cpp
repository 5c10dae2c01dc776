//===- MovementTypeRules.cpp - Result types of the movement ops -------------===//
//
// transpose, reshape, broadcast_to, concat, slice, gather and embedding,
// the packing ops and one_hot: data movement, whose result types come
// from the operands' shapes and the op's attributes (TypeRules.cpp has the
// other families). Each returns false after reporting an error at the node.
//
//===----------------------------------------------------------------------===//
#include "ir/Initializers.h"
#include "ir/OpAttrs.h"
#include "ir/Printer.h"
#include "ir/TypeChecker.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include <algorithm>
#include <numeric>
#include <set>

using namespace cgc;
using namespace cgc::typerules;

bool TypeChecker::transpose(Types &out) {
  const TensorType &in = operandType(0);
  std::vector<int64_t> perm = transposePerm(node, in.rank());
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(in.rank());
  std::iota(identity.begin(), identity.end(), 0);
  if (sorted != identity)
    return fail("attribute 'perm' is not a permutation of the " +
                llvm::Twine(in.rank()) + " axes of " + str(in));
  Shape shape;
  for (int64_t p : perm)
    shape.push_back(in.dims[p]);
  out.push_back(TensorType(in.dtype, shape));
  return true;
}

namespace {
/// A product of dims split into its static part and its symbols.
struct DimProduct {
  int64_t extent = 1;
  std::multiset<unsigned> symbols;
  void multiply(Dim d) {
    if (d.isStatic())
      extent *= d.extent();
    else
      symbols.insert(d.symbolIndex());
  }
};
} // namespace

bool TypeChecker::reshape(Types &out) {
  const TensorType &in = operandType(0);
  Shape target;
  shapeAttr(target);
  DimProduct have, want;
  for (Dim d : in.dims)
    have.multiply(d);
  for (Dim d : target)
    want.multiply(d);
  if (have.symbols != want.symbols || have.extent != want.extent)
    return fail("cannot reshape " + str(in) + " to " + str(target) +
                ": element counts differ");
  out.push_back(TensorType(in.dtype, target));
  return true;
}

bool TypeChecker::broadcastTo(Types &out) {
  const TensorType &in = operandType(0);
  Shape target;
  shapeAttr(target);
  auto merged = broadcastShapes(in.dims, target);
  if (!merged || Shape(*merged) != target)
    return fail("cannot broadcast " + str(in) + " to " + str(target));
  out.push_back(TensorType(in.dtype, target));
  return true;
}

bool TypeChecker::concat(Types &out) {
  const TensorType &first = operandType(0);
  if (!checkOperandDTypes(0, node.numOperands()))
    return false;
  unsigned axis;
  if (!axisAttr("axis", 0, first.rank(), axis))
    return false;
  Shape shape(first.dims.begin(), first.dims.end());
  int64_t total = 0;
  for (unsigned i = 0; i < node.numOperands(); ++i) {
    const TensorType &t = operandType(i);
    if (t.rank() != first.rank())
      return fail("operand #" + llvm::Twine(i) + " has rank " +
                  llvm::Twine(t.rank()) + ", expected " +
                  llvm::Twine(first.rank()));
    for (unsigned d = 0; d < t.rank(); ++d)
      if (d != axis && t.dims[d] != first.dims[d])
        return fail("operand #" + llvm::Twine(i) + " is " + str(t) +
                    ", which differs from " + str(first) +
                    " outside the concat axis");
    if (!t.dims[axis].isStatic())
      return fail("concat along symbolic dim " +
                  dimToString(t.dims[axis], table) + " is not supported");
    total += t.dims[axis].extent();
  }
  shape[axis] = Dim::fixed(total);
  out.push_back(TensorType(first.dtype, shape));
  return true;
}

bool TypeChecker::slice(Types &out) {
  const TensorType &in = operandType(0);
  auto [starts, ends, axes, steps] = sliceParams(node);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return fail("attributes 'starts', 'ends', 'axes' and 'steps' must have "
                "the same length");
  Shape shape(in.dims.begin(), in.dims.end());
  std::set<unsigned> seen;
  for (unsigned i = 0; i < starts.size(); ++i) {
    auto axis = normalizeAxis(axes[i], in.rank());
    if (!axis || !seen.insert(*axis).second)
      return fail("attribute 'axes' has an invalid or repeated axis " +
                  llvm::Twine(axes[i]));
    if (steps[i] <= 0)
      return fail("attribute 'steps' must be positive");
    // A symbolic dim is sliced within its smallest extent only: the slice
    // is then static and holds the same elements at every extent (all
    // real when the dim is padded).
    Dim dim = in.dims[*axis];
    int64_t extent = dim.isStatic() ? dim.extent() : table.get(dim.symbolIndex()).min;
    if (!dim.isStatic() && (starts[i] < 0 || ends[i] < 0 || ends[i] > extent))
      return fail("slicing symbolic dim " + dimToString(dim, table) +
                  " takes 0 <= start and end <= its min " +
                  llvm::Twine(extent) + ", got start " + llvm::Twine(starts[i]) +
                  " and end " + llvm::Twine(ends[i]));
    SliceRange range = sliceRange(starts[i], ends[i], steps[i], extent);
    shape[*axis] = Dim::fixed(range.extent);
  }
  out.push_back(TensorType(in.dtype, shape));
  return true;
}

/// Indices known at compile time (a `constant` operand #1) must lie in
/// [-n, n) for an axis of static extent n: out of range they would read
/// zeros at run time (docs/ir.md), which is never what a model means. The
/// type rule, run by the verifier after the reader and after every pass,
/// is the one place that sees every gather with its operands.
bool TypeChecker::constantIndicesInRange(Dim extent, unsigned axis) {
  const Node *def = node.operand(1)->getDef();
  if (!def || def->getOp() != OpKind::Constant || !extent.isStatic())
    return true;
  const auto *values = std::get_if<std::vector<Number>>(def->attr("value"));
  if (!values)
    return true; // The constant's own rule reports a malformed value.
  int64_t n = extent.extent();
  DType dtype = operandType(1).dtype;
  for (size_t i = 0; i < values->size(); ++i) {
    int64_t k = elementOf(dtype, (*values)[i]).integer();
    if (k < -n || k >= n)
      return fail("constant index " + llvm::Twine(k) + " (element " +
                  llvm::Twine(i) + " of '" + def->result()->getName() +
                  "') is out of range for axis " + llvm::Twine(axis) +
                  " of extent " + llvm::Twine(n));
  }
  return true;
}

bool TypeChecker::gather(Types &out) {
  const TensorType &data = operandType(0), &idx = operandType(1);
  if (!isInteger(idx.dtype))
    return fail("operand #1 (indices) has dtype " + dtypeName(idx.dtype) +
                ", expected i32 or i64");
  bool embedding = node.getOp() == OpKind::Embedding;
  if (embedding && (data.rank() != 2 || !isFloat(data.dtype)))
    return fail("the table must be a float matrix [num, dim], got " + str(data));
  if (data.rank() == 0)
    return fail("cannot gather from a scalar");
  unsigned axis = 0;
  if (!embedding && !axisAttr("axis", 0, data.rank(), axis))
    return false;
  if (!constantIndicesInRange(data.dims[axis], axis))
    return false;
  Shape shape(data.dims.begin(), data.dims.begin() + axis);
  shape.append(idx.dims.begin(), idx.dims.end());
  shape.append(data.dims.begin() + axis + 1, data.dims.end());
  out.push_back(TensorType(data.dtype, shape));
  return true;
}

/// index_copy and index_add keep x's type: index is an integer vector [n], source x's
/// shape but n along the axis, of x's dtype.
bool TypeChecker::indexCopy(Types &out) {
  const TensorType &x = operandType(0), &idx = operandType(1),
                   &source = operandType(2);
  if (x.rank() == 0)
    return fail("cannot copy into a scalar's axis");
  if (!dtypeAllowed(x.dtype)) // index_add sums: no bool.
    return fail("operand #0 has dtype " + dtypeName(x.dtype) +
                ", which this op does not accept");
  unsigned axis = 0;
  if (!axisAttr("axis", 0, x.rank(), axis))
    return false;
  if (!isInteger(idx.dtype) || idx.rank() != 1)
    return fail("operand #1 (index) is " + str(idx) +
                ", expected an i32 or i64 vector");
  if (!constantIndicesInRange(x.dims[axis], axis))
    return false;
  Shape expected = x.dims;
  expected[axis] = idx.dims[0];
  if (source.dtype != x.dtype || source.dims != expected)
    return fail("operand #2 (source) is " + str(source) + ", expected " +
                str(TensorType(x.dtype, expected)) + " (x's shape with the " +
                "index's length along axis " + llvm::Twine(axis) + ")");
  out.push_back(x);
  return true;
}

/// argtopk: x numbers of rank >= 1 whose last axis is static, k in [1, its
/// extent]; the result i64, x's shape with k along the last axis.
bool TypeChecker::argTopK(Types &out) {
  const TensorType &x = operandType(0);
  if (x.rank() == 0)
    return fail("cannot rank a scalar (argtopk ranks the last axis)");
  if (!dtypeAllowed(x.dtype))
    return fail("operand #0 has dtype " + dtypeName(x.dtype) +
                ", which this op does not accept");
  const Dim &last = x.dims.back();
  if (!last.isStatic())
    return fail("argtopk ranks a static last axis, not the symbolic " + str(x));
  int64_t k = node.intAttr("k", 0);
  if (k < 1 || k > last.extent())
    return fail("attribute 'k' = " + llvm::Twine(k) + " is outside [1, " +
                llvm::Twine(last.extent()) + "] (the last axis of " + str(x) + ")");
  Shape shape = x.dims;
  shape.back() = Dim::fixed(k);
  out.push_back(TensorType(DType::I64, shape));
  return true;
}

/// pad_packed and pack_padded keep the type; each listed axis (increasing)
/// takes one i64[] real extent.
bool TypeChecker::packing(Types &out) {
  const TensorType &x = operandType(0);
  std::vector<int64_t> axes = node.intsAttr("axes");
  if (axes.size() + 1 != node.numOperands())
    return fail("attribute 'axes' lists " + llvm::Twine(axes.size()) +
                " axes, but " + llvm::Twine(node.numOperands() - 1) +
                " real extents follow the tensor");
  for (size_t k = 0; k < axes.size(); ++k) {
    if (axes[k] < 0 || axes[k] >= int64_t(x.rank()) || (k && axes[k] <= axes[k - 1]))
      return fail("attribute 'axes' must list increasing axes of " + str(x));
    const TensorType &n = operandType(unsigned(k) + 1);
    if (n.dtype != DType::I64 || n.rank() != 0)
      return fail("operand #" + llvm::Twine(k + 1) + " (a real extent) is " +
                  str(n) + ", expected i64[]");
  }
  out.push_back(x);
  return true;
}

bool TypeChecker::oneHot(Types &out) {
  const TensorType &in = operandType(0);
  if (!isInteger(in.dtype))
    return fail("operand #0 has dtype " + dtypeName(in.dtype) +
                ", expected i32 or i64");
  int64_t classes = node.intAttr("num_classes", 0);
  if (classes <= 0)
    return fail("attribute 'num_classes' must be positive");
  DType dtype = DType::F32;
  if (const Attribute *a = node.attr("dtype"))
    dtype = std::get<DType>(*a);
  Shape shape(in.dims.begin(), in.dims.end());
  shape.push_back(Dim::fixed(classes));
  out.push_back(TensorType(dtype, shape));
  return true;
}
