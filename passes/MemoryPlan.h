//===- MemoryPlan.h - Buffer offsets for a straight-line graph --*- C++ -*-===//
//
// computeMemoryPlan() gives every top-level value of an ordered graph its
// storage: an offset in the arena (temporaries reuse dead buffers, inputs
// and outputs get fixed slots) or in the persistent region (state inputs,
// constant tensors, and the updates written into their targets). The plan
// pass prints it; codegen turns it into kernel pointer parameters.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_PASSES_MEMORYPLAN_H
#define CGC_PASSES_MEMORYPLAN_H

#include "ir/Diagnostics.h"
#include "ir/Graph.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"
#include <vector>

namespace cgc {

constexpr uint64_t kBufferAlignment = 256;

struct Storage {
  enum class Region : uint8_t { Arena, Persistent };
  Region region = Region::Arena;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

/// One buffer: a byte range shared by the values that alias or update it.
struct Buffer {
  Storage storage;
  uint64_t size = 0;   ///< Bytes reserved (aligned).
  int start = 0, end = 0; ///< Live node indices, inclusive.
  bool fixed = false;  ///< Never reused (inputs, outputs, persistent).
  std::vector<Value *> values;
};

/// A copy the graph plan appends at the end (outputs that cannot live in
/// their value's buffer, updates that cannot be done in place).
struct FinalCopy {
  Value *source;
  unsigned buffer; ///< Destination buffer.
  std::string output; ///< The graph output it fills.
};

struct MemoryPlan {
  std::vector<Buffer> buffers;
  llvm::DenseMap<const Value *, unsigned> bufferOf;
  /// Reshape results that share their operand's bytes (no kernel needed).
  llvm::DenseMap<const Value *, const Value *> aliasOf;
  /// Results written over the buffer of a dying operand.
  llvm::DenseMap<const Value *, const Value *> inPlaceOf;
  /// Constants stored as data in the persistent region.
  std::vector<const Node *> constantData;
  /// Storage of each graph output, in graph output order.
  std::vector<unsigned> outputBuffer;
  std::vector<FinalCopy> copies;
  uint64_t arenaSize = 0;
  uint64_t persistentSize = 0;

  const Storage &storageOf(const Value *v) const {
    return buffers[bufferOf.lookup(v)].storage;
  }
  bool hasStorage(const Value *v) const { return bufferOf.count(v); }
};

/// True for constants that become persistent data (not a splat).
bool isConstantData(const Node &node);
/// Bytes of a value at its largest shape.
uint64_t valueBytes(const Value *v);

/// Plans the top-level values of \p graph. Fails (with located errors) on
/// updates whose target is not a persistent input.
bool computeMemoryPlan(Graph &graph, MemoryPlan &plan, DiagnosticEngine &diag);
void printMemoryPlan(const Graph &graph, const MemoryPlan &plan,
                     llvm::raw_ostream &os);

} // namespace cgc

#endif
