//===- PaddedGpuTest.cpp - Bucketed graphs at every size, on the GPU -------===//
//
// The padded artifacts staged by stage_cases.py (DIR/padded: one graph per
// bucket of B, pad-dynamic-shapes' masks): one context each runs every
// staged size (1, each bucket edge and one past it, the largest bound),
// each time writing only the real rows behind which the input slots hold
// poison (NaN, index -1), and compares the real rows of every output with
// the interpreter on the unpadded model. A size above the largest bound
// is refused. The context's driver counters prove that no size, new or
// not, creates, instantiates, captures or updates anything: each run adds
// one launch, and one write of the real dims when they changed. At each
// staged size that is its graph's bucket in every dim
// (cgc_engine_graph_dim), inputs bound to buffers of exactly their real
// size give the same results (run under memcheck, an over-read fails).
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

using Sizes = std::vector<std::vector<int64_t>>;

/// "model v,v v,v ..." lines of DIR/padded/sizes.txt: per size, the dim
/// values in the manifest's order.
std::vector<std::pair<std::string, Sizes>> paddedModels() {
  std::vector<std::pair<std::string, Sizes>> out;
  std::ifstream in(staged().dir + "/padded/sizes.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string name, size;
    words >> name;
    Sizes sizes;
    while (words >> size) {
      std::vector<int64_t> dims;
      std::istringstream values(size);
      for (std::string v; std::getline(values, v, ',');)
        dims.push_back(std::stoll(v));
      sizes.push_back(dims);
    }
    out.push_back({name, sizes});
  }
  return out;
}

/// "B1_S16" for dims {1, 16} of dims named B and S.
std::string sizeTag(cgc_engine engine, const std::vector<int64_t> &dims) {
  std::string tag;
  for (size_t d = 0; d < dims.size(); ++d) {
    const char *name = nullptr;
    int64_t min = 0, max = 0;
    cgc_engine_dim_info(engine, d, &name, &min, &max);
    tag += (d ? "_" : "") + std::string(name) + std::to_string(dims[d]);
  }
  return tag;
}

/// The staged padded models, each loaded into \p l in turn for \p visit.
template <class Visit> void forEachPaddedModel(Visit visit) {
  auto models = paddedModels();
  ASSERT_EQ(models.size(), 4u) << "padded/sizes.txt is not staged";
  for (const auto &[model, sizes] : models) {
    SCOPED_TRACE(model);
    Loaded l;
    ASSERT_EQ(l.open(staged().dir + "/padded/" + model + ".cgc"), "");
    visit(model, sizes, l);
  }
}

/// The staged inputs and interpreter results of \p model at size \p tag.
void readSize(const std::string &model, const std::string &tag, TensorMap &in,
              TensorMap &ref) {
  std::string at = staged().dir + "/padded/";
  ASSERT_TRUE(readTensors(at + "in." + model + "." + tag + ".safetensors", in));
  ASSERT_TRUE(readTensors(at + "ref." + model + "." + tag + ".safetensors", ref));
}

/// Runs \p l at \p dims on its inputs \p in; compares with \p ref.
std::string runAtSize(Loaded &l, const std::vector<int64_t> &dims,
                      const TensorMap &in, const TensorMap &ref) {
  size_t graph = 99;
  if (cgc_status s = cgc_engine_select_graph(l.engine, dims.data(), dims.size(), &graph))
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
  if (cgc_status s = cgc_run(l.ctx, graph, dims.data(), dims.size(), nullptr))
    return "run: " + fmtStatus(s);
  if (cgc_status s = cgc_stream_synchronize(nullptr))
    return "sync: " + fmtStatus(s);
  for (const auto &[name, want] : ref)
    if (std::string problem = l.readAndCompare(name, want); !problem.empty())
      return problem;
  return "";
}

/// Whether \p dims are the extents of \p graph in every dim.
bool atBuckets(cgc_engine engine, size_t graph, const std::vector<int64_t> &dims) {
  for (size_t d = 0; d < dims.size(); ++d) {
    int64_t extent = -2;
    if (cgc_engine_graph_dim(engine, graph, d, &extent) != CGC_OK || extent != dims[d])
      return false;
  }
  return true;
}

