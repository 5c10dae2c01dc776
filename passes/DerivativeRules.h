//===- DerivativeRules.h - Vector-Jacobian products of IR ops --*- C++ -*-===//
//
// Part of the autodiff pass (Autodiff.cpp): for one node and the adjoint of
// its result, the adjoints of its operands, built as ordinary IR ops.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_PASSES_DERIVATIVERULES_H
#define CGC_PASSES_DERIVATIVERULES_H

#include "ir/Builder.h"

#include <string>
#include <vector>

namespace cgc {

/// Builds IR ops for derivative rules; every helper returns null once
/// anything failed (the builder reported it), so a rule checks once.
class GradBuilder {
public:
  explicit GradBuilder(GraphBuilder &builder) : b(builder) {}

  Value *op(OpKind kind, std::vector<Value *> operands, const AttrMap &attrs = {});
  Value *fill(double value, DType dtype);
  Value *add(Value *x, Value *y) { return op(OpKind::Add, {x, y}); }
  Value *sub(Value *x, Value *y) { return op(OpKind::Sub, {x, y}); }
  Value *mul(Value *x, Value *y) { return op(OpKind::Mul, {x, y}); }
  Value *div(Value *x, Value *y) { return op(OpKind::Div, {x, y}); }
  Value *neg(Value *x) { return op(OpKind::Neg, {x}); }
  Value *scale(Value *x, double k);
  Value *where(Value *c, Value *x, Value *y) { return op(OpKind::Where, {c, x, y}); }
  Value *reshape(Value *x, llvm::ArrayRef<Dim> dims);
  Value *sum(Value *x, std::vector<int64_t> axes, bool keepdim);
  Value *matmul(Value *x, Value *y, bool transposeA, bool transposeB);
  /// \p g (of a broadcast result) summed back to \p to's shape.
  Value *reduceTo(Value *g, const TensorType &to);
  /// \p g (the adjoint of a reduction over \p axes of \p in, with
  /// \p keepdim) broadcast back to \p in's shape.
  Value *expandFrom(Value *g, const TensorType &in,
                    llvm::ArrayRef<unsigned> axes, bool keepdim);

  void setBase(std::string name) { base = std::move(name); }
  void setOrigin(const Node &n) { b.setOrigin(n); }
  bool hasFailed() const { return failed; }

private:
  GraphBuilder &b;
  std::string base;
  bool failed = false;
};

/// The adjoints of \p n's operands given \p g, the adjoint of its result
/// (null where an operand gets none: integers, bools, RNG state). False
/// with \p why set when \p n has no rule.
bool operandAdjoints(const Node &n, Value *g, GradBuilder &gb,
                     std::vector<Value *> &adjoints, std::string &why);

} // namespace cgc

#endif
