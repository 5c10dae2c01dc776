//===- Liveness.h - One numbering of the nodes across nesting ---*- C++ -*-===//
//
// Numbers every node of a graph and of its regions in execution order, so
// that buffer lifetimes in different graphs of one program compare: a node
// gets a position; a control-flow node gets a span [start, end] that holds
// the positions of all nodes of its regions (an `if`: then, else; a
// `while`: cond, body). A fusion's body is one kernel: one position. A value is live from its definition (the start of
// a span, since regions write the node's results) to its last use, where a
// use by a region node counts at the end of its span (its regions read the
// operand throughout, every iteration of a loop included) and a region
// output is used at the end of its parent's span.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_PASSES_LIVENESS_H
#define CGC_PASSES_LIVENESS_H

#include "ir/Graph.h"

#include "llvm/ADT/DenseMap.h"

namespace cgc {

struct Span {
  int start = 0, end = 0;
};

class Liveness {
public:
  explicit Liveness(const Graph &top);

  Span span(const Node *n) const { return spans.lookup(n); }
  /// The last position of the program.
  int last() const { return count - 1 < 0 ? 0 : count - 1; }
  /// Where \p v is defined: its node's start, or 0 for top-level inputs;
  /// region inputs take the start of their parent's span.
  int definition(const Value *v) const;
  /// The last position at which \p v is read (at least its definition).
  int lastUse(const Value *v) const;

private:
  void number(const Graph &g);

  llvm::DenseMap<const Node *, Span> spans;
  llvm::DenseMap<const Value *, int> regionInputStart;
  llvm::DenseMap<const Value *, int> regionOutputEnd;
  int count = 0;
};

} // namespace cgc

#endif
