//===- RuntimeGpuTest.cpp - End-to-end tests of the cgc runtime ----------===//
//
// Loads NVRTC-built artifacts and checks replay results against the CPU:
// repeated replays, caller-pointer binding, several contexts, eager mode,
// dynamic dims, state, PTX fallback, refusals, recovery from a sticky
// error, and `cgc run` / `cgc bench`.
// Every test skips (GTEST_SKIP) when no CUDA device is present.
//
//===----------------------------------------------------------------------===//
#include "GpuTestUtil.h"
#include "RunCommands.h"
#include "format/FileIO.h"
#include "format/Safetensors.h"
#include "format/WeightsFile.h"
#include "cgc/runtime.hpp"

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <unistd.h>

using namespace cgctest;

namespace {

class RuntimeGpu : public ::testing::Test {
protected:
  void SetUp() override {
    CGC_REQUIRE_GPU();
    std::string err;
    ASSERT_TRUE(buildChainArtifact(spec, bytes, err)) << err;
    cgc::Status s = cgc::Engine::loadMemory(bytes.data(), bytes.size(), engine);
    ASSERT_TRUE(s) << s.message;
    s = cgc::Context::create(engine, ctx);
    ASSERT_TRUE(s) << s.message;
  }

  std::vector<float> randomInput(unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-4, 4);
    std::vector<float> x(kMaxN);
    for (float &v : x)
      v = d(rng);
    return x;
  }

  std::vector<float> read(cgc::Context &c, const char *name) {
    std::vector<float> y(kMaxN);
    cgc::Status s = c.readOutput(name, y.data(), y.size() * 4);
    EXPECT_TRUE(s) << s.message;
    return y;
  }

  void expectChain(const std::vector<float> &x, const std::vector<float> &y,
                   int64_t n = kMaxN, float w = kInitialW) {
    for (int64_t i = 0; i < n; ++i)
      ASSERT_FLOAT_EQ(y[i], expectedY(x[i], spec.numAdd, w)) << "i=" << i;
  }

  ChainSpec spec;
  std::vector<uint8_t> bytes;
  cgc::Engine engine;
  cgc::Context ctx;
};

TEST_F(RuntimeGpu, ReplayMatchesCpu) {
  auto x = randomInput(1);
  ASSERT_TRUE(ctx.writeInput("x", x.data(), x.size() * 4));
  ASSERT_TRUE(ctx.run());
  ASSERT_EQ(cgc_stream_synchronize(nullptr), CGC_OK);
  expectChain(x, read(ctx, "y"));
  expectChain(x, read(ctx, "y_copy"));
}

TEST_F(RuntimeGpu, ManyReplaysWithNewInputs) {
  for (unsigned it = 0; it < 50; ++it) {
    auto x = randomInput(100 + it);
    ASSERT_TRUE(ctx.writeInput("x", x.data(), x.size() * 4));
    ASSERT_TRUE(ctx.run());
    expectChain(x, read(ctx, "y_copy"));
  }
}

TEST_F(RuntimeGpu, EagerEqualsGraph) {
  auto x = randomInput(7);
  ASSERT_TRUE(ctx.writeInput("x", x.data(), x.size() * 4));
  ASSERT_TRUE(ctx.run());
  auto graphY = read(ctx, "y_copy");
  ASSERT_TRUE(ctx.writeInput("x", randomInput(8).data(), kMaxN * 4));
  ASSERT_TRUE(ctx.writeInput("x", x.data(), x.size() * 4));
  ASSERT_TRUE(ctx.runEager());
  EXPECT_EQ(read(ctx, "y_copy"), graphY);
}

