//===- Verifier.cpp - Structural and type invariants -------------------------===//
#include "ir/Verifier.h"

#include "ir/TypeRules.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ErrorHandling.h"

using namespace cgc;

static bool attrMatches(AttrKind kind, const Attribute &a) {
  switch (kind) {
  case AttrKind::Int: return std::holds_alternative<int64_t>(a);
  case AttrKind::Float: return std::holds_alternative<double>(a);
  case AttrKind::Bool: return std::holds_alternative<bool>(a);
  case AttrKind::Str: return std::holds_alternative<std::string>(a);
  case AttrKind::Ints: return std::holds_alternative<std::vector<int64_t>>(a);
  case AttrKind::Floats: return std::holds_alternative<std::vector<double>>(a);
  case AttrKind::Number: return std::holds_alternative<Number>(a);
  case AttrKind::Values: return std::holds_alternative<std::vector<Number>>(a);
  case AttrKind::DType: return std::holds_alternative<DType>(a);
  case AttrKind::Shape: return std::holds_alternative<std::vector<Dim>>(a);
  }
  llvm_unreachable("invalid AttrKind");
}

namespace {
class Verifier {
public:
  explicit Verifier(DiagnosticEngine &diag) : diag(diag) {}
  bool verify(Graph &g);

private:
  bool verifyNode(Node &n, const llvm::DenseSet<Value *> &visible);
  /// The size limits (docs/ir.md), checked before anything is allocated.
  /// \p node: the node that defines \p v (its error then starts with
  /// `node 'n' (op): `, as every error about a node does), or null for
  /// an input at \p loc.
  bool checkSize(const Value *v, const DimTable &dims, Location loc,
                 const Node *node = nullptr);
  bool checkPersistentBytes(const GraphInput &in, const DimTable &dims);
  DiagnosticEngine &diag;
  uint64_t persistentBytes = 0;
};

/// Bytes of \p type at its largest extents; false when that overflows.
bool tensorBytes(const TensorType &type, const DimTable &dims,
                 uint64_t &bytes) {
  bytes = dtypeSize(type.dtype);
  for (Dim d : type.dims) {
    int64_t extent = d.isStatic() ? d.extent() : dims.upperBound(d);
    if (extent < 0 ||
        __builtin_mul_overflow(bytes, uint64_t(extent), &bytes))
      return false;
  }
  return true;
}
} // namespace

bool Verifier::verifyNode(Node &n, const llvm::DenseSet<Value *> &visible) {
  const OpInfo &info = n.info();
  int operands = n.numOperands();
  if (operands < info.minOperands ||
      (info.maxOperands >= 0 && operands > info.maxOperands)) {
    diag.nodeError(n, "has " + llvm::Twine(operands) + " operands");
    return false;
  }
  for (unsigned i = 0; i < n.numOperands(); ++i)
    if (!visible.count(n.operand(i))) {
      diag.nodeError(n, "operand #" + llvm::Twine(i) + " ('" +
                            n.operand(i)->getName() +
                            "') is not defined before its use");
      return false;
    }
  for (const AttrSpec &spec : attrSpecs(n.getOp())) {
    const Attribute *a = n.attr(spec.name);
    if ((!a && !spec.optional) || (a && !attrMatches(spec.kind, *a))) {
      diag.nodeError(n, "attribute '" + spec.name + "' is missing or not " +
                            attrKindName(spec.kind));
      return false;
    }
  }
  for (const auto &entry : n.attrs())
    if (!findAttrSpec(n.getOp(), entry.first)) {
      diag.nodeError(n, "has unknown attribute '" + entry.first + "'");
      return false;
    }
  if (n.numRegions() != regionNames(n.getOp()).size()) {
    diag.nodeError(n, "has " + llvm::Twine(n.numRegions()) + " regions");
    return false;
  }
  for (unsigned i = 0; i < n.numRegions(); ++i)
    if (!verify(n.region(i)))
      return false;
  llvm::SmallVector<TensorType, 2> types;
  if (!inferResultTypes(n, types, diag))
    return false;
  if (types.size() != n.numResults()) {
    diag.nodeError(n, "has " + llvm::Twine(n.numResults()) +
                          " results; its op gives " + llvm::Twine(types.size()));
    return false;
  }
  const DimTable &dims = n.getParent()->dims();
  for (unsigned r = 0; r < types.size(); ++r)
    if (types[r] != n.result(r)->getType()) {
      diag.nodeError(n, "result #" + llvm::Twine(r) + " has type " +
                            typeToString(n.result(r)->getType(), dims) +
                            " but its op gives " +
                            typeToString(types[r], dims));
      return false;
    }
  return true;
}

