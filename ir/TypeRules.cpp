//===- TypeRules.cpp - Result types of every op ------------------------------===//
//
// One function per op family (the families of Ops.def), or per op where the
// ops of a family differ. Each returns false after reporting an error at
// the node; the messages name the operand or attribute at fault. The
// movement ops are in MovementTypeRules.cpp, the ops with regions and the
// data-dependent ones in RegionTypeRules.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/TypeRules.h"

#include "ir/TypeChecker.h"

#include "ir/OpAttrs.h"
#include "ir/Printer.h"

#include "ir/Initializers.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include <algorithm>
#include <numeric>
#include <set>

using namespace cgc;
using namespace cgc::typerules;

bool TypeChecker::dtypeAllowed(DType dtype) const {
  const OpInfo &info = node.info();
  if (info.has(BoolOnly))
    return dtype == DType::Bool;
  if (dtype == DType::Bool)
    return info.has(AllowBool);
  if (isInteger(dtype))
    return info.has(AllowInt);
  return !info.has(NoFloat);
}

bool TypeChecker::checkOperandDTypes(unsigned first, unsigned count) {
  for (unsigned i = first; i < first + count; ++i) {
    DType d = operandType(i).dtype;
    if (!dtypeAllowed(d))
      return fail("operand #" + llvm::Twine(i) + " has dtype " + dtypeName(d) +
                  ", which this op does not accept");
    if (d != operandType(first).dtype)
      return fail("operand #" + llvm::Twine(i) + " has dtype " + dtypeName(d) +
                  ", expected " + dtypeName(operandType(first).dtype) +
                  " like operand #" + llvm::Twine(first));
  }
  return true;
}

bool TypeChecker::axisAttr(llvm::StringRef key, int64_t fallback,
                           unsigned rank, unsigned &axis) {
  int64_t raw = node.intAttr(key, fallback);
  auto normalized = normalizeAxis(raw, rank);
  if (!normalized)
    return fail("attribute '" + key + "' = " + llvm::Twine(raw) +
                " is out of range for rank " + llvm::Twine(rank));
  axis = *normalized;
  return true;
}

bool TypeChecker::shapeAttr(Shape &shape) {
  const Attribute *attr = node.attr("shape");
  shape.clear();
  if (auto *dims = attr ? std::get_if<std::vector<Dim>>(attr) : nullptr)
    shape.assign(dims->begin(), dims->end());
  return true;
}

bool TypeChecker::elementwise(Types &out) {
  if (node.getOp() == OpKind::Cast) {
    const Attribute *a = node.attr("dtype");
    out.push_back(TensorType(std::get<DType>(*a), operandType(0).dims));
    return true;
  }
  unsigned first = node.getOp() == OpKind::Where ? 1 : 0;
  if (first == 1 && operandType(0).dtype != DType::Bool)
    return fail("operand #0 (the condition) has dtype " +
                dtypeName(operandType(0).dtype) + ", expected bool");
  if (!checkOperandDTypes(first, node.numOperands() - first))
    return false;
  Shape shape(operandType(0).dims.begin(), operandType(0).dims.end());
  for (unsigned i = 1; i < node.numOperands(); ++i) {
    auto merged = broadcastShapes(shape, operandType(i).dims);
    if (!merged)
      return fail("operand shapes " + str(shape) + " and " +
                  str(operandType(i).dims) + " do not broadcast");
    shape = *merged;
  }
  DType dtype = node.info().has(Compare) ? DType::Bool : operandType(first).dtype;
  out.push_back(TensorType(dtype, shape));
  return true;
}

/// A `constant`'s or `fill`'s numbers must be values of its dtype
/// (numberFits): an integer that does not fit (2^40 for i32) is refused,
/// never wrapped, and so is a real that would saturate.
bool TypeChecker::numbersFit(DType dtype, llvm::ArrayRef<Number> values) {
  for (size_t i = 0; i < values.size(); ++i) {
    Number n = values[i];
    if (numberFits(dtype, n))
      continue;
    std::string spelled =
        n.isInt() ? std::to_string(n.integer()) : formatDouble(n.real());
    std::string which =
        values.size() == 1 ? "" : " element " + std::to_string(i);
    return fail("attribute 'value'" + which + " (" + spelled +
                ") does not fit " + dtypeName(dtype).str() +
                (dtype == DType::Bool ? " (0 or 1)" : ""));
  }
  return true;
}

