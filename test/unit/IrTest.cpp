//===- IrTest.cpp - Unit tests for types, shapes and graph edits ------------===//
//
// What lit cannot reach easily: Dim and shape arithmetic, the verifier
// after a bad edit, and the reader and writer on in-memory buffers (use
// lists after graph edits: GraphTest.cpp).
//
//===----------------------------------------------------------------------===//
#include "ir/Builder.h"
#include "ir/Diagnostics.h"
#include "ir/Graph.h"
#include "ir/JsonReader.h"
#include "ir/JsonScanner.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "IrTesting.h"
#include "ir/interpreter/Interpreter.h"
#include "format/ArtifactFormat.h"
#include "format/Safetensors.h"

#include "llvm/Support/MemoryBuffer.h"
#include <gtest/gtest.h>

using namespace cgc;

namespace {

TEST(DTypeTest, NamesAndSizes) {
  const std::pair<DType, unsigned> sizes[] = {
      {DType::F32, 4}, {DType::F16, 2}, {DType::BF16, 2},
      {DType::I32, 4}, {DType::I64, 8}, {DType::Bool, 1}};
  for (auto [dtype, size] : sizes) {
    EXPECT_EQ(dtypeSize(dtype), size) << dtypeName(dtype).str();
    EXPECT_EQ(parseDType(dtypeName(dtype)), dtype);
  }
  EXPECT_EQ(dtypeName(DType::BF16), "bf16");
  EXPECT_FALSE(parseDType("float32"));
  EXPECT_FALSE(parseDType("F32"));
  EXPECT_FALSE(parseDType(""));
  EXPECT_TRUE(isFloat(DType::BF16));
  EXPECT_FALSE(isFloat(DType::I32));
  EXPECT_TRUE(isInteger(DType::I64));
  EXPECT_FALSE(isInteger(DType::Bool));
}

TEST(DTypeTest, FormatsAgreeWithTheIr) {
  const DType all[] = {
#define CGC_DTYPE(Enum, ...) DType::Enum,
#include "format/DTypes.def"
  };
  for (DType dtype : all) {
    std::string name = dtypeName(dtype).str();
    EXPECT_EQ(format::dtypeSize(name), dtypeSize(dtype)) << name;
    std::string st = format::toSafetensorsDtype(name);
    EXPECT_EQ(format::safetensorsDtypeSize(st), dtypeSize(dtype)) << name;
    EXPECT_EQ(format::fromSafetensorsDtype(st), name);
  }
  EXPECT_EQ(format::toSafetensorsDtype("bf16"), "BF16");
  EXPECT_EQ(format::dtypeSize("float32"), 0u);
  EXPECT_EQ(format::toSafetensorsDtype("F32"), "");
  EXPECT_EQ(format::fromSafetensorsDtype("f32"), "");
}

TEST(DimTest, StaticAndSymbolic) {
  Dim four = Dim::fixed(4), zero = Dim::fixed(0), b = Dim::symbol(0);
  EXPECT_TRUE(four.isStatic());
  EXPECT_EQ(four.extent(), 4);
  EXPECT_TRUE(zero.isStatic());
  EXPECT_FALSE(b.isStatic());
  EXPECT_EQ(b.symbolIndex(), 0u);
  EXPECT_EQ(Dim::symbol(7).symbolIndex(), 7u);
  EXPECT_NE(b, zero);
  EXPECT_NE(Dim::symbol(1), Dim::symbol(2));
  EXPECT_EQ(Dim::symbol(3), Dim::symbol(3));

  DimTable table;
  SymbolicDim dim;
  dim.name = "B";
  dim.min = 1;
  dim.max = 64;
  EXPECT_EQ(table.add(dim), 0u);
  EXPECT_EQ(table.lookup("B"), 0u);
  EXPECT_FALSE(table.lookup("S"));
  EXPECT_EQ(table.upperBound(b), 64);
  EXPECT_EQ(table.upperBound(four), 4);
  EXPECT_EQ(dimToString(b, table), "B");
  EXPECT_EQ(dimToString(four, table), "4");
}

TEST(TensorTypeTest, PrintingAndCounts) {
  DimTable table;
  SymbolicDim dim;
  dim.name = "B";
  dim.max = 8;
  unsigned b = table.add(dim);
  TensorType t(DType::F16, {Dim::fixed(4), Dim::symbol(b), Dim::fixed(3)});
  EXPECT_EQ(typeToString(t, table), "f16[4,B,3]");
  EXPECT_FALSE(t.isStatic());
  EXPECT_EQ(t.maxElements(table), 96);
  EXPECT_EQ(t.rank(), 3u);
  TensorType s = TensorType::scalar(DType::Bool);
  EXPECT_EQ(typeToString(s, table), "bool[]");
  EXPECT_TRUE(s.isStatic());
  EXPECT_EQ(s.numElements(), 1);
  EXPECT_EQ(TensorType(DType::I32, {Dim::fixed(0)}).numElements(), 0);
  EXPECT_NE(t, TensorType(DType::F32, t.dims));
  EXPECT_EQ(shapeToString({}, table), "[]");
}

using Shape = llvm::SmallVector<Dim, 4>;

static Shape shape(std::initializer_list<int64_t> extents) {
  Shape out;
  for (int64_t e : extents)
    out.push_back(e < 0 ? Dim::symbol(unsigned(-1 - e)) : Dim::fixed(e));
  return out;
}

TEST(BroadcastTest, Static) {
  EXPECT_EQ(broadcastShapes(shape({2, 3}), shape({3})), shape({2, 3}));
  EXPECT_EQ(broadcastShapes(shape({2, 1}), shape({1, 5})), shape({2, 5}));
  EXPECT_EQ(broadcastShapes(shape({}), shape({4, 1})), shape({4, 1}));
  EXPECT_EQ(broadcastShapes(shape({0}), shape({1})), shape({0}));
  EXPECT_EQ(broadcastShapes(shape({8, 1, 6, 1}), shape({7, 1, 5})),
            shape({8, 7, 6, 5}));
}

TEST(BroadcastTest, Symbolic) {
  // -1 stands for symbol 0 (B), -2 for symbol 1 (S).
  EXPECT_EQ(broadcastShapes(shape({-1, 3}), shape({1, 3})), shape({-1, 3}));
  EXPECT_EQ(broadcastShapes(shape({1}), shape({-1})), shape({-1}));
  EXPECT_EQ(broadcastShapes(shape({-1, -2}), shape({-2})), shape({-1, -2}));
}

TEST(BroadcastTest, Failures) {
  EXPECT_FALSE(broadcastShapes(shape({2, 3}), shape({4, 3})));
  EXPECT_FALSE(broadcastShapes(shape({3}), shape({0})));
  // Two different symbols, or a symbol against a static extent > 1, may
  // differ at run time: no broadcast.
  EXPECT_FALSE(broadcastShapes(shape({-1}), shape({-2})));
  EXPECT_FALSE(broadcastShapes(shape({-1}), shape({4})));
}

TEST(NormalizeAxisTest, Ranges) {
  EXPECT_EQ(normalizeAxis(0, 3), 0u);
  EXPECT_EQ(normalizeAxis(2, 3), 2u);
  EXPECT_EQ(normalizeAxis(-1, 3), 2u);
  EXPECT_EQ(normalizeAxis(-3, 3), 0u);
  EXPECT_FALSE(normalizeAxis(3, 3));
  EXPECT_FALSE(normalizeAxis(-4, 3));
  EXPECT_FALSE(normalizeAxis(0, 0));
  EXPECT_FALSE(normalizeAxis(INT64_MIN, 3));
  EXPECT_FALSE(normalizeAxis(INT64_MAX, 3));
}

TEST(VerifierTest, NodesPerGraphLimit) {
  Graph g;
  g.name = "long";
  TensorType t(DType::F32, {Dim::fixed(1)});
  Value *v = g.addInput("x", t);
  for (size_t i = 0; i <= kMaxNodesPerGraph; ++i) {
    Node *n = g.append(std::make_unique<Node>(OpKind::Relu,
                                              "t" + std::to_string(i),
                                              Location()));
    n->addOperand(v);
    v = n->addResult("t" + std::to_string(i), t);
  }
  g.outputs.push_back({"y", v, OutputKind::Output, "", {}});
  std::string errors;
  llvm::raw_string_ostream os(errors);
  DiagnosticEngine diag(os);
  EXPECT_FALSE(verifyGraph(g, diag));
  EXPECT_NE(os.str().find("node 't1048576' (relu): is node 1048577 of its "
                          "graph; cgc takes at most 1048576 per graph"),
            std::string::npos)
      << os.str();
}

TEST(ReaderTest, JsonValuesLimit) {
  JsonOffsets offsets;
  auto error = scanJson("[1, [2, 3], {\"a\": 4}]", false, 64, 5, offsets);
  ASSERT_TRUE(error.hasValue());
  EXPECT_EQ(error->message, "more than 5 JSON values in one file (cgc's "
                            "limit, about a million nodes)");
  EXPECT_EQ(error->offset, 12u); // the object, the sixth value
  JsonOffsets ok;
  EXPECT_FALSE(scanJson("[1, [2, 3], {\"a\": 4}]", false, 64, 7, ok));
}

TEST(VerifierTest, CatchesUseBeforeDefAfterBadEdit) {
  SmallGraph s;
  // Make a use b's result: b is defined after a.
  s.a->setOperand(0, s.b->result());
  std::string errors;
  llvm::raw_string_ostream os(errors);
  DiagnosticEngine diag(os);
  EXPECT_FALSE(verifyGraph(s.g, diag));
  EXPECT_NE(os.str().find("node 'a' (relu): operand #0 ('b') is not "
                          "defined before its use"),
            std::string::npos)
      << os.str();
}

TEST(VerifierTest, CatchesStaleResultType) {
  SmallGraph s;
  s.b->result()->setType(TensorType(DType::F16, {Dim::fixed(4)}));
  std::string errors;
  llvm::raw_string_ostream os(errors);
  DiagnosticEngine diag(os);
  EXPECT_FALSE(verifyGraph(s.g, diag));
  EXPECT_NE(os.str().find("node 'b' (add): result #0 has type f16[4] but "
                          "its op gives f32[4]"),
            std::string::npos)
      << os.str();
}

static std::unique_ptr<Graph> readString(const std::string &text,
                                         DiagnosticEngine &diag) {
  uint32_t id = diag.addBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "buffer.json"));
  return readGraphBuffer(id, ".", diag, ReadOptions());
}

