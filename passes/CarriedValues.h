//===- CarriedValues.h - Adding and removing a while's carried values -*- C++ -*-===//
//
// A `while` carries its operands through `cond` and `body`: operand k is
// input k of both regions, body output k and result k. These keep the
// four in step when a pass adds or removes one.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_PASSES_CARRIEDVALUES_H
#define CGC_PASSES_CARRIEDVALUES_H

#include "ir/Graph.h"

#include "llvm/ADT/StringRef.h"

namespace cgc {

/// Whether \p v is an input of \p body that its body output of the same
/// index, and no other output, passes through unchanged (a value every
/// trip sees as it entered).
bool passesThrough(const Graph &body, const Value *v);

/// Whether `cond` \p cond neither reads its input \p k nor yields it.
bool unread(const Graph &cond, unsigned k);

/// Whether carried value \p k of the `while` \p loop does nothing: the
/// body passes it through, neither region reads it, and its result is
/// unused and no output.
bool isDeadCarried(const Node &loop, unsigned k);

/// Removes carried value \p k of \p loop (isDeadCarried).
void eraseCarried(Node &loop, unsigned k);

/// Makes \p init a new carried value of \p loop that the body passes
/// through unchanged, named \p name (made unique in each region); returns
/// the body's input for it.
Value *addPassThroughCarried(Node &loop, Value *init, llvm::StringRef name);

} // namespace cgc

#endif
