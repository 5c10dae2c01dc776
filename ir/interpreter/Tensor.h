//===- Tensor.h - Values of the reference interpreter -----------*- C++ -*-===//
//
// A Tensor holds its elements (row-major) with a dtype and a concrete
// shape, each an Element (ir/Element.h): a double for float dtypes, an
// int64 for i32, i64 and bool. Every element is always a value of the
// dtype: float kernels compute in double and round through roundToDType;
// integer kernels compute in int64 and wrap to the dtype (wrapToDType),
// never through a double.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_INTERPRETER_TENSOR_H
#define CGC_IR_INTERPRETER_TENSOR_H

#include "ir/Initializers.h"
#include "ir/Types.h"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace cgc {
namespace interp {

using Shape = std::vector<int64_t>;

inline int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Row-major strides of \p shape.
inline Shape stridesOf(const Shape &shape) {
  Shape strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

std::string shapeString(const Shape &shape);

/// The bytes of tensor elements alive on this thread, held under a budget:
/// an allocation that would pass it throws EvalError instead of
/// allocating. The budget is unlimited until a BudgetScope sets one.
/// Whether this thread's interpreter keeps float values as doubles instead
/// of rounding them to f32/f16/bf16 (for gradient checks by finite
/// differences); integers always wrap to their dtype.
bool exactFloats();
/// \p v rounded to \p dtype, floats left alone in exact mode.
double roundValue(DType dtype, double v);
/// The element of \p dtype for the real value \p v: elementOf, floats left
/// alone in exact mode.
Element elementValue(DType dtype, double v);

/// Sets exact floats for this thread for its lifetime.
class ExactFloatsScope {
public:
  explicit ExactFloatsScope(bool exact);
  ~ExactFloatsScope();
  ExactFloatsScope(const ExactFloatsScope &) = delete;
  ExactFloatsScope &operator=(const ExactFloatsScope &) = delete;

private:
  bool saved;
};

class MemoryBudget {
public:
  static void charge(size_t bytes);
  static void release(size_t bytes);
  static uint64_t live();
};

/// Sets this thread's budget for its lifetime (runGraph, randomInputs).
class BudgetScope {
public:
  explicit BudgetScope(uint64_t bytes);
  ~BudgetScope();
  BudgetScope(const BudgetScope &) = delete;
  BudgetScope &operator=(const BudgetScope &) = delete;

private:
  uint64_t previous;
};

/// std::allocator that charges MemoryBudget.
template <class T> struct BudgetAllocator {
  using value_type = T;
  BudgetAllocator() = default;
  template <class U> BudgetAllocator(const BudgetAllocator<U> &) {}
  T *allocate(size_t n) {
    MemoryBudget::charge(n * sizeof(T));
    try {
      return std::allocator<T>().allocate(n);
    } catch (...) {
      MemoryBudget::release(n * sizeof(T));
      throw;
    }
  }
  void deallocate(T *p, size_t n) {
    std::allocator<T>().deallocate(p, n);
    MemoryBudget::release(n * sizeof(T));
  }
  template <class U> bool operator==(const BudgetAllocator<U> &) const {
    return true;
  }
  template <class U> bool operator!=(const BudgetAllocator<U> &) const {
    return false;
  }
};

using Elements = std::vector<Element, BudgetAllocator<Element>>;

struct Tensor {
  DType dtype = DType::F32;
  Shape shape;
  Elements data;

  Tensor() = default;
  Tensor(DType dtype, Shape shape)
      : dtype(dtype), shape(std::move(shape)),
        data(numElements(this->shape)) {}
  int64_t numel() const { return int64_t(data.size()); }
  unsigned rank() const { return unsigned(shape.size()); }
  /// Element \p i as a double (for float arithmetic and printing: an
  /// integer past 2^53 rounds).
  double real(int64_t i) const { return realOf(dtype, data[size_t(i)]); }
  /// Element \p i of an integer or bool tensor.
  int64_t integer(int64_t i) const { return data[size_t(i)].integer(); }
  /// Whether element \p i is nonzero (NaN is).
  bool nonzero(int64_t i) const {
    return isFloat(dtype) ? real(i) != 0 : integer(i) != 0;
  }
  /// Sets element \p i from a real value: elementValue.
  void setReal(int64_t i, double v) { data[size_t(i)] = elementValue(dtype, v); }
  /// Sets element \p i of an integer or bool tensor, wrapped to the dtype.
  void setInt(int64_t i, int64_t v) { data[size_t(i)] = wrapToDType(dtype, v); }
  /// Rounds every float element to the dtype (floats stay doubles in exact
  /// mode: ExactFloatsScope); integer elements are always exact.
  void round() {
    if (isFloat(dtype))
      for (Element &e : data)
        e = Element::ofReal(roundValue(dtype, e.real()));
  }
  /// "f32[2,3]".
  std::string typeString() const;
};

/// Thrown by kernels; the interpreter turns it into an error naming the node.
struct EvalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
[[noreturn]] inline void fail(const std::string &message) {
  throw EvalError(message);
}

/// Maps flat indices of a broadcast result back to one operand.
class BroadcastMap {
public:
  BroadcastMap(const Shape &operand, const Shape &result);
  int64_t operator()(int64_t flat) const;

private:
  Shape resultShape, strides; ///< Operand strides aligned right, 0 = broadcast.
};

/// NumPy broadcasting of two concrete shapes; fails on a mismatch.
Shape broadcastShape(const Shape &a, const Shape &b);

} // namespace interp
} // namespace cgc

#endif