bool TypeChecker::source(Types &out) {
  DType dtype = std::get<DType>(*node.attr("dtype"));
  Shape shape;
  shapeAttr(shape);
  TensorType type(dtype, shape);
  switch (node.getOp()) {
  case OpKind::Constant: {
    if (!type.isStatic())
      return fail("a constant needs a static shape, got " + str(shape));
    const auto &values = std::get<std::vector<Number>>(*node.attr("value"));
    if (values.size() != 1 && int64_t(values.size()) != type.numElements())
      return fail("attribute 'value' has " + llvm::Twine(values.size()) +
                  " elements; shape " + str(shape) + " needs " +
                  llvm::Twine(type.numElements()) + " (or 1 to splat)");
    if (!numbersFit(dtype, values))
      return false;
    break;
  }
  case OpKind::Fill:
    if (!numbersFit(dtype, std::get<Number>(*node.attr("value"))))
      return false;
    break;
  case OpKind::Iota: {
    unsigned axis;
    if (!axisAttr("axis", 0, shape.size(), axis))
      return false;
    if (dtype == DType::Bool)
      return fail("iota cannot produce bool");
    break;
  }
#define CGC_SOURCE_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("not a source op");
  }
  out.push_back(type);
  return true;
}

llvm::SmallVector<unsigned, 4> cgc::reductionAxes(const Node &node,
                                                  unsigned rank) {
  llvm::SmallVector<unsigned, 4> axes;
  if (!node.attr("axes")) {
    for (unsigned i = 0; i < rank; ++i)
      axes.push_back(i);
    return axes;
  }
  for (int64_t raw : node.intsAttr("axes")) {
    auto axis = normalizeAxis(raw, rank);
    if (!axis)
      return {};
    axes.push_back(*axis);
  }
  llvm::sort(axes);
  return axes;
}

