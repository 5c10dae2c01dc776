//===- MixedPrecisionTest.cpp - f16 training with dynamic loss scaling ----===//
//
// A step compiled with autocast f16 and loss scaling, in the interpreter
// (f16 rounding, overflow to inf included): a good batch updates the
// parameters as the f32 step does (within f16's rounding: the gradients
// were unscaled) and counts a good step; a batch holding an inf leaves the
// parameters as they were and halves the scale; the growth_interval-th
// good step doubles it.
//
//===----------------------------------------------------------------------===//
#include "InterpreterTesting.h"

#include <cmath>
#include <limits>
#include <random>

using namespace cgc;
using namespace cgc::interp;

namespace {

const char *kModel = R"({"format_version": 1, "name": "mp",
 "optimizer": {"kind": "sgd", "lr": 0.1, "momentum": 0.9},
 "inputs": [
  {"name": "x", "dtype": "f32", "shape": [8, 16]},
  {"name": "target", "dtype": "f32", "shape": [8, 4]},
  {"name": "w1", "kind": "parameter", "dtype": "f32", "shape": [32, 16], "init": {"dist": "uniform", "low": -0.25, "high": 0.25, "seed": 1}},
  {"name": "w2", "kind": "parameter", "dtype": "f32", "shape": [4, 32], "init": {"dist": "uniform", "low": -0.17, "high": 0.17, "seed": 3}}],
 "nodes": [
  {"name": "h", "op": "linear", "inputs": ["x", "w1"]},
  {"name": "r", "op": "relu", "inputs": ["h"]},
  {"name": "y", "op": "linear", "inputs": ["r", "w2"]},
  {"name": "loss", "op": "mse_loss", "inputs": ["y", "target"]}],
 "outputs": [{"name": "loss", "value": "loss", "kind": "loss"}]})";

struct Step : testsupport::TestGraph {
  bool build(DType autocast) {
    if (!read(kModel))
      return false;
    PassContext ctx{diag, {}};
    ctx.autocast = autocast;
    ctx.lossScaling = autocast == DType::F16;
    return runPasses("autocast,autodiff,apply-optimizer", ctx);
  }
};

Tensor randomTensor(Shape shape, unsigned seed) {
  std::mt19937 rng(seed);
  return testsupport::randomTensor(std::move(shape), rng);
}

Tensor scalar(double v) {
  Tensor t(DType::F32, {});
  t.setReal(0, v);
  return t;
}

using testsupport::named;

TEST(LossScaling, AGoodStepUpdatesAsInF32AndCountsIt) {
  Step f16, f32;
  ASSERT_TRUE(f16.build(DType::F16)) << f16.os.str();
  ASSERT_TRUE(f32.build(DType::F32)) << f32.os.str();
  std::map<std::string, Tensor> in = {{"x", randomTensor({8, 16}, 1)},
                                      {"target", randomTensor({8, 4}, 2)}};
  NamedTensors half = f16.run(in), full = f32.run(in);
  EXPECT_EQ(named(half, "optimizer.loss_scale.next").real(0), 65536.0);
  EXPECT_EQ(named(half, "optimizer.growth_tracker.next").real(0), 1.0);
  for (const char *p : {"w1.next", "w2.next"}) {
    const Tensor &got = named(half, p), &want = named(full, p);
    ASSERT_EQ(got.numel(), want.numel());
    for (int64_t i = 0; i < got.numel(); ++i)
      EXPECT_NEAR(got.real(i), want.real(i), 2e-3) << p << "[" << i << "]";
  }
}

TEST(LossScaling, AStepWithAnInfIsSkippedAndBacksOff) {
  Step f16;
  ASSERT_TRUE(f16.build(DType::F16)) << f16.os.str();
  Tensor x = randomTensor({8, 16}, 1);
  x.setReal(5, std::numeric_limits<double>::infinity());
  Tensor w1 = randomTensor({32, 16}, 3), w2 = randomTensor({4, 32}, 4);
  NamedTensors out = f16.run({{"x", x}, {"target", randomTensor({8, 4}, 2)},
                              {"w1", w1}, {"w2", w2}});
  EXPECT_EQ(named(out, "optimizer.loss_scale.next").real(0), 32768.0);
  EXPECT_EQ(named(out, "optimizer.growth_tracker.next").real(0), 0.0);
  // The update was skipped: the parameters pass through as they were.
  const Tensor &next = named(out, "w1.next");
  ASSERT_EQ(next.numel(), w1.numel());
  for (int64_t i = 0; i < next.numel(); ++i)
    EXPECT_EQ(next.real(i), w1.real(i)) << "w1[" << i << "]";
}

TEST(LossScaling, TheIntervalthGoodStepGrowsTheScale) {
  Step f16;
  ASSERT_TRUE(f16.build(DType::F16)) << f16.os.str();
  NamedTensors out = f16.run({{"x", randomTensor({8, 16}, 1)},
                              {"target", randomTensor({8, 4}, 2)},
                              {"optimizer.growth_interval", scalar(3)},
                              {"optimizer.growth_tracker", scalar(2)}});
  EXPECT_EQ(named(out, "optimizer.loss_scale.next").real(0), 131072.0);
  EXPECT_EQ(named(out, "optimizer.growth_tracker.next").real(0), 0.0);
}

} // namespace
