//===- GpuTestUtil.h - Build test artifacts with NVRTC ----------*- C++ -*-===//
//
// Until codegen exists, GPU tests make their own .cgc files: NVRTC compiles
// a few small kernels (cubin for a chosen arch + compute_90 PTX) and
// serializeArtifact packs them with a hand-written manifest.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TEST_GPU_GPUTESTUTIL_H
#define CGC_TEST_GPU_GPUTESTUTIL_H

#include "format/ArtifactFormat.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cgctest {

/// True if a CUDA device is usable; otherwise \p reason says why.
bool hasDevice(std::string &reason);

#define CGC_REQUIRE_GPU()                                                      \
  do {                                                                         \
    std::string cgcReason;                                                     \
    if (!::cgctest::hasDevice(cgcReason))                                      \
      GTEST_SKIP() << "skipped: no CUDA device (" << cgcReason << ")";         \
  } while (0)

/// Compiles \p source with NVRTC for \p arch ("sm_90" gives a cubin,
/// "compute_90" gives PTX text).
bool compileNvrtc(const std::string &source, const std::string &arch,
                  std::vector<uint8_t> &out, std::string &error);

/// The test model: y = (x + numAdd) * 2 + w[0], then y_copy = y, as
/// memset -> numAdd x add_one -> scale -> add_w -> memcpy, over a dynamic
/// dim "n" (max 1000). State: w (init 3.0f) and rng_state (16 bytes).
struct ChainSpec {
  int numAdd = 3;
  std::string cubinArch = "sm_90"; ///< Empty: no cubin blob.
  bool withPtx = true;
};
constexpr int64_t kMaxN = 1000;
constexpr float kInitialW = 3.0f;

bool buildChainArtifact(const ChainSpec &spec, std::vector<uint8_t> &out,
                        std::string &error);
inline float expectedY(float x, int numAdd, float w) {
  return (x + float(numAdd)) * 2.0f + w;
}

} // namespace cgctest

#endif // CGC_TEST_GPU_GPUTESTUTIL_H
