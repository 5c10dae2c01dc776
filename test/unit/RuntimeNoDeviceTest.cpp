//===- RuntimeNoDeviceTest.cpp - The runtime without (or with) a GPU -----===//
//
// Checks the C ABI basics that need no device, and that without a driver
// every entry point fails cleanly with CGC_ERROR_NO_DEVICE. Passes on GPU
// machines too (there it checks that garbage is refused as an artifact).
//
//===----------------------------------------------------------------------===//
#include "RunCommands.h"
#include "cgc/cgc_runtime.h"
#include "cgc/runtime.hpp"
#include "format/ArtifactFormat.h"
#include "format/FileIO.h"
#include "format/WeightsFile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

TEST(RuntimeBasics, AbiAndMessages) {
  EXPECT_EQ(cgc_abi_version(), CGC_ABI_VERSION);
  EXPECT_STREQ(cgc_status_message(CGC_ERROR_NO_DEVICE), "no CUDA device");
  EXPECT_EQ(cgc_engine_load_memory(nullptr, 4, 0, nullptr),
            CGC_ERROR_INVALID_ARGUMENT);
  cgc_engine_destroy(nullptr);
  cgc_context_destroy(nullptr);
  cgc_counters counters;
  EXPECT_EQ(cgc_context_counters(nullptr, &counters), CGC_ERROR_INVALID_ARGUMENT);
  int64_t dim = 0;
  EXPECT_EQ(cgc_engine_tensor_dim(nullptr, CGC_ROLE_INPUT, 0, 0, &dim),
            CGC_ERROR_INVALID_ARGUMENT);
}

TEST(RuntimeBasics, LoadFailsCleanly) {
  const char garbage[] = "definitely not a cgc artifact........";
  cgc_engine e = nullptr;
  cgc_status s = cgc_engine_load_memory(garbage, sizeof garbage, 0, &e);
  EXPECT_EQ(e, nullptr);
  // The artifact is validated before the driver is loaded: the same
  // refusal with or without a device.
  EXPECT_EQ(s, CGC_ERROR_INVALID_ARTIFACT);
  EXPECT_NE(std::string(cgc_last_error()).find("bad magic"),
            std::string::npos);
}

/// Command-line mistakes are usage errors (2); a model that cannot be read
/// is an input error (1).
TEST(RuntimeBasics, RunCommandArgumentErrors) {
  char run[] = "run", model[] = "/nonexistent/m.cgc";
  char *noModel[] = {run};
  EXPECT_EQ(cgcRunMain(1, noModel), 2);
  char *noIo[] = {run, model};
  EXPECT_EQ(cgcRunMain(2, noIo), 2);
  char bench[] = "bench", bad[] = "--iters", zero[] = "x";
  char *badIters[] = {bench, model, bad, zero};
  EXPECT_EQ(cgcBenchMain(4, badIters), 2);
  char *missing[] = {bench, model};
  EXPECT_EQ(cgcBenchMain(2, missing), 1);
  char alternate[] = "--alternate-dims", noValue[] = "B";
  char *badAlternate[] = {bench, model, alternate, noValue};
  testing::internal::CaptureStderr();
  EXPECT_EQ(cgcBenchMain(4, badAlternate), 2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find(
                "--alternate-dims takes NAME=V,..., not 'B'"),
            std::string::npos);
}

/// An artifact whose one state tensor comes from the weights file
/// `w.bin` beside it, both written into a fresh folder.
struct BesideFixture {
  std::string dir = testing::TempDir() + "/cgc_beside_runtime";
  std::string artifact = dir + "/m.cgc", weights = dir + "/w.bin";
  std::vector<uint8_t> bytes;

