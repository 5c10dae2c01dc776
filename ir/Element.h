//===- Element.h - One tensor element of any dtype ----------------*- C++ -*-===//
//
// An Element is 8 bytes holding one tensor element exactly: a double for
// the float dtypes (f32, f16, bf16: every value of theirs is a double) and
// an int64 for the integer dtypes and bool (i32 sign-extended, bool 0 or
// 1). The tensor's dtype says which; integer elements never pass through a
// double, so an i64 past 2^53 stays exact. A zero Element is 0 and 0.0
// alike.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_ELEMENT_H
#define CGC_IR_ELEMENT_H

#include <cstdint>
#include <cstring>

namespace cgc {

class Element {
public:
  constexpr Element() = default;
  static Element ofReal(double v) {
    Element e;
    std::memcpy(&e.bits, &v, 8);
    return e;
  }
  static Element ofInt(int64_t v) {
    Element e;
    e.bits = uint64_t(v);
    return e;
  }
  /// The element of a float dtype.
  double real() const {
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
  /// The element of an integer dtype or bool.
  int64_t integer() const { return int64_t(bits); }

private:
  uint64_t bits = 0;
};

} // namespace cgc

#endif
