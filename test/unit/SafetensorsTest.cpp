//===- SafetensorsTest.cpp - safetensors read/write and validation -------===//
//
// Round trip, refusal to overwrite, and rejection of malformed headers.
//
//===----------------------------------------------------------------------===//
#include "format/Safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <unistd.h>

using namespace cgc::format;

namespace {

TensorMap sample() {
  TensorMap m;
  m["a"] = {"F32", {2, 2}, std::vector<uint8_t>(16, 1)};
  m["b"] = {"I64", {3}, std::vector<uint8_t>(24, 2)};
  m["c"] = {"BOOL", {}, {1}};
  return m;
}

std::vector<uint8_t> withHeader(const std::string &json,
                                const std::vector<uint8_t> &data) {
  std::vector<uint8_t> b(8 + json.size());
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i)
    b[i] = uint8_t(n >> (8 * i));
  std::memcpy(b.data() + 8, json.data(), json.size());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

std::string errorOf(const std::vector<uint8_t> &b) {
  TensorMap m;
  std::string err;
  EXPECT_FALSE(parseSafetensors(b.data(), b.size(), m, err));
  return err;
}

TEST(Safetensors, RoundTripAndOverwrite) {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("cgc_st_" + std::to_string(::getpid()) + ".safetensors"))
                         .string();
  std::filesystem::remove(path);
  std::string err;
  std::map<std::string, std::string> meta{{"format", "pt"}};
  ASSERT_TRUE(writeSafetensors(path, sample(), err, false, &meta)) << err;
  EXPECT_FALSE(writeSafetensors(path, sample(), err));
  EXPECT_NE(err.find("already exists"), std::string::npos);
  EXPECT_TRUE(writeSafetensors(path, sample(), err, /*overwrite=*/true)) << err;
  ASSERT_TRUE(writeSafetensors(path, sample(), err, true, &meta));
  TensorMap back;
  std::map<std::string, std::string> metaBack;
  ASSERT_TRUE(readSafetensors(path, back, err, &metaBack)) << err;
  EXPECT_EQ(metaBack, meta);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back["b"].shape, std::vector<int64_t>{3});
  EXPECT_EQ(back["b"].bytes, sample()["b"].bytes);
  EXPECT_EQ(back["c"].shape.size(), 0u);
  std::filesystem::remove(path);
  EXPECT_FALSE(readSafetensors(path, back, err));
}

TEST(Safetensors, RejectsMalformed) {
  std::vector<uint8_t> d8(8, 0);
  EXPECT_NE(errorOf({1, 2}).find("too small"), std::string::npos);
  EXPECT_NE(errorOf(withHeader("{", {})).find("not a JSON object"),
            std::string::npos);
  EXPECT_NE(errorOf(withHeader(
                        R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})",
                        d8))
                .find("unsupported dtype 'F64'"),
            std::string::npos);
  EXPECT_NE(errorOf(withHeader(
                        R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                        d8))
                .find("does not match"),
            std::string::npos);
  EXPECT_NE(errorOf(withHeader(
                        R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
                        d8))
                .find("out of bounds"),
            std::string::npos);
  EXPECT_NE(errorOf(withHeader(
                        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                        d8))
                .find("hole"),
            std::string::npos);
  EXPECT_NE(errorOf(withHeader(
                        R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                        d8))
                .find("overlap"),
            std::string::npos);
  EXPECT_NE(errorOf(withHeader(
                        R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})",
                        {}))
                .find("non-negative"),
            std::string::npos);
  EXPECT_NE(errorOf(withHeader(R"({"__metadata__":{"k":1}})", {}))
                .find("must be strings"),
            std::string::npos);
  std::vector<uint8_t> huge(8, 0xff);
  EXPECT_NE(errorOf(huge).find("exceeds"), std::string::npos);
}

} // namespace
