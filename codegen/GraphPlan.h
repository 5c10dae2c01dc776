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

/// Consumers of at most this many blocks take programmatic edges, in
/// top-level graphs and conditional bodies alike. Measured on an H100,
/// 2026-12-06 (bench/programmatic_edges.sh examples, us per replay, two
/// runs; bench/results/programmatic-edges-NVIDIA-H100-2026-12-06.log):
/// chain100 unfused 64.4 with the rule, 95.7 with no programmatic edge,
/// 64.3 with all; edges in `while` bodies pay: newton_sqrt 58.2 with the
/// rule in bodies, 60.5 with none, 57.4 with all, power_iteration 2146
/// without body edges, 1968 with all; an edge into a larger consumer
/// measured nothing either way (chain100 fused, 147 blocks: 3.69 against
/// 3.95, then 3.91 against 3.71 on another machine).
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
