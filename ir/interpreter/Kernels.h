//===- Kernels.h - Op families of the reference interpreter -----*- C++ -*-===//
//
// Internal to the interpreter. One function per op family of Ops.def (the
// Runner in Interpreter.cpp switches over the family) evaluates one node
// from its operand tensors and returns the (rounded) result; errors throw
// EvalError.
// DimEnv resolves symbolic dims in shape attributes.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_INTERPRETER_KERNELS_H
#define CGC_IR_INTERPRETER_KERNELS_H

#include "ir/Graph.h"
#include "ir/interpreter/Tensor.h"

#include <map>

namespace cgc {
namespace interp {

/// Concrete sizes of the symbolic dims seen so far.
class DimEnv {
public:
  explicit DimEnv(const DimTable &table) : table(table) {}
  /// Binds each symbol of \p dims to the matching extent of \p actual on
  /// first sight and checks consistency (and declared bounds) afterwards.
  void bind(llvm::ArrayRef<Dim> dims, const Shape &actual,
            const std::string &what);
  /// Forgets a (data-dependent) symbol so it can be bound again.
  void unbind(unsigned symbol) { values.erase(symbol); }
  int64_t resolve(Dim dim) const;
  Shape resolve(llvm::ArrayRef<Dim> dims) const;
  const DimTable &dims() const { return table; }

private:
  const DimTable &table;
  std::map<unsigned, int64_t> values;
};

using Operands = std::vector<const Tensor *>;

Tensor evalElementwise(const Node &node, const Operands &in);
Tensor evalSource(const Node &node, const DimEnv &env);
Tensor evalReduction(const Node &node, const Operands &in);
Tensor evalScan(const Node &node, const Operands &in);
Tensor evalMatMul(const Node &node, const Operands &in);
Tensor evalAttention(const Node &node, const Operands &in);
Tensor evalConvolution(const Node &node, const Operands &in);
Tensor evalMovement(const Node &node, const Operands &in, const DimEnv &env);
/// \p x transposed: the result's axis i is x's axis perm[i].
Tensor permute(const Tensor &x, const std::vector<int64_t> &perm);
/// Normalizations, losses and dropout.
Tensor evalNN(const Node &node, const Operands &in);
Tensor evalSyncPoint(const Node &node, const Operands &in);
class Collectives;
/// all_reduce over \p ranks (none: this run is the only rank).
std::vector<Tensor> evalCollective(const Node &node, const Operands &in,
                                   Collectives *ranks);

} // namespace interp
} // namespace cgc

#endif
