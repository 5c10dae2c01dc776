//===- StagedRuntimeGpuTest.cpp - The runtime's API over staged cases -----===//
//
// Runtime features exercised on staged artifacts (StagedCases.h), each
// checked against the interpreter's references: caller buffers bound to a
// cuBLASLt product's input and output (re-capturing its child graph node,
// inside `if` bodies too), a pinned product algorithm, and a soak of a
// million replays with flat device memory and host RSS.
//
//===----------------------------------------------------------------------===//
#include "GpuTestUtil.h"
#include "StagedCases.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <unistd.h>

using namespace cgctest;

namespace {

/// Points the cache folder (the runtime's tuning memory among it) at a
/// fresh folder for the scope, so what other tests remembered does not
/// decide what a test sees; CGC_CACHE and the tuning switches are unset for
/// the scope (timing on). A test asserts dir is not empty before use.
struct FreshCacheFolder {
  static constexpr const char *kVariables[] = {
      "CGC_CACHE_DIR", "CGC_CACHE", "CGC_PRODUCT_TUNING", "CGC_CONVOLUTION_TUNING"};
  std::string dir;
  std::string old[4];
  bool had[4] = {};
  FreshCacheFolder() {
    char pattern[] = "/tmp/cgc-gpu-cache-XXXXXX";
    dir = mkdtemp(pattern) ? pattern : "";
    for (int i = 0; i < 4; ++i) {
      const char *v = getenv(kVariables[i]);
      had[i] = v != nullptr;
      old[i] = v ? v : "";
      unsetenv(kVariables[i]);
    }
    setenv("CGC_CACHE_DIR", dir.empty() ? "/nonexistent/cgc-gpu-cache" : dir.c_str(), 1);
  }
  ~FreshCacheFolder() {
    for (int i = 0; i < 4; ++i)
      if (had[i])
        setenv(kVariables[i], old[i].c_str(), 1);
      else
        unsetenv(kVariables[i]);
    if (!dir.empty()) {
      std::string command = "rm -rf '" + dir + "'";
      EXPECT_EQ(std::system(command.c_str()), 0);
    }
  }
  /// The tuning memory files' contents, concatenated ("" if none).
  std::string tuningFiles() const {
    std::string command = "cat '" + dir + "'/tuning/*.txt 2>/dev/null";
    std::string text;
    if (FILE *p = popen(command.c_str(), "r")) {
      char chunk[4096];
      for (size_t n; (n = fread(chunk, 1, sizeof chunk, p)) > 0;)
        text.append(chunk, n);
      pclose(p);
    }
    return text;
  }
  /// Every remembered line's checksum broken (a corrupt tuning file).
  void corruptTuningFiles() const {
    std::string command = "sed -i 's/^./x/' '" + dir + "'/tuning/*.txt";
    EXPECT_EQ(std::system(command.c_str()), 0);
  }
};

/// Writes \p bytes to a fresh device buffer.
void *deviceCopy(const std::vector<uint8_t> &bytes) {
  void *p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, bytes.size()), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
            cudaSuccess);
  return p;
}

