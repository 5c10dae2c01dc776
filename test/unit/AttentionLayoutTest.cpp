//===- AttentionLayoutTest.cpp - Head-split views against the interpreter --===//
//
// composedView (target/AttentionLayout.h) says where each element of an
// attention operand lies in the tensor its chain of transposes, reshapes
// and slices starts from. Here each chain, as models write it, runs in the
// interpreter on a base whose every element holds its own index, and each
// element of the operand must be the base's element at offset + o * outer
// + h * head + s * row + d. Chains that are no view (a reshape splitting a
// mode its size does not divide, a transpose that moves the last axis)
// must give none.
//
//===----------------------------------------------------------------------===//
#include "InterpreterTesting.h"
#include "target/AttentionLayout.h"

using namespace cgc;
using namespace cgc::interp;

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Reads a graph of input `x` (f32 \p shape) and \p nodes whose output
/// `y` is the operand; checks that composedView(y) starts from the value
/// named \p base (none when empty) and agrees with the interpreter.
void checkChain(const std::vector<int64_t> &shape, const std::string &nodes,
                const std::string &base) {
  std::string model = R"({"format_version": 1, "name": "chain", "inputs": [{"name": "x",
    "dtype": "f32", "shape": )" + shapeText(shape) + R"(}], "nodes": [)" + nodes +
                      R"(], "outputs": ["y"]})";
  testsupport::TestGraph chain;
  ASSERT_TRUE(chain.read(model)) << chain.messages;
  Graph *graph = chain.graph.get();
  const Value *y = graph->lookupValue("y");
  llvm::Optional<AttentionView> view = composedView(y);
  ASSERT_EQ(bool(view), !base.empty()) << nodes;
  if (!view)
    return;
  ASSERT_EQ(view->base->getName(), base) << nodes;
  // The base's elements hold their own index; the interpreter computes
  // the base from x (x itself, or a node's result) and then y.
  graph->outputs.front().value = const_cast<Value *>(view->base);
  Tensor x(DType::F32, shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.setReal(i, double(i));
  const Tensor b = chain.run({{"x", x}}).front().second;
  graph->outputs.front().value = const_cast<Value *>(y);
  const Tensor got = chain.run({{"x", x}}).front().second;
  std::vector<int64_t> dims = got.shape;
  size_t r = dims.size();
  int64_t outer = 1;
  for (size_t a = 0; a + 3 < r; ++a)
    outer *= dims[a];
  int64_t heads = dims[r - 3], rows = dims[r - 2], width = dims[r - 1], i = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t s = 0; s < rows; ++s)
        for (int64_t d = 0; d < width; ++d, ++i)
          ASSERT_EQ(got.real(i), b.real(view->offset + o * view->outer +
                                        h * view->head + s * view->row + d))
              << nodes << " at " << o << "," << h << "," << s << "," << d;
}

} // namespace

TEST(AttentionLayout, BertHeadSplit) {
  checkChain({2, 16, 64}, R"(
    {"name": "v", "op": "reshape", "inputs": ["x"], "attrs": {"shape": [2, 16, 4, 16]}},
    {"name": "y", "op": "transpose", "inputs": ["v"], "attrs": {"perm": [0, 2, 1, 3]}})",
             "x");
}

TEST(AttentionLayout, SliceOfOneProjection) {
  // GPT-2's split (and merge-products'): the key part of [q | k | v].
  checkChain({2, 16, 192}, R"(
    {"name": "k", "op": "slice", "inputs": ["x"], "attrs": {"axes": [2], "starts": [64], "ends": [128]}},
    {"name": "v", "op": "reshape", "inputs": ["k"], "attrs": {"shape": [2, 16, 4, 16]}},
    {"name": "y", "op": "transpose", "inputs": ["v"], "attrs": {"perm": [0, 2, 1, 3]}})",
             "x");
}

TEST(AttentionLayout, MultiheadAttentionChain) {
  // nn.MultiheadAttention over [S=12, B=2, E=32] with 4 heads of 8: the
  // packed projection unflattened, permuted, squeezed, selected, viewed
  // as [S, B * H, D], transposed and viewed as [B, H, S, D].
  checkChain({12, 2, 96}, R"(
    {"name": "u", "op": "reshape", "inputs": ["x"], "attrs": {"shape": [1, 12, 2, 3, 32]}},
    {"name": "p", "op": "transpose", "inputs": ["u"], "attrs": {"perm": [3, 1, 2, 0, 4]}},
    {"name": "q", "op": "reshape", "inputs": ["p"], "attrs": {"shape": [3, 12, 2, 32]}},
    {"name": "s", "op": "slice", "inputs": ["q"], "attrs": {"axes": [0], "starts": [1], "ends": [2]}},
    {"name": "w", "op": "reshape", "inputs": ["s"], "attrs": {"shape": [12, 8, 8]}},
    {"name": "t", "op": "transpose", "inputs": ["w"], "attrs": {"perm": [1, 0, 2]}},
    {"name": "y", "op": "reshape", "inputs": ["t"], "attrs": {"shape": [2, 4, 12, 8]}})",
             "x");
}

TEST(AttentionLayout, Rank5GroupedLeadingDims) {
  checkChain({3, 2, 7, 40}, R"(
    {"name": "v", "op": "reshape", "inputs": ["x"], "attrs": {"shape": [3, 2, 7, 5, 8]}},
    {"name": "y", "op": "transpose", "inputs": ["v"], "attrs": {"perm": [0, 1, 3, 2, 4]}})",
             "x");
}

TEST(AttentionLayout, SteppedSliceOfRows) {
  // Every other row: a row stride of two rows.
  checkChain({2, 4, 10, 16}, R"(
    {"name": "y", "op": "slice", "inputs": ["x"], "attrs": {"axes": [2], "starts": [1], "ends": [10], "steps": [2]}})",
             "x");
}

TEST(AttentionLayout, NoViewOfTheInput) {
  // Rows of 16 made of two rows of 8 that are not adjacent: no view of x;
  // the transpose's result (computed) is the base.
  checkChain({2, 16, 2, 8}, R"(
    {"name": "t", "op": "transpose", "inputs": ["x"], "attrs": {"perm": [0, 2, 1, 3]}},
    {"name": "y", "op": "reshape", "inputs": ["t"], "attrs": {"shape": [2, 2, 8, 16]}})",
             "t");
  // The width is no longer contiguous: no view at all.
  checkChain({2, 4, 16, 8}, R"(
    {"name": "y", "op": "transpose", "inputs": ["x"], "attrs": {"perm": [0, 1, 3, 2]}})",
             "");
}
