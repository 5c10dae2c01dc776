//===- Emitters.h - CUDA kernels for each op family -------------*- C++ -*-===//
//
// Each emitter fills a Kernel (whose name the caller has set) with its
// source, parameters and launch configuration. Pointwise kernels run one
// thread per element (or per 16-byte vector) in a grid-stride loop;
// row-wise kernels take the shape class their schedule record gives
// (RowEmitter.cpp) or run one block per output row (ReduceEmitter.cpp);
// small matrix products run a warp per output column (ProductEmitter.cpp)
// or 32x32 tiles per block (TiledProductEmitter.cpp); attention runs one
// fused kernel (AttentionEmitter.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_CODEGEN_EMITTERS_H
#define CGC_CODEGEN_EMITTERS_H

#include "codegen/Program.h"
#include "target/Problem.h"
#include "target/VectorRule.h"

#include "llvm/ADT/DenseMap.h"

namespace cgc {

/// The literal a single elementwise op reads in place of \p operand (a
/// splat constant), so the constant needs no buffer and no kernel.
llvm::Optional<Element> inlinedSplat(const Node &user, const Value *operand);

/// The C expression of elementwise op \p n on the operand expressions
/// \p args, computed in the compute type.
std::string elementwiseExpr(const Node &n, llvm::ArrayRef<std::string> args);
/// The ops of a pointwise kernel, in order, and the (body, outer) values
/// it reads and writes: a fusion's body, or one op.
struct PointwiseParts {
  std::vector<const Node *> ops;
  std::vector<std::pair<const Value *, const Value *>> inputs, outputs;
  /// The outer value of body input \p inner (itself for any other value).
  const Value *outerOf(const Value *inner) const;
};
PointwiseParts pointwiseParts(const Node &node);
/// Per-element variables of body values.
using VarMap = llvm::DenseMap<const Value *, std::string>;
/// A vector index as a 64-bit expression and as the cheapest one to
/// divide (32 bits when every index fits).
struct VectorIndex {
  std::string wide, narrow;
};
/// The text of a vectorized pointwise step: `loads` once per vector,
/// `body` for element k of `width` (inside `for (k)`), then `stores`.
struct VectorBody {
  std::string loads, body, stores;
  /// The per-element variable (or literal) of each body value.
  VarMap vars;
};
/// The step of \p parts over \p iter at vector \p q; element k is
/// element q * width + k of \p iter. Variables take \p prefix; \p var
/// names body values already held per element (no load). None when an
/// operand fits no vectorRead pattern.
llvm::Optional<VectorBody>
vectorBody(const Node &owner, const PointwiseParts &parts, const Shape &iter,
           unsigned width, const VectorIndex &q, const std::string &prefix,
           Kernel &kernel, VarMap var);
/// Fusion nodes, elementwise ops, dropout, fill, iota and splat constants.
void emitPointwise(const Node &node, Kernel &kernel);
/// A fusion whose body holds index moves (ir/PointwiseFusion.h).
void emitViewFusion(const Node &node, Kernel &kernel);
/// Body value \p v of \p parts (elementwise ops, sources and index moves)
/// at coordinates \p at, one expression per dim of its shape, as
/// emitViewFusion computes it: the statements (each line opening with
/// \p indent) and the value's expression in its compute type.
struct ElementAt {
  std::string statements, value;
};
ElementAt viewElementAt(const PointwiseParts &parts, const Value *v,
                        const std::vector<std::string> &at,
                        const std::string &indent, Kernel &kernel);
/// sum, mean, max, min, argmax and cumsum.
void emitReduction(const Node &node, Kernel &kernel);
/// The two kernels of a reduction over few long rows (a split_rows
/// record): \p phase1 writes the partials into \p partials, \p phase2
/// combines them into the result.
void emitSplitReduction(const Node &node, const ReductionSplit &split,
                        const Storage &partials, Kernel &phase1,
                        Kernel &phase2);
/// The kernels of a node that runs on rows (target/Scheduler.h's
/// runsOnRows), as its \p record says: \p second (and \p scratch, the
/// record's scratch) only for split reductions, column splits and reduced
/// cross_entropy. A column combine's grid takes one wave of
/// \p multiprocessors.
/// A row_fusion runs its prologue where the kernel loads the row and its
/// epilogue where it stores; false, with \p why, for one codegen cannot
/// run that way (an operand fits no vectorRead pattern).
bool emitRowKernels(const Node &node, const Schedule &record,
                    const Storage *scratch, unsigned multiprocessors,
                    Kernel &first, Kernel *second, std::string &why);
/// attention, as its fused_attention \p record says.
void emitAttention(const Node &node, const Schedule &record, const AttentionViews &views,
                   Kernel &kernel);
/// attention as its decode_attention \p record says: \p first over the
/// key spans and, with more than one (\p scratch, the record's scratch,
/// holds their partials), \p combine, which merges them.
void emitDecodeAttention(const Node &node, const Schedule &record,
                         const AttentionViews &views, const Storage *scratch, Kernel &first,
                         Kernel *combine);
/// softmax and log_softmax over a non-innermost axis.
void emitNormalization(const Node &node, Kernel &kernel);
/// transpose, reshape (copy), broadcast_to, concat, slice, gather,
/// embedding and one_hot.
void emitMovement(const Node &node, Kernel &kernel);
/// Whether argtopk's kernel takes \p node's k (at most 2048).
bool argTopKFits(const Node &node);

} // namespace cgc

#endif