TEST_F(RuntimeGpu, TwoContextsShareTheEngine) {
  cgc::Context other;
  ASSERT_TRUE(cgc::Context::create(engine, other));
  auto x1 = randomInput(11), x2 = randomInput(12);
  ASSERT_TRUE(ctx.writeInput("x", x1.data(), kMaxN * 4));
  ASSERT_TRUE(other.writeInput("x", x2.data(), kMaxN * 4));
  ASSERT_TRUE(ctx.run());
  ASSERT_TRUE(other.run());
  expectChain(x1, read(ctx, "y"));
  expectChain(x2, read(other, "y"));
  ASSERT_TRUE(other.writeInput("x", x1.data(), kMaxN * 4));
  ASSERT_TRUE(other.run());
  EXPECT_EQ(read(other, "y"), read(ctx, "y"));
}

TEST_F(RuntimeGpu, BindCallerPointers) {
  float *dx = nullptr, *dy = nullptr, *dcopy = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void **>(&dx), kMaxN * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void **>(&dy), kMaxN * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void **>(&dcopy), kMaxN * 4), cudaSuccess);
  EXPECT_EQ(cgc_context_bind(ctx.get(), "x", reinterpret_cast<char *>(dx) + 4),
            CGC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cgc_context_bind(ctx.get(), "nope", dx), CGC_ERROR_NOT_FOUND);
  ASSERT_TRUE(ctx.bind("x", dx));
  ASSERT_TRUE(ctx.bind("y", dy));
  ASSERT_TRUE(ctx.bind("y_copy", dcopy));
  cgc_tensor view;
  ASSERT_TRUE(ctx.input("x", view));
  EXPECT_EQ(view.data, dx);
  for (int round = 0; round < 3; ++round) {
    auto x = randomInput(20 + round);
    ASSERT_EQ(cudaMemcpy(dx, x.data(), kMaxN * 4, cudaMemcpyHostToDevice),
              cudaSuccess);
    ASSERT_TRUE(round == 2 ? ctx.runEager() : ctx.run());
    std::vector<float> y(kMaxN), copy(kMaxN);
    ASSERT_EQ(cudaMemcpy(y.data(), dy, kMaxN * 4, cudaMemcpyDeviceToHost),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpy(copy.data(), dcopy, kMaxN * 4,
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    expectChain(x, y);
    expectChain(x, copy);
  }
  // Unbinding restores the arena storage.
  ASSERT_TRUE(ctx.bind("x", nullptr));
  ASSERT_TRUE(ctx.bind("y", nullptr));
  ASSERT_TRUE(ctx.bind("y_copy", nullptr));
  auto x = randomInput(30);
  ASSERT_TRUE(ctx.writeInput("x", x.data(), kMaxN * 4));
  ASSERT_TRUE(ctx.run());
  expectChain(x, read(ctx, "y_copy"));
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dcopy);
}