llvm::SmallVector<unsigned, 4> cgc::reducedAxes(const Node &node,
                                                unsigned rank) {
  switch (node.getOp()) {
  case OpKind::Sum: case OpKind::Mean: case OpKind::Max: case OpKind::Min:
  case OpKind::Prod:
    return reductionAxes(node, rank);
  case OpKind::ArgMax: {
    llvm::SmallVector<unsigned, 4> axes;
    if (auto axis = normalizeAxis(node.intAttr("axis", 0), rank))
      axes.push_back(*axis);
    return axes;
  }
#define CGC_REDUCTION_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not a reduction");
}

bool TypeChecker::reduction(Types &out) {
  const TensorType &in = operandType(0);
  if (!checkOperandDTypes(0, 1))
    return false;
  llvm::SmallVector<unsigned, 4> axes;
  bool scan = node.info().has(Scan);
  // argmax and cumsum take one `axis`, the others a list of `axes`;
  // argmax gives i64 indices.
  bool oneAxis = false;
  DType dtype = in.dtype;
  switch (node.getOp()) {
  case OpKind::ArgMax:
    oneAxis = true;
    dtype = DType::I64;
    break;
  case OpKind::CumSum:
    oneAxis = true;
    break;
  case OpKind::Sum: case OpKind::Mean: case OpKind::Max: case OpKind::Min:
  case OpKind::Prod:
    break;
#define CGC_REDUCTION_OP(...)
#define CGC_SCAN_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("not a reduction or scan");
  }
  if (oneAxis) {
    unsigned axis;
    if (!axisAttr("axis", 0, in.rank(), axis))
      return false;
    if (scan) {
      out.push_back(in);
      return true;
    }
    // argmax has no answer over no elements (a symbolic extent that turns
    // out 0 is a run-time error of the interpreter).
    if (in.dims[axis].isStatic() && in.dims[axis].extent() == 0)
      return fail("argmax over axis " + llvm::Twine(axis) +
                  " of extent 0 (operand " + str(in) + ")");
    axes.push_back(axis);
  } else {
    axes = reductionAxes(node, in.rank());
    size_t given = node.attr("axes") ? node.intsAttr("axes").size() : axes.size();
    if (axes.size() != given)
      return fail("attribute 'axes' has an axis out of range for rank " +
                  llvm::Twine(in.rank()));
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
      return fail("attribute 'axes' repeats an axis");
  }
  bool keep = node.boolAttr("keepdim", false);
  Shape shape;
  for (unsigned i = 0; i < in.rank(); ++i) {
    if (!llvm::is_contained(axes, i))
      shape.push_back(in.dims[i]);
    else if (keep)
      shape.push_back(Dim::fixed(1));
  }
  out.push_back(TensorType(dtype, shape));
  return true;
}

bool TypeChecker::matmul(Types &out) {
  const TensorType &a = operandType(0), &b = operandType(1);
  if (!checkOperandDTypes(0, 2))
    return false;
  if (a.rank() < 2 || b.rank() < 2)
    return fail("operands must have rank >= 2, got " + str(a) + " and " +
                str(b));
  bool ta = node.boolAttr("transpose_a", false);
  bool tb = node.boolAttr("transpose_b", false);
  Dim m = a.dims[a.rank() - (ta ? 1 : 2)], ka = a.dims[a.rank() - (ta ? 2 : 1)];
  Dim kb = b.dims[b.rank() - (tb ? 1 : 2)], n = b.dims[b.rank() - (tb ? 2 : 1)];
  if (ka != kb)
    return fail("contraction dims differ: " + str(a) + " and " + str(b) +
                " (transpose_a=" + (ta ? "true" : "false") +
                ", transpose_b=" + (tb ? "true" : "false") + ")");
  auto batch = broadcastShapes(llvm::makeArrayRef(a.dims).drop_back(2),
                               llvm::makeArrayRef(b.dims).drop_back(2));
  if (!batch)
    return fail("batch dims of " + str(a) + " and " + str(b) +
                " do not broadcast");
  Shape shape = *batch;
  shape.push_back(m);
  shape.push_back(n);
  out.push_back(TensorType(a.dtype, shape));
  return true;
}

bool TypeChecker::linear(Types &out) {
  const TensorType &x = operandType(0), &w = operandType(1);
  if (!checkOperandDTypes(0, node.numOperands()))
    return false;
  if (x.rank() < 1 || w.rank() != 2)
    return fail("expects x[..., K] and weight[N, K], got " + str(x) + " and " +
                str(w));
  if (x.dims.back() != w.dims[1])
    return fail("input features differ: x is " + str(x) + ", weight is " +
                str(w) + " (weight is [out_features, in_features])");
  if (node.numOperands() == 3) {
    const TensorType &b = operandType(2);
    if (b.rank() != 1 || b.dims[0] != w.dims[0])
      return fail("bias is " + str(b) + ", expected [" +
                  dimToString(w.dims[0], table) + "]");
  }
  Shape shape(x.dims.begin(), x.dims.end() - 1);
  shape.push_back(w.dims[0]);
  out.push_back(TensorType(x.dtype, shape));
  return true;
}

/// batch_norm: x [N, C, ...] of a float dtype, four [C] operands of its
/// dtype (weight, bias, running mean and variance), a positive eps.
bool TypeChecker::batchNorm(Types &out) {
  const TensorType &x = operandType(0);
  if (!isFloat(x.dtype))
    return fail("operand #0 must be a float tensor, got " + str(x));
  if (x.rank() < 2)
    return fail("operand #0 must be [N, C, ...], got " + str(x));
  if (!(node.floatAttr("eps", 1e-5) > 0))
    return fail("attribute 'eps' must be positive");
  static const char *const names[] = {"weight", "bias", "running_mean", "running_var"};
  for (unsigned i = 1; i < 5; ++i)
    if (operandType(i).rank() != 1 || operandType(i).dims[0] != x.dims[1])
      return fail(llvm::Twine(names[i - 1]) + " is " + str(operandType(i)) +
                  ", expected " +
                  str(llvm::makeArrayRef(x.dims).slice(1, 1)) + " (x's channels)");
  out.push_back(x);
  return true;
}

bool TypeChecker::normalization(Types &out) {
  const TensorType &x = operandType(0);
  if (!checkOperandDTypes(0, node.numOperands()))
    return false;
  if (node.getOp() == OpKind::BatchNorm)
    return batchNorm(out);
  if (x.rank() == 0)
    return fail("operand #0 must have rank >= 1");
  unsigned axis;
  if (!axisAttr("axis", -1, x.rank(), axis))
    return false;
  switch (node.getOp()) {
  case OpKind::Softmax: case OpKind::LogSoftmax: case OpKind::BatchNorm:
    break;
  case OpKind::LayerNorm: case OpKind::RmsNorm: {
    if (node.floatAttr("eps", 1e-5) <= 0)
      return fail("attribute 'eps' must be positive");
    llvm::ArrayRef<Dim> normalized = llvm::makeArrayRef(x.dims).drop_front(axis);
    for (unsigned i = 1; i < node.numOperands(); ++i)
      if (llvm::makeArrayRef(operandType(i).dims) != normalized)
        return fail(llvm::Twine(i == 1 ? "weight" : "bias") + " is " +
                    str(operandType(i)) + ", expected shape " +
                    str(normalized));
    break;
  }
#define CGC_NORMALIZATION_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("not a normalization");
  }
  out.push_back(x);
  return true;
}

bool TypeChecker::dropout(Types &out) {
  const TensorType &x = operandType(0);
  if (!isFloat(x.dtype))
    return fail("operand #0 has dtype " + dtypeName(x.dtype) +
                ", expected a float dtype");
  double p = node.floatAttr("p", 0);
  if (!(p >= 0 && p < 1))
    return fail("attribute 'p' = " + formatDouble(p) + " must be in [0, 1)");
  if (node.numOperands() == 2) {
    const TensorType &rng = operandType(1);
    if (rng != TensorType(DType::I64, {Dim::fixed(2)}))
      return fail("operand #1 (the RNG state) is " + str(rng) +
                  ", expected i64[2] holding seed and offset");
    if (node.attr("seed"))
      return fail("attribute 'seed' conflicts with the RNG state operand, "
                  "which holds the seed");
  }
  if (node.intAttr("offset", 0) < 0)
    return fail("attribute 'offset' = " + llvm::Twine(node.intAttr("offset", 0)) +
                " must not be negative");
  out.push_back(x);
  return true;
}

bool TypeChecker::loss(Types &out) {
  const TensorType &a = operandType(0), &b = operandType(1);
  std::string reduction = node.strAttr("reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return fail("attribute 'reduction' is '" + reduction +
                "', expected 'mean', 'sum' or 'none'");
  if (!isFloat(a.dtype))
    return fail("operand #0 has dtype " + dtypeName(a.dtype) +
                ", expected a float dtype");
  TensorType unreduced = a;
  switch (node.getOp()) {
  case OpKind::MseLoss:
    if (a != b)
      return fail("prediction is " + str(a) + " but target is " + str(b));
    break;
  case OpKind::CrossEntropy:
    if (a.rank() != 2)
      return fail("logits must be [N, C], got " + str(a));
    if (!isInteger(b.dtype) || b.rank() != 1 || b.dims[0] != a.dims[0])
      return fail("target is " + str(b) + ", expected i64[" +
                  dimToString(a.dims[0], table) + "] class indices");
    unreduced = TensorType(a.dtype, {a.dims[0]});
    break;
#define CGC_LOSS_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("not a loss");
  }
  out.push_back(reduction == "none" ? unreduced : TensorType::scalar(a.dtype));
  return true;
}

/// The families whose ops each have a rule of their own.
bool TypeChecker::opRule(Types &out) {
  switch (node.getOp()) {
  case OpKind::MatMul: return matmul(out);
  case OpKind::Linear: return linear(out);
  case OpKind::Attention: return attention(out);
  case OpKind::Conv: case OpKind::ConvTranspose: case OpKind::ConvWeightGrad:
  case OpKind::MaxPool: case OpKind::AvgPool:
    return convolution(out);
  case OpKind::Interpolate: return interpolate(out);
  case OpKind::Transpose: return transpose(out);
  case OpKind::Reshape: return reshape(out);
  case OpKind::BroadcastTo: return broadcastTo(out);
  case OpKind::Concat: return concat(out);
  case OpKind::Slice: return slice(out);
  case OpKind::Gather: case OpKind::Embedding: return gather(out);
  case OpKind::OneHot: return oneHot(out);
  case OpKind::IndexCopy: case OpKind::IndexAdd: return indexCopy(out);
  case OpKind::ArgTopK: return argTopK(out);
  case OpKind::PadPacked: case OpKind::PackPadded: return packing(out);
  case OpKind::If: return ifOp(out);
  case OpKind::While: return whileOp(out);
#define CGC_MATMUL_OP(...)
#define CGC_ATTENTION_OP(...)
#define CGC_CONVOLUTION_OP(...)
#define CGC_MOVEMENT_OP(...)
#define CGC_CONTROL_FLOW_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("run() types the other families");
}

bool TypeChecker::run(Types &out) {
  switch (node.info().family) {
  case Elementwise: return elementwise(out);
  case Source: return source(out);
  case Reduction: case Scan: return reduction(out);
  case Normalization: return normalization(out);
  case Loss: return loss(out);
  case Random: return dropout(out);
  case SyncPoint: return syncPoint(out);
  case Collective: return collective(out);
  case Fused: return fusion(out);
  case MatMul: case Attention: case Convolution: case Movement: case ControlFlow:
    return opRule(out);
  }
  llvm_unreachable("invalid OpFamily");
}

bool cgc::inferResultTypes(Node &node, llvm::SmallVectorImpl<TensorType> &out,
                           DiagnosticEngine &diag) {
  out.clear();
  if (!TypeChecker(node, diag).run(out))
    return false;
  // Operands hold at most 2^40 elements, but broadcasting, gather and
  // one_hot can multiply that; refuse before int64 counts overflow.
  const DimTable &table = node.getParent()->dims();
  for (unsigned r = 0; r < out.size(); ++r) {
    double elements = 1;
    for (Dim d : out[r].dims)
      elements *= double(table.upperBound(d));
    if (elements > double(int64_t(1) << 40)) {
      diag.nodeError(node, "result #" + llvm::Twine(r) + " " +
                               typeToString(out[r], table) +
                               " has more than 2^40 elements");
      return false;
    }
  }
  return true;
}
