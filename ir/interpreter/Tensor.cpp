//===- Tensor.cpp - Tensor helpers, broadcasting and safetensors I/O ---------===//
#include "ir/interpreter/Interpreter.h"

#include <cmath>
#include <sstream>

using namespace cgc;
using namespace cgc::interp;

std::string interp::shapeString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {
thread_local uint64_t liveBytes = 0;
thread_local uint64_t budgetBytes = UINT64_MAX;
thread_local bool exactFloatValues = false;

std::string gib(uint64_t bytes) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.3g GiB", double(bytes) / double(1ull << 30));
  return buf;
}
} // namespace

bool interp::exactFloats() { return exactFloatValues; }

double interp::roundValue(DType dtype, double v) {
  return exactFloatValues && isFloat(dtype) ? v : roundToDType(dtype, v);
}

Element interp::elementValue(DType dtype, double v) {
  return exactFloatValues && isFloat(dtype) ? Element::ofReal(v)
                                            : elementOf(dtype, v);
}

ExactFloatsScope::ExactFloatsScope(bool exact) : saved(exactFloatValues) {
  exactFloatValues = exact;
}

ExactFloatsScope::~ExactFloatsScope() { exactFloatValues = saved; }

void MemoryBudget::charge(size_t bytes) {
  if (bytes > budgetBytes || liveBytes > budgetBytes - bytes)
    fail("needs " + gib(bytes) + " for a tensor with " + gib(liveBytes) +
         " in use, past the interpreter's memory budget of " +
         gib(budgetBytes) + " (8 bytes per element; cgc-opt --interpreter-memory)");
  liveBytes += bytes;
}

void MemoryBudget::release(size_t bytes) {
  liveBytes = bytes > liveBytes ? 0 : liveBytes - bytes;
}

uint64_t MemoryBudget::live() { return liveBytes; }

BudgetScope::BudgetScope(uint64_t bytes) : previous(budgetBytes) {
  budgetBytes = bytes;
}

BudgetScope::~BudgetScope() { budgetBytes = previous; }

std::string Tensor::typeString() const {
  return dtypeName(dtype).str() + shapeString(shape);
}

BroadcastMap::BroadcastMap(const Shape &operand, const Shape &result)
    : resultShape(result), strides(result.size(), 0) {
  Shape own = stridesOf(operand);
  size_t offset = result.size() - operand.size();
  for (size_t i = 0; i < operand.size(); ++i)
    strides[offset + i] = operand[i] == 1 ? 0 : own[i];
}

int64_t BroadcastMap::operator()(int64_t flat) const {
  int64_t index = 0;
  for (size_t i = resultShape.size(); i-- > 0;) {
    int64_t extent = resultShape[i];
    index += (flat % extent) * strides[i];
    flat /= extent;
  }
  return index;
}

Shape interp::broadcastShape(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1)
      fail("shapes " + shapeString(a) + " and " + shapeString(b) +
           " do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

bool interp::tensorFromData(const format::TensorData &data, Tensor &out,
                            std::string &error) {
  std::string name = format::fromSafetensorsDtype(data.dtype);
  auto dtype = parseDType(name);
  if (!dtype) {
    error = "unsupported dtype '" + data.dtype + "'";
    return false;
  }
  out.dtype = *dtype;
  out.shape = data.shape;
  // Charge the budget before decoding into doubles (8 bytes per element).
  size_t elementSize = format::safetensorsDtypeSize(data.dtype);
  try {
    out.data.reserve(elementSize ? data.bytes.size() / elementSize : 0);
  } catch (const EvalError &e) {
    error = e.what();
    return false;
  }
  std::vector<Element> values;
  if (!decodeTensorData(data, values, error))
    return false;
  out.data.assign(values.begin(), values.end());
  if (out.numel() != numElements(out.shape)) {
    error = "byte size does not match shape " + shapeString(out.shape);
    return false;
  }
  return true;
}

format::TensorData interp::tensorToData(const Tensor &tensor) {
  return encodeTensorData(tensor.dtype, tensor.shape,
                          std::vector<Element>(tensor.data.begin(),
                                               tensor.data.end()));
}

std::string interp::formatTensor(const Tensor &tensor, size_t limit) {
  std::ostringstream os;
  os.precision(9);
  os << tensor.typeString() << " [";
  for (size_t i = 0; i < tensor.data.size(); ++i) {
    if (i == limit) {
      os << ", ...";
      break;
    }
    os << (i ? ", " : "");
    if (tensor.dtype == DType::Bool) {
      os << (tensor.integer(i) != 0 ? "true" : "false");
      continue;
    }
    if (!isFloat(tensor.dtype)) { // Every digit of an integer.
      os << tensor.integer(i);
      continue;
    }
    double v = tensor.real(i);
    if (std::isnan(v))
      os << "nan";
    else if (std::isinf(v))
      os << (v > 0 ? "inf" : "-inf");
    else
      os << v;
  }
  os << "]";
  return os.str();
}
