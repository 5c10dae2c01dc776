//===- OpCasesGpuTest.cpp - Codegen'd kernels on the GPU vs the interpreter ===//
//
// Parameterized over the staged cases (StagedCases.h): each case is loaded
// with the runtime, outputs are poisoned (0xFF bytes), inputs and state
// written, then the graph is replayed AND (on a fresh engine, so state
// updates do not leak between modes) run eagerly; outputs are compared with
// the reference under the staged per-output tolerance. Cases with staged
// replay sets (in.K / ref.K) are replayed 20 times on one context with new
// inputs, each result checked. Also: the staged list is whole, an add
// checked against the CPU, and a multi-graph artifact.
//
//===----------------------------------------------------------------------===//
#include "GpuTestUtil.h"
#include "StagedCases.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>

using namespace cgctest;

namespace {

class OpCase : public ::testing::TestWithParam<Case> {
protected:
  void SetUp() override { CGC_REQUIRE_GPU(); }
  std::string path(const std::string &file) const {
    return staged().dir + "/" + GetParam().name + "/" + file;
  }
};

TEST_P(OpCase, GraphAndEagerMatchInterpreter) {
  const Case &c = GetParam();
  TensorMap in, ref;
  ASSERT_TRUE(readInputSet(path(""), 0, in, ref));
  for (bool eager : {false, true}) {
    SCOPED_TRACE(eager ? "eager" : "graph");
    Loaded l; // fresh engine per mode: state updates must not leak
    std::string err = l.open(path("model.cgc"));
    ASSERT_EQ(err, "");
    ASSERT_EQ(l.feed(in), "");
    EXPECT_EQ(l.runAndCompare(eager, c, ref), "");
  }
}

class ReplayCase : public OpCase {};

TEST_P(ReplayCase, TwentyReplaysWithNewInputs) {
  const Case &c = GetParam();
  Loaded l;
  ASSERT_EQ(l.open(path("model.cgc")), "");
  for (int k = 1; k <= c.replays; ++k) {
    SCOPED_TRACE("replay " + std::to_string(k));
    TensorMap in, ref;
    ASSERT_TRUE(readInputSet(path(""), k, in, ref));
    ASSERT_EQ(l.feed(in), "");
    ASSERT_EQ(l.runAndCompare(false, c, ref), "");
  }
}

std::vector<Case> replayCases() {
  std::vector<Case> v;
  for (const Case &c : staged().cases)
    if (c.replays > 0)
      v.push_back(c);
  return v;
}

std::string caseName(const ::testing::TestParamInfo<Case> &info) {
  std::string n = info.param.name;
  for (char &ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch)))
      ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Staged, OpCase, ::testing::ValuesIn(staged().cases),
                         caseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpCase);
INSTANTIATE_TEST_SUITE_P(Staged, ReplayCase, ::testing::ValuesIn(replayCases()),
                         caseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ReplayCase);

TEST(StagedCases, PresentAndCompiled) {
  CGC_REQUIRE_GPU();
  ASSERT_TRUE(staged().found)
      << "no staged cases at " << staged().dir
      << "/cases.txt (run test/gpu/stage_cases.py, set CGC_GPU_CASES)";
  EXPECT_FALSE(staged().cases.empty());
  std::string failed;
  for (const std::string &n : staged().compileFailures)
    failed += " " + n;
  EXPECT_TRUE(failed.empty()) << "cgc failed to compile (not 'unsupported'):"
                              << failed;
}

/// A simple elementwise graph built on the CPU side: 20 replays with new
/// random inputs, each checked against a CPU computation (independent of the
/// staged references). Uses the staged own_add_f32_4097 case's artifact.
TEST(StagedCases, TwentyReplaysOfAddAgainstCpu) {
  CGC_REQUIRE_GPU();
  std::string model = staged().dir + "/own_add_f32_4097/model.cgc";
  if (!std::ifstream(model))
    GTEST_FAIL() << "missing " << model;
  Loaded l;
  ASSERT_EQ(l.open(model), "");
  const size_t n = 4097;
  std::vector<float> a(n), b(n), y(n);
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return float(int32_t(state >> 8) % 2000001 - 1000000) / 1000.0f;
  };
  for (int it = 0; it < 20; ++it) {
    for (size_t i = 0; i < n; ++i) {
      a[i] = next();
      b[i] = next();
    }
    ASSERT_EQ(cgc_context_write_input(l.ctx, "a", a.data(), n * 4, nullptr), CGC_OK);
    ASSERT_EQ(cgc_context_write_input(l.ctx, "b", b.data(), n * 4, nullptr), CGC_OK);
    cgc_tensor view;
    ASSERT_EQ(cgc_context_output(l.ctx, "y", &view), CGC_OK);
    ASSERT_EQ(cudaMemset(view.data, 0xFF, n * 4), cudaSuccess);
    ASSERT_EQ(cgc_run(l.ctx, 0, nullptr, 0, nullptr), CGC_OK);
    ASSERT_EQ(cgc_context_read_output(l.ctx, "y", y.data(), n * 4, nullptr), CGC_OK);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(y[i], a[i] + b[i]) << "replay " << it << " i=" << i;
  }
}