TEST(ReaderTest, RoundTripThroughAString) {
  const std::string text = R"({
    "format_version": 1, "name": "rt",
    "dims": [{"name": "B", "min": 1, "max": 16, "buckets": [8, 16]}],
    "inputs": [{"name": "x", "dtype": "f32", "shape": ["B", 4]},
               {"name": "w", "kind": "parameter", "dtype": "f32",
                "shape": [3, 4], "init": {"dist": "normal", "std": 0.5}}],
    "nodes": [{"name": "y", "op": "linear", "inputs": ["x", "w"]},
              {"name": "s", "op": "softmax", "inputs": ["y"],
               "attrs": {"axis": -1}, "loc": "m.py:1"}],
    "outputs": ["s"]})";
  std::string errors;
  llvm::raw_string_ostream os(errors);
  DiagnosticEngine diag(os);
  std::unique_ptr<Graph> g = readString(text, diag);
  ASSERT_TRUE(g) << os.str();
  ASSERT_TRUE(verifyGraph(*g, diag)) << os.str();
  std::string json = writeGraphJson(*g);
  std::unique_ptr<Graph> again = readString(json, diag);
  ASSERT_TRUE(again) << os.str();
  EXPECT_EQ(writeGraphJson(*again), json);
  std::string text1, text2;
  llvm::raw_string_ostream p1(text1), p2(text2);
  printGraph(*g, p1);
  printGraph(*again, p2);
  EXPECT_EQ(p1.str(), p2.str());
  EXPECT_NE(p1.str().find("%s = softmax %y {axis = -1} : f32[B,3]"),
            std::string::npos)
      << p1.str();
  EXPECT_FALSE(diag.hasErrors());
}

