//===- TuningMemoryTest.cpp - Tuning choices remembered across loads ------===//
//
// The file rules of runtime/src/TuningMemory.h and the folder rule of
// format/CacheFolder.h, without a GPU: choices survive a save and a
// reread, a line whose checksum fails is ignored, two memories saving to
// one file keep both's choices, nothing is written when caching is off or
// the folder is not private, and hex round-trips. (Whether a load takes a
// remembered choice is checked on the GPU: StagedRuntimeGpuTest's
// StagedCases.TuningMemoryRemembersTimedChoices.)
//
//===----------------------------------------------------------------------===//
#include "TuningMemory.h"
#include "format/CacheFolder.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using cgc::rt::TuningMemory;

/// A fresh folder under the test's temporary directory.
std::string freshFolder(const std::string &name) {
  const char *tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/cgc-tuning-" +
                    name + "-" + std::to_string(::getpid());
  std::string command = "rm -rf '" + dir + "'";
  EXPECT_EQ(std::system(command.c_str()), 0);
  return dir;
}

std::string contents(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Sets an environment variable for the scope.
struct ScopedEnv {
  std::string name;
  bool had;
  std::string old;
  ScopedEnv(const char *n, const char *value) : name(n) {
    const char *v = std::getenv(n);
    had = v != nullptr;
    old = v ? v : "";
    if (value)
      ::setenv(n, value, 1);
    else
      ::unsetenv(n);
  }
  ~ScopedEnv() {
    if (had)
      ::setenv(name.c_str(), old.c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

TEST(TuningMemory, RemembersAcrossSaves) {
  std::string dir = freshFolder("saves"), why;
  ASSERT_TRUE(cgc::format::ensurePrivateFolder(dir, why)) << why;
  std::string file = dir + "/gpu.txt";
  TuningMemory first = TuningMemory::fromFile(file);
  EXPECT_EQ(first.recall("product a"), nullptr);
  first.remember("product a", "00ff");
  first.remember("convolution b", "eng1_k2=3");
  first.save();
  TuningMemory second = TuningMemory::fromFile(file);
  ASSERT_NE(second.recall("product a"), nullptr);
  EXPECT_EQ(*second.recall("product a"), "00ff");
  ASSERT_NE(second.recall("convolution b"), nullptr);
  EXPECT_EQ(*second.recall("convolution b"), "eng1_k2=3");
  // A key or value that would break the line format is not remembered.
  second.remember("bad\tkey", "v");
  second.remember("key", "bad\nvalue");
  second.save();
  EXPECT_EQ(TuningMemory::fromFile(file).recall("key"), nullptr);
}

TEST(TuningMemory, IgnoresLinesThatFailTheirChecksum) {
  std::string dir = freshFolder("checksum"), why;
  ASSERT_TRUE(cgc::format::ensurePrivateFolder(dir, why)) << why;
  std::string file = dir + "/gpu.txt";
  TuningMemory memory = TuningMemory::fromFile(file);
  memory.remember("product a", "0011");
  memory.remember("product b", "2233");
  memory.save();
  std::string text = contents(file);
  size_t at = text.find("2233");
  ASSERT_NE(at, std::string::npos);
  text[at] = '9'; // One value changed in place: its checksum fails.
  text += "garbage without a tab\n0123 cut short\tno newline";
  std::ofstream(file, std::ios::trunc) << text;
  TuningMemory reread = TuningMemory::fromFile(file);
  ASSERT_NE(reread.recall("product a"), nullptr);
  EXPECT_EQ(*reread.recall("product a"), "0011");
  EXPECT_EQ(reread.recall("product b"), nullptr);
}

TEST(TuningMemory, MergesWithWhatAnotherLoadSaved) {
  std::string dir = freshFolder("merge"), why;
  ASSERT_TRUE(cgc::format::ensurePrivateFolder(dir, why)) << why;
  std::string file = dir + "/gpu.txt";
  TuningMemory one = TuningMemory::fromFile(file), two = TuningMemory::fromFile(file);
  one.remember("product a", "aa");
  two.remember("product b", "bb");
  one.save();
  two.save(); // Read before one saved: the save rereads and merges.
  TuningMemory both = TuningMemory::fromFile(file);
  EXPECT_NE(both.recall("product a"), nullptr);
  EXPECT_NE(both.recall("product b"), nullptr);
}

TEST(TuningMemory, FollowsTheCacheFolderRule) {
  std::string dir = freshFolder("rule");
  {
    ScopedEnv folder("CGC_CACHE_DIR", dir.c_str()), on("CGC_CACHE", nullptr);
    TuningMemory memory = TuningMemory::forDevice("NVIDIA H100 80GB HBM3", 9, 0, 13000);
    EXPECT_EQ(memory.file(), dir + "/tuning/NVIDIA-H100-80GB-HBM3-sm90-driver13000.txt");
    struct stat st;
    EXPECT_NE(::stat(dir.c_str(), &st), 0) << "nothing is created before there is something to keep";
    memory.remember("product a", "aa");
    memory.save();
    for (const std::string &folder : {dir, dir + "/tuning"}) {
      ASSERT_EQ(::stat(folder.c_str(), &st), 0) << folder;
      EXPECT_EQ(st.st_mode & 0777, 0700u) << folder;
    }
    EXPECT_NE(contents(memory.file()).find("product a\taa\n"), std::string::npos);
  }
  {
    ScopedEnv folder("CGC_CACHE_DIR", dir.c_str()), off("CGC_CACHE", "0");
    EXPECT_EQ(cgc::format::cacheFolderFromEnvironment(), "");
    TuningMemory memory = TuningMemory::forDevice("gpu", 9, 0, 13000);
    EXPECT_EQ(memory.file(), "");
    EXPECT_EQ(memory.recall("product a"), nullptr);
  }
  // A cache folder or tuning/ that others may write to is not used:
  // nothing read, nothing saved.
  for (const std::string &open : {dir, dir + "/tuning"}) {
    SCOPED_TRACE(open);
    ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
    ScopedEnv folder("CGC_CACHE_DIR", dir.c_str()), on("CGC_CACHE", nullptr);
    TuningMemory memory = TuningMemory::forDevice("NVIDIA H100 80GB HBM3", 9, 0, 13000);
    EXPECT_EQ(memory.file(), "");
    EXPECT_EQ(memory.recall("product a"), nullptr);
    ASSERT_EQ(::chmod(open.c_str(), 0700), 0);
  }
  std::string command = "rm -rf '" + dir + "'";
  EXPECT_EQ(std::system(command.c_str()), 0);
}

TEST(TuningMemory, HexRoundTrips) {
  uint64_t algo[8] = {0, 1, 0xffffffffffffffffull, 42, 7, 0x0123456789abcdefull, 3, 9};
  std::string hex = cgc::rt::toHex(algo, sizeof algo);
  EXPECT_EQ(hex.size(), 128u);
  uint64_t back[8] = {};
  ASSERT_TRUE(cgc::rt::fromHex(hex, back, sizeof back));
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(back[i], algo[i]);
  EXPECT_FALSE(cgc::rt::fromHex(hex.substr(2), back, sizeof back));
  EXPECT_FALSE(cgc::rt::fromHex("zz" + hex.substr(2), back, sizeof back));
}

} // namespace