/// examples/dynamic_rows.json compiled with --bind-dim B=8,16,64 (staged in
/// DIR/multigraph): each graph picked by its batch size, run in mixed order
/// on one context, checked against the interpreter; the graphs share the
/// run counter in the persistent state; sizes without a graph are refused.
TEST(StagedCases, MultiGraphAnyOrder) {
  CGC_REQUIRE_GPU();
  std::string dir = staged().dir + "/multigraph/";
  Loaded l;
  ASSERT_EQ(l.open(dir + "model.cgc"), "");
  ASSERT_EQ(cgc_engine_num_graphs(l.engine), 3u);
  const int64_t order[] = {16, 8, 64, 8, 16};
  for (int64_t b : order) {
    SCOPED_TRACE("B=" + std::to_string(b));
    size_t graph = 99;
    ASSERT_EQ(cgc_engine_select_graph(l.engine, &b, 1, &graph), CGC_OK)
        << cgc_last_error();
    EXPECT_EQ(std::string(cgc_engine_graph_name(l.engine, graph)),
              "B=" + std::to_string(b));
    TensorMap in, ref;
    std::string tag = "B" + std::to_string(b);
    ASSERT_TRUE(readTensors(dir + "in." + tag + ".safetensors", in));
    ASSERT_TRUE(readTensors(dir + "ref." + tag + ".safetensors", ref));
    const std::vector<uint8_t> &x = in.at("x").bytes;
    ASSERT_EQ(cgc_context_write_input(l.ctx, "x", x.data(), x.size(), nullptr),
              CGC_OK);
    for (const char *out : {"y", "r"}) {
      cgc_tensor view;
      ASSERT_EQ(cgc_context_output(l.ctx, out, &view), CGC_OK);
      ASSERT_EQ(cudaMemset(view.data, 0xFF, ref.at(out).bytes.size()),
                cudaSuccess);
    }
    ASSERT_EQ(cgc_run(l.ctx, graph, &b, 1, nullptr), CGC_OK) << cgc_last_error();
    ASSERT_EQ(cgc_stream_synchronize(nullptr), CGC_OK);
    for (const char *out : {"y", "r"}) {
      const TensorData &want = ref.at(out);
      std::vector<uint8_t> got(want.bytes.size());
      ASSERT_EQ(cgc_context_read_output(l.ctx, out, got.data(), got.size(),
                                        nullptr),
                CGC_OK);
      cgc_tensor view;
      ASSERT_EQ(cgc_context_output(l.ctx, out, &view), CGC_OK);
      EXPECT_EQ(view.shape[0], b) << "the output view has the run's shape";
      OutSpec spec{out, "f32", "close", 1e-4, 1e-4};
      EXPECT_EQ(compareOutput(spec, decode("f32", got.data(), got.size()),
                              decode("f32", want.bytes.data(), want.bytes.size())),
                "");
    }
  }
  float runs = 0;
  ASSERT_EQ(cgc_engine_state_read(l.engine, "runs", &runs, sizeof runs), CGC_OK);
  EXPECT_EQ(runs, 5.0f) << "every graph updates the one shared counter";
  int64_t missing = 10;
  size_t graph = 0;
  EXPECT_EQ(cgc_engine_select_graph(l.engine, &missing, 1, &graph),
            CGC_ERROR_NOT_FOUND);
  EXPECT_NE(std::string(cgc_last_error()).find("B=8, B=16, B=64"),
            std::string::npos)
      << cgc_last_error();
  int64_t wrong = 16;
  EXPECT_EQ(cgc_run(l.ctx, 0, &wrong, 1, nullptr), CGC_ERROR_INVALID_ARGUMENT)
      << "graph B=8 refuses B=16";
}


/// Runs graph \p graph of \p l and compares outputs \p names with \p ref
/// (Loaded::readAndCompare).
static std::string runAndCompareNamed(Loaded &l, size_t graph,
                                      const TensorMap &ref,
                                      const std::vector<std::string> &names) {
  cgc_status st = cgc_run(l.ctx, graph, nullptr, 0, nullptr);
  if (st != CGC_OK || (st = cgc_stream_synchronize(nullptr)) != CGC_OK)
    return fmtStatus(st);
  for (const std::string &name : names)
    if (std::string problem = l.readAndCompare(name, ref.at(name)); !problem.empty())
      return problem;
  return "";
}

