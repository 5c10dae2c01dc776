//===- DataParallelTest.cpp - data-parallel against one rank, in the interpreter -===//
//
// A training step compiled with data-parallel, run as 1, 2 and 4 ranks
// (threads of the reference interpreter, ThreadRanks) each on its shard of
// a batch, must update the parameters as the step without data-parallel
// does on the whole batch (within f32 rounding: the sums run in another
// order), and every rank alike, bit for bit. A rank that fails must fail
// the others' all_reduce instead of leaving them waiting.
//
//===----------------------------------------------------------------------===//
#include "InterpreterTesting.h"

#include <cmath>
#include <random>
#include <thread>

using namespace cgc;
using namespace cgc::interp;

namespace {

/// Linear(16, 32)-ReLU-Linear(32, 4), MSE, SGD with momentum, weight
/// decay and clipping (the norm is taken after the average, as DDP's).
std::string model(int batch, const std::string &optimizer) {
  std::string b = std::to_string(batch);
  return R"({"format_version": 1, "name": "dp",
 "optimizer": )" + optimizer + R"(,
 "inputs": [
  {"name": "x", "dtype": "f32", "shape": [)" + b + R"(, 16]},
  {"name": "target", "dtype": "f32", "shape": [)" + b + R"(, 4]},
  {"name": "w1", "kind": "parameter", "dtype": "f32", "shape": [32, 16], "init": {"dist": "uniform", "low": -0.25, "high": 0.25, "seed": 1}},
  {"name": "b1", "kind": "parameter", "dtype": "f32", "shape": [32], "init": {"dist": "uniform", "low": -0.25, "high": 0.25, "seed": 2}},
  {"name": "w2", "kind": "parameter", "dtype": "f32", "shape": [4, 32], "init": {"dist": "uniform", "low": -0.17, "high": 0.17, "seed": 3}},
  {"name": "b2", "kind": "parameter", "dtype": "f32", "shape": [4], "init": {"dist": "uniform", "low": -0.17, "high": 0.17, "seed": 4}}],
 "nodes": [
  {"name": "h", "op": "linear", "inputs": ["x", "w1", "b1"]},
  {"name": "r", "op": "relu", "inputs": ["h"]},
  {"name": "y", "op": "linear", "inputs": ["r", "w2", "b2"]},
  {"name": "loss", "op": "mse_loss", "inputs": ["y", "target"]}],
 "outputs": [{"name": "loss", "value": "loss", "kind": "loss"}]})";
}

const char *kSgd = R"({"kind": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.01, "max_grad_norm": 0.5})";

struct Step : testsupport::TestGraph {
  /// The training step of \p batch rows; with data-parallel when \p ranks.
  bool build(int batch, bool ranks, uint64_t bucketBytes,
             const std::string &optimizer = kSgd) {
    return buildWith(batch, std::string("autodiff,") + (ranks ? "data-parallel," : "") +
                                "apply-optimizer",
                     bucketBytes, optimizer, PassContext::MicroStep::Whole);
  }

  bool buildWith(int batch, const std::string &passes, uint64_t bucketBytes,
                 const std::string &optimizer, PassContext::MicroStep microStep) {
    if (!read(model(batch, optimizer)))
      return false;
    PassContext ctx{diag, {}};
    ctx.dataParallel.bucketBytes = bucketBytes;
    ctx.microStep = microStep;
    return runPasses(passes, ctx);
  }
};

using testsupport::named;
using testsupport::randomTensor;

/// Rows [first, first + n) of \p t.
Tensor rows(const Tensor &t, int64_t first, int64_t n) {
  Shape shape = t.shape;
  shape[0] = n;
  Tensor out(t.dtype, shape);
  int64_t row = t.numel() / t.shape[0];
  for (int64_t i = 0; i < out.numel(); ++i)
    out.data[size_t(i)] = t.data[size_t(first * row + i)];
  return out;
}

