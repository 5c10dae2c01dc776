//===- ProductEpilogue.h - What may follow a product in a fusion -*- C++ -*-===//
//
// One reading of a product_fusion's epilogue, shared by the op's type rule
// (RegionTypeRules.cpp), the fuse-epilogue pass (which builds chains) and
// codegen (which runs them): before any activation, an add of the running
// value and either a bias of n elements (once, and not after a linear's own
// bias) or a tensor of the running value's type (a residual, once); then
// one relu, gelu or gelu_tanh.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_PRODUCTEPILOGUE_H
#define CGC_IR_PRODUCTEPILOGUE_H

#include "ir/Graph.h"

#include "llvm/ADT/Optional.h"

namespace cgc {

class ProductEpilogue {
public:
  enum class Role { Bias, Residual, Activation, Refused };
  /// The activations an epilogue takes: relu, the erf gelu, gelu_tanh.
  enum class Activation { Relu, Gelu, GeluTanh };

  /// Which activation \p op is, if any: the one place an op is read as an
  /// epilogue's activation (the type rule, fuse-epilogue, codegen).
  static llvm::Optional<Activation> activationOf(OpKind op);

  /// \p productHasBias: a linear with its own bias (no second one).
  explicit ProductEpilogue(bool productHasBias) : bias(productHasBias) {}

  /// The role of \p member, which reads the chain's \p running value, as
  /// the next op of the epilogue; records it unless Refused.
  Role admit(const Node &member, const Value *running);

private:
  bool bias, residual = false, activated = false;
};

} // namespace cgc

#endif
