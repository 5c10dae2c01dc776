//===- ConcurrentGpuTest.cpp - Contexts of one engine on many threads -----===//
//
// cgc_runtime.h promises that contexts of one engine may run concurrently
// from different threads. These tests do it on staged artifacts
// (StagedCases.h) and check every result against the interpreter's:
//  - eight threads, each with its own context and stream on one shared
//    engine, CGC_STRESS_REPLAYS (default 10^5) replays each, new inputs
//    every 100 replays (the case's staged sets in turn, outputs poisoned),
//    every output set checked; for an elementwise model, a model with
//    products (generated and cuBLASLt) and one with conditional nodes;
//    device memory in use and host RSS must not grow past the warm-up
//    (both printed and recorded in the gtest XML);
//  - four engines of one artifact, a thread each;
//  - a thread binding its context's input to caller buffers (which
//    re-captures a cuBLASLt call) while others replay their contexts;
//  - per-context state: each context's own copy, an entry run by name,
//    the context's state API, eight threads accumulating their own.
//
//===----------------------------------------------------------------------===//
#include "GpuTestUtil.h"
#include "StagedCases.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace cgctest;

namespace {

int64_t stressReplays() {
  const char *env = std::getenv("CGC_STRESS_REPLAYS");
  return env ? std::atoll(env) : 100000;
}

/// A case's staged input sets and references (the replays' sets).
struct Sets {
  const Case *c = nullptr;
  std::vector<TensorMap> ins, refs;
};

std::string readSets(const std::string &name, Sets &sets) {
  sets.c = findCase(name);
  if (!sets.c)
    return name + " is not staged";
  if (sets.c->replays < 2)
    return name + " has no replay sets";
  std::string dir = staged().dir + "/" + name + "/";
  sets.ins.resize(sets.c->replays);
  sets.refs.resize(sets.c->replays);
  for (int k = 0; k < sets.c->replays; ++k)
    if (!readInputSet(dir, k + 1, sets.ins[k], sets.refs[k]))
      return name + ": input set " + std::to_string(k + 1) + " unreadable";
  return "";
}

/// One context of a shared engine on its own stream: what one thread uses.
struct Worker {
  cgc_engine engine = nullptr;
  cgc_context ctx = nullptr;
  cudaStream_t stream = nullptr;

  std::string open(cgc_engine e) {
    engine = e;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
      return "cudaStreamCreate failed";
    if (cgc_status s = cgc_context_create(engine, nullptr, 0, &ctx))
      return "context_create: " + fmtStatus(s);
    return "";
  }
  ~Worker() {
    cgc_context_destroy(ctx);
    if (stream)
      cudaStreamDestroy(stream);
  }

  /// Poisons the outputs and writes the inputs, on the worker's stream.
  std::string feed(const TensorMap &in) {
    for (size_t i = 0; i < cgc_engine_num_tensors(engine, CGC_ROLE_OUTPUT); ++i) {
      cgc_tensor_info t;
      cgc_tensor view;
      cgc_engine_tensor_info(engine, CGC_ROLE_OUTPUT, i, &t);
      if (std::string(t.kind) != "output")
        continue;
      if (cgc_status s = cgc_context_output(ctx, t.name, &view))
        return "output view: " + fmtStatus(s);
      if (cudaMemsetAsync(view.data, 0xFF, t.bytes, stream) != cudaSuccess)
        return "cudaMemsetAsync failed";
    }
    for (size_t i = 0; i < cgc_engine_num_tensors(engine, CGC_ROLE_INPUT); ++i) {
      cgc_tensor_info t;
      cgc_engine_tensor_info(engine, CGC_ROLE_INPUT, i, &t);
      if (std::string(t.kind) != "user_input")
        continue;
      auto it = in.find(t.name);
      if (it == in.end())
        return std::string("input '") + t.name + "' missing";
      if (cgc_status s = cgc_context_write_input(ctx, t.name, it->second.bytes.data(),
                                                 it->second.bytes.size(), stream))
        return "write_input: " + fmtStatus(s);
    }
    return "";
  }

  std::string run() {
    if (cgc_status s = cgc_run(ctx, 0, nullptr, 0, stream))
      return "run: " + fmtStatus(s);
    return "";
  }