/// Runs with the product's input x and output bound to caller buffers (the
/// captured cuBLASLt call is re-captured), compares with the reference.
std::string runBound(Loaded &l, const Case &c, const TensorMap &in,
                     const TensorMap &ref, bool eager) {
  const OutSpec &o = c.outputs.at(0);
  void *dx = deviceCopy(in.at("x").bytes);
  void *dy = nullptr;
  EXPECT_EQ(cudaMalloc(&dy, ref.at(o.name).bytes.size()), cudaSuccess);
  EXPECT_EQ(cudaMemset(dy, 0xFF, ref.at(o.name).bytes.size()), cudaSuccess);
  std::string problem;
  TensorMap rest = in;
  rest.erase("x");
  for (const auto &[name, t] : rest)
    if (cgc_status s = cgc_context_write_input(l.ctx, name.c_str(),
                                               t.bytes.data(), t.bytes.size(),
                                               nullptr))
      problem += "write " + name + ": " + fmtStatus(s) + "\n";
  if (cgc_status s = cgc_context_bind(l.ctx, "x", dx))
    problem += "bind x: " + fmtStatus(s) + "\n";
  if (cgc_status s = cgc_context_bind(l.ctx, o.name.c_str(), dy))
    problem += "bind " + o.name + ": " + fmtStatus(s) + "\n";
  cgc_status s = eager ? cgc_run_eager(l.ctx, 0, nullptr, 0, nullptr)
                       : cgc_run(l.ctx, 0, nullptr, 0, nullptr);
  if (s || (s = cgc_stream_synchronize(nullptr)))
    problem += "run: " + fmtStatus(s) + "\n";
  std::vector<uint8_t> got(ref.at(o.name).bytes.size());
  EXPECT_EQ(cudaMemcpy(got.data(), dy, got.size(), cudaMemcpyDeviceToHost),
            cudaSuccess);
  problem += compareOutput(o, decode(o.dtype, got.data(), got.size()),
                           decode(o.dtype, ref.at(o.name).bytes.data(),
                                  got.size()));
  cgc_context_bind(l.ctx, "x", nullptr);
  cgc_context_bind(l.ctx, o.name.c_str(), nullptr);
  cudaFree(dx);
  cudaFree(dy);
  return problem;
}

} // namespace

/// A cuBLASLt product (the staged case own_linear_lib_f32_255x1000x64_relu):
/// the algorithm chosen at load (timed; the heuristic's first with
/// CGC_PRODUCT_TUNING=0) is described, read back and pinned before
/// any context exists (and refused after); a context then runs with its
/// input and output bound to caller buffers, rebound to new buffers with
/// new inputs, graph and eager, each checked against the interpreter.
TEST(StagedCases, ProductBindingAndPinnedAlgorithm) {
  CGC_REQUIRE_GPU();
  FreshCacheFolder fresh; // timed here, not remembered from another test
  ASSERT_FALSE(fresh.dir.empty());
  const std::string name = "own_linear_lib_f32_255x1000x64_relu";
  const Case *c = findCase(name);
  ASSERT_NE(c, nullptr) << name << " is not staged";
  ASSERT_GE(c->replays, 2);
  std::string dir = staged().dir + "/" + name + "/";
  Loaded l;
  ASSERT_EQ(cgc_engine_load_file((dir + "model.cgc").c_str(), 0, &l.engine),
            CGC_OK)
      << cgc_last_error();
  ASSERT_EQ(cgc_engine_num_products(l.engine), 1u);
  char line[512];
  ASSERT_EQ(cgc_engine_describe_product(l.engine, 0, line, sizeof line), CGC_OK)
      << cgc_last_error();
  // Timed at load among the heuristic's candidates (ProductTuning.cpp).
  EXPECT_NE(std::string(line).find(" timed"), std::string::npos) << line;
  {
    // CGC_PRODUCT_TUNING=0 keeps the heuristic's first choice.
    setenv("CGC_PRODUCT_TUNING", "0", 1);
    cgc_engine untimed = nullptr;
    cgc_status loaded = cgc_engine_load_file((dir + "model.cgc").c_str(), 0, &untimed);
    unsetenv("CGC_PRODUCT_TUNING");
    ASSERT_EQ(loaded, CGC_OK) << cgc_last_error();
    char first[512];
    ASSERT_EQ(cgc_engine_describe_product(untimed, 0, first, sizeof first), CGC_OK);
    EXPECT_NE(std::string(first).find(" heuristic"), std::string::npos) << first;
    cgc_engine_destroy(untimed);
  }
  uint64_t algo[8];
  ASSERT_EQ(cgc_engine_get_product_algorithm(l.engine, 0, algo), CGC_OK);
  ASSERT_EQ(cgc_engine_pin_product_algorithm(l.engine, 0, algo), CGC_OK)
      << cgc_last_error();
  ASSERT_EQ(cgc_engine_describe_product(l.engine, 0, line, sizeof line), CGC_OK);
  EXPECT_NE(std::string(line).find("pinned"), std::string::npos) << line;
  ASSERT_EQ(cgc_context_create(l.engine, nullptr, 0, &l.ctx), CGC_OK)
      << cgc_last_error();
  EXPECT_NE(cgc_engine_pin_product_algorithm(l.engine, 0, algo), CGC_OK)
      << "pinning while a context exists is refused";
  for (int k : {1, 2}) {
    SCOPED_TRACE("input set " + std::to_string(k));
    TensorMap in, ref;
    ASSERT_TRUE(readInputSet(dir, k, in, ref));
    EXPECT_EQ(runBound(l, *c, in, ref, false), "");
    EXPECT_EQ(runBound(l, *c, in, ref, true), "");
  }
  TensorMap in, ref; // unbound again: the arena slots
  ASSERT_TRUE(readInputSet(dir, 0, in, ref));
  ASSERT_EQ(l.feed(in), "");
  EXPECT_EQ(l.runAndCompare(false, *c, ref), "");
}

