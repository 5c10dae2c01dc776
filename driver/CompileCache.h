//===- CompileCache.h - Artifacts kept across compiles ----------*- C++ -*-===//
//
// A second compile of an unchanged model costs a verified file copy: `cgc -o` looks
// its artifact up by a key of everything that changes the artifact (the IR
// file's bytes, its weights file, every option that reaches the artifact,
// cgc's version and the compiler binary itself, so a development build
// never reuses another build's entry) in a folder private to the user.
// Entries are whole artifacts, checked by their checksum when read (a
// corrupt or truncated one is removed and the model recompiled), written
// to a temporary file and renamed into place (two processes storing one
// key leave one whole entry), and evicted least recently used first past
// a size limit. docs/artifact.md, "The compile cache".
//
//===----------------------------------------------------------------------===//
#ifndef CGC_DRIVER_COMPILECACHE_H
#define CGC_DRIVER_COMPILECACHE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <chrono>
#include <memory>
#include <cstdint>
#include <string>
#include <vector>

namespace cgc {

struct CompileOptions;

class CompileCache {
public:
  /// The cache the environment gives: the folder of
  /// format::cacheFolderFromEnvironment (off with CGC_CACHE=0), used only
  /// while it is private to the user (format/CacheFolder.h); the limit
  /// $CGC_CACHE_MAX_BYTES (default 10 GiB).
  static CompileCache fromEnvironment();
  /// A cache in \p dir holding at most \p maxBytes.
  CompileCache(std::string dir, uint64_t maxBytes)
      : dir(std::move(dir)), maxBytes(maxBytes) {}
  CompileCache() = default;

  bool enabled() const { return !dir.empty(); }
  const std::string &folder() const { return dir; }
  uint64_t limit() const { return maxBytes; }

  /// The key of compiling the IR file at \p irPath (its weights file, if
  /// any, at \p weightsPath) with \p options: a SHA-256, in hex.
  std::string keyOf(llvm::StringRef irPath, llvm::StringRef weightsPath,
                    const CompileOptions &options, std::string &error) const;

  /// The artifact stored under \p key (mapped, not copied), its checksum
  /// verified (and its last use now), or null when there is none. A
  /// corrupt entry is removed and \p note says so. The bytes stay valid if
  /// another process removes the entry meanwhile.
  std::unique_ptr<llvm::MemoryBuffer> lookup(const std::string &key,
                                             std::string &note) const;
  /// Stores \p bytes under \p key (a temporary file renamed into place),
  /// then evicts the least recently used entries past the limit.
  bool store(const std::string &key, llvm::ArrayRef<uint8_t> bytes,
             std::string &error) const;

  struct Entry {
    std::string key;
    uint64_t bytes = 0;
    std::chrono::system_clock::time_point lastUse;
  };
  /// Every entry, most recently used first.
  std::vector<Entry> entries() const;
  /// Removes every entry; the number removed.
  size_t clear() const;
  /// The files of the folder's \p subfolder: "tuning" (the runtime's
  /// remembered tuning choices, runtime/src/TuningMemory.h: one file per GPU
  /// model) or "weights" (the weights digests keyOf memoizes), temporary
  /// files left by an interrupted write among them.
  std::vector<std::string> memoFiles(llvm::StringRef subfolder) const;
  /// Removes them; the number removed.
  size_t clearMemo(llvm::StringRef subfolder) const;
  /// Removes the least recently used entries past the limit, the newest
  /// always kept (store does after writing; cgc.compile's own entries,
  /// which Python writes, through `cgc cache trim`).
  void trim() const;

private:
  std::string pathOf(const std::string &key) const;
  /// The weights file's xxHash64 (decimal), memoized by its identity.
  std::string weightsDigest(llvm::StringRef weightsPath, std::string &error) const;
  /// Removes the entry \p key (with the call signature cgc.compile keeps
  /// beside it, `<key>.sig`); whether the artifact was removed.
  bool remove(const std::string &key) const;

  std::string dir;
  uint64_t maxBytes = 0;
};

/// The options that change an artifact, as canonical text (part of the
/// key); --report and --time-passes, which only print, are not among them.
std::string artifactOptionsText(const CompileOptions &options);

} // namespace cgc

#endif
