//===- RowFusion.h - The parts of a row_fusion body -------------*- C++ -*-===//
//
// A row_fusion body (docs/ir.md) holds one row op, the prologue that
// computes its first operand and the epilogue that reads its result. The
// type rule, fuse-rows and codegen's row kernels read a body through this
// one split.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_ROWFUSION_H
#define CGC_IR_ROWFUSION_H

#include "ir/Graph.h"

#include <vector>

namespace cgc {

/// softmax or log_softmax over the innermost axis.
bool isInnermostSoftmax(const Node &node);

/// An op a row_fusion may hold as its row op: sum, mean, max, min or prod,
/// softmax or log_softmax over the innermost axis, layernorm, rms_norm.
bool isRowOp(const Node &node);

/// layernorm or rms_norm: a normalization of rows whose result has the
/// row's shape (a product_fusion may normalize its input rows so).
bool isRowNorm(const Node &node);

/// A body node of a fusion or row_fusion that runs per element: an
/// elementwise op or a dropout (sources apart).
bool isPerElement(const Node &node);

/// The parts of a row_fusion body, each in body order: `root` is the
/// first node that is neither per element nor a source (null if none);
/// `siblings` the later such nodes that reduce like it (isSiblingReduction)
/// before any epilogue node; `others` any other such node; `epilogue` the
/// per-element nodes after the root that read its result or an epilogue
/// value; `prologue` the other per-element nodes; `sources` the sources.
struct RowFusionParts {
  const Node *root = nullptr;
  std::vector<const Node *> prologue, epilogue, sources, siblings, others;
};
RowFusionParts rowFusionParts(const Graph &body);

/// Whether \p sibling reduces as \p root does, so that one row kernel
/// computes both from the same rows: each a sum, mean, max, min or prod,
/// of operands of one float type, with the same axes and keepdim.
bool isSiblingReduction(const Node &root, const Node &sibling);

} // namespace cgc

#endif
