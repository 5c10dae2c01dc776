//===- Elementwise.cpp - Unary, binary, where, cast and source ops -----------===//
//
// Floats compute in double and round once. Integers and bools compute
// exactly in int64: add/sub/mul/neg/abs wrap in 64 bits and then to the
// dtype; integer div truncates toward zero and gives 0 for a zero divisor.
// maximum/minimum propagate NaN. sigmoid and gelu use forms that neither
// overflow nor cancel at large |x|.
//
//===----------------------------------------------------------------------===//
#include "ir/interpreter/Kernels.h"

#include "ir/Initializers.h"

#include "llvm/Support/ErrorHandling.h"
#include <cmath>

using namespace cgc;
using namespace cgc::interp;

/// Integer division: truncates toward zero, 0 for a zero divisor, and
/// INT64_MIN / -1 wraps (to INT64_MIN).
static int64_t intDiv(int64_t p, int64_t q) {
  if (q == 0)
    return 0;
  if (q == -1)
    return int64_t(0 - uint64_t(p));
  return p / q;
}

/// Unary and binary elementwise ops on one integer or bool element (\p b
/// is unused by unary ops), exactly in 64 bits: add/sub/mul/neg/abs wrap
/// modulo 2^64 and the caller wraps the result to the dtype; comparisons
/// give 0 or 1.
static int64_t integerOp(OpKind op, int64_t a, int64_t b) {
  uint64_t x = uint64_t(a), y = uint64_t(b);
  switch (op) {
  case OpKind::Neg: return int64_t(0 - x);
  case OpKind::Abs: return a < 0 ? int64_t(0 - x) : a;
  case OpKind::Relu: return a > 0 ? a : 0;
  case OpKind::LogicalNot: return a == 0;
  case OpKind::Add: return int64_t(x + y);
  case OpKind::Sub: return int64_t(x - y);
  case OpKind::Mul: return int64_t(x * y);
  case OpKind::Div: return intDiv(a, b);
  case OpKind::Maximum: return std::max(a, b);
  case OpKind::Minimum: return std::min(a, b);
  case OpKind::Eq: return a == b;
  case OpKind::Ne: return a != b;
  case OpKind::Lt: return a < b;
  case OpKind::Le: return a <= b;
  case OpKind::Gt: return a > b;
  case OpKind::Ge: return a >= b;
  case OpKind::LogicalAnd: return a != 0 && b != 0;
  case OpKind::LogicalOr: return a != 0 || b != 0;
  case OpKind::BitwiseNot: return ~a;
  case OpKind::BitwiseAnd: return a & b;
  case OpKind::BitwiseOr: return a | b;
  case OpKind::BitwiseXor: return a ^ b;
  case OpKind::Exp: case OpKind::Log: case OpKind::Sqrt: case OpKind::Rsqrt:
  case OpKind::Tanh: case OpKind::Sigmoid: case OpKind::Gelu:
  case OpKind::GeluTanh: case OpKind::Erf: case OpKind::Sin: case OpKind::Cos:
  case OpKind::Floor: case OpKind::Ceil: case OpKind::Round: case OpKind::Pow:
  case OpKind::Fmod:
    break; // Float only (Ops.def): the type rules refuse integers.
  case OpKind::Where: case OpKind::Cast:
    break; // evalElementwise computes them.
#define CGC_ELEMENTWISE_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not an integer elementwise op");
}

static double sigmoid(double a) {
  // exp of a negative argument only: 1 / (1 + e^-a) for a >= 0, and
  // e^a / (1 + e^a) below, which neither overflows nor loses a tiny result.
  if (a >= 0)
    return 1.0 / (1.0 + std::exp(-a));
  double e = std::exp(a);
  return e / (1.0 + e);
}

/// Unary and binary elementwise ops on one float element (\p b is unused
/// by unary ops); comparisons give 0 or 1.
static double realOp(OpKind op, double a, double b) {
  switch (op) {
  case OpKind::Neg: return -a;
  case OpKind::Abs: return std::fabs(a);
  case OpKind::Exp: return std::exp(a);
  case OpKind::Log: return std::log(a);
  case OpKind::Sqrt: return std::sqrt(a);
  case OpKind::Rsqrt: return 1.0 / std::sqrt(a);
  case OpKind::Tanh: return std::tanh(a);
  case OpKind::Sigmoid: return sigmoid(a);
  case OpKind::Relu: return std::isnan(a) ? a : (a > 0 ? a : 0.0);
  case OpKind::Gelu: return a * 0.5 * std::erfc(-a / std::sqrt(2.0));
  case OpKind::GeluTanh:
    return 0.5 * a *
           (1.0 + std::tanh(std::sqrt(2.0 / M_PI) *
                            (a + 0.044715 * a * a * a)));
  case OpKind::Erf: return std::erf(a);
  case OpKind::Sin: return std::sin(a);
  case OpKind::Cos: return std::cos(a);
  case OpKind::Floor: return std::floor(a);
  case OpKind::Ceil: return std::ceil(a);
  case OpKind::Round: return std::nearbyint(a); // Ties to even.
  case OpKind::LogicalNot: return a == 0 ? 1 : 0;
  case OpKind::Add: return a + b;
  case OpKind::Sub: return a - b;
  case OpKind::Mul: return a * b;
  case OpKind::Div: return a / b;
  case OpKind::Pow: return std::pow(a, b);
  case OpKind::Fmod: return std::fmod(a, b); // Exact.
  case OpKind::Maximum:
    return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
  case OpKind::Minimum:
    return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
  case OpKind::Eq: return a == b;
  case OpKind::Ne: return a != b;
  case OpKind::Lt: return a < b;
  case OpKind::Le: return a <= b;
  case OpKind::Gt: return a > b;
  case OpKind::Ge: return a >= b;
  case OpKind::LogicalAnd: return a != 0 && b != 0;
  case OpKind::LogicalOr: return a != 0 || b != 0;
  case OpKind::BitwiseNot: case OpKind::BitwiseAnd: case OpKind::BitwiseOr:
  case OpKind::BitwiseXor:
    break; // Integers only (Ops.def): the type rules refuse floats.
  case OpKind::Where: case OpKind::Cast:
    break; // evalElementwise computes them.
#define CGC_ELEMENTWISE_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not a unary or binary elementwise op");
}

Tensor interp::evalElementwise(const Node &node, const Operands &in) {
  OpKind op = node.getOp();
  DType resultType = node.result()->getType().dtype;
  if (op == OpKind::Cast) {
    Tensor out(resultType, in[0]->shape);
    DType from = in[0]->dtype;
    for (int64_t i = 0; i < out.numel(); ++i)
      out.data[i] = isFloat(from) ? elementValue(resultType, in[0]->real(i))
                                  : castElement(from, resultType, in[0]->data[i]);
    return out;
  }
  Shape shape = in[0]->shape;
  for (size_t i = 1; i < in.size(); ++i)
    shape = broadcastShape(shape, in[i]->shape);
  Tensor out(resultType, shape);
  std::vector<BroadcastMap> maps;
  for (const Tensor *t : in)
    maps.emplace_back(t->shape, shape);
  if (op == OpKind::Where) {
    // Copies the chosen element untouched.
    for (int64_t i = 0; i < out.numel(); ++i)
      out.data[i] = in[0]->integer(maps[0](i)) != 0 ? in[1]->data[maps[1](i)]
                                                   : in[2]->data[maps[2](i)];
    return out;
  }
  bool integer = !isFloat(in[0]->dtype);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t ia = maps[0](i), ib = in.size() > 1 ? maps[1](i) : 0;
    if (integer)
      out.setInt(i, integerOp(op, in[0]->integer(ia),
                              in.size() > 1 ? in[1]->integer(ib) : 0));
    else
      out.setReal(i, realOp(op, in[0]->real(ia),
                            in.size() > 1 ? in[1]->real(ib) : 0.0));
  }
  return out;
}

Tensor interp::evalSource(const Node &node, const DimEnv &env) {
  DType dtype = std::get<DType>(*node.attr("dtype"));
  const auto &dims = std::get<std::vector<Dim>>(*node.attr("shape"));
  Tensor out(dtype, env.resolve(dims));
  switch (node.getOp()) {
  case OpKind::Constant: {
    std::vector<Element> values = constantElements(node);
    out.data.assign(values.begin(), values.end());
    break;
  }
  case OpKind::Fill: {
    // Integers exactly; floats as any real value (left alone in exact mode).
    Number n = std::get<Number>(*node.attr("value"));
    Element value = isFloat(dtype) ? elementValue(dtype, n.real())
                                   : elementOf(dtype, n);
    for (Element &e : out.data)
      e = value;
    break;
  }
  case OpKind::Iota: {
    unsigned axis = *normalizeAxis(node.intAttr("axis", 0), out.rank());
    Shape strides = stridesOf(out.shape);
    for (int64_t i = 0; i < out.numel(); ++i) {
      int64_t k = (i / strides[axis]) % out.shape[axis];
      if (isFloat(dtype))
        out.setReal(i, double(k));
      else
        out.setInt(i, k);
    }
    break;
  }
#define CGC_SOURCE_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("not a source op");
  }
  out.round();
  return out;
}