// An input copied in from device memory on the stream (what a caller does
// with a tensor smaller than the bucket): the run reads the copy.
TEST_F(RuntimeGpu, CopyInputFromDevice) {
  float *dx = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void **>(&dx), kMaxN * 4), cudaSuccess);
  auto x = randomInput(35);
  ASSERT_EQ(cudaMemcpy(dx, x.data(), kMaxN * 4, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cgc_context_copy_input(ctx.get(), "y", dx, 4, nullptr),
            CGC_ERROR_INVALID_ARGUMENT); // an output
  EXPECT_EQ(cgc_context_copy_input(ctx.get(), "x", dx, size_t{1} << 40, nullptr),
            CGC_ERROR_INVALID_ARGUMENT); // past the tensor (refused before any copy)
  EXPECT_EQ(cgc_context_copy_input(ctx.get(), "nope", dx, 4, nullptr), CGC_ERROR_NOT_FOUND);
  ASSERT_EQ(cgc_context_copy_input(ctx.get(), "x", dx, kMaxN * 4, nullptr), CGC_OK)
      << cgc_last_error();
  ASSERT_TRUE(ctx.run());
  expectChain(x, read(ctx, "y_copy"));
  // A shorter copy (the real rows of a smaller size) and a run at that size.
  auto x2 = randomInput(36);
  ASSERT_EQ(cudaMemcpy(dx, x2.data(), 100 * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cgc_context_copy_input(ctx.get(), "x", dx, 100 * 4, nullptr), CGC_OK)
      << cgc_last_error();
  ASSERT_TRUE(ctx.run(0, {100}));
  expectChain(x2, read(ctx, "y_copy"), 100);
  cudaFree(dx);
}

TEST_F(RuntimeGpu, DynamicDimsAndOutputShape) {
  auto x = randomInput(40);
  ASSERT_TRUE(ctx.writeInput("x", x.data(), kMaxN * 4));
  for (int64_t n : {100, 1000, 37}) {
    ASSERT_TRUE(ctx.run(0, {n}));
    cgc_tensor out;
    ASSERT_TRUE(ctx.output("y", out));
    ASSERT_EQ(out.ndim, 1);
    EXPECT_EQ(out.shape[0], n);
    auto y = read(ctx, "y");
    expectChain(x, y, n);
    for (int64_t i = n; i < kMaxN; ++i)
      ASSERT_EQ(y[i], 0.0f) << "memset node must clear the padding, i=" << i;
  }
  EXPECT_EQ(cgc_run(ctx.get(), 0, std::vector<int64_t>{0}.data(), 1, nullptr),
            CGC_ERROR_INVALID_ARGUMENT);
}

TEST_F(RuntimeGpu, StateReadWriteAndSeed) {
  float w = 0;
  ASSERT_TRUE(engine.stateRead("w", &w, 4));
  EXPECT_EQ(w, kInitialW);
  float newW = -1.5f;
  ASSERT_TRUE(engine.stateWrite("w", &newW, 4));
  auto x = randomInput(50);
  ASSERT_TRUE(ctx.writeInput("x", x.data(), kMaxN * 4));
  ASSERT_TRUE(ctx.run());
  expectChain(x, read(ctx, "y"), kMaxN, newW);
  ASSERT_EQ(cgc_engine_set_rng_seed(engine.get(), 42), CGC_OK);
  int64_t rng[2] = {0, 1};
  ASSERT_TRUE(engine.stateRead("rng_state", rng, 16));
  EXPECT_EQ(rng[0], 42);
  EXPECT_EQ(rng[1], 0);
  EXPECT_EQ(cgc_engine_state_read(engine.get(), "w", &w, 8),
            CGC_ERROR_INVALID_ARGUMENT);
}

TEST(RuntimeGpuLoad, PtxFallbackAndArchMismatch) {
  CGC_REQUIRE_GPU();
  std::string err;
  ChainSpec ptxOnly;
  ptxOnly.cubinArch = "";
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(buildChainArtifact(ptxOnly, bytes, err)) << err;
  cgc::Engine e;
  cgc::Status s = cgc::Engine::loadMemory(bytes.data(), bytes.size(), e);
  ASSERT_TRUE(s) << s.message;
  cgc::Context c;
  ASSERT_TRUE(cgc::Context::create(e, c));
  std::vector<float> x(kMaxN, 1.0f), y(kMaxN);
  ASSERT_TRUE(c.writeInput("x", x.data(), kMaxN * 4));
  ASSERT_TRUE(c.run());
  ASSERT_TRUE(c.readOutput("y", y.data(), kMaxN * 4));
  EXPECT_EQ(y[999], expectedY(1.0f, ptxOnly.numAdd, kInitialW));

  ChainSpec wrongArch;
  wrongArch.cubinArch = "sm_80";
  wrongArch.withPtx = false;
  ASSERT_TRUE(buildChainArtifact(wrongArch, bytes, err)) << err;
  cgc::Engine bad;
  s = cgc::Engine::loadMemory(bytes.data(), bytes.size(), bad);
  EXPECT_EQ(s.code, CGC_ERROR_UNSUPPORTED);
  EXPECT_NE(s.message.find("no loadable device code"), std::string::npos)
      << s.message;
}

/// A sticky CUDA error (an illegal address: the input bound to an address
/// no allocation holds) fails the run's synchronization and every later
/// call with CGC_ERROR_DRIVER naming the driver's error, in every context
/// of the process; destroying every engine and context and
/// cgc_device_reset (the primary context's reset, docs/runtime.md)
/// recovers: a new engine then replays correctly. In a process of its own (a death test, re-run
/// from the start), since the error poisons the whole CUDA context; the
/// sanitizer runs leave it out (scripts/gpu-run.sh).
TEST(RuntimeGpuSticky, DetectedThenRecoveredByADeviceReset) {
  CGC_REQUIRE_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::vector<uint8_t> bytes;
  std::string err;
  ASSERT_TRUE(buildChainArtifact(ChainSpec(), bytes, err)) << err;
  auto body = [&]() -> int {
    cgc_engine engine = nullptr;
    cgc_context ctx = nullptr, other = nullptr;
    if (cgc_engine_load_memory(bytes.data(), bytes.size(), 0, &engine) ||
        cgc_context_create(engine, nullptr, 0, &ctx) ||
        cgc_context_create(engine, nullptr, 0, &other))
      return 2;
    // Far past any allocation, 256-aligned: the first kernel reads it.
    if (cgc_context_bind(ctx, "x", reinterpret_cast<void *>(uintptr_t(1) << 46)))
      return 3;
    cgc_status ran = cgc_run(ctx, 0, nullptr, 0, nullptr);
    cgc_status synced = ran ? ran : cgc_stream_synchronize(nullptr);
    if (synced != CGC_ERROR_DRIVER ||
        std::string(cgc_last_error()).find("CUDA_ERROR_ILLEGAL_ADDRESS") == std::string::npos) {
      std::fprintf(stderr, "sticky error: %d %s\n", int(synced), cgc_last_error());
      return 4;
    }
    if (cgc_run(other, 0, nullptr, 0, nullptr) != CGC_ERROR_DRIVER)
      return 5; // the other context is poisoned too
    cgc_context_destroy(ctx);
    cgc_context_destroy(other);
    cgc_engine_destroy(engine);
    if (cgc_device_reset(0) != CGC_OK) {
      std::fprintf(stderr, "reset: %s\n", cgc_last_error());
      return 6;
    }
    cgc::Engine fresh;
    cgc::Context c;
    if (cgc::Status s = cgc::Engine::loadMemory(bytes.data(), bytes.size(), fresh); !s) {
      std::fprintf(stderr, "load after the reset: %s\n", s.message.c_str());
      return 7;
    }
    if (cgc::Status s = cgc::Context::create(fresh, c); !s) {
      std::fprintf(stderr, "context after the reset: %s\n", s.message.c_str());
      return 7;
    }
    std::vector<float> x(kMaxN, 1.5f), y(kMaxN);
    if (!c.writeInput("x", x.data(), kMaxN * 4) || !c.run() ||
        !c.readOutput("y", y.data(), kMaxN * 4))
      return 8;
    for (float v : y)
      if (v != expectedY(1.5f, ChainSpec().numAdd, kInitialW))
        return 9;
    return 0;
  };
  EXPECT_EXIT(std::exit(body()), ::testing::ExitedWithCode(0), "");
}

TEST(RuntimeGpuLoad, CorruptArtifactRefused) {
  CGC_REQUIRE_GPU();
  std::string err;
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(buildChainArtifact(ChainSpec(), bytes, err)) << err;
  bytes[bytes.size() / 2] ^= 0x40;
  cgc_engine e = nullptr;
  EXPECT_EQ(cgc_engine_load_memory(bytes.data(), bytes.size(), 0, &e),
            CGC_ERROR_INVALID_ARTIFACT);
  EXPECT_EQ(e, nullptr);
  EXPECT_NE(std::string(cgc_last_error()).find("checksum"), std::string::npos);
}

/// The chain artifact with its state `w` moved out of the artifact into a
/// weights file beside it (at a non-zero offset, other bytes around it)
/// gives bit for bit the outputs of the in-artifact version, loaded by
/// path and from memory with the file named; the file is mapped, checked
/// and uploaded at load.
TEST(RuntimeGpuLoad, WeightsBesideMatchInArtifact) {
  CGC_REQUIRE_GPU();
  namespace fs = std::filesystem;
  namespace fmt = cgc::format;
  std::string err;
  std::vector<uint8_t> inBytes;
  ASSERT_TRUE(buildChainArtifact(ChainSpec(), inBytes, err)) << err;
  fmt::Artifact in;
  ASSERT_TRUE(fmt::parseArtifact(inBytes.data(), inBytes.size(), in, err))
      << err;
  // The weights file: 40 bytes of noise, then w's initial value, then more.
  const fmt::TensorDesc *w = in.findTensor("w");
  ASSERT_NE(w, nullptr);
  auto blob = in.blob(w->initBlob);
  std::vector<uint8_t> file(40 + w->bytes + 24, 0x5a);
  std::memcpy(file.data() + 40, blob.first + w->initOffset, w->bytes);
  fmt::ContentHash hash;
  hash.update(file.data(), file.size());
  fmt::Manifest m = in.manifest;
  m.weightsFile = {"w.bin", file.size(), hash.finish()};
  fmt::BlobList blobs;
  for (const fmt::BlobDesc &b : m.blobs)
    if (b.name != w->initBlob) {
      auto bytes = in.blob(b.name);
      blobs.push_back({b.name, {bytes.first, bytes.first + bytes.second}});
    }
  for (fmt::TensorDesc &t : m.state)
    if (t.name == "w") {
      t.initBlob.clear();
      t.initTensor = "w";
      t.initOffset = 40;
    }
  std::vector<uint8_t> besideBytes = fmt::serializeArtifact(m, blobs);
  fs::path dir = fs::temp_directory_path() /
                 ("cgc_beside_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string artifact = (dir / "m.cgc").string();
  ASSERT_TRUE(fmt::writeFileReplacing(artifact, besideBytes.data(),
                                      besideBytes.size(), true, err));
  ASSERT_TRUE(fmt::writeFileReplacing((dir / "w.bin").string(), file.data(),
                                      file.size(), true, err));

  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-4, 4);
  std::vector<float> x(kMaxN);
  for (float &v : x)
    v = d(rng);
  auto runOnce = [&](cgc_engine e) {
    std::vector<float> y(kMaxN, -1);
    cgc_context ctx = nullptr;
    EXPECT_EQ(cgc_context_create(e, nullptr, 0, &ctx), CGC_OK)
        << cgc_last_error();
    EXPECT_EQ(cgc_context_write_input(ctx, "x", x.data(), x.size() * 4,
                                      nullptr),
              CGC_OK);
    EXPECT_EQ(cgc_run(ctx, 0, nullptr, 0, nullptr), CGC_OK);
    EXPECT_EQ(cgc_stream_synchronize(nullptr), CGC_OK);
    EXPECT_EQ(cgc_context_read_output(ctx, "y", y.data(), y.size() * 4,
                                      nullptr),
              CGC_OK);
    cgc_context_destroy(ctx);
    return y;
  };
  cgc_engine inEngine = nullptr, fileEngine = nullptr, memEngine = nullptr;
  ASSERT_EQ(cgc_engine_load_memory(inBytes.data(), inBytes.size(), 0,
                                   &inEngine),
            CGC_OK)
      << cgc_last_error();
  ASSERT_EQ(cgc_engine_load_file(artifact.c_str(), 0, &fileEngine), CGC_OK)
      << cgc_last_error();
  ASSERT_EQ(cgc_engine_load_memory_weights(besideBytes.data(),
                                           besideBytes.size(),
                                           (dir / "w.bin").c_str(), 0,
                                           &memEngine),
            CGC_OK)
      << cgc_last_error();
  std::vector<float> ref = runOnce(inEngine);
  for (cgc_engine e : {fileEngine, memEngine}) {
    std::vector<float> y = runOnce(e);
    EXPECT_EQ(std::memcmp(y.data(), ref.data(), y.size() * 4), 0);
    float wv = 0;
    EXPECT_EQ(cgc_engine_state_read(e, "w", &wv, 4), CGC_OK);
    EXPECT_EQ(wv, kInitialW);
  }
  for (int64_t i = 0; i < kMaxN; ++i)
    ASSERT_FLOAT_EQ(ref[i], expectedY(x[i], 3, kInitialW)) << i;
  cgc_engine_destroy(inEngine);
  cgc_engine_destroy(fileEngine);
  cgc_engine_destroy(memEngine);
  // A changed byte outside w is still refused: the whole file is checked.
  file[0] ^= 1;
  ASSERT_TRUE(fmt::writeFileReplacing((dir / "w.bin").string(), file.data(),
                                      file.size(), true, err));
  cgc_engine bad = nullptr;
  EXPECT_EQ(cgc_engine_load_file(artifact.c_str(), 0, &bad),
            CGC_ERROR_INVALID_ARTIFACT);
  EXPECT_EQ(bad, nullptr);
  fs::remove_all(dir);
}

TEST(RuntimeGpuTools, RunAndBenchCommands) {
  CGC_REQUIRE_GPU();
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() /
                 ("cgc_gpu_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string err;
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(buildChainArtifact(ChainSpec(), bytes, err)) << err;
  std::string model = (dir / "m.cgc").string();
  FILE *f = std::fopen(model.c_str(), "wb");
  ASSERT_TRUE(f);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  // A real length of 300 < max: the dim is inferred from the input shape.
  cgc::format::TensorMap in;
  std::vector<float> x(300);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i) * 0.25f;
  in["x"] = {"F32", {300}, std::vector<uint8_t>(300 * 4)};
  std::memcpy(in["x"].bytes.data(), x.data(), 300 * 4);
  std::string inPath = (dir / "in.safetensors").string();
  std::string outPath = (dir / "out.safetensors").string();
  ASSERT_TRUE(cgc::format::writeSafetensors(inPath, in, err)) << err;
  for (const char *mode : {"--overwrite", "--eager"}) {
    std::vector<std::string> args = {"run", model, "--inputs", inPath,
                                     "--outputs", outPath, "--overwrite",
                                     mode};
    std::vector<char *> argv;
    for (auto &a : args)
      argv.push_back(&a[0]);
    ASSERT_EQ(cgcRunMain(int(argv.size()), argv.data()), 0) << mode;
    cgc::format::TensorMap out;
    ASSERT_TRUE(cgc::format::readSafetensors(outPath, out, err)) << err;
    ASSERT_EQ(out["y"].shape, std::vector<int64_t>{300});
    const float *y = reinterpret_cast<const float *>(out["y"].bytes.data());
    for (size_t i = 0; i < 300; ++i)
      ASSERT_FLOAT_EQ(y[i], expectedY(x[i], 3, kInitialW));
  }
  std::vector<std::string> noOverwrite = {"run", model, "--inputs", inPath,
                                          "--outputs", outPath};
  std::vector<char *> argv;
  for (auto &a : noOverwrite)
    argv.push_back(&a[0]);
  EXPECT_EQ(cgcRunMain(int(argv.size()), argv.data()), 1);
  std::vector<std::string> bench = {"bench", model, "--iters", "50",
                                    "--warmup", "5", "--repeats", "3"};
  argv.clear();
  for (auto &a : bench)
    argv.push_back(&a[0]);
  EXPECT_EQ(cgcBenchMain(int(argv.size()), argv.data()), 0);
  fs::remove_all(dir);
}

} // namespace