/// Runs \p world ranks of \p step on shards of (x, target), rank r's state
/// from \p state[r] when given; false with the first error.
bool runRanks(const Graph &step, int world, const Tensor &x, const Tensor &target,
              std::vector<NamedTensors> &outputs, std::string &error,
              int brokenRank = -1,
              const std::vector<std::map<std::string, Tensor>> *state = nullptr) {
  ThreadRanks ranks(world);
  outputs.assign(size_t(world), {});
  std::vector<std::string> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  int64_t shard = x.shape[0] / world;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      std::map<std::string, Tensor> in =
          state ? (*state)[size_t(r)] : std::map<std::string, Tensor>();
      in["x"] = rows(x, r * shard, r == brokenRank ? shard - 1 : shard);
      in["target"] = rows(target, r * shard, shard);
      RunError e;
      if (!runGraph(step, in, outputs[size_t(r)], e, Limits(), nullptr,
                    &ranks.rank(r))) {
        errors[size_t(r)] = e.message;
        ranks.abandon();
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (const std::string &e : errors)
    if (!e.empty()) {
      error = e;
      return false;
    }
  return true;
}

TEST(DataParallel, RanksUpdateAsOneStepOnTheWholeBatch) {
  std::mt19937 rng(7);
  Tensor x = randomTensor({8, 16}, rng), target = randomTensor({8, 4}, rng);
  Step whole;
  ASSERT_TRUE(whole.build(8, false, 1)) << whole.os.str();
  NamedTensors expected;
  RunError e;
  ASSERT_TRUE(runGraph(*whole.graph, {{"x", x}, {"target", target}}, expected, e))
      << e.message;
  for (int world : {1, 2, 4}) {
    // Buckets of 1 byte: one all_reduce per gradient; 1 MiB: one in all;
    // 600 bytes: w1's gradient (2 KiB, the last large one) in 4 chunks.
    for (uint64_t bucket : {uint64_t(1), uint64_t(600), uint64_t(1) << 20}) {
      Step step;
      ASSERT_TRUE(step.build(8 / world, true, bucket)) << step.os.str();
      std::vector<NamedTensors> outputs;
      std::string error;
      ASSERT_TRUE(runRanks(*step.graph, world, x, target, outputs, error)) << error;
      for (const char *p : {"w1", "b1", "w2", "b2"}) {
        std::string name = std::string(p) + ".next";
        const Tensor &want = named(expected, name);
        for (int r = 0; r < world; ++r) {
          const Tensor &got = named(outputs[size_t(r)], name);
          ASSERT_EQ(got.numel(), want.numel());
          for (int64_t i = 0; i < got.numel(); ++i) {
            EXPECT_NEAR(got.real(i), want.real(i), 2e-6 + 2e-6 * std::fabs(want.real(i)))
                << name << "[" << i << "] world " << world << " rank " << r;
            EXPECT_EQ(got.real(i), named(outputs[0], name).real(i))
                << name << "[" << i << "]: ranks differ";
          }
        }
      }
    }
  }
}

/// The `.next` outputs of \p outputs as the state inputs they update.
std::map<std::string, Tensor> nextState(const NamedTensors &outputs) {
  std::map<std::string, Tensor> state;
  for (const auto &[name, t] : outputs)
    if (llvm::StringRef(name).endswith(".next"))
      state[llvm::StringRef(name).drop_back(5).str()] = t;
  return state;
}

// accumulate: 2 on 2 ranks: each rank's micro-step graph on its first
// micro-batch, then its last micro-step graph (which reduces) on its
// second: the update of one step on all 8 rows.
TEST(DataParallel, AccumulatedMicroStepsUpdateAsOneStepOnTheWholeBatch) {
  std::mt19937 rng(11);
  Tensor x = randomTensor({8, 16}, rng), target = randomTensor({8, 4}, rng);
  Step whole;
  ASSERT_TRUE(whole.build(8, false, 1)) << whole.os.str();
  NamedTensors expected;
  RunError e;
  ASSERT_TRUE(runGraph(*whole.graph, {{"x", x}, {"target", target}}, expected, e))
      << e.message;
  const char *accumulating =
      R"({"kind": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.01, "max_grad_norm": 0.5, "accumulate": 2})";
  Step micro, last;
  ASSERT_TRUE(micro.buildWith(2, "autodiff,accumulate-gradients", 1, accumulating,
                              PassContext::MicroStep::Accumulate))
      << micro.os.str();
  ASSERT_TRUE(last.buildWith(2, "autodiff,accumulate-gradients,data-parallel,apply-optimizer",
                             1, accumulating, PassContext::MicroStep::Last))
      << last.os.str();
  std::vector<NamedTensors> first, second;
  std::string error;
  // Micro-batch 0 is rows 0-3 (2 a rank), micro-batch 1 rows 4-7.
  ASSERT_TRUE(runRanks(*micro.graph, 2, rows(x, 0, 4), rows(target, 0, 4), first, error))
      << error;
  std::vector<std::map<std::string, Tensor>> state = {nextState(first[0]),
                                                      nextState(first[1])};
  ASSERT_TRUE(runRanks(*last.graph, 2, rows(x, 4, 4), rows(target, 4, 4), second, error,
                       -1, &state))
      << error;
  for (const char *p : {"w1", "b1", "w2", "b2"}) {
    std::string name = std::string(p) + ".next";
    const Tensor &want = named(expected, name);
    for (int r = 0; r < 2; ++r) {
      const Tensor &got = named(second[size_t(r)], name);
      ASSERT_EQ(got.numel(), want.numel());
      for (int64_t i = 0; i < got.numel(); ++i)
        EXPECT_NEAR(got.real(i), want.real(i), 2e-6 + 2e-6 * std::fabs(want.real(i)))
            << name << "[" << i << "] rank " << r;
    }
    const Tensor &sum = named(second[0], std::string(p) + ".grad_accum.next");
    for (int64_t i = 0; i < sum.numel(); ++i)
      EXPECT_EQ(sum.real(i), 0.0) << p << ": the sums restart at zero";
  }
}

TEST(DataParallel, AFailedRankFailsTheOthersInsteadOfHanging) {
  std::mt19937 rng(3);
  Tensor x = randomTensor({8, 16}, rng), target = randomTensor({8, 4}, rng);
  Step step;
  ASSERT_TRUE(step.build(2, true, 1)) << step.os.str();
  std::vector<NamedTensors> outputs;
  std::string error;
  EXPECT_FALSE(runRanks(*step.graph, 4, x, target, outputs, error, /*brokenRank=*/2));
  EXPECT_FALSE(error.empty());
}

TEST(DataParallel, RefusesAccumulationInOneGraph) {
  Step step;
  EXPECT_FALSE(step.build(4, true, 1, R"({"kind": "sgd", "lr": 0.1, "accumulate": 2})"));
  EXPECT_NE(step.os.str().find("data-parallel: with accumulate: 2, only the last "
                               "micro-step's graph reduces"),
            std::string::npos)
      << step.os.str();
}

} // namespace
