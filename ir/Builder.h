//===- Builder.h - Creating nodes at an insertion point ---------*- C++ -*-===//
//
// GraphBuilder makes the nodes that passes add: at the end of a graph or
// before a node, with result types from the op's type rule (TypeRules.h),
// value names derived from a base name that no value or node of the graph
// has, and the location and source location of the node the new one
// derives from, so that diagnostics still point into the user's JSON.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_BUILDER_H
#define CGC_IR_BUILDER_H

#include "ir/Diagnostics.h"
#include "ir/Graph.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include <map>
#include <string>

namespace cgc {

using AttrMap = std::map<std::string, Attribute>;

class GraphBuilder {
public:
  /// Creates nodes at the end of \p graph; type errors go to \p diag.
  GraphBuilder(Graph &graph, DiagnosticEngine &diag)
      : graph(&graph), diag(diag) {}

  /// New nodes go at the end of \p graph.
  void setInsertionPointToEnd(Graph &graph);
  /// New nodes go right before \p node, in its graph.
  void setInsertionPoint(Node &node);
  Graph &getGraph() const { return *graph; }

  /// New nodes made by create() take \p origin's location and source
  /// location.
  void setOrigin(const Node &origin);

  /// \p base, or else the first of base_1, base_2, ... that names no value
  /// and no node of the insertion graph (as of the builder's first look at
  /// that graph, plus the names it gave out since); reserved from now on.
  std::string uniqueName(llvm::StringRef base);

  /// Inserts a node of \p op, an op without regions, reading \p operands,
  /// with \p attrs; the node and its result are named uniquely after
  /// \p base and the result is typed by the op's rule. Null, with the
  /// error reported, when the rule refuses the node.
  Node *create(OpKind op, llvm::StringRef base,
               llvm::ArrayRef<Value *> operands, const AttrMap &attrs = {});

  /// Inserts a copy of \p node (an op without regions) reading \p operands:
  /// the same op, attributes, location and source location, named
  /// uniquely after \p node's names, typed by the op's rule. Null, with the
  /// error reported, when the rule refuses the copy.
  Node *clone(const Node &node, llvm::ArrayRef<Value *> operands);

  /// Inserts a node of \p op, an op with regions, named uniquely after
  /// \p base, with empty regions and no results: fill the regions (and
  /// add operands), then type it with addResults().
  Node *createWithRegions(OpKind op, llvm::StringRef base,
                          llvm::ArrayRef<Value *> operands,
                          const AttrMap &attrs = {});
  /// Gives \p node one result per name in \p bases (made unique), typed by
  /// its op's rule; false, with the error reported, when the rule refuses
  /// the node.
  bool addResults(Node &node, llvm::ArrayRef<std::string> bases);

  /// Points every use of \p old's results (outputs included) at
  /// \p replacement's, erases \p old, and gives \p replacement its name
  /// and result names, so that a rewrite keeps the names the user sees.
  /// An insertion point before \p old moves to the node after it.
  void replace(Node &old, Node &replacement);

private:
  llvm::StringSet<> &namesOf(const Graph &g);
  std::string uniqueNameIn(const Graph &g, llvm::StringRef base);
  Node *insert(OpKind op, std::string name, Location at,
               llvm::ArrayRef<Value *> operands, const AttrMap &attrs);
  /// Types a freshly inserted node without regions; erases it on failure.
  Node *typeSingleResult(Node *node, const std::string &resultName);

  Graph *graph;
  Node *before = nullptr;
  DiagnosticEngine &diag;
  Location loc;
  std::string sourceLoc;
  llvm::DenseMap<const Graph *, llvm::StringSet<>> names;
};

} // namespace cgc

#endif