TEST(ReaderTest, ErrorsAreLocatedAndCounted) {
  std::string errors;
  llvm::raw_string_ostream os(errors);
  DiagnosticEngine diag(os);
  std::unique_ptr<Graph> g = readString(
      "{\"format_version\": 1, \"name\": \"g\", \"inputs\": [],\n"
      " \"nodes\": [{\"name\": \"t\", \"op\": \"relu\", \"inputs\": [\"q\"]}],\n"
      " \"outputs\": [\"t\"]}",
      diag);
  EXPECT_FALSE(g);
  EXPECT_EQ(diag.errorCount(), 1u);
  EXPECT_NE(os.str().find("buffer.json:2:51: error: node 't' (relu): "
                          "operand #0 refers to undefined value 'q'"),
            std::string::npos)
      << os.str();
}

/// A graph with a symbolic dim, a parameter, an `if` and a `while`, source
/// locations and a dead node.
static const char *ControlFlowGraph = R"({
  "format_version": 1, "name": "cf", "doc": "clone me",
  "dims": [{"name": "B", "min": 1, "max": 8}],
  "inputs": [{"name": "p", "dtype": "bool", "shape": []},
             {"name": "x", "dtype": "f32", "shape": ["B", 4]},
             {"name": "w", "kind": "parameter", "dtype": "f32", "shape": [4],
              "init": {"dist": "uniform", "low": -1, "high": 1, "seed": 3}},
             {"name": "n", "dtype": "i64", "shape": []}],
  "nodes": [{"name": "xw", "op": "mul", "inputs": ["x", "w"], "loc": "m.py:3"},
            {"name": "dead", "op": "exp", "inputs": ["x"]},
            {"name": "r", "op": "if", "inputs": ["p", "xw"], "outputs": ["r0"],
             "regions": {
               "then": {"inputs": [{"name": "a", "dtype": "f32", "shape": ["B", 4]}],
                        "nodes": [{"name": "e", "op": "exp", "inputs": ["a"]}],
                        "outputs": ["e"]},
               "else": {"inputs": [{"name": "a", "dtype": "f32", "shape": ["B", 4]}],
                        "nodes": [], "outputs": ["a"]}}},
            {"name": "loop", "op": "while", "inputs": ["n", "r0"],
             "attrs": {"max_iterations": 4}, "outputs": ["n_out", "y"],
             "regions": {
               "cond": {"inputs": [{"name": "i", "dtype": "i64", "shape": []},
                                   {"name": "v", "dtype": "f32", "shape": ["B", 4]}],
                        "nodes": [{"name": "zero", "op": "constant",
                                   "attrs": {"dtype": "i64", "shape": [], "value": 0}},
                                  {"name": "more", "op": "gt", "inputs": ["i", "zero"]}],
                        "outputs": ["more"]},
               "body": {"inputs": [{"name": "i", "dtype": "i64", "shape": []},
                                   {"name": "v", "dtype": "f32", "shape": ["B", 4]}],
                        "nodes": [{"name": "one", "op": "constant",
                                   "attrs": {"dtype": "i64", "shape": [], "value": 1}},
                                  {"name": "i2", "op": "sub", "inputs": ["i", "one"]},
                                  {"name": "v2", "op": "tanh", "inputs": ["v"]}],
                        "outputs": ["i2", "v2"]}}}],
  "outputs": ["y"]})";