/// Runs \p l at \p dims with each input of \p in bound to a buffer of
/// exactly its bytes; compares with \p ref; unbinds and frees.
std::string runBoundAtSize(Loaded &l, size_t graph, const std::vector<int64_t> &dims,
                           const TensorMap &in, const TensorMap &ref) {
  std::vector<std::pair<std::string, void *>> bound;
  std::string problem;
  for (const auto &[name, t] : in) {
    void *p = nullptr;
    if (t.bytes.empty())
      continue;
    if (cudaMalloc(&p, t.bytes.size()) != cudaSuccess ||
        cudaMemcpy(p, t.bytes.data(), t.bytes.size(), cudaMemcpyHostToDevice) != cudaSuccess) {
      problem = name + ": cannot allocate";
      break;
    }
    bound.push_back({name, p});
    if (cgc_status s = cgc_context_bind(l.ctx, name.c_str(), p)) {
      problem = name + ": bind: " + fmtStatus(s);
      break;
    }
  }
  if (problem.empty()) {
    if (cgc_status s = cgc_run(l.ctx, graph, dims.data(), dims.size(), nullptr))
      problem = "run: " + fmtStatus(s);
    else if (cgc_status s = cgc_stream_synchronize(nullptr))
      problem = "sync: " + fmtStatus(s);
    for (const auto &[name, want] : ref)
      if (problem.empty())
        problem = l.readAndCompare(name, want);
  }
  for (const auto &[name, p] : bound) {
    cgc_context_bind(l.ctx, name.c_str(), nullptr);
    cudaFree(p);
  }
  return problem;
}

TEST(PaddedCases, InputsBoundAtTheirBucketsSize) {
  CGC_REQUIRE_GPU();
  forEachPaddedModel([](const std::string &model, const Sizes &sizes, Loaded &l) {
    int atBucket = 0;
    for (const std::vector<int64_t> &dims : sizes) {
      size_t graph = 0;
      ASSERT_EQ(cgc_engine_select_graph(l.engine, dims.data(), dims.size(), &graph), CGC_OK);
      if (!atBuckets(l.engine, graph, dims))
        continue;
      std::string tag = sizeTag(l.engine, dims);
      SCOPED_TRACE(tag);
      TensorMap in, ref;
      readSize(model, tag, in, ref);
      EXPECT_EQ(runBoundAtSize(l, graph, dims, in, ref), "");
      ++atBucket;
    }
    EXPECT_GT(atBucket, 0) << "no staged size is at its graph's buckets";
  });
  int64_t extent = 0;
  EXPECT_EQ(cgc_engine_graph_dim(nullptr, 0, 0, &extent), CGC_ERROR_INVALID_ARGUMENT);
}

TEST(PaddedCases, EverySizeUpToTheBoundOnOneContext) {
  CGC_REQUIRE_GPU();
  forEachPaddedModel([](const std::string &model, const Sizes &sizes, Loaded &l) {
    // Largest first, then the rest from the smallest (every bucket is
    // entered from a larger one's graph and from a smaller one's).
    Sizes order{sizes.back()};
    order.insert(order.end(), sizes.begin(), sizes.end() - 1);
    cgc_counters before{}, after{};
    ASSERT_EQ(cgc_context_counters(l.ctx, &before), CGC_OK);
    EXPECT_GT(before.graphs_instantiated, 0u);
    for (const std::vector<int64_t> &dims : order) {
      std::string tag = sizeTag(l.engine, dims);
      SCOPED_TRACE(tag);
      TensorMap in, ref;
      readSize(model, tag, in, ref);
      EXPECT_EQ(runAtSize(l, dims, in, ref), "");
    }
    ASSERT_EQ(cgc_context_counters(l.ctx, &after), CGC_OK);
    EXPECT_EQ(after.graphs_created, before.graphs_created);
    EXPECT_EQ(after.graphs_instantiated, before.graphs_instantiated);
    EXPECT_EQ(after.captures, before.captures);
    EXPECT_EQ(after.node_updates, before.node_updates);
    EXPECT_EQ(after.launches - before.launches, order.size());
    EXPECT_EQ(after.dim_writes - before.dim_writes, order.size())
        << "every staged size differs from the one before it";
    std::vector<int64_t> over = sizes.back();
    over[0] += 1;
    size_t graph = 0;
    EXPECT_EQ(cgc_engine_select_graph(l.engine, over.data(), over.size(), &graph),
              CGC_ERROR_NOT_FOUND);
    EXPECT_EQ(cgc_run(l.ctx, 0, over.data(), over.size(), nullptr),
              CGC_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(cgc_last_error()).find("out of range"),
              std::string::npos)
        << cgc_last_error();
  });
}

} // namespace