  /// Every output of the case against \p ref (after the stream's work).
  std::string compare(const Case &c, const TensorMap &ref) {
    for (const OutSpec &o : c.outputs) {
      const TensorData &want = ref.at(o.name);
      std::vector<uint8_t> host(want.bytes.size());
      if (cgc_status s = cgc_context_read_output(ctx, o.name.c_str(), host.data(),
                                                 host.size(), stream))
        return "read_output: " + fmtStatus(s);
      std::string p = compareOutput(o, decode(want.dtype, host.data(), host.size()),
                                    decode(want.dtype, want.bytes.data(), want.bytes.size()));
      if (!p.empty())
        return o.name + ": " + p;
    }
    return "";
  }
};

/// \p replays replays on \p w, a new input set every 100 (set k, k+1, ...
/// from \p first), each set's outputs checked. The first problem, or "".
std::string replayAndCheck(Worker &w, const Sets &sets, int64_t replays, int first) {
  for (int64_t r = 0, change = 0; r < replays; r += 100, ++change) {
    int set = int((first + change) % sets.ins.size());
    if (std::string p = w.feed(sets.ins[set]); !p.empty())
      return p;
    for (int64_t k = r; k < std::min(replays, r + 100); ++k)
      if (std::string p = w.run(); !p.empty())
        return "replay " + std::to_string(k) + ": " + p;
    if (std::string p = w.compare(*sets.c, sets.refs[set]); !p.empty())
      return "after replay " + std::to_string(std::min(replays, r + 100) - 1) + ": " + p;
  }
  return "";
}

/// Runs \p body(thread index) on \p n threads; the problems, one per line.
template <typename F> std::string onThreads(int n, F body) {
  std::vector<std::string> problems(n);
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] { problems[t] = body(t); });
  for (std::thread &t : threads)
    t.join();
  std::string all;
  for (int t = 0; t < n; ++t)
    if (!problems[t].empty())
      all += "thread " + std::to_string(t) + ": " + problems[t] + "\n";
  return all;
}

class SharedEngine : public ::testing::TestWithParam<const char *> {};

TEST_P(SharedEngine, EightThreadsEachWithItsContextAndStream) {
  CGC_REQUIRE_GPU();
  Sets sets;
  ASSERT_EQ(readSets(GetParam(), sets), "");
  cgc_engine engine = nullptr;
  std::string path = staged().dir + "/" + GetParam() + "/model.cgc";
  ASSERT_EQ(cgc_engine_load_file(path.c_str(), 0, &engine), CGC_OK) << cgc_last_error();
  constexpr int kThreads = 8;
  std::vector<Worker> workers(kThreads);
  for (Worker &w : workers)
    ASSERT_EQ(w.open(engine), "");
  // Warm-up: every context's first replays (lazy uploads, library handles).
  ASSERT_EQ(onThreads(kThreads, [&](int t) { return replayAndCheck(workers[t], sets, 200, t); }),
            "");
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const size_t device0 = deviceBytesInUse(), host0 = hostResidentBytes();
  const int64_t replays = stressReplays();
  auto start = std::chrono::steady_clock::now();
  std::string problems = onThreads(
      kThreads, [&](int t) { return replayAndCheck(workers[t], sets, replays, t * 3); });
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const size_t device1 = deviceBytesInUse(), host1 = hostResidentBytes();
  char report[400];
  std::snprintf(report, sizeof report,
                "%s: %d threads x %lld replays on one engine in %.1f s (%.2f us per replay "
                "overall), every 100th checked; device memory in use %zu -> %zu bytes; host "
                "RSS %zu -> %zu KiB",
                GetParam(), kThreads, (long long)replays, seconds,
                seconds * 1e6 / double(kThreads * replays), device0, device1, host0 / 1024,
                host1 / 1024);
  std::printf("stress: %s\n", report);
  RecordProperty("stress", report);
  workers.clear();
  cgc_engine_destroy(engine);
  EXPECT_EQ(problems, "");
  EXPECT_EQ(device1, device0);
  EXPECT_LE(host1 - std::min(host1, host0), size_t(8) << 20);
}

// Elementwise; products (generated and cuBLASLt, with a layernorm and a
// gelu epilogue); cuBLASLt alone; conditional nodes around products.
INSTANTIATE_TEST_SUITE_P(Stress, SharedEngine,
                         ::testing::Values("own_ew_f32_4097", "example_mlp8_infer_b1",
                                           "own_linear_lib_f32_255x1000x64_relu",
                                           "cf_if_linear"));

