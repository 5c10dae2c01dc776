//===- WeightsBesideTest.cpp - Artifacts with weights beside them --------===//
//
// The manifest's weights-file reference round trips and is refused where
// it leaves the folder or disagrees with its tensors; the content hash;
// the mapped file checked before use.
//
//===----------------------------------------------------------------------===//
#include "SampleArtifact.h"
#include "format/WeightsFile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

using namespace cgc::format;
using namespace cgc::format::test;

namespace {

/// sampleManifest with its state read from a weights file beside it.
Manifest besideManifest() {
  Manifest m = sampleManifest();
  m.weightsFile = {"weights/model.safetensors", 4096, 0x0123456789abcdefull};
  m.state[0].initBlob.clear();
  m.state[0].initTensor = "w";
  m.state[0].initOffset = 64;
  return m;
}

TEST(WeightsBeside, RoundTrip) {
  std::vector<uint8_t> bytes =
      serializeArtifact(besideManifest(), sampleBlobs());
  Artifact a;
  std::string err;
  ASSERT_TRUE(parseArtifact(bytes.data(), bytes.size(), a, err)) << err;
  const Manifest &m = a.manifest;
  EXPECT_EQ(m.weightsFile.path, "weights/model.safetensors");
  EXPECT_EQ(m.weightsFile.size, 4096u);
  EXPECT_EQ(m.weightsFile.checksum, 0x0123456789abcdefull);
  EXPECT_EQ(m.state[0].initTensor, "w");
  EXPECT_EQ(m.state[0].initOffset, 64u);
  EXPECT_TRUE(m.state[0].initBlob.empty());
  EXPECT_NE(manifestToJson(m).find("\"checksum\": \"0x0123456789abcdef\""),
            std::string::npos);
}

TEST(WeightsBeside, RefusesPathsLeavingTheFolder) {
  for (const char *path : {"../model.safetensors", "/abs/model.safetensors",
                           "a/../../b", "a//b", "./a", "a/", "a\\b"}) {
    Manifest m = besideManifest();
    m.weightsFile.path = path;
    EXPECT_NE(errorFor(m).find("weights_file '" + std::string(path) + "'"),
              std::string::npos)
        << path << ": " << errorFor(m);
  }
}

TEST(WeightsBeside, RefusesBadReferences) {
  Manifest m = besideManifest();
  m.weightsFile = WeightsFileDesc();
  EXPECT_NE(errorFor(m).find("init_tensor 'w' but the artifact names no "
                             "weights_file"),
            std::string::npos);
  m = besideManifest();
  m.state[0].initOffset = 4096 - 8; // 16 bytes from 8 before the end.
  EXPECT_NE(errorFor(m).find("initial value exceeds the weights file (4096 "
                             "bytes)"),
            std::string::npos);
  m = besideManifest();
  m.state[0].initBlob = "weights";
  EXPECT_NE(errorFor(m).find("both init_blob and init_tensor"),
            std::string::npos);
}

uint64_t hashOf(const std::vector<uint8_t> &bytes,
                std::initializer_list<size_t> cuts) {
  ContentHash h;
  size_t at = 0;
  for (size_t cut : cuts) {
    h.update(bytes.data() + at, cut - at);
    at = cut;
  }
  h.update(bytes.data() + at, bytes.size() - at);
  return h.finish();
}

TEST(WeightsBeside, ContentHash) {
  std::vector<uint8_t> bytes(1000);
  std::mt19937 rng(3);
  for (uint8_t &b : bytes)
    b = uint8_t(rng());
  uint64_t whole = hashOf(bytes, {});
  // However the bytes are split into updates.
  EXPECT_EQ(hashOf(bytes, {1, 2, 3, 35, 64, 100, 999}), whole);
  EXPECT_EQ(hashOf(bytes, {31, 32, 33, 500}), whole);
  // Any one changed byte (in a stripe or in the tail) or length changes it.
  for (size_t i : {size_t(0), size_t(31), size_t(500), size_t(999)}) {
    std::vector<uint8_t> other = bytes;
    other[i] ^= 0x80;
    EXPECT_NE(hashOf(other, {}), whole) << i;
  }
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_NE(hashOf(longer, {}), whole);
  uint64_t v = 0;
  EXPECT_TRUE(parseHashText(hashText(whole), v));
  EXPECT_EQ(v, whole);
  EXPECT_FALSE(parseHashText("0x123", v));
  EXPECT_FALSE(parseHashText("0X0123456789ABCDEF", v));
}

TEST(WeightsBeside, MappedWeightsChecksBeforeUse) {
  std::string dir = testing::TempDir();
  std::string path = dir + "/cgc_weights_beside_test.bin";
  std::vector<uint8_t> bytes(100, 7);
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  }
  MappedWeights probe;
  std::string err;
  ASSERT_TRUE(probe.open(path, nullptr, err)) << err;
  EXPECT_EQ(probe.size(), 100u);
  EXPECT_EQ(probe.data()[99], 7);
  WeightsFileDesc good{"w.bin", 100, probe.hash()};
  MappedWeights ok;
  EXPECT_TRUE(ok.open(path, &good, err)) << err;
  WeightsFileDesc size = good, hash = good;
  size.size = 101;
  hash.checksum ^= 1;
  MappedWeights a, b, c, d;
  EXPECT_FALSE(a.open(path, &size, err));
  EXPECT_TRUE(a.mismatched());
  EXPECT_NE(err.find("is 100 bytes; the artifact expects 101"),
            std::string::npos)
      << err;
  EXPECT_FALSE(b.open(path, &hash, err));
  EXPECT_TRUE(b.mismatched());
  EXPECT_NE(err.find("has checksum " + hashText(good.checksum) +
                     "; the artifact expects " + hashText(hash.checksum)),
            std::string::npos)
      << err;
  EXPECT_FALSE(c.open(path + ".missing", &good, err));
  EXPECT_FALSE(c.mismatched());
  EXPECT_NE(err.find("cannot open"), std::string::npos) << err;
  EXPECT_FALSE(d.open(dir, &good, err));
  EXPECT_NE(err.find("is a directory"), std::string::npos) << err;
  std::remove(path.c_str());
}

TEST(WeightsBeside, PathBeside) {
  EXPECT_EQ(weightsPathBeside("out/m.cgc", "w.safetensors"),
            "out/w.safetensors");
  EXPECT_EQ(weightsPathBeside("m.cgc", "sub/w.safetensors"),
            "sub/w.safetensors");
  EXPECT_EQ(weightsPathBeside("/a/b/m.cgc", "w"), "/a/b/w");
}

} // namespace