/// The tuning memory (runtime/src/TuningMemory.h) over a cuBLASLt product
/// and a cuDNN convolution: the first load times and remembers, a second
/// load on the same GPU takes the same choice without timing ("remembered";
/// info.timed 2) and still computes the interpreter's results, a corrupt
/// memory file is ignored (timed again) and CGC_CACHE=0 neither reads nor
/// writes it.
TEST(StagedCases, TuningMemoryRemembersTimedChoices) {
  CGC_REQUIRE_GPU();
  FreshCacheFolder fresh;
  ASSERT_FALSE(fresh.dir.empty());
  auto productChoice = [](cgc_engine e, std::string &state) {
    char line[512];
    EXPECT_EQ(cgc_engine_describe_product(e, 0, line, sizeof line), CGC_OK);
    std::string text(line);
    state = text.substr(text.rfind(' ') + 1);
    uint64_t algo[8] = {};
    EXPECT_EQ(cgc_engine_get_product_algorithm(e, 0, algo), CGC_OK);
    std::string bytes(reinterpret_cast<const char *>(algo), sizeof algo);
    return bytes;
  };
  auto convolutionChoice = [](cgc_engine e, std::string &state) {
    cgc_convolution_info info;
    EXPECT_EQ(cgc_engine_convolution_info(e, 0, &info), CGC_OK);
    state = info.timed == 2 ? "remembered" : info.timed == 1 ? "timed" : "heuristic";
    return std::string(info.tag);
  };
  struct Subject {
    const char *name;
    std::function<std::string(cgc_engine, std::string &)> choice;
  } subjects[] = {{"own_linear_lib_f32_255x1000x64_relu", productChoice},
                  {"conv_nhwc_bf16", convolutionChoice}};
  for (const Subject &subject : subjects) {
    SCOPED_TRACE(subject.name);
    const Case *c = findCase(subject.name);
    ASSERT_NE(c, nullptr) << subject.name << " is not staged";
    std::string model = staged().dir + "/" + subject.name + "/model.cgc";
    auto load = [&](std::string &state, std::string &choice) {
      Loaded l;
      ASSERT_EQ(cgc_engine_load_file(model.c_str(), 0, &l.engine), CGC_OK)
          << cgc_last_error();
      choice = subject.choice(l.engine, state);
      ASSERT_EQ(cgc_context_create(l.engine, nullptr, 0, &l.ctx), CGC_OK)
          << cgc_last_error();
      TensorMap in, ref;
      ASSERT_TRUE(readInputSet(staged().dir + "/" + subject.name + "/", 0, in, ref));
      ASSERT_EQ(l.feed(in), "");
      EXPECT_EQ(l.runAndCompare(false, *c, ref), "");
    };
    std::string first, second, third, off, choice1, choice2, choice3, choiceOff;
    load(first, choice1);
    EXPECT_EQ(first, "timed");
    load(second, choice2);
    EXPECT_EQ(second, "remembered");
    EXPECT_EQ(choice2, choice1) << "the remembered choice is the one timed";
    fresh.corruptTuningFiles();
    load(third, choice3);
    EXPECT_EQ(third, "timed") << "a corrupt memory is ignored";
    std::string remembered = fresh.tuningFiles();
    EXPECT_NE(remembered, "") << "the corrupt memory is written again";
    setenv("CGC_CACHE", "0", 1);
    load(off, choiceOff);
    unsetenv("CGC_CACHE");
    EXPECT_EQ(off, "timed") << "CGC_CACHE=0 reads no tuning memory";
    EXPECT_EQ(fresh.tuningFiles(), remembered) << "CGC_CACHE=0 writes no tuning memory";
  }
}

