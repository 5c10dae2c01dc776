//===- GraphPlan.h - Dependencies between steps, and their text -*- C++ -*-===//
//
// planEdges() (declared in Lowering.h, run by lowering for every step
// graph) derives each graph's edges from byte-range conflicts; this header
// declares the programmatic-edge rule and the printers.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_CODEGEN_GRAPHPLAN_H
#define CGC_CODEGEN_GRAPHPLAN_H

#include "codegen/Program.h"

#include "llvm/Support/raw_ostream.h"

namespace cgc {

/// Consumers of at most this many blocks take programmatic edges.
constexpr uint64_t MaxProgrammaticConsumerBlocks = 32;
bool isProgrammaticEdge(const Step &from, const Step &to,
                        const Program &program);

/// `k2 fused_3 <- k0, k1~`, one line per step, bodies indented under their
/// conditional step; `~` marks a programmatic edge.
void printGraphPlan(const Program &program, llvm::raw_ostream &os);
/// Graphviz, one box per step labeled with its kernel and source nodes;
/// conditional bodies are clusters.
void printGraphDot(const Program &program, const std::string &name,
                   llvm::raw_ostream &os);

} // namespace cgc

#endif