TEST(Concurrent, FourEnginesOfOneArtifact) {
  CGC_REQUIRE_GPU();
  Sets sets;
  ASSERT_EQ(readSets("example_mlp8_infer_b1", sets), "");
  std::string path = staged().dir + "/example_mlp8_infer_b1/model.cgc";
  int64_t replays = std::max<int64_t>(stressReplays() / 10, 200);
  EXPECT_EQ(onThreads(4,
                      [&](int t) -> std::string {
                        cgc_engine engine = nullptr;
                        if (cgc_status s = cgc_engine_load_file(path.c_str(), 0, &engine))
                          return "load: " + fmtStatus(s);
                        std::string p;
                        {
                          Worker w;
                          p = w.open(engine);
                          if (p.empty())
                            p = replayAndCheck(w, sets, replays, t);
                        }
                        cgc_engine_destroy(engine);
                        return p;
                      }),
            "");
}

/// While three threads replay their contexts, a fourth binds its context's
/// input x (a cuBLASLt product's operand: the call is captured again) to
/// one caller buffer per input set in turn, runs and checks, then restores
/// the arena; nobody's results may change.
TEST(Concurrent, BindingWhileOthersRun) {
  CGC_REQUIRE_GPU();
  const char *name = "own_linear_lib_f32_255x1000x64_relu";
  Sets sets;
  ASSERT_EQ(readSets(name, sets), "");
  cgc_engine engine = nullptr;
  std::string path = staged().dir + "/" + name + "/model.cgc";
  ASSERT_EQ(cgc_engine_load_file(path.c_str(), 0, &engine), CGC_OK) << cgc_last_error();
  std::vector<Worker> workers(4);
  for (Worker &w : workers)
    ASSERT_EQ(w.open(engine), "");
  std::vector<void *> buffers;
  for (const TensorMap &in : sets.ins) {
    const std::vector<uint8_t> &x = in.at("x").bytes;
    void *p = nullptr;
    ASSERT_EQ(cudaMalloc(&p, x.size()), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(p, x.data(), x.size(), cudaMemcpyHostToDevice), cudaSuccess);
    buffers.push_back(p);
  }
  std::atomic<bool> binding(true);
  int64_t replays = std::max<int64_t>(stressReplays() / 10, 200);
  std::string problems = onThreads(4, [&](int t) -> std::string {
    Worker &w = workers[t];
    if (t > 0) {
      std::string p;
      while (p.empty() && binding.load())
        p = replayAndCheck(w, sets, 100, t);
      return p.empty() ? replayAndCheck(w, sets, replays, t) : p;
    }
    std::string p;
    for (int round = 0; p.empty() && round < 3 * int(buffers.size()); ++round) {
      int set = round % int(buffers.size());
      p = w.feed(sets.ins[set]);
      if (cgc_status s = p.empty() ? cgc_context_bind(w.ctx, "x", buffers[set]) : CGC_OK)
        p = "bind: " + fmtStatus(s);
      if (p.empty())
        p = w.run();
      if (p.empty())
        p = w.compare(*sets.c, sets.refs[set]);
      if (p.empty() && cudaStreamSynchronize(w.stream) != cudaSuccess)
        p = "cudaStreamSynchronize failed";
      if (cgc_status s = p.empty() ? cgc_context_bind(w.ctx, "x", nullptr) : CGC_OK)
        p = "unbind: " + fmtStatus(s);
    }
    binding.store(false);
    return p;
  });
  workers.clear();
  for (void *p : buffers)
    cudaFree(p);
  cgc_engine_destroy(engine);
  EXPECT_EQ(problems, "");
}

} // namespace

namespace {

/// The counter's per-context state `total` (f32[4]) of \p ctx.
std::vector<float> totalOf(cgc_context ctx) {
  std::vector<float> total(4, -1.0f);
  EXPECT_EQ(cgc_context_state_read(ctx, "total", total.data(), 16), CGC_OK)
      << cgc_last_error();
  return total;
}

std::vector<float> filled(float v) { return std::vector<float>(4, v); }

} // namespace

