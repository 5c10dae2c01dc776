//===- Lowering.cpp - Graph nodes to kernels, memsets and memcpys ------------===//
//
// Walks the planned top-level nodes in order. Constant data lives in the
// persistent region and reshapes that alias their operand need no step;
// zero fills become memsets; every other supported node becomes one kernel;
// the plan's final copies become memcpys. Unsupported ops and symbolic
// dims get located errors; lowering goes on to report them all.
//
//===----------------------------------------------------------------------===//
#include "codegen/CudaText.h"
#include "codegen/Emitters.h"
#include "passes/Pass.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include <cmath>

using namespace cgc;

static bool isZeroFill(const Node &n) {
  double v;
  if (n.getOp() == OpKind::Fill)
    v = n.floatAttr("value", 0);
  else if (n.getOp() == OpKind::Constant && !isConstantData(n))
    v = std::get<std::vector<double>>(*n.attr("value"))[0];
  else
    return false;
  return v == 0 && !std::signbit(v);
}

static bool isStaticNode(const Node &n, DiagnosticEngine &diag) {
  const DimTable &dims = n.getParent()->dims();
  auto check = [&](const Value *v) {
    if (v->getType().isStatic())
      return true;
    diag.nodeError(n, "value '" + v->getName() + "' has symbolic type " +
                          typeToString(v->getType(), dims) +
                          "; symbolic dims are not supported by codegen yet");
    return false;
  };
  for (const Value *v : n.getOperands())
    if (!check(v))
      return false;
  for (unsigned r = 0; r < n.numResults(); ++r)
    if (!check(n.result(r)))
      return false;
  return true;
}

/// A splat source every user reads as a literal needs no step at all.
static bool isInlinedEverywhere(const Node &n) {
  if (n.numResults() != 1 || !splatConstant(n.result()) ||
      !n.result()->hasUses() || n.getParent()->isOutput(n.result()))
    return false;
  return llvm::all_of(n.result()->uses(), [&](const Use &u) {
    return inlinedSplat(*u.user, n.result()).hasValue();
  });
}

/// Reuses the function of an earlier kernel with the same body, so nodes
/// that differ only in their buffers share one compiled kernel.
static void shareIdenticalFunction(Kernel &kernel,
                                   llvm::StringMap<std::string> &bodies) {
  std::string body = kernel.source;
  size_t at = body.find(" " + kernel.name + "(");
  if (at == std::string::npos)
    return;
  body.replace(at + 1, kernel.name.size(), "@");
  for (size_t c = body.find("//"); c != std::string::npos; c = body.find("//", c))
    body.erase(c, body.find('\n', c) - c); // Comments name IR nodes.
  auto [it, inserted] = bodies.try_emplace(body, kernel.name);
  if (inserted)
    return;
  kernel.name = it->second;
  kernel.source.clear();
}

static std::string sanitize(llvm::StringRef text) {
  std::string out;
  for (char ch : text)
    out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return out;
}

/// Chooses the emitter; false when codegen does not handle the op.
static bool emitKernel(const Node &node, Kernel &kernel) {
  const OpInfo &info = node.info();
  switch (node.getOp()) {
  case OpKind::Fusion: case OpKind::Fill: case OpKind::Iota:
  case OpKind::Constant:
    emitPointwise(node, kernel);
    return true;
  case OpKind::Dropout: emitDropout(node, kernel); return true;
  case OpKind::Sum: case OpKind::Mean: case OpKind::Max: case OpKind::Min:
  case OpKind::ArgMax: case OpKind::CumSum:
    emitReduction(node, kernel);
    return true;
  case OpKind::Softmax: case OpKind::LogSoftmax: case OpKind::LayerNorm:
    emitNormalization(node, kernel);
    return true;
  case OpKind::MseLoss: case OpKind::CrossEntropy:
    emitLoss(node, kernel);
    return true;
  default:
    break;
  }
  if (info.has(Elementwise)) {
    emitPointwise(node, kernel);
    return true;
  }
  if (info.has(Movement) || node.getOp() == OpKind::OneHot) {
    emitMovement(node, kernel);
    return true;
  }
  return false;
}

static void noteDTypes(const Node &node, Program &program) {
  auto note = [&](const Value *v) {
    program.usesHalf |= v->getType().dtype == DType::F16;
    program.usesBFloat16 |= v->getType().dtype == DType::BF16;
  };
  for (const Value *v : node.getOperands())
    note(v);
  for (unsigned r = 0; r < node.numResults(); ++r)
    note(node.result(r));
  for (unsigned k = 0; k < node.numRegions(); ++k)
    for (const auto &n : node.region(k).nodes())
      noteDTypes(*n, program);
}

bool cgc::lowerGraph(const Graph &graph, const MemoryPlan &plan,
                     Program &program, DiagnosticEngine &diag) {
  program = Program();
  bool ok = true;
  llvm::StringSet<> names;
  llvm::StringMap<std::string> bodies;
  for (const GraphInput &in : graph.inputs())
    if (!in.value->getType().isStatic()) {
      diag.error(in.loc, "input '" + in.value->getName() + "' has symbolic type " +
                             typeToString(in.value->getType(), graph.dims()) +
                             "; symbolic dims are not supported by codegen yet");
      ok = false;
    }
  for (const auto &owned : graph.nodes()) {
    const Node &node = *owned;
    if (!isStaticNode(node, diag)) {
      ok = false;
      continue;
    }
    if (isConstantData(node) || plan.aliasOf.count(node.result()) ||
        isInlinedEverywhere(node))
      continue;
    if (isZeroFill(node)) {
      if (valueBytes(node.result()))
        program.steps.push_back({Step::Kind::Memset, 0, node.result(), 0});
      continue;
    }
    Kernel kernel;
    kernel.node = &node;
    std::string base = node.getOp() == OpKind::Fusion
                           ? sanitize(node.getName())
                           : sanitize(mnemonic(node.getOp())) + "_" +
                                 sanitize(node.getName());
    kernel.name = base;
    for (unsigned k = 1; !names.insert(kernel.name).second; ++k)
      kernel.name = base + "_" + std::to_string(k);
    if (!emitKernel(node, kernel)) {
      diag.nodeError(node, "'" + mnemonic(node.getOp()) +
                               "' is not supported by codegen yet");
      ok = false;
      continue;
    }
    shareIdenticalFunction(kernel, bodies);
    noteDTypes(node, program);
    program.steps.push_back({Step::Kind::Kernel,
                             unsigned(program.kernels.size()), nullptr, 0});
    program.kernels.push_back(std::move(kernel));
  }
  for (unsigned i = 0; i < plan.copies.size(); ++i)
    if (plan.buffers[plan.copies[i].buffer].storage.bytes)
      program.steps.push_back({Step::Kind::Memcpy, 0, nullptr, i});
  return ok;
}

std::string cgc::programSource(const Program &program,
                               std::vector<unsigned> *kernelLines) {
  std::string text = cudaPrelude(program.usesHalf, program.usesBFloat16);
  for (const Kernel &k : program.kernels) {
    if (kernelLines)
      kernelLines->push_back(std::count(text.begin(), text.end(), '\n') + 2);
    if (k.source.empty())
      continue; // Shares an earlier kernel's function.
    text += "\n" + k.source;
  }
  return text;
}
