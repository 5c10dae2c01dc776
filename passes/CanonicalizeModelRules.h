//===- CanonicalizeModelRules.h - canonicalize's rules for model idioms -*- C++ -*-===//
//
// The rules of canonicalize (passes/Canonicalize.cpp, whose opening comment
// lists them all) that rewrite idioms of exported models so that later
// passes meet what they fold: Hugging Face's repeat_kv, GPT-2's written-out
// gelu_new, and transposes and reshapes moved through products and
// reshapes to where attention reads or writes them in place. Each returns
// the value that replaces \p node's result (built at the node), or null
// when the rule does not apply or a type rule refused (reported).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_PASSES_CANONICALIZEMODELRULES_H
#define CGC_PASSES_CANONICALIZEMODELRULES_H

#include "ir/Builder.h"

namespace cgc {

/// An attention over k and v repeated per head in place reads them as
/// grouped heads; true when it changed \p node's operands.
bool foldRepeatedHeads(Node &node);
/// 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) -> gelu_tanh(x).
Value *foldWrittenGelu(GraphBuilder &builder, Node &node);
/// u(reshape(p)) -> reshape(u(p)), u unary elementwise, p a product or its
/// bias add.
Value *sinkReshape(GraphBuilder &builder, Node &node);
/// linear(transpose(x)) -> transpose(linear(x)), the transpose keeping the
/// last axis.
Value *sinkTransposeBelowLinear(GraphBuilder &builder, Node &node);
/// transpose(reshape(linear(x))) -> reshape(linear(reshape(transpose(
/// reshape(x))))), the reshape splitting the product's rows.
Value *transposeAboveLinear(GraphBuilder &builder, Node &node);
/// transpose(reshape(x)) -> reshape(transpose(x)), the reshape merging runs
/// of dims the transpose moves together.
Value *transposeThroughReshape(GraphBuilder &builder, Node &node);
/// transpose(x) -> reshape(x) where the transpose moves unit dims only (the
/// others keep their order, so the elements keep theirs): a decoding
/// step's [B, 1, H, D] -> [B, H, 1, D] head split. Not where a transpose
/// reads it (they compose first).
Value *unitTransposeAsReshape(GraphBuilder &builder, Node &node);

} // namespace cgc

#endif
