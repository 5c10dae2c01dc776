//===- PointwiseFusion.h - What a fusion body may hold -----------*- C++ -*-===//
//
// A `fusion` runs as one kernel of one thread per element of its result.
// Its body holds elementwise ops, sources and dropouts, and may hold index
// moves: movement ops whose every result element is one operand element at
// coordinates computed from the result's (transpose, reshape, broadcast_to,
// slice, concat), or from an index read at them (gather, embedding: an
// index out of range after one wrap of negatives reads as 0). A body
// without index moves is per element: element i of a result reads only
// element i of same-shaped operands, so plan-memory may write the result
// over such an operand. The type rule, fuse-views,
// plan-memory and codegen ask these predicates.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_POINTWISEFUSION_H
#define CGC_IR_POINTWISEFUSION_H

#include "ir/Graph.h"

#include "llvm/ADT/DenseMap.h"
#include <map>
#include <set>
#include <tuple>

namespace cgc {

/// The most value evaluations per element a fusion body with index moves
/// may need (viewEvaluations): codegen computes each body value once per
/// set of coordinates it is asked at, one statement each, and a concat
/// asks each operand at its own coordinates, so a chain of concats that
/// each read one value twice would double the kernel's text per level.
constexpr uint64_t kMaxViewEvaluations = 256;

/// The sets of coordinates each value of a kernel is asked at: each set
/// named by the index moves (node, operand) it was read through from the
/// kernel's own element (elementwise ops pass their coordinates on), as
/// codegen's view-fusion emitter computes a value once per set.
class EvaluationCounts {
public:
  /// \p v is asked at the kernel's own element.
  void askAtElement(const Value *v) { add(v, 0); }
  /// How many coordinate sets \p v is asked at (saturating above
  /// kMaxViewEvaluations).
  uint64_t of(const Value *v) const;
  /// Asks the operands of \p node where its results are asked: through
  /// the node's index move (each concat operand its own, one value
  /// repeated the same), else at the same coordinates; a fusion through
  /// its body. Returns the sets its results and body values are asked at.
  uint64_t propagate(const Node &node);

private:
  void add(const Value *v, unsigned context);
  unsigned through(unsigned context, const Node &move, unsigned operand);
  uint64_t propagateBody(const Graph &body);

  std::map<std::tuple<unsigned, const Node *, unsigned>, unsigned> interned;
  llvm::DenseMap<const Value *, std::set<unsigned>> contexts;
};

/// The evaluations per element a fusion body needs: its values' and its
/// inputs' (loads) coordinate sets, each result asked at the kernel's
/// element.
uint64_t viewEvaluations(const Graph &body);

/// Whether concat \p node repeats one value (its operands are one value):
/// a kernel asks that value once, at the coordinate modulo its extent.
bool repeatsOneOperand(const Node &node);

/// transpose, reshape, broadcast_to, slice, concat, gather or embedding
/// with static types.
bool isIndexMove(const Node &node);

/// gather or embedding: an index move whose coordinates along one axis
/// are read from its index operand.
bool isIndexedMove(const Node &node);

/// What a product_fusion's prologue may hold (codegen evaluates it per
/// element of the product's first operand): static elementwise ops, splat
/// sources and iotas, and index moves other than concat (each value is
/// then asked at one set of coordinates per path to it, with no branch),
/// gather and embedding excepted.
bool isProductPrologueOp(const Node &node);

/// The evaluations per element of a product_fusion's prologue \p nodes
/// (in order) that computes \p x, asked at each element of x: as
/// viewEvaluations counts a fusion body's.
uint64_t prologueEvaluations(llvm::ArrayRef<const Node *> nodes, const Value *x);

/// Whether a fusion body holds an index move.
bool movesElements(const Graph &body);

/// An elementwise op, a dropout, or a `fusion` whose body holds no index
/// move: result element i reads element i of each same-shaped operand.
bool computesPerElement(const Node &node);

/// Whether `fusion` \p fusion reads operand \p v only at the element each
/// thread writes: every body value read from it is read by elementwise ops
/// of its own shape, and so on up to results (so plan-memory may write a
/// result of v's shape over v even when other operands are read through
/// index moves).
bool readsOnlyInPlace(const Node &fusion, const Value *v);

} // namespace cgc

#endif
