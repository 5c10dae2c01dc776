//===- MemoryPlan.h - Storage for every value, nesting included -*- C++ -*-===//
//
// computeMemoryPlan() gives every value of an ordered graph, region values
// included, its storage: an offset in the arena (temporaries reuse dead
// buffers; inputs, outputs and per-context state get fixed slots) or in
// the persistent region (state inputs, constant tensors, and the updates
// written into their targets). It also lists the copies the program needs where a value cannot
// be computed in its final place, and reserves scratch buffers that are not
// IR values (loop trip counters, staging for loop-carried swaps, the
// scratch each schedule record asks for: cuBLASLt workspaces, the partials
// of two-phase kernels).
//
// The plan-memory pass computes it once and hands it to codegen through the
// PassContext; `cgc-opt --print-memory-plan` prints it.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_PASSES_MEMORYPLAN_H
#define CGC_PASSES_MEMORYPLAN_H

#include <cassert>

#include "ir/Diagnostics.h"
#include "ir/Graph.h"
#include "target/AttentionLayout.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"
#include <string>
#include <vector>

namespace cgc {

constexpr uint64_t kBufferAlignment = 256;

struct Storage {
  enum class Region : uint8_t { Arena, Persistent };
  Region region = Region::Arena;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  /// The graph input or output whose slot this is (a caller may bind its
  /// own pointer there), or empty.
  std::string binding;
};

/// One buffer: a byte range shared by the values that alias or update it.
struct Buffer {
  Storage storage;
  uint64_t size = 0;      ///< Bytes reserved (aligned).
  int start = 0, end = 0; ///< Live positions, inclusive (see Liveness.h).
  bool fixed = false;     ///< Never reused (inputs, outputs, persistent).
  std::vector<Value *> values;
};

/// A copy of one buffer's bytes into another: outputs that cannot live in
/// their value's buffer, updates that cannot be done in place, the results
/// of `if` arms and `while` bodies, and the carried values entering a loop.
struct Copy {
  const Value *source = nullptr; ///< The copied value; null for scratch.
  unsigned from = 0;             ///< Source buffer.
  unsigned to = 0;               ///< Destination buffer.
  std::string output;            ///< The graph output it fills, if any.
};

/// The most device memory one plan may use (arena and state together).
constexpr uint64_t kMaxDeviceBytes = uint64_t(512) << 30;

struct MemoryPlan {
  std::vector<Buffer> buffers;
  llvm::DenseMap<const Value *, unsigned> bufferOf;
  /// Reshape results that share their operand's bytes (no kernel needed).
  llvm::DenseMap<const Value *, const Value *> aliasOf;
  /// Concats of state laid out side by side (packsState): their result is
  /// their operands' bytes, so no kernel runs.
  llvm::DenseSet<const Node *> packedConcats;
  /// Each operand of a packed concat: its byte offset in the concat's
  /// buffer.
  llvm::DenseMap<const Value *, uint64_t> offsetInBuffer;
  /// Where each attention reads q, k, v and writes its result, and the
  /// head splits and merges folded into those views
  /// (target/AttentionLayout.h): the folded nodes' values share the bytes
  /// they view, and no kernel runs for them.
  AttentionLayouts attention;
  /// Results written over the buffer of a dying operand.
  llvm::DenseMap<const Value *, const Value *> inPlaceOf;
  /// Constants stored as data in the persistent region.
  std::vector<const Node *> constantData;
  /// Storage of each top-level graph output, in graph output order.
  std::vector<unsigned> outputBuffer;
  /// Copies run after the last node of a graph (top level or region).
  llvm::DenseMap<const Graph *, std::vector<Copy>> exitCopies;
  /// Copies run before a `while` starts (carried values into their slots).
  llvm::DenseMap<const Node *, std::vector<Copy>> entryCopies;
  /// The 4-byte trip counter of each `while`.
  llvm::DenseMap<const Node *, unsigned> tripCounter;
  /// The scratch of each node whose schedule record asks for some (a
  /// cuBLASLt workspace; the partials between a node's two kernels), live
  /// at that node only.
  llvm::DenseMap<const Node *, unsigned> scratch;
  uint64_t arenaSize = 0;
  uint64_t persistentSize = 0;

  Storage storageOf(const Value *v) const;
  bool hasStorage(const Value *v) const { return bufferOf.count(v); }
  const std::vector<Copy> &copiesAtExit(const Graph &g) const;
  const std::vector<Copy> &copiesBefore(const Node &loop) const;
};

/// Several graphs compiled into one artifact share the slots of their
/// inputs, outputs and state: each slot takes the largest size among them,
/// and each graph's constant data starts at its own persistent offset.
struct PlanLayout {
  /// Bytes of each top-level user input slot, then of each output slot;
  /// empty: the graph's own sizes.
  std::vector<uint64_t> slotBytes;
  uint64_t persistentBase = 0;
  /// Whether plan-memory may lay state side by side (packsState): not when
  /// another graph of the artifact updates that state (training's eval
  /// graph shares the train graph's state layout).
  bool packState = true;
};

/// True for constants that become persistent data (not a splat).
bool isConstantData(const Node &node);
/// Bytes of a value at its largest shape.
uint64_t valueBytes(const Value *v);
/// The persistent inputs of \p graph that no output updates: an inference
/// graph's parameters and buffers (not per-context state, which lives in
/// the arena).
llvm::DenseSet<const Value *> readOnlyState(const Graph &graph);
/// True when plan-memory may lay \p values side by side in the persistent
/// region, in order: distinct \p readOnly state of static shape, no output
/// of \p graph, each but the last a multiple of 16 bytes (the alignment of
/// vector loads).
bool mayPackState(const Graph &graph, llvm::ArrayRef<Value *> values,
                  const llvm::DenseSet<const Value *> &readOnly);
/// Whether \p use may read an operand that a packed concat holds: not a
/// concat (an operand packs into one place), not an `if` or `while` and
/// not a reshape (a region's input and a reshape's alias would see the
/// packed buffer's start, not the operand's offset in it).
bool readsPackedInPlace(const Use &use);
/// True when plan-memory packs the operands of \p concat (mayPackState),
/// so that its result is their bytes and no kernel runs: a `concat` on
/// axis 0 of the top-level graph, no graph output, each operand's other
/// readers readsPackedInPlace. merge-products makes such concats of
/// sibling weights.
bool packsState(const Node &concat, const llvm::DenseSet<const Value *> &readOnly);

/// Plans every value of \p graph. Fails (with located errors) on updates
/// whose target is not a persistent input, on double updates and on heavy
/// nodes without a schedule record (the schedule pass runs first).
bool computeMemoryPlan(Graph &graph, MemoryPlan &plan, DiagnosticEngine &diag,
                       const PlanLayout &layout = {});
void printMemoryPlan(const Graph &graph, const MemoryPlan &plan,
                     llvm::raw_ostream &os);

} // namespace cgc

#endif
