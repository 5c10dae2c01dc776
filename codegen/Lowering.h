//===- Lowering.h - The lowering walk, shared by its two files ---*- C++ -*-===//
//
// Internal to codegen. Lowerer builds one top-level step graph and its
// bodies: Lowering.cpp handles plain nodes and copies,
// ControlFlowLowering.cpp handles `if` and `while`, ProductLowering.cpp the
// matrix products that call cuBLASLt, ConvolutionLowering.cpp the
// convolutions that call cuDNN, CollectiveLowering.cpp the all-reduces that
// call NCCL.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_CODEGEN_LOWERING_H
#define CGC_CODEGEN_LOWERING_H

#include "codegen/Program.h"
#include "target/Scheduler.h"

#include <array>

namespace cgc {

/// A `while` without `max_iterations` stops on the device after this many
/// trips (the interpreter reports an error there).
constexpr int64_t kDefaultLoopBound = 10000000;
/// The largest `max_iterations` the device trip counter holds.
constexpr int64_t kMaxLoopBound = 2147483647;

struct ProductParts;

/// The operand of fusion \p node that its body input \p v binds; \p v
/// itself when it is no body input (or \p node has no body).
const Value *boundOperand(const Node &node, const Value *v);

inline ByteRange rangeOf(const Storage &s) {
  return {s.region, s.offset, s.offset + s.bytes};
}

class Lowerer {
public:
  Lowerer(const MemoryPlan &plan, Program &program, DiagnosticEngine &diag)
      : plan(plan), program(program), diag(diag) {}
  /// Lowers \p g into \p out, then derives its edges.
  bool lowerTopLevel(const Graph &g, StepGraph &out);

private:
  void lowerNodes(const Graph &g, StepGraph &out);
  void lowerNode(const Node &n, StepGraph &out);
  void lowerIf(const Node &n, StepGraph &out);
  /// A node that runs on rows (its record: rows, split_rows or columns):
  /// one kernel, or two with scratch between.
  void lowerRowNode(const Node &n, StepGraph &out);
  void lowerWhile(const Node &n, StepGraph &out);
  /// An attention with a decode_attention record: one kernel, or two with
  /// the spans' partials between them.
  void lowerDecodeAttention(const Node &n, StepGraph &out);
  /// A node's one kernel, or two with the scratch its record asks for
  /// between them (row nodes, decode attention).
  struct KernelPair {
    Storage scratchStorage;
    bool twoKernels = false;
    Kernel kernels[2];
    const Storage *scratch() const { return twoKernels ? &scratchStorage : nullptr; }
    Kernel *second() { return twoKernels ? &kernels[1] : nullptr; }
  };
  /// The pair's kernels named \p base (the first \p base + \p firstSuffix
  /// when there are two), their scratch the node's.
  KernelPair kernelPair(const Node &node, const std::string &base,
                        const std::string &firstSuffix);
  /// Adds the pair's kernels as steps, in order.
  void addKernelPair(const Node &node, KernelPair &pair, StepGraph &out);
  /// A product whose strategy is Library: one or more cuBLASLt steps
  /// (ProductLowering.cpp).
  void lowerLibraryProduct(const Node &n, const ProductParts &parts,
                           StepGraph &out);
  /// One call, at element offsets {A, B, out} into the IR's operands.
  void addLibraryStep(const Node &n, const ProductParts &parts,
                      const format::ProductDesc &desc,
                      std::array<int64_t, 3> offsets, StepGraph &out);
  /// A conv whose strategy is library_convolution: one cuDNN step
  /// (ConvolutionLowering.cpp).
  void lowerLibraryConvolution(const Node &n, StepGraph &out);
  /// An all_reduce: one NCCL group step over its results, each first
  /// holding its operand (CollectiveLowering.cpp).
  void lowerCollective(const Node &n, StepGraph &out);
  /// Plans \p body's edges and adds it to the program's bodies.
  unsigned addBody(StepGraph body);

  void addKernelStep(Kernel kernel, StepGraph &out);
  void addCopies(const std::vector<Copy> &copies, StepGraph &out);
  void addMemset(const Storage &dst, const Node *node, StepGraph &out);
  void addMemcpy(Storage src, const Storage &dst, StepGraph &out);
  void copyUnlessInPlace(const Value *from, const Value *to, StepGraph &out);
  /// The kernel that reads an `if`'s predicate (negated when \p invert)
  /// and sets conditional \p handle.
  Kernel ifSetter(const Node &n, unsigned handle, const Storage &predicate,
                  bool invert);
  /// The kernel that sets a `while`'s handle: predicate and trips < bound.
  Kernel whileSetter(const Node &n, unsigned handle, const Storage &predicate);
  Step conditionalStep(const Node &n, unsigned handle,
                       std::vector<unsigned> bodies, const Storage &predicate);
  std::string uniqueKernelName(const std::string &base);
  Storage storageOf(const Value *v) const { return plan.storageOf(v); }
  Storage bufferStorage(unsigned b) const { return plan.buffers[b].storage; }

  const MemoryPlan &plan;
  Program &program;
  DiagnosticEngine &diag;
  bool ok = true;
  unsigned handles = 0;
};

/// Derives the edges of \p graph from its steps' byte ranges (GraphPlan.cpp).
void planEdges(StepGraph &graph, const Program &program);
/// Whether \p a and \p b must keep their order: one writes bytes the other
/// reads or writes, or \p a sets a conditional handle \p b reads.
bool stepsConflict(const Step &a, const Step &b);
/// Merges independent small pointwise kernels of \p graph into one
/// (KernelBatching.cpp); before planEdges.
void batchPointwiseKernels(StepGraph &graph, Program &program);


} // namespace cgc

#endif
