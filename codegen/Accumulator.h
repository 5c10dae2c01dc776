//===- Accumulator.h - The accumulator of a reduction -------------*- C++ -*-===//
//
// Shared by the reduction emitters: the C type a reduction accumulates in
// (float for every float dtype), its start value and how two combine.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_CODEGEN_ACCUMULATOR_H
#define CGC_CODEGEN_ACCUMULATOR_H

#include "ir/Graph.h"

#include <string>

namespace cgc {

/// How two accumulated values combine is `combine`, in terms of a and b.
struct Accumulator {
  std::string type, init, combine;
};

inline Accumulator accumulatorOf(const Node &node, DType in) {
  Accumulator a{isFloat(in) ? "float" : in == DType::I64 ? "long long" : "int",
                "0", "a + b"};
  if (node.getOp() == OpKind::Prod)
    return {a.type, "1", "a * b"};
  bool isMax = node.getOp() == OpKind::Max, isMin = node.getOp() == OpKind::Min;
  if (!isMax && !isMin)
    return a;
  a.combine = isMax ? "cgc_max(a, b)" : "cgc_min(a, b)";
  if (isFloat(in))
    a.init = isMax ? "-CGC_INF" : "CGC_INF";
  else if (in == DType::I64)
    a.init = isMax ? "(-0x7fffffffffffffffLL - 1)" : "0x7fffffffffffffffLL";
  else
    a.init = isMax ? "(-0x7fffffff - 1)" : "0x7fffffff";
  return a;
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