static std::string printed(const Graph &g) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printGraph(g, os);
  return os.str();
}

/// Whether any use of a value of \p g is by a node outside \p g's tree.
static bool usedFromOutside(const Graph &g) {
  auto outside = [&](const Value *v) {
    return llvm::any_of(v->uses(), [&](const Use &u) {
      return &u.user->getParent()->root() != &g.root();
    });
  };
  for (const GraphInput &in : g.inputs())
    if (outside(in.value))
      return true;
  for (const auto &node : g.nodes()) {
    for (unsigned r = 0; r < node->numResults(); ++r)
      if (outside(node->result(r)))
        return true;
    for (unsigned k = 0; k < node->numRegions(); ++k)
      if (usedFromOutside(node->region(k)))
        return true;
  }
  return false;
}

TEST(CloneTest, PrintsTheSameAndIsIndependent) {
  std::string errors;
  llvm::raw_string_ostream os(errors);
  DiagnosticEngine diag(os);
  std::unique_ptr<Graph> g = readString(ControlFlowGraph, diag);
  ASSERT_TRUE(g) << os.str();
  std::string original = printed(*g);
  std::unique_ptr<Graph> copy = g->clone();
  EXPECT_EQ(printed(*copy), original);
  EXPECT_EQ(writeGraphJson(*copy), writeGraphJson(*g));
  EXPECT_EQ(copy->doc, "clone me");
  EXPECT_EQ(copy->input(2).kind, InputKind::Parameter);
  EXPECT_EQ(copy->input(2).init.seed, 3u);
  EXPECT_EQ(copy->input(1).loc.offset, g->input(1).loc.offset);
  EXPECT_EQ(copy->nodes()[0]->getSourceLoc(), "m.py:3");
  EXPECT_EQ(copy->nodes()[0]->getLoc().offset, g->nodes()[0]->getLoc().offset);
  EXPECT_TRUE(verifyGraph(*copy, diag)) << os.str();
  EXPECT_FALSE(usedFromOutside(*g));
  EXPECT_FALSE(usedFromOutside(*copy));

  // Edits of the copy leave the original alone.
  Node *dead = copy->nodes()[1].get();
  ASSERT_EQ(dead->getName(), "dead");
  copy->erase(dead);
  copy->name = "changed";
  EXPECT_EQ(printed(*g), original);
  EXPECT_TRUE(verifyGraph(*g, diag)) << os.str();
  EXPECT_TRUE(verifyGraph(*copy, diag)) << os.str();
  EXPECT_EQ(g->nodes().size(), 4u);
  EXPECT_EQ(copy->nodes().size(), 3u);
  EXPECT_EQ(g->lookupValue("x")->uses().size(), 2u);
  EXPECT_EQ(copy->lookupValue("x")->uses().size(), 1u);
}

