//===- CacheCommand.cpp - `cgc cache list|clear|info|trim` ----------------===//
#include "CacheCommand.h"

#include "driver/CompileCache.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <ctime>

using namespace cgc;

static std::string timeText(std::chrono::system_clock::time_point t) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", std::gmtime(&seconds));
  return text;
}

int cgc::cgcCacheMain(int argc, char **argv) {
  const char *usage = "usage: cgc cache info|list|clear|trim\n";
  if (argc != 2 || (std::strcmp(argv[1], "info") && std::strcmp(argv[1], "list") &&
                    std::strcmp(argv[1], "clear") && std::strcmp(argv[1], "trim"))) {
    llvm::errs() << usage;
    return 2;
  }
  CompileCache cache = CompileCache::fromEnvironment();
  if (!cache.enabled()) {
    llvm::outs() << "cgc: the compile cache is off (CGC_CACHE=0, or no $HOME)\n";
    return 0;
  }
  std::vector<CompileCache::Entry> entries = cache.entries();
  if (!std::strcmp(argv[1], "info")) {
    uint64_t total = 0;
    for (const auto &e : entries)
      total += e.bytes;
    llvm::outs() << "folder: " << cache.folder() << "\nentries: " << entries.size()
                 << "\nbytes: " << total << "\nlimit: " << cache.limit()
                 << "\ntuning memory files: " << cache.memoFiles("tuning").size()
                 << "\nweights digests: " << cache.memoFiles("weights").size() << "\n";
    return 0;
  }
  if (!std::strcmp(argv[1], "list")) {
    for (const auto &e : entries)
      llvm::outs() << e.key << " " << e.bytes << " " << timeText(e.lastUse) << "\n";
    return 0;
  }
  if (!std::strcmp(argv[1], "trim")) { // Entries past the limit, least recent first.
    cache.trim();
    return 0;
  }
  size_t removed = cache.clear(), tuning = cache.clearMemo("tuning");
  llvm::outs() << "cgc: removed " << removed << " entries, " << tuning
               << " tuning memory files and " << cache.clearMemo("weights")
               << " weights digests from " << cache.folder() << "\n";
  return 0;
}
