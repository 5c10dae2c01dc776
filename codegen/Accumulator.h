//===- Accumulator.h - The accumulator of a reduction -------------*- C++ -*-===//
//
// Shared by the reduction emitters: the C type a reduction accumulates in
// (float for every float dtype), its start value, how two combine and
// whether the result divides the total by the count.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_CODEGEN_ACCUMULATOR_H
#define CGC_CODEGEN_ACCUMULATOR_H

#include "ir/Graph.h"

#include "llvm/Support/ErrorHandling.h"

#include <string>

namespace cgc {

/// How two accumulated values combine is `combine`, in terms of a and b.
struct Accumulator {
  std::string type, init, combine;
  bool mean = false; ///< The result is the accumulated value over the count.
};

/// The accumulator of a sum, mean, prod, max or min over \p in elements
/// (argmax has its own kernel).
inline Accumulator accumulatorOf(const Node &node, DType in) {
  bool wide = in == DType::I64;
  std::string type = isFloat(in) ? "float" : wide ? "long long" : "int";
  std::string lowest = isFloat(in) ? "-CGC_INF"
                       : wide      ? "(-0x7fffffffffffffffLL - 1)"
                                   : "(-0x7fffffff - 1)";
  std::string highest = isFloat(in) ? "CGC_INF"
                        : wide      ? "0x7fffffffffffffffLL"
                                    : "0x7fffffff";
  switch (node.getOp()) {
  case OpKind::Sum: return {type, "0", "a + b", false};
  case OpKind::Mean: return {type, "0", "a + b", true};
  case OpKind::Prod: return {type, "1", "a * b", false};
  case OpKind::Max: return {type, lowest, "cgc_max(a, b)", false};
  case OpKind::Min: return {type, highest, "cgc_min(a, b)", false};
  case OpKind::ArgMax:
    break;
#define CGC_REDUCTION_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not a sum, mean, prod, max or min");
}

/// `acc = combine(acc, VALUE);` as a statement.
inline std::string fold(const Accumulator &a, const std::string &value,
                        const std::string &acc = "acc") {
  return "{ " + a.type + " a = " + acc + ", b = " + value + "; " + acc +
         " = " + a.combine + "; }";
}

/// The combining function as a lambda.
inline std::string combiner(const Accumulator &a) {
  return "[](" + a.type + " a, " + a.type + " b) { return " + a.combine + "; }";
}

} // namespace cgc

#endif