TEST(BuilderTest, NamesAreUniqueAndTypesInferred) {
  SmallGraph s;
  std::string errors;
  llvm::raw_string_ostream os(errors);
  DiagnosticEngine diag(os);
  GraphBuilder b(s.g, diag);
  s.b->setSourceLoc("m.py:7");
  b.setInsertionPoint(*s.b);
  b.setOrigin(*s.b);
  // "a" is taken by relu's result, so the new node is a_1, then a_2.
  Node *e = b.create(OpKind::Exp, "a", {s.a->result()});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->result()->getName(), "a_1");
  EXPECT_EQ(e->getName(), "a_1");
  EXPECT_EQ(e->getSourceLoc(), "m.py:7");
  EXPECT_EQ(s.g.indexOf(e), 1u);
  Node *c = b.create(OpKind::Lt, "a", {e->result(), s.x});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->result()->getName(), "a_2");
  EXPECT_EQ(c->result()->getType(), TensorType(DType::Bool, {Dim::fixed(4)}));
  Node *f = b.create(OpKind::Fill, "f", {},
                     {{"dtype", DType::I32},
                      {"shape", std::vector<Dim>{Dim::fixed(2), Dim::fixed(3)}},
                      {"value", Number::ofInt(1)}});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->result()->getType(),
            TensorType(DType::I32, {Dim::fixed(2), Dim::fixed(3)}));
  EXPECT_EQ(s.g.indexOf(s.b), 4u);
  EXPECT_TRUE(verifyGraph(s.g, diag)) << os.str();

  // An ill-typed node is reported and not inserted.
  EXPECT_FALSE(b.create(OpKind::Add, "bad", {f->result(), s.x}));
  EXPECT_NE(os.str().find("node 'bad' (add)"), std::string::npos) << os.str();
  EXPECT_EQ(s.g.nodes().size(), 5u);
  EXPECT_FALSE(f->result()->hasUses());
}

