//===- InitialBytesTest.cpp - A weights tensor's bytes in the artifact ----===//
//
// initialBytes copies a weights tensor of the input's own dtype as it is,
// and must give what decoding, casting and encoding gives (bool aside,
// whose stored bytes other than 0 and 1 are normalized).
//
//===----------------------------------------------------------------------===//
#include "ir/Diagnostics.h"
#include "ir/Initializers.h"
#include "ir/JsonReader.h"
#include "format/Safetensors.h"

#include "llvm/Support/raw_ostream.h"
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace cgc;

namespace {

std::vector<uint8_t> bytesOf(const void *data, size_t size) {
  const auto *p = static_cast<const uint8_t *>(data);
  return std::vector<uint8_t>(p, p + size);
}

/// The slow path's bytes: initialValue decoded and cast, then encoded.
std::vector<uint8_t> encoded(const Graph &g, const GraphInput &in) {
  std::vector<Element> values;
  std::string error;
  EXPECT_TRUE(initialValue(g, in, values, error)) << error;
  std::vector<int64_t> shape;
  for (Dim d : in.value->getType().dims)
    shape.push_back(d.extent());
  return encodeTensorData(in.value->getType().dtype, shape, values).bytes;
}

TEST(InitialBytes, CopiedWeightsEqualTheDecodedOnes) {
  std::string dir = std::filesystem::temp_directory_path() /
                    ("cgc-initial-bytes-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  float f32[4] = {1.5f, -0.0f, 1e-40f, -3.25e7f};
  uint16_t bf16[3] = {0x3f80, 0x8000, 0x7f7f};
  int64_t i64[2] = {(int64_t(1) << 60) + 1, INT64_MIN};
  uint8_t flags[3] = {0, 1, 2}; // 2: a bool byte other than 0 and 1
  format::TensorMap tensors;
  tensors["a"] = {"F32", {4}, bytesOf(f32, sizeof f32)};
  tensors["b"] = {"BF16", {3}, bytesOf(bf16, sizeof bf16)};
  tensors["c"] = {"I64", {2}, bytesOf(i64, sizeof i64)};
  tensors["d"] = {"BOOL", {3}, bytesOf(flags, sizeof flags)};
  std::string error;
  ASSERT_TRUE(format::writeSafetensors(dir + "/w.safetensors", tensors, error,
                                       /*overwrite=*/true))
      << error;
  std::ofstream(dir + "/m.json") << R"({"format_version": 1, "name": "g",
    "weights_file": "w.safetensors",
    "inputs": [
      {"name": "a", "kind": "parameter", "dtype": "f32", "shape": [4], "weight": "a"},
      {"name": "b", "kind": "parameter", "dtype": "bf16", "shape": [3], "weight": "b"},
      {"name": "c", "kind": "buffer", "dtype": "i64", "shape": [2], "weight": "c"},
      {"name": "d", "kind": "buffer", "dtype": "bool", "shape": [3], "weight": "d"}],
    "nodes": [], "outputs": ["a", "b", "c", "d"]})";
  std::string messages;
  llvm::raw_string_ostream os(messages);
  DiagnosticEngine diag(os);
  auto g = readGraphFile(dir + "/m.json", diag, ReadOptions());
  ASSERT_TRUE(g) << os.str();
  format::TensorMap cache;
  for (const GraphInput &in : g->inputs()) {
    std::vector<uint8_t> bytes;
    ASSERT_TRUE(initialBytes(*g, in, bytes, error, &cache)) << error;
    EXPECT_EQ(bytes, encoded(*g, in)) << in.value->getName();
  }
  std::vector<uint8_t> flagsOut;
  ASSERT_TRUE(initialBytes(*g, g->inputs()[3], flagsOut, error, &cache));
  EXPECT_EQ(flagsOut, (std::vector<uint8_t>{0, 1, 1}));
  std::filesystem::remove_all(dir);
}

} // namespace
