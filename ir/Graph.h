//===- Graph.h - Values, nodes and graphs -----------------------*- C++ -*-===//
//
// A Graph owns its input Values and its Nodes in topological order; a Node
// owns its result Values and its region Graphs (the subgraphs of `if` and
// `while`). Values keep use lists so passes can replace and erase. Symbolic
// dims live in the DimTable of the top-level graph; regions share it.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_GRAPH_H
#define CGC_IR_GRAPH_H

#include "ir/Element.h"
#include "ir/Location.h"
#include "ir/Number.h"
#include "ir/Schedule.h"
#include "ir/Ops.h"
#include "ir/Types.h"

#include "llvm/ADT/SmallVector.h"
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace cgc {

class Graph;
class Node;

/// A typed attribute value. `Floats` are doubles; `Number` (a `fill`'s
/// value) and `Values` (a `constant`'s data) are Numbers, integers kept
/// exactly as written.
using Attribute =
    std::variant<int64_t, double, bool, std::string, std::vector<int64_t>,
                 std::vector<double>, DType, std::vector<Dim>, Number,
                 std::vector<Number>>;

struct Use {
  Node *user;
  unsigned operandIndex;
};

class Value {
public:
  Value(std::string name, TensorType type, Node *def, unsigned resultIndex)
      : name(std::move(name)), type(std::move(type)), def(def),
        resultIndex(resultIndex) {}

  const std::string &getName() const { return name; }
  void setName(std::string newName) { name = std::move(newName); }
  const TensorType &getType() const { return type; }
  void setType(TensorType newType) { type = std::move(newType); }
  /// The defining node; null for graph and region inputs.
  Node *getDef() const { return def; }
  unsigned getResultIndex() const { return resultIndex; }
  const std::vector<Use> &uses() const { return useList; }
  bool hasUses() const { return !useList.empty(); }
  /// Points every use of this value at \p other instead.
  void replaceAllUsesWith(Value *other);

private:
  friend class Node;
  friend class Graph;
  std::string name;
  TensorType type;
  Node *def;
  unsigned resultIndex;
  std::vector<Use> useList;
};

/// Signature kinds in the spirit of torch.export.
/// DimSize: the real extent of a symbolic dim in a padded graph (an i64[]
/// the runtime writes before every replay; pad-dynamic-shapes adds it).
enum class InputKind : uint8_t {
  UserInput, Parameter, Buffer, RngState, OptimizerState, DimSize
};
enum class OutputKind : uint8_t {
  Output, Loss, ParameterUpdate, BufferMutation
};
llvm::StringRef inputKindName(InputKind kind);
llvm::StringRef outputKindName(OutputKind kind);
/// True for outputs that replace a persistent input (they take its slot,
/// not one of their own).
inline bool updatesState(OutputKind kind) {
  return kind == OutputKind::ParameterUpdate || kind == OutputKind::BufferMutation;
}
/// True for inputs that live across runs (everything but user inputs and
/// dim sizes).
inline bool isPersistent(InputKind kind) {
  return kind != InputKind::UserInput && kind != InputKind::DimSize;
}

/// How a parameter gets its initial value.
struct Initializer {
  enum class Source : uint8_t { None, Weights, Normal, Uniform, Zeros, Ones, Constant };
  Source source = Source::None;
  std::string tensor; ///< Weights: tensor name in the graph's weights file.
  /// Weights: the value is the stored tensor transposed, its axis i the
  /// stored axis permutation[i] (format/Permutation.h); empty: as stored.
  /// Set by the layout pass, written as the input's "weight_permutation".
  std::vector<int64_t> permutation;
  double a = 0, b = 0; ///< Normal: mean, std. Uniform: low, high. Constant: value.
  uint64_t seed = 0;
  /// Zeros come with no bytes in the artifact: the runtime zeroes the
  /// persistent region before it uploads initial values, and each context
  /// its per-context state (an optimizer's moments are as large as the
  /// parameters). The verifier's state limit and the writer both ask this.
  bool zeroedByRuntime() const { return source == Source::Zeros; }
};

/// An optimizer's hyperparameters (PyTorch's names and defaults).
struct OptimizerHyper {
  double lr = 0.01;
  double momentum = 0;     ///< SGD.
  bool nesterov = false;   ///< SGD, with momentum.
  double weightDecay = 0;  ///< SGD and Adam: added to the gradient; AdamW: decoupled.
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8; ///< Adam, AdamW.
};

/// Parameters whose hyperparameters differ from the declaration's (a
/// torch.optim param group after the first).
struct OptimizerGroup {
  std::vector<std::string> params;
  OptimizerHyper hyper;
};

/// A training model's optimizer (the JSON's "optimizer"; the
/// apply-optimizer pass builds its update). Hyperparameters are the
/// initial values of optimizer_state inputs the caller can overwrite.
struct OptimizerDecl : OptimizerHyper {
  enum class Kind : uint8_t { Sgd, Adam, AdamW };
  Kind kind = Kind::Sgd;
  /// Groups 1.. (group 0 is every parameter no group lists).
  std::vector<OptimizerGroup> groups;
  /// Leave parameters and state as they are when a gradient holds an
  /// inf or NaN (mixed precision's skipped step).
  bool skipNonFinite = false;
  /// Update on every k-th replay with the mean of the k gradients.
  int64_t accumulate = 1;
  /// Scale the gradients so that their global 2-norm is at most this (0:
  /// no clipping), as torch.nn.utils.clip_grad_norm_.
  double maxGradNorm = 0;
  /// A learning-rate schedule the graph runs itself (transformers'
  /// get_linear/cosine_schedule_with_warmup): the declared rates times
  /// its factor at the update's index.
  enum class LrSchedule : uint8_t { Constant, Linear, Cosine };
  LrSchedule lrSchedule = LrSchedule::Constant;
  int64_t warmupSteps = 0, totalSteps = 0;
  Location loc;
};

struct GraphInput {
  Value *value;
  InputKind kind = InputKind::UserInput;
  Initializer init;
  Location loc;
  /// Persistent state that each context holds its own copy of (`"scope":
  /// "context"`: a KV cache, a stream's position), in the context's arena
  /// from its initializer, rather than one copy in the engine.
  bool perContext = false;
};

struct GraphOutput {
  std::string name;
  Value *value;
  OutputKind kind = OutputKind::Output;
  std::string target; ///< The updated input, for updates and mutations.
  Location loc;
};

class Node {
public:
  Node(OpKind op, std::string name, Location loc)
      : op(op), name(std::move(name)), loc(loc) {}
  ~Node();
  Node(const Node &) = delete;
  Node &operator=(const Node &) = delete;

  OpKind getOp() const { return op; }
  const OpInfo &info() const { return opInfo(op); }
  const std::string &getName() const { return name; }
  void setName(std::string newName) { name = std::move(newName); }
  Location getLoc() const { return loc; }
  /// The user's source location (`loc` in the JSON), e.g. "model.py:12".
  const std::string &getSourceLoc() const { return sourceLoc; }
  void setSourceLoc(std::string text) { sourceLoc = std::move(text); }
  Graph *getParent() const { return parent; }

  unsigned numOperands() const { return operands.size(); }
  Value *operand(unsigned i) const { return operands[i]; }
  llvm::ArrayRef<Value *> getOperands() const { return operands; }
  void addOperand(Value *value);
  void setOperand(unsigned i, Value *value);
  /// Removes operand \p i; the later operands move down one place.
  void eraseOperand(unsigned i);
  void dropOperands();

  unsigned numResults() const { return results.size(); }
  Value *result(unsigned i = 0) const { return results[i].get(); }
  Value *addResult(std::string name, TensorType type);
  /// Removes result \p i, which must be unused; the later results move
  /// down one place.
  void eraseResult(unsigned i);

  const std::map<std::string, Attribute> &attrs() const { return attributes; }
  void setAttr(const std::string &key, Attribute value) {
    attributes[key] = std::move(value);
  }
  const Attribute *attr(llvm::StringRef key) const;
  int64_t intAttr(llvm::StringRef key, int64_t fallback) const;
  double floatAttr(llvm::StringRef key, double fallback) const;
  bool boolAttr(llvm::StringRef key, bool fallback) const;
  std::string strAttr(llvm::StringRef key, llvm::StringRef fallback) const;
  std::vector<int64_t> intsAttr(llvm::StringRef key) const;

  /// How the node runs (ir/Schedule.h): set by the schedule pass or read
  /// from the JSON; null for a node that has none.
  const Schedule *schedule() const { return record ? &*record : nullptr; }
  void setSchedule(Schedule s) { record = std::move(s); }
  void clearSchedule() { record.reset(); }

  unsigned numRegions() const { return regions.size(); }
  Graph &region(unsigned i) const { return *regions[i]; }
  Graph &addRegion();

private:
  friend class Graph;
  OpKind op;
  std::string name;
  Location loc;
  std::string sourceLoc;
  Graph *parent = nullptr;
  llvm::SmallVector<Value *, 4> operands;
  std::vector<std::unique_ptr<Value>> results;
  std::map<std::string, Attribute> attributes;
  std::optional<Schedule> record;
  std::vector<std::unique_ptr<Graph>> regions;
};

class Graph {
public:
  /// A top-level graph; \p parentNode is set for regions.
  explicit Graph(Node *parentNode = nullptr) : parentNode(parentNode) {}
  ~Graph();
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  /// A deep copy, independent of this graph: inputs (with kinds,
  /// initializers and locations), nodes (with attributes, locations and
  /// regions), outputs, the dims table and the name, doc and weights
  /// fields. The copy is a top-level graph, also when this is a region.
  std::unique_ptr<Graph> clone() const;

  std::string name;
  std::string doc;
  /// Declared by a training model (top-level graphs only).
  llvm::Optional<OptimizerDecl> optimizer;
  int64_t formatVersion = 1;
  std::string weightsFile; ///< Relative to the IR file, as written.
  std::string weightsPath; ///< Resolved path, for loading.
  /// Input or output name -> the name it had in the model an importer read
  /// (where the IR's name rules made it rename; top-level graphs only).
  std::map<std::string, std::string> sourceNames;
  /// The artifact's further top-level graphs (`entries`; top-level graphs
  /// only): each has this graph's inputs and outputs (names, kinds,
  /// initializers, targets and types) and nodes of its own, so every graph
  /// of the artifact shares one memory layout and one state; run by name.
  std::vector<std::unique_ptr<Graph>> entries;

  bool isRegion() const { return parentNode != nullptr; }
  Node *getParentNode() const { return parentNode; }
  Graph &root();
  const Graph &root() const;
  DimTable &dims() { return root().dimTable; }
  const DimTable &dims() const { return root().dimTable; }

  Value *addInput(std::string name, TensorType type);
  llvm::ArrayRef<GraphInput> inputs() const { return inputList; }
  GraphInput &input(unsigned i) { return inputList[i]; }
  /// Removes input \p i, which must be unused; the later inputs move down
  /// one place.
  void eraseInput(unsigned i);

  /// Appends a node; the caller keeps topological order.
  Node *append(std::unique_ptr<Node> node);
  /// Inserts \p node before \p before.
  Node *insertBefore(Node *before, std::unique_ptr<Node> node);
  /// Erases a node whose results are unused.
  void erase(Node *node);
  /// Erases every node of \p nodes at once, in time linear in the graph
  /// (a pass that removes many nodes calls this once, not erase per
  /// node). Their operands are dropped first; no node outside them may
  /// use their results.
  void erase(llvm::ArrayRef<Node *> nodes);
  const std::vector<std::unique_ptr<Node>> &nodes() const { return nodeList; }
  /// Reorders the nodes; \p order must be a permutation of nodes().
  void setNodeOrder(llvm::ArrayRef<Node *> order);
  unsigned indexOf(const Node *node) const;

  std::vector<GraphOutput> outputs;

  /// Whether \p value is one of this graph's outputs.
  bool isOutput(const Value *value) const;
  /// Points every use of \p from, and every output that is \p from, at
  /// \p to.
  void replaceAllUsesWith(Value *from, Value *to);

  /// Finds a value visible at the end of this graph by name (inputs and
  /// node results of this graph only).
  Value *lookupValue(llvm::StringRef valueName) const;

private:
  Node *parentNode;
  DimTable dimTable;
  std::vector<std::unique_ptr<Value>> inputValues;
  std::vector<GraphInput> inputList;
  std::vector<std::unique_ptr<Node>> nodeList;
};

/// The element (of \p value's dtype) of a `constant` or `fill` whose
/// elements are all equal (a splat), or None for any other value.
llvm::Optional<Element> splatConstant(const Value *value);

} // namespace cgc

#endif
