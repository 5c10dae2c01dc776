//===- GraphPlan.h - CUDA graph nodes and their dependencies ----*- C++ -*-===//
//
// Every step of the lowered program becomes one graph node; an edge runs
// from an earlier node to a later one when their byte ranges conflict
// (read after write, write after read, write after write) in the same
// region. The edge set is transitively reduced; no empty nodes are used.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_CODEGEN_GRAPHPLAN_H
#define CGC_CODEGEN_GRAPHPLAN_H

#include "codegen/Kernel.h"

#include "llvm/Support/raw_ostream.h"

namespace cgc {

struct ByteRange {
  Storage::Region region;
  uint64_t begin, end;
};

struct PlanNode {
  Step step;
  std::string label; ///< Kernel name, "memset" or "memcpy".
  std::vector<ByteRange> reads, writes;
};

struct GraphPlan {
  std::vector<PlanNode> nodes;
  std::vector<std::pair<unsigned, unsigned>> edges; ///< Sorted (from, to).
  /// Per edge: may use programmatic dependent launch (see below).
  std::vector<uint8_t> programmatic;
};

/// A kernel-to-kernel edge may be programmatic (the consumer launches while
/// its producer runs and waits in cgc_wait_for_producers) when the consumer
/// is small: its early, waiting blocks then hold few SMs. Measured on an
/// H200: tiny kernels 0.80 -> 0.53 us per node, while a consumer of 4096
/// blocks slowed the producer down (3.3 -> 5.3 us).
constexpr uint64_t MaxProgrammaticConsumerBlocks = 32;
bool isProgrammaticEdge(const PlanNode &from, const PlanNode &to,
                        const Program &program);

GraphPlan buildGraphPlan(const Program &program, const MemoryPlan &plan);
/// `k2 fused_3 <- k0, k1~`, one line per node; `~` marks a programmatic
/// edge.
void printGraphPlan(const GraphPlan &graphPlan, llvm::raw_ostream &os);
/// Graphviz, one box per node labeled with its kernel and source nodes.
void printGraphDot(const GraphPlan &graphPlan, const Program &program,
                   const std::string &name, llvm::raw_ostream &os);

} // namespace cgc

#endif