/// examples/mlp_train_small.json compiled with --train (staged in
/// DIR/train_eval): graphs "train" and "eval" share the parameters. On one
/// context, eval gives the forward pass with dropout off and leaves the
/// state alone; train gives one step; eval then runs on the trained
/// parameters. Each is checked against the interpreter.
TEST(StagedCases, TrainAndEvalGraphsShareTheParameters) {
  CGC_REQUIRE_GPU();
  std::string dir = staged().dir + "/train_eval/";
  Loaded l;
  ASSERT_EQ(l.open(dir + "model.cgc"), "");
  ASSERT_EQ(cgc_engine_num_graphs(l.engine), 2u);
  size_t train = 9, eval = 9;
  ASSERT_EQ(cgc_engine_find_graph(l.engine, "train", &train), CGC_OK);
  ASSERT_EQ(cgc_engine_find_graph(l.engine, "eval", &eval), CGC_OK);
  TensorMap in, refEval, refTrain, refAfter, refTrain2;
  ASSERT_TRUE(readTensors(dir + "in.safetensors", in));
  ASSERT_TRUE(readTensors(dir + "ref.train2.safetensors", refTrain2));
  ASSERT_TRUE(readTensors(dir + "ref.eval.safetensors", refEval));
  ASSERT_TRUE(readTensors(dir + "ref.train.safetensors", refTrain));
  ASSERT_TRUE(readTensors(dir + "ref.after.safetensors", refAfter));
  ASSERT_EQ(l.feed(in), "");
  auto state = [&](const char *name, size_t bytes) {
    std::vector<uint8_t> now(bytes);
    EXPECT_EQ(cgc_engine_state_read(l.engine, name, now.data(), bytes), CGC_OK);
    return now;
  };
  std::vector<uint8_t> w0 = state("fc1.w", 256 * 128 * 4), rng0 = state("rng", 16);
  EXPECT_EQ(runAndCompareNamed(l, eval, refEval, {"loss", "pred"}), "");
  EXPECT_EQ(state("fc1.w", w0.size()), w0) << "eval leaves the parameters";
  EXPECT_EQ(state("rng", 16), rng0) << "eval draws no dropout mask";
  EXPECT_EQ(runAndCompareNamed(l, train, refTrain,
                               {"loss", "pred", "fc1.w.next", "fc1.b.next",
                                "fc2.w.next", "fc2.b.next"}),
            "");
  EXPECT_EQ(runAndCompareNamed(l, eval, refAfter, {"loss", "pred"}), "");
  // The second step draws its masks at the offset the first advanced to.
  EXPECT_EQ(runAndCompareNamed(l, train, refTrain2,
                               {"loss", "pred", "fc1.w.next", "fc2.b.next"}),
            "");
}

/// Every replay of a training step draws fresh dropout masks with no host
/// work: the graph advances the rng offset by 8704 (mlp_train_small's two
/// streams) per replay, consecutive masks of `pred` (p = 0.1) differ, and
/// over 50 replays the dropped fraction is 0.1 within 0.02 (25600 draws:
/// about 10 standard deviations).
TEST(StagedCases, DropoutMasksAdvanceEveryReplay) {
  CGC_REQUIRE_GPU();
  std::string dir = staged().dir + "/train_eval/";
  Loaded l;
  ASSERT_EQ(l.open(dir + "model.cgc"), "");
  size_t train = 9;
  ASSERT_EQ(cgc_engine_find_graph(l.engine, "train", &train), CGC_OK);
  TensorMap in;
  ASSERT_TRUE(readTensors(dir + "in.safetensors", in));
  ASSERT_EQ(l.feed(in), "");
  std::vector<float> previous;
  size_t dropped = 0, total = 0, same = 0;
  const int replays = 50;
  for (int r = 0; r < replays; ++r) {
    ASSERT_EQ(cgc_run(l.ctx, train, nullptr, 0, nullptr), CGC_OK) << cgc_last_error();
    std::vector<float> pred(32 * 16);
    ASSERT_EQ(cgc_context_read_output(l.ctx, "pred", pred.data(),
                                      pred.size() * 4, nullptr),
              CGC_OK);
    for (float v : pred)
      dropped += v == 0.0f;
    total += pred.size();
    if (!previous.empty()) {
      size_t samePattern = 0;
      for (size_t i = 0; i < pred.size(); ++i)
        samePattern += (pred[i] == 0.0f) == (previous[i] == 0.0f);
      same += samePattern == pred.size();
    }
    previous = pred;
  }
  int64_t rng[2] = {-1, -1};
  ASSERT_EQ(cgc_engine_state_read(l.engine, "rng", rng, sizeof rng), CGC_OK);
  EXPECT_EQ(rng[1], int64_t(8704) * replays) << "the offset advances per replay";
  EXPECT_EQ(same, 0u) << "some replays drew the same mask as the one before";
  double rate = double(dropped) / double(total);
  EXPECT_NEAR(rate, 0.1, 0.02) << dropped << " of " << total << " dropped";
}

} // namespace
