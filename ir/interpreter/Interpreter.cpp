//===- Interpreter.cpp - Graph walk, inputs, `if` and `while` ----------------===//
//
// Walks the nodes of a graph in order, keeping one Tensor per Value. Regions
// run as graphs of their own whose inputs are bound to the explicit
// operands: `if` runs `then` or `else` with operands 1..n; `while` runs
// `cond` on the carried values and, while it gives true (and fewer than
// max_iterations iterations ran), replaces them with `body`'s outputs.
//
//===----------------------------------------------------------------------===//
#include "ir/interpreter/Interpreter.h"

#include "ir/interpreter/Kernels.h"

#include "llvm/Support/ErrorHandling.h"
#include <unordered_map>

using namespace cgc;
using namespace cgc::interp;

void DimEnv::bind(llvm::ArrayRef<Dim> dims, const Shape &actual,
                  const std::string &what) {
  if (dims.size() != actual.size())
    fail(what + " has rank " + std::to_string(actual.size()) + ", expected " +
         std::to_string(dims.size()));
  for (size_t i = 0; i < dims.size(); ++i) {
    Dim d = dims[i];
    if (d.isStatic()) {
      if (d.extent() != actual[i])
        fail(what + " has shape " + shapeString(actual) + ", expected " +
             shapeToString(dims, table));
      continue;
    }
    const SymbolicDim &sym = table.get(d.symbolIndex());
    auto [it, inserted] = values.try_emplace(d.symbolIndex(), actual[i]);
    if (!inserted && it->second != actual[i])
      fail(what + " has shape " + shapeString(actual) + ", but dim '" +
           sym.name + "' is already " + std::to_string(it->second));
    if (inserted && (actual[i] < sym.min || actual[i] > sym.max))
      fail(what + " has shape " + shapeString(actual) + ": dim '" + sym.name +
           "' = " + std::to_string(actual[i]) + " is outside [" +
           std::to_string(sym.min) + ", " + std::to_string(sym.max) + "]");
  }
}

int64_t DimEnv::resolve(Dim dim) const {
  if (dim.isStatic())
    return dim.extent();
  auto it = values.find(dim.symbolIndex());
  if (it == values.end())
    fail("symbolic dim '" + table.get(dim.symbolIndex()).name +
         "' has no size yet (no input carries it)");
  return it->second;
}

Shape DimEnv::resolve(llvm::ArrayRef<Dim> dims) const {
  Shape out;
  for (Dim d : dims)
    out.push_back(resolve(d));
  return out;
}

namespace {
class Runner {
public:
  Runner(const DimTable &table, const Limits &limits, ControlFlowTrace *trace,
         Collectives *ranks)
      : env(table), limits(limits), trace(trace), ranks(ranks) {}
  std::vector<Tensor> runRegion(const Graph &graph,
                                std::vector<Tensor> arguments);
  std::vector<Tensor> runNode(const Node &node, const Operands &in);
  std::vector<Tensor> runControlFlow(const Node &node, const Operands &in);
  DimEnv env;
  const Limits &limits;
  ControlFlowTrace *trace;
  Collectives *ranks;
  const Node *failedNode = nullptr; ///< The innermost node that failed.
  std::string failedDetail;
};
} // namespace

static std::vector<Tensor> copies(Operands::const_iterator first,
                                  Operands::const_iterator last) {
  std::vector<Tensor> out;
  for (; first != last; ++first)
    out.push_back(**first);
  return out;
}

std::vector<Tensor> Runner::runRegion(const Graph &graph,
                                      std::vector<Tensor> arguments) {
  std::unordered_map<const Value *, Tensor> values;
  for (size_t i = 0; i < arguments.size(); ++i)
    values[graph.inputs()[i].value] = std::move(arguments[i]);
  for (const auto &node : graph.nodes()) {
    Operands in;
    for (Value *v : node->getOperands()) {
      auto it = values.find(v);
      if (it == values.end())
        fail("node '" + node->getName() + "': operand '" + v->getName() +
             "' has no value");
      in.push_back(&it->second);
    }
    std::vector<Tensor> results;
    try {
      results = runNode(*node, in);
    } catch (const EvalError &e) {
      std::string where = node->getSourceLoc().empty()
                              ? ""
                              : " (" + node->getSourceLoc() + ")";
      std::string msg = e.what();
      if (failedNode)
        throw;
      failedNode = node.get();
      failedDetail = msg + where;
      fail("node '" + node->getName() + "' (" + mnemonic(node->getOp()).str() +
           ")" + where + ": " + msg);
    }
    if (node->info().has(SyncPoint))
      for (Dim d : node->result()->getType().dims)
        if (!d.isStatic() && env.dims().get(d.symbolIndex()).dataDependent)
          env.unbind(d.symbolIndex());
    for (unsigned r = 0; r < node->numResults(); ++r) {
      const TensorType &type = node->result(r)->getType();
      if (results[r].dtype != type.dtype)
        fail("node '" + node->getName() + "': interpreter produced " +
             results[r].typeString() + " for a " +
             dtypeName(type.dtype).str() + " result");
      env.bind(type.dims, results[r].shape,
               "node '" + node->getName() + "': result");
      values[node->result(r)] = std::move(results[r]);
    }
  }
  std::vector<Tensor> outputs;
  for (const GraphOutput &o : graph.outputs)
    outputs.push_back(values.at(o.value));
  return outputs;
}

