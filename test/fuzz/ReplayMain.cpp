//===- ReplayMain.cpp - Runs a fuzz target over files, without libFuzzer --===//
//
//   fuzz-<target>-replay FILE|DIR...
//
// Feeds each file (each regular file of a directory, in name order) to
// LLVMFuzzerTestOneInput once. A crash or abort fails the run; ctest runs
// the seed inputs and test/fuzz/regressions/ this way in every build.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace fs = std::filesystem;

static void runFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
}

int main(int argc, char **argv) {
  size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    std::vector<fs::path> files;
    if (!fs::exists(argv[i])) {
      std::fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
      return 1;
    }
    if (fs::is_directory(argv[i])) {
      for (const auto &entry : fs::directory_iterator(argv[i]))
        if (entry.is_regular_file())
          files.push_back(entry.path());
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(argv[i]);
    }
    for (const fs::path &file : files) {
      std::printf("%s\n", file.c_str()); // the culprit, when one fails
      std::fflush(stdout);
      runFile(file);
      ++count;
    }
  }
  std::printf("replayed %zu input(s)\n", count);
  return 0;
}