bool Verifier::checkSize(const Value *v, const DimTable &dims, Location loc,
                         const Node *node) {
  uint64_t bytes;
  if (tensorBytes(v->getType(), dims, bytes) && bytes <= kMaxTensorBytes)
    return true;
  std::string message = "value '" + v->getName() + "' (" +
                        typeToString(v->getType(), dims) +
                        ") is larger than the " +
                        std::to_string(kMaxTensorBytes >> 30) +
                        " GiB cgc takes for one tensor";
  if (node)
    diag.nodeError(*node, message);
  else
    diag.error(loc, message);
  return false;
}

/// State with a seeded initializer ships its initial values in the
/// artifact, which is read whole (at most 1 GiB). State from the weights
/// file is bounded by that file; the compiler leaves it beside the artifact
/// when the artifact would pass its limit, and state of zeros ships no
/// bytes: the runtime zeroes it (driver/ArtifactWriter.cpp).
bool Verifier::checkPersistentBytes(const GraphInput &in,
                                    const DimTable &dims) {
  uint64_t bytes = 0;
  if (!isPersistent(in.kind) || in.init.source == Initializer::Source::None ||
      in.init.source == Initializer::Source::Weights ||
      in.init.zeroedByRuntime() ||
      !tensorBytes(in.value->getType(), dims, bytes))
    return true;
  persistentBytes += bytes;
  if (persistentBytes <= kMaxInitializedBytes)
    return true;
  diag.error(in.loc, "input '" + in.value->getName() +
                         "' brings the model's initialized state to " +
                         llvm::Twine(persistentBytes) + " bytes; an artifact "
                         "holds at most " +
                         llvm::Twine(kMaxInitializedBytes >> 30) + " GiB");
  return false;
}

bool Verifier::verify(Graph &g) {
  llvm::DenseSet<Value *> visible;
  llvm::StringSet<> names;
  auto define = [&](Value *v, Location loc) {
    visible.insert(v);
    if (names.insert(v->getName()).second)
      return true;
    diag.error(loc, "value '" + v->getName() + "' is defined twice");
    return false;
  };
  if (g.nodes().size() > kMaxNodesPerGraph) {
    diag.nodeError(*g.nodes()[kMaxNodesPerGraph],
                   "is node " + llvm::Twine(kMaxNodesPerGraph + 1) +
                       " of its graph; cgc takes at most " +
                       llvm::Twine(kMaxNodesPerGraph) + " per graph");
    return false;
  }
  for (const GraphInput &in : g.inputs())
    if (!define(in.value, in.loc) || !checkSize(in.value, g.dims(), in.loc) ||
        (!g.isRegion() && !checkPersistentBytes(in, g.dims())))
      return false;
  for (const auto &node : g.nodes()) {
    if (node->getParent() != &g) {
      diag.nodeError(*node, "has a wrong parent graph");
      return false;
    }
    if (!verifyNode(*node, visible))
      return false;
    for (unsigned r = 0; r < node->numResults(); ++r)
      if (!define(node->result(r), node->getLoc()) ||
          !checkSize(node->result(r), g.dims(), node->getLoc(), node.get()))
        return false;
  }
  if (!g.isRegion() && g.outputs.empty()) {
    diag.error({}, "graph '" + g.name + "' has no outputs");
    return false;
  }
  for (const GraphOutput &o : g.outputs)
    if (!visible.count(o.value)) {
      diag.error(o.loc, "output '" + o.name + "' refers to a value that is "
                                               "not defined in its graph");
      return false;
    }
  return true;
}

bool cgc::verifyGraph(Graph &graph, DiagnosticEngine &diag) {
  bool ok = Verifier(diag).verify(graph);
  for (const auto &entry : graph.entries)
    ok = Verifier(diag).verify(*entry) && ok;
  return ok;
}
