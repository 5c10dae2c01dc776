//===- Product.h - A matrix product and its epilogue, as lowered -*- C++ -*-===//
//
// Internal to codegen. A `matmul`, `linear` or `product_fusion` node is
// read once into ProductParts: the values the product reads (outside the
// fusion body), its prologue and epilogue, and the value it writes. The generated kernel
// (ProductEmitter.cpp) and the cuBLASLt call (ProductLowering.cpp) are both
// built from it.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_CODEGEN_PRODUCT_H
#define CGC_CODEGEN_PRODUCT_H

#include "codegen/Program.h"
#include "passes/ProductRule.h"


namespace cgc {

struct ProductParts {
  const Node *product = nullptr; ///< The matmul or linear.
  ProductProblem problem;
  /// IR operands 0 and 1 (with an input layernorm: the rows before it).
  const Value *a = nullptr, *b = nullptr;
  /// A layernorm over the last axis that turns `a` into the product's
  /// first operand, with its weight and bias (each may be absent).
  const Node *inputNorm = nullptr;
  const Value *normWeight = nullptr, *normBias = nullptr;
  const Value *bias = nullptr;     ///< [n], added to every row.
  const Value *residual = nullptr; ///< The result's type, added.
  const Node *activation = nullptr; ///< relu, gelu or gelu_tanh.
  const Value *result = nullptr; ///< What the node writes.
};

/// Reads a `matmul`, `linear` or `product_fusion` node.
ProductParts productParts(const Node &node);

/// Whether \p node is lowered as a product.
inline bool isProductNode(const Node &node) {
  return node.info().has(MatMul) || node.getOp() == OpKind::ProductFusion;
}

/// The generated kernel of a product whose strategy is Generated: a warp
/// per output column (ProductEmitter.cpp).
void emitProduct(const ProductParts &parts, Kernel &kernel);
/// The generated kernel of a product whose strategy is Tiled
/// (TiledProductEmitter.cpp).
void emitTiledProduct(const ProductParts &parts, unsigned multiprocessors,
                      Kernel &kernel);
/// The kernel of a product that \p policy does not give to cuBLASLt, for a
/// GPU of \p multiprocessors SMs.
void emitProductKernel(const ProductParts &parts, ProductPolicy policy,
                       unsigned multiprocessors, Kernel &kernel);

} // namespace cgc

#endif
