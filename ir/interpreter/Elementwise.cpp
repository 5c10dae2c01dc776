//===- Elementwise.cpp - Unary, binary, where, cast and source ops -----------===//
//
// Floats compute in double and round once. Integer add/sub/mul/neg/abs wrap
// in 64 bits; integer div truncates toward zero and gives 0 for a zero
// divisor. maximum/minimum propagate NaN.
//
//===----------------------------------------------------------------------===//
#include "ir/interpreter/Kernels.h"

#include "ir/Initializers.h"

#include "llvm/Support/ErrorHandling.h"
#include <cmath>

using namespace cgc;
using namespace cgc::interp;

/// The wrapped 64-bit result, narrowed to i32 before it becomes a double
/// (an int64 product may not be exact in double; its low bits are).
static double wrapped(uint64_t v, DType dtype) {
  return dtype == DType::I32 ? double(int32_t(uint32_t(v))) : double(int64_t(v));
}

static uint64_t bits(double v) { return uint64_t(toInt64(v)); }

static double intDiv(double a, double b, DType dtype) {
  int64_t p = toInt64(a), q = toInt64(b);
  if (q == 0)
    return 0;
  if (q == -1)
    return wrapped(0 - uint64_t(p), dtype);
  return double(p / q);
}

/// Unary and binary elementwise ops on one element (\p b is unused by unary
/// ops); \p dtype is the operands' dtype.
static double scalarOp(OpKind op, double a, double b, DType dtype) {
  bool integer = isInteger(dtype);
  switch (op) {
  case OpKind::Neg: return integer ? wrapped(0 - bits(a), dtype) : -a;
  case OpKind::Abs:
    if (!integer)
      return std::fabs(a);
    return wrapped(a < 0 ? 0 - bits(a) : bits(a), dtype);
  case OpKind::Exp: return std::exp(a);
  case OpKind::Log: return std::log(a);
  case OpKind::Sqrt: return std::sqrt(a);
  case OpKind::Rsqrt: return 1.0 / std::sqrt(a);
  case OpKind::Tanh: return std::tanh(a);
  case OpKind::Sigmoid: return 1.0 / (1.0 + std::exp(-a));
  case OpKind::Relu: return std::isnan(a) ? a : (a > 0 ? a : 0.0);
  case OpKind::Gelu: return a * 0.5 * (1.0 + std::erf(a / std::sqrt(2.0)));
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
  case OpKind::Add: return integer ? wrapped(bits(a) + bits(b), dtype) : a + b;
  case OpKind::Sub: return integer ? wrapped(bits(a) - bits(b), dtype) : a - b;
  case OpKind::Mul: return integer ? wrapped(bits(a) * bits(b), dtype) : a * b;
  case OpKind::Div: return integer ? intDiv(a, b, dtype) : a / b;
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
    for (int64_t i = 0; i < out.numel(); ++i) {
      double v = in[0]->data[i];
      out.data[i] = isInteger(resultType) ? saturateToInt(resultType, v)
                                          : roundValue(resultType, v);
    }
    return out;
  }
  Shape shape = in[0]->shape;
  for (size_t i = 1; i < in.size(); ++i)
    shape = broadcastShape(shape, in[i]->shape);
  Tensor out(resultType, shape);
  std::vector<BroadcastMap> maps;
  for (const Tensor *t : in)
    maps.emplace_back(t->shape, shape);
  DType operandType = in.back()->dtype;
  for (int64_t i = 0; i < out.numel(); ++i) {
    double a = in[0]->data[maps[0](i)];
    double b = in.size() > 1 ? in[1]->data[maps[1](i)] : 0.0;
    if (op == OpKind::Where)
      out.data[i] = a != 0 ? b : in[2]->data[maps[2](i)];
    else
      out.data[i] = scalarOp(op, a, b, operandType);
  }
  out.round();
  return out;
}

Tensor interp::evalSource(const Node &node, const DimEnv &env) {
  DType dtype = std::get<DType>(*node.attr("dtype"));
  const auto &dims = std::get<std::vector<Dim>>(*node.attr("shape"));
  Tensor out(dtype, env.resolve(dims));
  switch (node.getOp()) {
  case OpKind::Constant: {
    const auto &values = std::get<std::vector<double>>(*node.attr("value"));
    for (int64_t i = 0; i < out.numel(); ++i)
      out.data[i] = values.size() == 1 ? values[0] : values[i];
    break;
  }
  case OpKind::Fill:
    for (double &v : out.data)
      v = node.floatAttr("value", 0);
    break;
  case OpKind::Iota: {
    unsigned axis = *normalizeAxis(node.intAttr("axis", 0), out.rank());
    Shape strides = stridesOf(out.shape);
    for (int64_t i = 0; i < out.numel(); ++i)
      out.data[i] = double((i / strides[axis]) % out.shape[axis]);
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