TEST(BuilderTest, CloneAndReplaceKeepNames) {
  SmallGraph s;
  std::string errors;
  llvm::raw_string_ostream os(errors);
  DiagnosticEngine diag(os);
  GraphBuilder b(s.g, diag);
  b.setInsertionPoint(*s.b);
  Node *copy = b.clone(*s.b, {s.x, s.x});
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy->getName(), "b_1");
  EXPECT_EQ(copy->getOp(), OpKind::Add);
  b.replace(*s.b, *copy);
  EXPECT_EQ(copy->getName(), "b");
  EXPECT_EQ(copy->result()->getName(), "b");
  EXPECT_EQ(s.g.outputs[0].value, copy->result());
  EXPECT_EQ(s.g.nodes().size(), 2u);
  EXPECT_TRUE(verifyGraph(s.g, diag)) << os.str();
  // The insertion point moved past the erased node: new nodes go last.
  Node *n = b.create(OpKind::Neg, "n", {copy->result()});
  ASSERT_TRUE(n);
  EXPECT_EQ(s.g.indexOf(n), 2u);
}

} // namespace

/// The interpreter's memory budget counts live tensors: runs that fit it
/// succeed again and again (nothing is charged twice or kept), a run that
/// does not fit stops at the node that needed more, and the count returns
/// to where it was once the outputs are gone.
TEST(InterpreterTest, MemoryBudgetCountsLiveTensors) {
  const std::string text = R"({
    "format_version": 1, "name": "budget",
    "inputs": [{"name": "x", "dtype": "f32", "shape": [65536]}],
    "nodes": [{"name": "y", "op": "exp", "inputs": ["x"]},
              {"name": "z", "op": "neg", "inputs": ["y"]}],
    "outputs": ["z"]})";
  std::string errors;
  llvm::raw_string_ostream os(errors);
  DiagnosticEngine diag(os);
  std::unique_ptr<Graph> g = readString(text, diag);
  ASSERT_TRUE(g && verifyGraph(*g, diag)) << os.str();
  const uint64_t before = interp::MemoryBudget::live();
  {
    std::map<std::string, interp::Tensor> inputs;
    std::string error;
    ASSERT_TRUE(interp::randomInputs(*g, 1, inputs, error)) << error;
    interp::Limits fits;
    fits.memoryBytes = uint64_t(4) << 20; // 512 KiB per tensor
    for (int run = 0; run < 10; ++run) {
      interp::NamedTensors outputs;
      interp::RunError runError;
      ASSERT_TRUE(interp::runGraph(*g, inputs, outputs, runError, fits))
          << "run " << run << ": " << runError.message;
    }
    interp::Limits tight;
    // The input and its copy in the run take 1 MiB: no room for y.
    tight.memoryBytes = uint64_t(5) << 18; // 1.25 MiB
    interp::NamedTensors outputs;
    interp::RunError runError;
    EXPECT_FALSE(interp::runGraph(*g, inputs, outputs, runError, tight));
    ASSERT_NE(runError.node, nullptr) << runError.message;
    EXPECT_EQ(runError.node->getName(), "y");
    EXPECT_NE(runError.detail.find("past the interpreter's memory budget"),
              std::string::npos)
        << runError.detail;
  }
  EXPECT_EQ(interp::MemoryBudget::live(), before);
}