/// cgc_context_loop_trips after graph replays and eager runs equals the
/// trip count the interpreter's model returns (a carried counter): loops
/// of 0 and 8 trips whose bound is an item of a mask's count, and the
/// power iteration's, whose cond reads an item. A name that is no loop is
/// refused.
TEST(StagedCases, LoopTripsReadByTheCaller) {
  CGC_REQUIRE_GPU();
  const std::pair<const char *, const char *> loops[] = {
      {"own_sync_loop_none", "trips"},
      {"own_sync_loop_all", "trips"},
      {"own_sync_loop_half", "trips"},
      {"example_power_iteration", "iterations"}};
  for (const auto &[name, counter] : loops) {
    SCOPED_TRACE(name);
    const Case *c = findCase(name);
    ASSERT_NE(c, nullptr) << name << " is not staged";
    std::string dir = staged().dir + "/" + name + "/";
    Loaded l;
    ASSERT_EQ(l.open(dir + "model.cgc"), "");
    TensorMap in, ref;
    ASSERT_TRUE(readInputSet(dir, 0, in, ref));
    const TensorData &want = ref.at(counter);
    Decoded expected = decode(want.dtype, want.bytes.data(), want.bytes.size());
    ASSERT_EQ(expected.size(), 1u);
    // The counter may be a float (own_sync_loop_* count in f32): its value
    // must still be a whole number of trips.
    const int64_t wantTrips = std::llround(expected.real(0));
    ASSERT_EQ(expected.real(0), double(wantTrips)) << counter << " is not a whole number";
    const char *loop = std::string(name).rfind("example_", 0) == 0 ? "iterate"
                                                                   : "loop";
    for (bool eager : {false, true, false}) {
      ASSERT_EQ(l.feed(in), "");
      EXPECT_EQ(l.runAndCompare(eager, *c, ref), "") << (eager ? "eager" : "graph");
      uint32_t trips = 12345;
      ASSERT_EQ(cgc_context_loop_trips(l.ctx, loop, &trips, nullptr), CGC_OK)
          << cgc_last_error();
      EXPECT_EQ(int64_t(trips), wantTrips) << (eager ? "eager" : "graph");
    }
    uint32_t trips = 0;
    EXPECT_EQ(cgc_context_loop_trips(l.ctx, "no_such_loop", &trips, nullptr),
              CGC_ERROR_NOT_FOUND);
  }
}

/// cuBLASLt products inside the arms of an `if` (the staged case
/// cf_if_linear): binding x and the output y re-captures the child graph
/// nodes inside the conditional bodies; two input sets, graph and eager.
TEST(StagedCases, ProductRebindingInsideIfBodies) {
  CGC_REQUIRE_GPU();
  const std::string name = "cf_if_linear";
  const Case *c = findCase(name);
  ASSERT_NE(c, nullptr) << name << " is not staged";
  ASSERT_GE(c->replays, 2);
  std::string dir = staged().dir + "/" + name + "/";
  Loaded l;
  ASSERT_EQ(l.open(dir + "model.cgc"), "");
  Case yOnly = *c; // runBound compares the first output: y, the if's
  yOnly.outputs.erase(std::remove_if(yOnly.outputs.begin(), yOnly.outputs.end(),
                                     [](const OutSpec &o) { return o.name != "y"; }),
                      yOnly.outputs.end());
  ASSERT_EQ(yOnly.outputs.size(), 1u);
  for (int k : {1, 2}) {
    SCOPED_TRACE("input set " + std::to_string(k));
    TensorMap in, ref;
    ASSERT_TRUE(readInputSet(dir, k, in, ref));
    EXPECT_EQ(runBound(l, yOnly, in, ref, false), "");
    EXPECT_EQ(runBound(l, yOnly, in, ref, true), "");
  }
}

