//===- Elementwise.cpp - Unary, binary, where, cast and source ops -----------===//
//
// Floats compute in double and round once. Integer add/sub/mul/neg/abs wrap
// in 64 bits; integer div truncates toward zero and gives 0 for a zero
// divisor. maximum/minimum propagate NaN.
//
//===----------------------------------------------------------------------===//
#include "ir/interpreter/Kernels.h"

#include <cmath>

using namespace cgc;
using namespace cgc::interp;

static int64_t asInt(double v) {
  if (v >= 9223372036854775808.0)
    return INT64_MAX;
  if (v <= -9223372036854775808.0 || std::isnan(v))
    return v != v ? 0 : INT64_MIN;
  return int64_t(v);
}
/// The wrapped 64-bit result, narrowed to i32 before it becomes a double
/// (an int64 product may not be exact in double; its low bits are).
static double wrapped(uint64_t v, DType dtype) {
  return dtype == DType::I32 ? double(int32_t(uint32_t(v))) : double(int64_t(v));
}

static double unary(OpKind op, double x, DType dtype) {
  bool integer = isInteger(dtype);
  switch (op) {
  case OpKind::Neg:
    return integer ? wrapped(0 - uint64_t(asInt(x)), dtype) : -x;
  case OpKind::Abs:
    return integer ? wrapped(x < 0 ? 0 - uint64_t(asInt(x)) : uint64_t(asInt(x)), dtype)
                   : std::fabs(x);
  case OpKind::Exp: return std::exp(x);
  case OpKind::Log: return std::log(x);
  case OpKind::Sqrt: return std::sqrt(x);
  case OpKind::Rsqrt: return 1.0 / std::sqrt(x);
  case OpKind::Tanh: return std::tanh(x);
  case OpKind::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
  case OpKind::Relu: return std::isnan(x) ? x : (x > 0 ? x : 0.0);
  case OpKind::Gelu: return x * 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
  case OpKind::GeluTanh:
    return 0.5 * x *
           (1.0 + std::tanh(std::sqrt(2.0 / M_PI) *
                            (x + 0.044715 * x * x * x)));
  case OpKind::Erf: return std::erf(x);
  case OpKind::Sin: return std::sin(x);
  case OpKind::Cos: return std::cos(x);
  case OpKind::LogicalNot: return x == 0 ? 1 : 0;
  default:
    fail("not a unary op");
  }
}

static double binary(OpKind op, double a, double b, DType dtype) {
  bool integer = isInteger(dtype);
  if (integer) {
    uint64_t x = uint64_t(asInt(a)), y = uint64_t(asInt(b));
    switch (op) {
    case OpKind::Add: return wrapped(x + y, dtype);
    case OpKind::Sub: return wrapped(x - y, dtype);
    case OpKind::Mul: return wrapped(x * y, dtype);
    case OpKind::Div: {
      int64_t p = asInt(a), q = asInt(b);
      if (q == 0)
        return 0;
      if (q == -1)
        return wrapped(0 - uint64_t(p), dtype);
      return double(p / q);
    }
    default:
      break;
    }
  }
  switch (op) {
  case OpKind::Add: return a + b;
  case OpKind::Sub: return a - b;
  case OpKind::Mul: return a * b;
  case OpKind::Div: return a / b;
  case OpKind::Pow: return std::pow(a, b);
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
  default:
    fail("not a binary op");
  }
}

Tensor interp::evalElementwise(const Node &node, const Operands &in) {
  OpKind op = node.getOp();
  DType resultType = node.result()->getType().dtype;
  if (op == OpKind::Cast) {
    Tensor out(resultType, in[0]->shape);
    for (int64_t i = 0; i < out.numel(); ++i) {
      double v = in[0]->data[i];
      out.data[i] = isInteger(resultType) ? saturateToInt(resultType, v)
                                          : roundToDType(resultType, v);
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
    if (op == OpKind::Where)
      out.data[i] = a != 0 ? in[1]->data[maps[1](i)] : in[2]->data[maps[2](i)];
    else if (in.size() == 1)
      out.data[i] = unary(op, a, operandType);
    else
      out.data[i] = binary(op, a, in[1]->data[maps[1](i)], operandType);
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
  default:
    fail("not a source op");
  }
  out.round();
  return out;
}
