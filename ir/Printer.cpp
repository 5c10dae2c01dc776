//===- Printer.cpp - The text form -------------------------------------------===//
//
//   graph @name(%x: f32[B,8], %w: f32[8,8] parameter) dims(B = 1..64) {
//     %t0 = matmul %x, %w {transpose_b = true} : f32[B,8]
//     return y = %t0
//   }
//
//===----------------------------------------------------------------------===//
#include "ir/Printer.h"

#include "llvm/Support/ErrorHandling.h"
#include <cmath>
#include <nlohmann/json.hpp>

using namespace cgc;

std::string cgc::formatDouble(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  return nlohmann::json(value).dump();
}

namespace {
struct AttrText {
  const DimTable &dims;
  std::string operator()(int64_t v) const { return std::to_string(v); }
  std::string operator()(double v) const { return formatDouble(v); }
  std::string operator()(Number v) const {
    return v.isInt() ? std::to_string(v.integer()) : formatDouble(v.real());
  }
  std::string operator()(bool v) const { return v ? "true" : "false"; }
  std::string operator()(const std::string &v) const {
    return nlohmann::json(v).dump();
  }
  std::string operator()(DType v) const { return dtypeName(v).str(); }
  std::string operator()(const std::vector<Dim> &v) const {
    return shapeToString(v, dims);
  }
  template <typename T> std::string operator()(const std::vector<T> &v) const {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i)
      out += (i ? ", " : "") + (*this)(v[i]);
    return out + "]";
  }
};

class TextPrinter {
public:
  TextPrinter(const DimTable &dims, llvm::raw_ostream &os) : dims(dims), os(os) {}

  void printTop(const Graph &g);

private:
  std::string type(const Value *v) const { return typeToString(v->getType(), dims); }
  void printBody(const Graph &g, unsigned indent);
  void printNode(const Node &n, unsigned indent);
  void printValueList(llvm::ArrayRef<Value *> values);

  const DimTable &dims;
  llvm::raw_ostream &os;
};
} // namespace

std::string cgc::formatAttrs(const Node &node) {
  if (node.attrs().empty())
    return "";
  AttrText text{node.getParent()->dims()};
  std::string out = " {";
  bool first = true;
  for (const auto &[key, value] : node.attrs()) {
    out += (first ? "" : ", ") + key + " = " + std::visit(text, value);
    first = false;
  }
  return out + "}";
}

static std::string initText(const Initializer &init) {
  using S = Initializer::Source;
  switch (init.source) {
  case S::None: return "";
  case S::Weights: {
    std::string text = " weight(\"" + init.tensor + "\"";
    for (size_t i = 0; i < init.permutation.size(); ++i)
      text += (i ? ", " : ", permutation = [") + std::to_string(init.permutation[i]) +
              (i + 1 == init.permutation.size() ? "]" : "");
    return text + ")";
  }
  case S::Zeros: return " init=zeros";
  case S::Ones: return " init=ones";
  case S::Constant: return " init=constant(" + formatDouble(init.a) + ")";
  case S::Normal:
  case S::Uniform:
    return std::string(init.source == S::Normal ? " init=normal(" : " init=uniform(") +
           formatDouble(init.a) + ", " + formatDouble(init.b) +
           ", seed=" + std::to_string(init.seed) + ")";
  }
  llvm_unreachable("invalid Initializer::Source");
}

void TextPrinter::printValueList(llvm::ArrayRef<Value *> values) {
  for (size_t i = 0; i < values.size(); ++i)
    os << (i ? ", " : "") << "%" << values[i]->getName();
}

void TextPrinter::printNode(const Node &n, unsigned indent) {
  os.indent(indent);
  for (unsigned r = 0; r < n.numResults(); ++r)
    os << (r ? ", " : "") << "%" << n.result(r)->getName();
  os << " = " << mnemonic(n.getOp());
  if (n.numOperands())
    os << " ";
  printValueList(n.getOperands());
  os << formatAttrs(n) << " :";
  for (unsigned r = 0; r < n.numResults(); ++r)
    os << (r ? ", " : " ") << type(n.result(r));
  if (!n.getSourceLoc().empty())
    os << " loc(\"" << n.getSourceLoc() << "\")";
  if (const Schedule *s = n.schedule())
    os << " schedule " << formatSchedule(*s);
  if (!n.numRegions()) {
    os << "\n";
    return;
  }
  os << " {\n";
  llvm::ArrayRef<llvm::StringRef> names = regionNames(n.getOp());
  for (unsigned i = 0; i < n.numRegions(); ++i) {
    const Graph &region = n.region(i);
    os.indent(indent) << names[i] << "(";
    for (size_t k = 0; k < region.inputs().size(); ++k)
      os << (k ? ", " : "") << "%" << region.inputs()[k].value->getName()
         << ": " << type(region.inputs()[k].value);
    os << "):\n";
    printBody(region, indent + 2);
    os.indent(indent + 2) << "yield";
    for (size_t k = 0; k < region.outputs.size(); ++k)
      os << (k ? ", %" : " %") << region.outputs[k].value->getName();
    os << "\n";
  }
  os.indent(indent) << "}\n";
}

void TextPrinter::printBody(const Graph &g, unsigned indent) {
  for (const auto &node : g.nodes())
    printNode(*node, indent);
}

void TextPrinter::printTop(const Graph &g) {
  os << "graph @" << g.name << "(";
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const GraphInput &in = g.inputs()[i];
    os << (i ? ", " : "") << "%" << in.value->getName() << ": " << type(in.value);
    if (in.kind != InputKind::UserInput)
      os << " " << inputKindName(in.kind);
    os << initText(in.init);
    if (in.perContext)
      os << " scope=context";
  }
  os << ")";
  bool anyDims = false;
  for (const SymbolicDim &d : dims.all()) {
    if (d.dataDependent)
      continue;
    os << (anyDims ? ", " : " dims(") << d.name << " = " << d.min << ".." << d.max;
    for (size_t k = 0; k < d.buckets.size(); ++k)
      os << (k ? "," : " buckets ") << d.buckets[k];
    anyDims = true;
  }
  os << (anyDims ? ") {\n" : " {\n");
  printBody(g, 2);
  os << "  return";
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const GraphOutput &o = g.outputs[i];
    os << (i ? ", " : " ") << o.name << " = %" << o.value->getName();
    if (o.kind != OutputKind::Output)
      os << " (" << outputKindName(o.kind)
         << (o.target.empty() ? "" : " of " + o.target) << ")";
  }
  os << "\n}\n";
}

void cgc::printGraph(const Graph &graph, llvm::raw_ostream &os) {
  TextPrinter(graph.dims(), os).printTop(graph);
  for (const auto &entry : graph.entries) {
    os << "entry ";
    TextPrinter(entry->dims(), os).printTop(*entry);
  }
}
