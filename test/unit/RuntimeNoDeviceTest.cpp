//===- RuntimeNoDeviceTest.cpp - The runtime without (or with) a GPU -----===//
//
// Checks the C ABI basics that need no device, and that without a driver
// every entry point fails cleanly with CGC_ERROR_NO_DEVICE. Passes on GPU
// machines too (there it checks that garbage is refused as an artifact).
//
//===----------------------------------------------------------------------===//
#include "RunCommands.h"
#include "cgc/cgc_runtime.h"

#include <gtest/gtest.h>

#include <string>

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

} // namespace
