//===- GraphPlan.cpp - CUDA graph nodes and their dependencies ---------------===//
#include "codegen/GraphPlan.h"

#include "llvm/ADT/BitVector.h"

using namespace cgc;

static ByteRange rangeOf(const Storage &s) {
  return {s.region, s.offset, s.offset + s.bytes};
}

static bool overlaps(const std::vector<ByteRange> &a,
                     const std::vector<ByteRange> &b) {
  for (const ByteRange &x : a)
    for (const ByteRange &y : b)
      if (x.region == y.region && x.begin < y.end && y.begin < x.end)
        return true;
  return false;
}

GraphPlan cgc::buildGraphPlan(const Program &program, const MemoryPlan &plan) {
  GraphPlan gp;
  for (const Step &step : program.steps) {
    PlanNode node;
    node.step = step;
    switch (step.kind) {
    case Step::Kind::Kernel: {
      const Kernel &k = program.kernels[step.kernel];
      node.label = k.name;
      for (const KernelParam &p : k.params)
        (p.written ? node.writes : node.reads)
            .push_back(rangeOf(plan.storageOf(p.value)));
      break;
    }
    case Step::Kind::Memset:
      node.label = "memset";
      node.writes.push_back(rangeOf(plan.storageOf(step.value)));
      break;
    case Step::Kind::Memcpy: {
      const FinalCopy &c = plan.copies[step.copy];
      node.label = "memcpy";
      node.reads.push_back(rangeOf(plan.storageOf(c.source)));
      node.writes.push_back(rangeOf(plan.buffers[c.buffer].storage));
      break;
    }
    }
    gp.nodes.push_back(std::move(node));
  }
  size_t n = gp.nodes.size();
  std::vector<llvm::BitVector> reach(n, llvm::BitVector(n));
  for (size_t j = 0; j < n; ++j) {
    const PlanNode &b = gp.nodes[j];
    // Latest dependencies first: an earlier one they reach is redundant.
    for (size_t i = j; i-- > 0;) {
      const PlanNode &a = gp.nodes[i];
      bool conflict = overlaps(a.writes, b.reads) ||
                      overlaps(a.reads, b.writes) ||
                      overlaps(a.writes, b.writes);
      if (!conflict || reach[j].test(i))
        continue;
      gp.edges.push_back({unsigned(i), unsigned(j)});
      reach[j].set(i);
      reach[j] |= reach[i];
    }
  }
  llvm::sort(gp.edges);
  for (const auto &[from, to] : gp.edges)
    gp.programmatic.push_back(
        isProgrammaticEdge(gp.nodes[from], gp.nodes[to], program));
  return gp;
}

bool cgc::isProgrammaticEdge(const PlanNode &from, const PlanNode &to,
                             const Program &program) {
  if (from.step.kind != Step::Kind::Kernel ||
      to.step.kind != Step::Kind::Kernel)
    return false;
  const Kernel &consumer = program.kernels[to.step.kernel];
  uint64_t blocks =
      uint64_t(consumer.grid[0]) * consumer.grid[1] * consumer.grid[2];
  return blocks <= MaxProgrammaticConsumerBlocks;
}

void cgc::printGraphPlan(const GraphPlan &gp, llvm::raw_ostream &os) {
  for (size_t j = 0; j < gp.nodes.size(); ++j) {
    os << "k" << j << " " << gp.nodes[j].label;
    bool first = true;
    for (size_t e = 0; e < gp.edges.size(); ++e)
      if (gp.edges[e].second == j) {
        os << (first ? " <- k" : ", k") << gp.edges[e].first
           << (gp.programmatic[e] ? "~" : "");
        first = false;
      }
    os << "\n";
  }
}

void cgc::printGraphDot(const GraphPlan &gp, const Program &program,
                        const std::string &name, llvm::raw_ostream &os) {
  os << "digraph \"" << name << "\" {\n  node [shape=box];\n";
  for (size_t j = 0; j < gp.nodes.size(); ++j) {
    const PlanNode &node = gp.nodes[j];
    os << "  k" << j << " [label=\"" << node.label;
    if (node.step.kind == Step::Kind::Kernel) {
      const Kernel &k = program.kernels[node.step.kernel];
      os << "\\ngrid=" << k.grid[0] << " block=" << k.block[0];
      const Node *ir = k.node;
      os << "\\n" << mnemonic(ir->getOp()) << " " << ir->getName();
    }
    os << "\"];\n";
  }
  for (size_t e = 0; e < gp.edges.size(); ++e)
    os << "  k" << gp.edges[e].first << " -> k" << gp.edges[e].second
       << (gp.programmatic[e] ? " [style=dashed]" : "") << ";\n";
  os << "}\n";
}
