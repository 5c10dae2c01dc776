//===- Emitters.h - CUDA kernels for each op family -------------*- C++ -*-===//
//
// Each emitter fills a Kernel (whose name the caller has set) with its
// source, parameters and launch configuration. Pointwise kernels run one
// thread per element (or per 16-byte vector) in a grid-stride loop;
// row-wise kernels take a shape class from passes/ReductionRule.h
// (RowEmitter.cpp) or run one block per output row (ReduceEmitter.cpp);
// small matrix products run a warp per output column (ProductEmitter.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_CODEGEN_EMITTERS_H
#define CGC_CODEGEN_EMITTERS_H

#include "codegen/Program.h"
#include "passes/ReductionRule.h"

namespace cgc {

/// The literal a single elementwise op reads in place of \p operand (a
/// splat constant), so the constant needs no buffer and no kernel.
llvm::Optional<double> inlinedSplat(const Node &user, const Value *operand);

/// The C expression of elementwise op \p n on the operand expressions
/// \p args, computed in the compute type.
std::string elementwiseExpr(const Node &n, llvm::ArrayRef<std::string> args);
/// Fusion nodes, elementwise ops, fill, iota and splat constants.
void emitPointwise(const Node &node, Kernel &kernel);
void emitDropout(const Node &node, Kernel &kernel);
/// sum, mean, max, min, argmax and cumsum.
void emitReduction(const Node &node, Kernel &kernel);
/// The two kernels of a reduction over few long rows
/// (passes/ReductionRule.h): \p phase1 writes the partials into
/// \p partials, \p phase2 combines them into the result.
void emitSplitReduction(const Node &node, const ReductionSplit &split,
                        const Storage &partials, Kernel &phase1,
                        Kernel &phase2);
/// Whether \p node runs on a row schedule (RowEmitter.cpp): a sum, mean,
/// max or min over trailing dims or over columns, softmax or log_softmax
/// over the innermost axis, layernorm, cross_entropy.
bool hasRowSchedule(const Node &node);
/// The kernels of such a node: \p second (and \p scratch, plan-memory's
/// phaseScratchBytes) only for split reductions, column splits and
/// reduced cross_entropy.
/// Grids take one wave of \p multiprocessors.
void emitRowKernels(const Node &node, const Storage *scratch,
                    unsigned multiprocessors, Kernel &first, Kernel *second);
/// softmax and log_softmax over a non-innermost axis.
void emitNormalization(const Node &node, Kernel &kernel);
/// mse_loss.
void emitLoss(const Node &node, Kernel &kernel);
/// transpose, reshape (copy), broadcast_to, concat, slice, gather,
/// embedding and one_hot.
void emitMovement(const Node &node, Kernel &kernel);

} // namespace cgc

#endif
