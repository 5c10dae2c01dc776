//===- PaddedGpuTest.cpp - Bucketed graphs at every size, on the GPU -------===//
//
// The padded artifacts staged by stage_cases.py (DIR/padded: one graph per
// bucket of B, pad-dynamic-shapes' masks): one context each runs every
// staged size (1, each bucket edge and one past it, the largest bound),
// each time writing only the real rows behind which the input slots hold
// poison (NaN, index -1), and compares the real rows of every output with
// the interpreter on the unpadded model. A size above the largest bound
// is refused.
//
//===----------------------------------------------------------------------===//
#include "GpuTestUtil.h"
#include "StagedCases.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

using namespace cgctest;

namespace {

/// "model k k k" lines of DIR/padded/sizes.txt.
std::vector<std::pair<std::string, std::vector<int64_t>>> paddedModels() {
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  std::ifstream in(staged().dir + "/padded/sizes.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    std::vector<int64_t> sizes;
    for (int64_t b; words >> b;)
      sizes.push_back(b);
    out.push_back({name, sizes});
  }
  return out;
}

/// Runs \p l at B = \p b on its inputs \p in; compares with \p ref.
std::string runAtSize(Loaded &l, int64_t b, const TensorMap &in,
                      const TensorMap &ref) {
  size_t graph = 99;
  if (cgc_status s = cgc_engine_select_graph(l.engine, &b, 1, &graph))
    return "select: " + fmtStatus(s);
  // Padding is poison (NaN floats, index -1) behind the real rows.
  for (const cgc_tensor_info &t : l.tensors(CGC_ROLE_INPUT)) {
    cgc_tensor view;
    if (std::string(t.kind) == "user_input" &&
        (cgc_context_input(l.ctx, t.name, &view) != CGC_OK ||
         cudaMemset(view.data, 0xFF, t.bytes) != cudaSuccess))
      return std::string(t.name) + ": cannot poison";
  }
  for (const auto &[name, t] : in)
    if (cgc_status s = cgc_context_write_input(l.ctx, name.c_str(),
                                               t.bytes.data(), t.bytes.size(),
                                               nullptr))
      return name + ": " + fmtStatus(s);
  for (const auto &[name, want] : ref) {
    cgc_tensor view;
    if (cgc_context_output(l.ctx, name.c_str(), &view) != CGC_OK ||
        cudaMemset(view.data, 0xFF, want.bytes.size()) != cudaSuccess)
      return name + ": cannot poison";
  }
  if (cgc_status s = cgc_run(l.ctx, graph, &b, 1, nullptr))
    return "run: " + fmtStatus(s);
  if (cgc_status s = cgc_stream_synchronize(nullptr))
    return "sync: " + fmtStatus(s);
  for (const auto &[name, want] : ref) {
    std::vector<uint8_t> got(want.bytes.size());
    if (cgc_status s = cgc_context_read_output(l.ctx, name.c_str(), got.data(),
                                               got.size(), nullptr))
      return name + ": " + fmtStatus(s);
    cgc_tensor view;
    cgc_context_output(l.ctx, name.c_str(), &view);
    if (!want.shape.empty() && view.shape[0] != want.shape[0])
      return name + ": the view has " + std::to_string(view.shape[0]) +
             " rows, the run " + std::to_string(want.shape[0]);
    std::vector<double> w = decode(want.dtype, want.bytes.data(), want.bytes.size());
    double largest = 1;
    for (double v : w)
      largest = std::isfinite(v) ? std::max(largest, std::abs(v)) : largest;
    bool exact = want.dtype == "I64" || want.dtype == "I32" || want.dtype == "BOOL";
    OutSpec spec{name, want.dtype, exact ? "exact" : "close", exact ? 0 : 1e-4,
                 exact ? 0 : 1e-4 * largest};
    std::string problem =
        compareOutput(spec, decode(want.dtype, got.data(), got.size()), w);
    if (!problem.empty())
      return name + ": " + problem;
  }
  return "";
}

TEST(PaddedCases, EverySizeUpToTheBoundOnOneContext) {
  CGC_REQUIRE_GPU();
  auto models = paddedModels();
  ASSERT_EQ(models.size(), 2u) << "padded/sizes.txt is not staged";
  for (const auto &[model, sizes] : models) {
    SCOPED_TRACE(model);
    Loaded l;
    ASSERT_EQ(l.open(staged().dir + "/padded/" + model + ".cgc"), "");
    // Largest first, then the rest from the smallest (every bucket is
    // entered from a larger one's graph and from a smaller one's).
    std::vector<int64_t> order{sizes.back()};
    order.insert(order.end(), sizes.begin(), sizes.end() - 1);
    for (int64_t b : order) {
      SCOPED_TRACE("B=" + std::to_string(b));
      TensorMap in, ref;
      std::string tag = model + ".B" + std::to_string(b);
      ASSERT_TRUE(readTensors(staged().dir + "/padded/in." + tag + ".safetensors", in));
      ASSERT_TRUE(readTensors(staged().dir + "/padded/ref." + tag + ".safetensors", ref));
      EXPECT_EQ(runAtSize(l, b, in, ref), "");
    }
    int64_t over = sizes.back() + 1;
    size_t graph = 0;
    EXPECT_EQ(cgc_engine_select_graph(l.engine, &over, 1, &graph),
              CGC_ERROR_NOT_FOUND);
    EXPECT_EQ(cgc_run(l.ctx, 0, &over, 1, nullptr), CGC_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(cgc_last_error()).find("out of range"),
              std::string::npos)
        << cgc_last_error();
  }
}

} // namespace
