//===- ValueBuilder.h - IR ops one value at a time -------------*- C++ -*-===//
//
// Used by the passes that build chains of ops (autodiff's rules,
// apply-optimizer, remove-sync-points' selections, the expand passes): a
// failed type rule turns every later value into null instead of a check
// per op.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_PASSES_VALUEBUILDER_H
#define CGC_PASSES_VALUEBUILDER_H

#include "ir/Builder.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include <string>
#include <vector>

namespace cgc {

/// Builds IR ops at a GraphBuilder's insertion point, one value at a time,
/// each named `<base>` or `<base>.<suffix>` (made unique). Every helper
/// returns null once anything failed (the builder reported it), and takes
/// null operands, so a chain of ops checks once at its end.
class ValueBuilder {
public:
  explicit ValueBuilder(GraphBuilder &builder) : b(builder) {}

  Value *op(OpKind kind, std::vector<Value *> operands,
            const AttrMap &attrs = {}, llvm::StringRef suffix = "");
  Value *clone(const Node &node, llvm::ArrayRef<Value *> operands);
  /// A scalar `fill` of \p value: a real for float dtypes, converted as
  /// elementOf (truncated, saturated) to an exact integer for the others.
  Value *fill(double value, DType dtype, llvm::StringRef suffix = "");
  /// Zeros of \p type (static or symbolic dims).
  Value *zeros(const TensorType &type);
  Value *add(Value *x, Value *y) { return op(OpKind::Add, {x, y}); }
  Value *sub(Value *x, Value *y) { return op(OpKind::Sub, {x, y}); }
  Value *mul(Value *x, Value *y) { return op(OpKind::Mul, {x, y}); }
  Value *div(Value *x, Value *y) { return op(OpKind::Div, {x, y}); }
  Value *neg(Value *x) { return op(OpKind::Neg, {x}); }
  Value *scale(Value *x, double k);
  Value *where(Value *c, Value *x, Value *y) { return op(OpKind::Where, {c, x, y}); }
  Value *reshape(Value *x, llvm::ArrayRef<Dim> dims, llvm::StringRef suffix = "");
  /// \p x gathered along \p axis at the i64 constant \p at of \p shape
  /// (named `<base>.<indexName>` and `<base>.<resultName>`).
  Value *gatherAt(Value *x, unsigned axis, const std::vector<int64_t> &at,
                  llvm::ArrayRef<Dim> shape, llvm::StringRef indexName,
                  llvm::StringRef resultName);
  /// \p x reshaped with a unit dim after \p axis ([.., S, 1, ..]).
  Value *unitAfter(Value *x, unsigned axis, llvm::StringRef suffix = "");
  /// \p x in \p dtype: x itself when it has it, else a `cast`.
  Value *cast(Value *x, DType dtype, llvm::StringRef suffix = "cast");
  /// Elements [start, end) of \p axis of \p x (step 1).
  Value *slice(Value *x, unsigned axis, int64_t start, int64_t end,
               llvm::StringRef suffix = "");
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
  void setInsertionPoint(Node &n) { b.setInsertionPoint(n); }
  bool hasFailed() const { return failed; }
  /// Marks the chain failed (after the builder reported why).
  void fail() { failed = true; }
  GraphBuilder &builder() { return b; }

private:
  GraphBuilder &b;
  std::string base;
  bool failed = false;
};

/// A new `optimizer_state` input of \p graph named \p name, filled with
/// \p init (zeros or a constant) when training starts.
Value *addOptimizerState(Graph &graph, const std::string &name, const TensorType &type,
                         double init, const Location &loc);

/// Replaces every node of \p graph (regions too, innermost first) that
/// \p selected picks by the value \p rewrite builds in its place (at the
/// node, named after it, with its origin), then erases those nodes. False
/// when \p rewrite returns null, having reported why.
bool rewriteEach(Graph &graph, DiagnosticEngine &diag,
                 llvm::function_ref<bool(const Node &)> selected,
                 llvm::function_ref<Value *(ValueBuilder &, const Node &)> rewrite);

} // namespace cgc

#endif