  void write(const std::vector<uint8_t> &fileBytes, uint64_t recordedSize,
             uint64_t recordedHash) {
    std::string err;
    std::remove(weights.c_str());
    std::remove(artifact.c_str());
    std::remove(dir.c_str());
    std::string mk = "mkdir -p '" + dir + "'";
    ASSERT_EQ(std::system(mk.c_str()), 0);
    ASSERT_TRUE(cgc::format::writeFileReplacing(weights, fileBytes.data(),
                                                fileBytes.size(), true, err))
        << err;
    cgc::format::Manifest m;
    m.compilerVersion = "test";
    m.persistentSize = 256;
    cgc::format::TensorDesc w;
    w.name = "w", w.kind = "parameter", w.dtype = "f32", w.shape = {4};
    w.region = cgc::format::Region::Persistent, w.bytes = 16;
    w.initTensor = "w", w.initOffset = 0;
    m.state.push_back(w);
    m.weightsFile = {"w.bin", recordedSize, recordedHash};
    bytes = cgc::format::serializeArtifact(m, {});
    ASSERT_TRUE(cgc::format::writeFileReplacing(artifact, bytes.data(),
                                                bytes.size(), true, err))
        << err;
  }
};

uint64_t hashOf(const std::vector<uint8_t> &b) {
  cgc::format::ContentHash h;
  h.update(b.data(), b.size());
  return h.finish();
}

/// The weights file is checked before the driver: the same refusals with
/// or without a GPU; a good file gets as far as the device.
TEST(RuntimeBasics, WeightsBesideAreCheckedAtLoad) {
  std::vector<uint8_t> file(16, 1);
  BesideFixture f;
  f.write(file, file.size(), hashOf(file));
  cgc_engine e = nullptr;
  cgc_status s = cgc_engine_load_file(f.artifact.c_str(), 0, &e);
  EXPECT_TRUE(s == CGC_OK || s == CGC_ERROR_NO_DEVICE) << cgc_last_error();
  cgc_engine_destroy(e);
  e = nullptr;
  s = cgc_engine_load_memory_weights(f.bytes.data(), f.bytes.size(),
                                     f.weights.c_str(), 0, &e);
  EXPECT_TRUE(s == CGC_OK || s == CGC_ERROR_NO_DEVICE) << cgc_last_error();
  cgc_engine_destroy(e);
  e = nullptr;
  cgc::Engine wrapped; // The C++ wrapper says the same.
  cgc::Status ws = cgc::Engine::loadMemoryWeights(f.bytes.data(), f.bytes.size(),
                                                 f.weights, wrapped);
  EXPECT_TRUE(ws.code == CGC_OK || ws.code == CGC_ERROR_NO_DEVICE) << ws.message;
  EXPECT_EQ(cgc::Engine::loadMemoryWeights(f.bytes.data(), f.bytes.size(),
                                           f.weights + ".missing", wrapped)
                .code,
            CGC_ERROR_IO);
  // From memory, nothing says where the file is.
  EXPECT_EQ(cgc_engine_load_memory(f.bytes.data(), f.bytes.size(), 0, &e),
            CGC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(cgc_last_error()).find(
                "keeps its weights in 'w.bin' beside it"),
            std::string::npos);
  // Another size, another content, no file.
  f.write(file, file.size() + 1, hashOf(file));
  EXPECT_EQ(cgc_engine_load_file(f.artifact.c_str(), 0, &e),
            CGC_ERROR_INVALID_ARTIFACT);
  EXPECT_NE(std::string(cgc_last_error()).find(
                "is 16 bytes; the artifact expects 17"),
            std::string::npos)
      << cgc_last_error();
  f.write(file, file.size(), hashOf(file) ^ 1);
  EXPECT_EQ(cgc_engine_load_file(f.artifact.c_str(), 0, &e),
            CGC_ERROR_INVALID_ARTIFACT);
  EXPECT_NE(std::string(cgc_last_error()).find("its contents changed"),
            std::string::npos);
  std::remove(f.weights.c_str());
  EXPECT_EQ(cgc_engine_load_file(f.artifact.c_str(), 0, &e), CGC_ERROR_IO);
  EXPECT_NE(std::string(cgc_last_error()).find("cannot open"),
            std::string::npos);
  EXPECT_EQ(e, nullptr);
}

} // namespace