/// Long runs: CGC_SOAK_REPLAYS (default 10^6) replays of the staged
/// example_mlp8_infer_b1 (cuBLASLt and generated products, layernorm), with
/// fresh inputs every 1000 replays (the staged input sets in turn, outputs
/// poisoned each time), checked against the interpreter's references every
/// 100th input change and at the end. Device memory in use must not grow,
/// and the host's resident set by at most 8 MiB; both are printed.
TEST(StagedCases, SoakReplays) {
  CGC_REQUIRE_GPU();
  const std::string name = "example_mlp8_infer_b1";
  const Case *c = findCase(name);
  ASSERT_NE(c, nullptr) << name << " is not staged";
  ASSERT_GE(c->replays, 2);
  std::string dir = staged().dir + "/" + name + "/";
  std::vector<TensorMap> ins(c->replays), refs(c->replays);
  for (int k = 0; k < c->replays; ++k)
    ASSERT_TRUE(readInputSet(dir, k + 1, ins[k], refs[k]));
  const char *env = std::getenv("CGC_SOAK_REPLAYS");
  const int64_t total = env ? std::atoll(env) : 1000000;
  Loaded l;
  ASSERT_EQ(l.open(dir + "model.cgc"), "");
  ASSERT_EQ(l.feed(ins[0]), "");
  ASSERT_EQ(l.runAndCompare(false, *c, refs[0]), ""); // warm-up
  const size_t device0 = deviceBytesInUse(), host0 = hostResidentBytes();
  size_t deviceMax = device0, hostMax = host0;
  auto start = std::chrono::steady_clock::now();
  int checks = 0;
  for (int64_t r = 0; r < total; r += 1000) {
    const int64_t change = r / 1000;
    const int set = int(change % c->replays);
    ASSERT_EQ(l.feed(ins[set]), "") << "replay " << r;
    const int64_t batch = std::min<int64_t>(1000, total - r);
    for (int64_t k = 0; k + 1 < batch; ++k)
      ASSERT_EQ(cgc_run(l.ctx, 0, nullptr, 0, nullptr), CGC_OK) << "replay " << r + k;
    if (change % 100 == 0 || r + batch >= total) {
      ASSERT_EQ(l.runAndCompare(false, *c, refs[set]), "") << "replay " << r + batch - 1;
      ++checks;
      deviceMax = std::max(deviceMax, deviceBytesInUse());
      hostMax = std::max(hostMax, hostResidentBytes());
    } else {
      ASSERT_EQ(cgc_run(l.ctx, 0, nullptr, 0, nullptr), CGC_OK);
    }
  }
  ASSERT_EQ(cgc_stream_synchronize(nullptr), CGC_OK);
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start).count();
  char report[400];
  std::snprintf(report, sizeof report,
                "%lld replays of %s in %.1f s, %d checked against the "
                "interpreter; device memory in use %zu -> max %zu bytes; "
                "host RSS %zu -> max %zu KiB",
                (long long)total, name.c_str(), seconds, checks, device0,
                deviceMax, host0 / 1024, hostMax / 1024);
  std::printf("soak: %s\n", report);
  RecordProperty("soak", report); // into the gtest XML that gpu-run keeps
  EXPECT_EQ(deviceMax, device0);
  EXPECT_LE(hostMax - host0, size_t(8) << 20);
}