/// Per-context state (test/gpu/Inputs/context_counter.json: `total` of
/// scope "context", init 0.25, accumulates x; entry `reset` zeroes it):
/// each context of one engine holds its own copy, from its initial value; the
/// entry runs by name; the context's state API reads, writes and resets
/// it, and refuses the engine's parameter (as the engine's refuses
/// `total`); eight threads, each with its own context and stream, each
/// accumulate 1000 replays of their own x exactly.
TEST(Concurrent, PerContextState) {
  CGC_REQUIRE_GPU();
  std::string path = staged().dir + "/context_counter/model.cgc";
  cgc_engine engine = nullptr;
  ASSERT_EQ(cgc_engine_load_file(path.c_str(), 0, &engine), CGC_OK) << cgc_last_error();
  size_t reset = 0;
  ASSERT_EQ(cgc_engine_find_graph(engine, "reset", &reset), CGC_OK) << cgc_last_error();
  cgc_context a = nullptr, b = nullptr;
  ASSERT_EQ(cgc_context_create(engine, nullptr, 0, &a), CGC_OK) << cgc_last_error();
  ASSERT_EQ(cgc_context_create(engine, nullptr, 0, &b), CGC_OK) << cgc_last_error();
  auto runWith = [](cgc_context ctx, float x, size_t graph) {
    std::vector<float> in = filled(x);
    EXPECT_EQ(cgc_context_write_input(ctx, "x", in.data(), 16, nullptr), CGC_OK);
    EXPECT_EQ(cgc_run(ctx, graph, nullptr, 0, nullptr), CGC_OK) << cgc_last_error();
    EXPECT_EQ(cgc_stream_synchronize(nullptr), CGC_OK);
  };
  EXPECT_EQ(totalOf(a), filled(0.25f));
  for (int k = 0; k < 3; ++k)
    runWith(a, 0.5f, 0);
  runWith(b, 2.0f, 0);
  EXPECT_EQ(totalOf(a), filled(1.75f));
  EXPECT_EQ(totalOf(b), filled(2.25f));
  std::vector<float> y(4);
  ASSERT_EQ(cgc_context_read_output(a, "y", y.data(), 16, nullptr), CGC_OK);
  EXPECT_EQ(y, filled(1.75f)); // (0.25 + 0.5 * 3) * w, w ones
  runWith(a, 7.0f, reset);
  EXPECT_EQ(totalOf(a), filled(0.0f));
  EXPECT_EQ(totalOf(b), filled(2.25f));
  std::vector<float> start = filled(10.0f);
  ASSERT_EQ(cgc_context_state_write(b, "total", start.data(), 16), CGC_OK);
  runWith(b, 1.0f, 0);
  EXPECT_EQ(totalOf(b), filled(11.0f));
  ASSERT_EQ(cgc_context_reset_state(b, nullptr), CGC_OK);
  ASSERT_EQ(cgc_stream_synchronize(nullptr), CGC_OK);
  EXPECT_EQ(totalOf(b), filled(0.25f));
  void *device = nullptr;
  size_t bytes = 0;
  ASSERT_EQ(cgc_context_state_data(a, "total", &device, &bytes), CGC_OK);
  EXPECT_EQ(bytes, 16u);
  float w[4];
  EXPECT_EQ(cgc_engine_state_read(engine, "total", w, 16), CGC_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(cgc_last_error()).find("per-context"), std::string::npos)
      << cgc_last_error();
  EXPECT_EQ(cgc_context_state_read(a, "w", w, 16), CGC_ERROR_UNSUPPORTED);
  EXPECT_EQ(cgc_context_state_read(a, "total", w, 8), CGC_ERROR_INVALID_ARGUMENT);
  cgc_context_destroy(a);
  cgc_context_destroy(b);
  constexpr int kThreads = 8, kReplays = 1000;
  std::string problems = onThreads(kThreads, [&](int t) -> std::string {
    cgc_context ctx = nullptr;
    cudaStream_t stream = nullptr;
    if (cgc_context_create(engine, nullptr, 0, &ctx) ||
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
      return std::string("setup: ") + cgc_last_error();
    std::vector<float> in = filled(float(t + 1));
    std::string problem;
    if (cgc_context_write_input(ctx, "x", in.data(), 16, stream))
      problem = std::string("write: ") + cgc_last_error();
    for (int r = 0; r < kReplays && problem.empty(); ++r)
      if (cgc_run(ctx, 0, nullptr, 0, stream))
        problem = std::string("run: ") + cgc_last_error();
    if (problem.empty() && cudaStreamSynchronize(stream) != cudaSuccess)
      problem = "synchronize";
    std::vector<float> total(4);
    if (problem.empty() && cgc_context_state_read(ctx, "total", total.data(), 16))
      problem = std::string("read: ") + cgc_last_error();
    if (problem.empty() && total != filled(0.25f + float(kReplays * (t + 1))))
      problem = "total " + std::to_string(total[0]) + ", expected 0.25 + " +
                std::to_string(kReplays * (t + 1));
    cgc_context_destroy(ctx);
    cudaStreamDestroy(stream);
    return problem;
  });
  EXPECT_EQ(problems, "");
  cgc_engine_destroy(engine);
}