std::vector<Tensor> Runner::runControlFlow(const Node &node,
                                          const Operands &in) {
  switch (node.getOp()) {
  case OpKind::If: {
    bool then = in[0]->nonzero(0);
    if (trace)
      trace->ifThen[node.getName()].push_back(then);
    return runRegion(node.region(then ? 0 : 1),
                     copies(in.begin() + 1, in.end()));
  }
  case OpKind::While: {
    std::vector<Tensor> carried = copies(in.begin(), in.end());
    // A loop stops with an error after limits.whileTrips trips unless its
    // max_iterations is smaller (then it stops there, as the device does).
    const Attribute *maxAttr = node.attr("max_iterations");
    int64_t bound = node.intAttr("max_iterations", limits.whileTrips);
    bool bounded = maxAttr && bound <= limits.whileTrips;
    int64_t limit = bounded ? bound : limits.whileTrips;
    int64_t iter = 0;
    for (;; ++iter) {
      if (!runRegion(node.region(0), carried)[0].nonzero(0))
        break;
      if (iter == limit) {
        if (!bounded)
          fail("while '" + node.getName() + "' ran " +
               std::to_string(limit) + " iterations" +
               (maxAttr ? " (the interpreter's limit; its max_iterations is " +
                              std::to_string(bound) + ")"
                        : " without max_iterations") +
               "; giving up");
        break;
      }
      carried = runRegion(node.region(1), std::move(carried));
    }
    if (trace)
      trace->whileTrips[node.getName()].push_back(iter);
    return carried;
  }
#define CGC_CONTROL_FLOW_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("not a control flow op");
}

std::vector<Tensor> Runner::runNode(const Node &node, const Operands &in) {
  switch (node.info().family) {
  case Elementwise: return {evalElementwise(node, in)};
  case Source: return {evalSource(node, env)};
  case Reduction: return {evalReduction(node, in)};
  case Scan: return {evalScan(node, in)};
  case MatMul: return {evalMatMul(node, in)};
  case Attention: return {evalAttention(node, in)};
  case Convolution: return {evalConvolution(node, in)};
  case Movement: return {evalMovement(node, in, env)};
  case Normalization: case Loss: case Random: return {evalNN(node, in)};
  case SyncPoint: return {evalSyncPoint(node, in)};
  case Collective: return evalCollective(node, in, ranks);
  case ControlFlow: return runControlFlow(node, in);
  case Fused:
    // The region's inputs are the operands and its outputs the results.
    return runRegion(node.region(0), copies(in.begin(), in.end()));
  }
  llvm_unreachable("invalid OpFamily");
}

bool interp::runGraph(const Graph &graph,
                      const std::map<std::string, Tensor> &inputs,
                      NamedTensors &outputs, RunError &error,
                      const Limits &limits, ControlFlowTrace *trace,
                      Collectives *ranks) {
  outputs.clear();
  error = RunError();
  BudgetScope budget(limits.memoryBytes);
  ExactFloatsScope exact(limits.exactFloats);
  Runner runner(graph.dims(), limits, trace, ranks);
  std::string initError;
  format::TensorMap weights;
  std::vector<Tensor> arguments;
  try {
    for (const GraphInput &in : graph.inputs()) {
      const std::string &name = in.value->getName();
      const TensorType &type = in.value->getType();
      std::string what = "input '" + name + "'";
      auto it = inputs.find(name);
      Tensor t;
      if (it != inputs.end()) {
        t = it->second;
        if (t.dtype != type.dtype)
          fail(what + " is " + t.typeString() + ", expected " +
               typeToString(type, graph.dims()));
        t.round();
      } else if (!isPersistent(in.kind)) {
        fail(what + " (" + typeToString(type, graph.dims()) +
             ") is missing from the inputs");
      } else {
        t = Tensor(type.dtype, runner.env.resolve(type.dims));
        std::vector<Element> init;
        if (in.init.source != Initializer::Source::None) {
          if (!initialValue(graph, in, init, initError, &weights))
            fail(what + ": " + initError);
          t.data.assign(init.begin(), init.end());
        }
      }
      runner.env.bind(type.dims, t.shape, what);
      arguments.push_back(std::move(t));
    }
    std::vector<Tensor> results = runner.runRegion(graph, std::move(arguments));
    for (size_t i = 0; i < results.size(); ++i)
      outputs.emplace_back(graph.outputs[i].name, std::move(results[i]));
  } catch (const EvalError &e) {
    outputs.clear();
    error.message = e.what();
    error.node = runner.failedNode;
    error.detail = runner.failedNode ? runner.failedDetail : error.message;
    return false;
  }
  return true;
}
