//===- Interpreter.h - The CPU reference interpreter ------------*- C++ -*-===//
//
// The project's definition of truth: runs any verified graph (including `if`
// and `while`) on the CPU, elementwise in double with results rounded to
// their dtypes, following "Op semantics (reference interpreter)" in
// docs/ir.md. Slow and simple on purpose.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_INTERPRETER_INTERPRETER_H
#define CGC_IR_INTERPRETER_INTERPRETER_H

#include "ir/Graph.h"
#include "ir/interpreter/Tensor.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cgc {
namespace interp {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// What one run may use; past a limit the run stops with an error that
/// names the node (docs/ir.md, "Limits").
struct Limits {
  /// Bytes of live tensor elements (8 per element: values are doubles),
  /// inputs and outputs included. cgc-opt --interpreter-memory.
  uint64_t memoryBytes = uint64_t(8) << 30;
  /// Trips of one `while` run without a smaller max_iterations.
  int64_t whileTrips = 10000000;
  /// Floats stay doubles (no rounding to f32/f16/bf16): gradient checks.
  bool exactFloats = false;
};

/// Why a run stopped: the message and, when one node failed, that node.
struct RunError {
  std::string message; ///< "node 'n' (op): ..." when node is set.
  const Node *node = nullptr;
  std::string detail;  ///< The message without the node prefix.
};

/// What the control flow of runs did, by node name: the arms each `if`
/// took and the trips each `while` ran (one entry per execution).
struct ControlFlowTrace {
  std::map<std::string, std::vector<bool>> ifThen;
  std::map<std::string, std::vector<int64_t>> whileTrips;
};

/// The ranks of a data-parallel run, over which `all_reduce` reduces
/// (docs/ir.md). Without one, a run is the only rank.
class Collectives {
public:
  virtual ~Collectives() = default;
  virtual int worldSize() const = 0;
  /// Replaces \p values (this rank's operands of one all_reduce) by their
  /// element-wise sums over every rank, added in rank order in double and
  /// not rounded; false with \p error when the ranks disagree or one failed.
  virtual bool sumOverRanks(std::vector<Tensor> &values,
                            std::string &error) = 0;
};

/// \p world ranks as threads of one process: rank r's runGraph, on its own
/// thread, takes rank(r). A rank whose run fails calls abandon(), which
/// fails every all_reduce waiting or to come instead of leaving it waiting.
class ThreadRanks {
public:
  explicit ThreadRanks(int world);
  ~ThreadRanks();
  Collectives &rank(int r);
  void abandon();
  ThreadRanks(const ThreadRanks &) = delete;
  ThreadRanks &operator=(const ThreadRanks &) = delete;

private:
  struct Shared;
  class Rank;
  std::unique_ptr<Shared> shared;
  std::vector<std::unique_ptr<Rank>> ranks;
};

/// Runs \p graph. User inputs come from \p inputs by name (all required,
/// with the declared dtype and a shape matching the declared dims; symbolic
/// dims take their sizes from here). Persistent inputs come from \p inputs
/// when present, else from their initializer (zeros when they have none).
/// Outputs are named by the graph's output names, in order. Returns false
/// with a message in \p error. Appends to \p trace when given. With
/// \p ranks, the run is one rank of a data-parallel run.
bool runGraph(const Graph &graph, const std::map<std::string, Tensor> &inputs,
              NamedTensors &outputs, RunError &error,
              const Limits &limits = Limits(),
              ControlFlowTrace *trace = nullptr,
              Collectives *ranks = nullptr);

/// Random inputs for every user input (and every persistent input without
/// an initializer) of \p graph, drawn from each consumer's valid domain:
/// positive for log/sqrt/rsqrt/pow bases, in range for gather, embedding,
/// one_hot and cross_entropy indices, bools true with probability
/// \p boolDensity (0 and 1 give none and all); symbolic dims get random
/// sizes within their bounds. Deterministic in \p seed.
/// False when they do not fit in \p limits.memoryBytes.
bool randomInputs(const Graph &graph, uint64_t seed,
                  std::map<std::string, Tensor> &inputs, std::string &error,
                  const Limits &limits = Limits(), double boolDensity = 0.5);

/// safetensors conversions.
bool tensorFromData(const format::TensorData &data, Tensor &out,
                    std::string &error);
format::TensorData tensorToData(const Tensor &tensor);

/// A short text rendering: "f32[2,2] [1, 2, 3, 4]" (elided past \p limit).
std::string formatTensor(const Tensor &tensor, size_t limit = 64);

} // namespace interp
} // namespace cgc

#endif
