//===- Number.h - A number as the IR's text spells it ------------*- C++ -*-===//
//
// A Number is a `constant`'s value or a `fill`'s value as written: an
// integer literal that fits int64 is kept exactly (so an i64 constant of
// 2^60+1 never passes through a double), anything else is a double (also
// inf, -inf and nan, which JSON spells as strings). What it means for a
// dtype is decided in one place, elementOf(DType, Number) in
// ir/Initializers.h, after the type rules have checked that it fits.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_NUMBER_H
#define CGC_IR_NUMBER_H

#include "ir/Element.h"

#include <cstdint>

namespace cgc {

class Number {
public:
  constexpr Number() = default;
  static Number ofInt(int64_t v) { return Number(Element::ofInt(v), true); }
  static Number ofReal(double v) { return Number(Element::ofReal(v), false); }

  /// True for an integer literal (exact), false for a real.
  bool isInt() const { return integral; }
  /// The integer; requires isInt().
  int64_t integer() const { return value.integer(); }
  /// The value as a double (an integer past 2^53 rounds: for float use
  /// and messages only).
  double real() const {
    return integral ? double(value.integer()) : value.real();
  }

  /// Same kind and same value (a NaN equals nothing, as a double).
  bool operator==(const Number &other) const {
    if (integral != other.integral)
      return false;
    return integral ? integer() == other.integer()
                    : value.real() == other.value.real();
  }
  bool operator!=(const Number &other) const { return !(*this == other); }

private:
  Number(Element value, bool integral) : value(value), integral(integral) {}
  Element value;
  bool integral = true;
};

} // namespace cgc

#endif
