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

#include "codegen/Emitters.h"
#include "codegen/Program.h"
#include "passes/MemoryPlan.h"
#include "target/Scheduler.h"

#include "llvm/ADT/DenseSet.h"

namespace cgc {

struct ProductParts {
  const Node *product = nullptr; ///< The matmul or linear.
  ProductProblem problem;
  /// IR operands 0 and 1 (with an input layernorm: the rows before it;
  /// with a prologue, `a` is null).
  const Value *a = nullptr, *b = nullptr;
  /// A layernorm over the last axis that turns `a` into the product's
  /// first operand, with its weight and bias (each may be absent).
  const Node *inputNorm = nullptr;
  const Value *normWeight = nullptr, *normBias = nullptr;
  /// Or the prologue that computes the first operand: its ops
  /// (elementwise ops, splat sources and index moves, in body order) and
  /// each body input they read with its outside value.
  PointwiseParts prologue;
  const Value *bias = nullptr;     ///< [n], added to every row.
  const Value *residual = nullptr; ///< The result's type, added.
  const Node *activation = nullptr; ///< relu, gelu or gelu_tanh.
  const Value *result = nullptr; ///< What the node writes.
  /// plan-memory's concats laid out side by side (no kernel writes them),
  /// for isConstantWeight.
  const llvm::DenseSet<const Node *> *packedConcats = nullptr;
};

/// Reads a `matmul`, `linear` or `product_fusion` node lowered under
/// \p plan.
ProductParts productParts(const Node &node, const MemoryPlan &plan);

/// The generated kernel of a generated_product record: a warp per output
/// column (ProductEmitter.cpp).
void emitProduct(const ProductParts &parts, const Schedule &record,
                 Kernel &kernel);
/// The generated kernel of a tiled_product record (TiledProductEmitter.cpp).
void emitTiledProduct(const ProductParts &parts, const Schedule &record,
                      Kernel &kernel);
/// The tensor-core kernel of an mma_product record (MmaProductEmitter.cpp).
void emitMmaProduct(const ProductParts &parts, const Schedule &record,
                    Kernel &kernel);
/// Whether \p v is a persistent input of the top-level graph that no update
/// writes (or a loop-invariant carried copy of one, or a packed concat of
/// such: \p parts.packedConcats): constant while the graph runs, so a
/// kernel that \p parts' product runs may read it before it waits for the
/// kernels it depends on.
bool isConstantWeight(const Value *v, const ProductParts &parts);
/// The statements that finish output element (m, n) from its f32 sum `v`
/// (the tiled and tensor-core kernels): the bias parameter \p bias and the
/// residual \p res (each empty when absent) added, the activation
/// applied, the result stored into \p out; each line opens with
/// \p indent.
std::string productEpilogue(const ProductParts &parts, const std::string &bias,
                            const std::string &res, const std::string &out,
                            const std::string &indent);
/// The kernel of a product whose \p record does not give it to cuBLASLt.
void emitProductKernel(const ProductParts &parts, const Schedule &record,
                       Kernel &kernel);

} // namespace cgc

#endif
