//===- CompileCache.cpp - Artifacts kept across compiles ------------------===//
//
// Key: SHA-256 of "cgc-cache 1", cgc's version, the running binary's size
// and modification time, the IR file's bytes, the weights file's identity
// (its bytes' xxHash64 up to the 1 GiB an artifact carries; past that its
// absolute path, size and modification time: such weights stay beside the
// artifact, which is not cached anyway), and artifactOptionsText. Entry:
// <dir>/<key>.cgc, its modification time its last use.
//
// The weights' hash is memoized: <dir>/weights/<SHA-256 of the absolute
// path>.txt holds the file's device, inode, size, modification and change
// times (ns) and its hash, written only when the file did not change while
// hashed and last changed two seconds or more before it was opened; a
// later compile reads the hash
// when all five are unchanged (the change time cannot be set by a user
// and moves with any write) instead of reading the file.
//
//===----------------------------------------------------------------------===//
#include "driver/CompileCache.h"

#include "cgc/Version.h"
#include "driver/Compiler.h"
#include "format/ArtifactFormat.h"
#include "format/CacheFolder.h"
#include "format/FileIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace cgc;
namespace fs = llvm::sys::fs;

static constexpr uint64_t kDefaultLimit = uint64_t(10) << 30;
static constexpr uint64_t kHashedWeightsLimit = uint64_t(1) << 30;

CompileCache CompileCache::fromEnvironment() {
  std::string dir = format::cacheFolderFromEnvironment();
  if (dir.empty())
    return CompileCache();
  uint64_t limit = kDefaultLimit;
  if (const char *m = std::getenv("CGC_CACHE_MAX_BYTES"))
    if (llvm::StringRef(m).getAsInteger(10, limit))
      limit = kDefaultLimit;
  return CompileCache(dir, limit);
}

std::string cgc::artifactOptionsText(const CompileOptions &o) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "arch=" << o.arch << " fuse=" << o.fuse << " tf32=" << o.allowTf32
     << " products=" << int(o.productPolicy) << " attention=" << int(o.attentionPolicy)
     << " convolution=" << int(o.convolutionPolicy)
     << " programmatic=" << int(o.programmaticEdges)
     << " loops=" << o.maxLoopIterations << " gradients=" << o.gradients
     << " train=" << o.train << " data-parallel=" << o.dataParallel << ","
     << o.dataParallelOptions.bucketBytes << ","
     << dtypeName(o.dataParallelOptions.wireType).str()
     << " autocast=" << dtypeName(o.autocast).str() << " beside=" << o.weightsBeside
     << " state-limit=" << o.artifactStateLimit << " bind=";
  for (const auto &[name, values] : o.bindDims) {
    os << name << ":";
    for (int64_t v : values)
      os << v << ",";
    os << ";";
  }
  return os.str();
}

/// Size and modification time of \p path, or an error.
static bool identityOf(const llvm::Twine &path, std::string &out, std::string &error) {
  fs::file_status st;
  if (std::error_code ec = fs::status(path, st)) {
    error = "cannot stat " + path.str() + ": " + ec.message();
    return false;
  }
  out = std::to_string(st.getSize()) + "@" +
        std::to_string(st.getLastModificationTime().time_since_epoch().count());
  return true;
}

/// \p t in nanoseconds.
static int64_t nanoseconds(const struct timespec &t) {
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

/// "dev ino size mtime ctime" of \p st (nanoseconds): what changes when a
/// file's bytes may have.
static std::string statIdentity(const struct stat &st) {
  return std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " +
         std::to_string(st.st_size) + " " + std::to_string(nanoseconds(st.st_mtim)) +
         " " + std::to_string(nanoseconds(st.st_ctim));
}

std::string CompileCache::weightsDigest(llvm::StringRef weightsPath,
                                        std::string &error) const {
  llvm::SmallString<256> absolute(weightsPath);
  fs::make_absolute(absolute);
  // The clock before the file is opened; the identity from the open file
  // (an open revalidates what NFS caches), before and after hashing.
  struct timespec before;
  ::clock_gettime(CLOCK_REALTIME, &before);
  int fd = ::open(absolute.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    error = "cannot read " + weightsPath.str() + ": " + std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    return "";
  }
  std::string why;
  bool memoized = enabled() && format::isPrivateFolder(dir, why);
  llvm::SHA256 name;
  name.update(absolute.str());
  std::string memo = dir + "/weights/" + llvm::toHex(name.final(), true) + ".txt";
  std::string identity = "v1 " + statIdentity(st) + " ";
  if (memoized)
    if (auto known = llvm::MemoryBuffer::getFile(memo)) {
      llvm::StringRef text = (*known)->getBuffer();
      if (text.consume_front(identity) && text.consume_back("\n") && !text.empty() &&
          text.find_first_not_of("0123456789") == llvm::StringRef::npos) {
        ::close(fd);
        return text.str();
      }
    }
  auto bytes = llvm::MemoryBuffer::getOpenFile(fd, absolute, uint64_t(st.st_size),
                                               /*RequiresNullTerminator=*/false);
  struct stat after;
  bool unchanged = ::fstat(fd, &after) == 0 && statIdentity(after) == statIdentity(st);
  ::close(fd);
  if (!bytes) {
    error = "cannot read " + weightsPath.str() + ": " + bytes.getError().message();
    return "";
  }
  std::string digest = std::to_string(llvm::xxHash64((*bytes)->getBuffer()));
  // Remembered only for a file that did not change while it was hashed and
  // had last changed two seconds or more before it was opened: a write
  // within the file system's timestamp granularity could leave the
  // identity as it was.
  int64_t changed = std::max(nanoseconds(st.st_mtim), nanoseconds(st.st_ctim));
  if (memoized && unchanged && nanoseconds(before) - changed >= 2000000000 &&
      format::ensurePrivateFolder(dir + "/weights", why)) {
    std::string line = identity + digest + "\n", ignored;
    format::writeFileReplacing(memo, line.data(), line.size(), /*overwrite=*/true,
                               ignored);
  }
  return digest;
}

std::string CompileCache::keyOf(llvm::StringRef irPath, llvm::StringRef weightsPath,
                                const CompileOptions &options, std::string &error) const {
  llvm::SHA256 hash;
  hash.update("cgc-cache 1\n");
  hash.update(kCompilerVersion);
  std::string self, identity;
  self = fs::getMainExecutable(nullptr, nullptr);
  if (self.empty() || !identityOf(self, identity, error))
    return "";
  hash.update("\nbinary " + identity + "\n");
  auto ir = llvm::MemoryBuffer::getFile(irPath);
  if (!ir) {
    error = "cannot read " + irPath.str() + ": " + ir.getError().message();
    return "";
  }
  hash.update((*ir)->getBuffer());
  if (!weightsPath.empty()) {
    uint64_t size = 0;
    if (std::error_code ec = fs::file_size(weightsPath, size)) {
      error = "cannot stat " + weightsPath.str() + ": " + ec.message();
      return "";
    }
    if (size <= kHashedWeightsLimit) {
      std::string digest = weightsDigest(weightsPath, error);
      if (digest.empty())
        return "";
      hash.update("\nweights " + digest + "\n");
    } else {
      llvm::SmallString<256> absolute(weightsPath);
      fs::make_absolute(absolute);
      if (!identityOf(absolute, identity, error))
        return "";
      hash.update("\nweights at " + absolute.str().str() + " " + identity + "\n");
    }
  }
  hash.update("\noptions " + artifactOptionsText(options));
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}

std::string CompileCache::pathOf(const std::string &key) const {
  return dir + "/" + key + ".cgc";
}

std::unique_ptr<llvm::MemoryBuffer> CompileCache::lookup(const std::string &key,
                                                         std::string &note) const {
  std::string path = pathOf(key), why;
  if (!format::isPrivateFolder(dir, why))
    return nullptr; // missing (store creates it) or not private (store says so)
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return nullptr;
  const auto *data = reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart());
  format::Manifest manifest;
  std::string error;
  if (!format::parseArtifactManifest(data, (*buffer)->getBufferSize(), manifest, error)) {
    note = "the compile cache's entry " + path + " is corrupt (" + error +
           "); removed, compiling again";
    fs::remove(path);
    return nullptr;
  }
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); // Its last use: now.
  return std::move(*buffer);
}

bool CompileCache::store(const std::string &key, llvm::ArrayRef<uint8_t> bytes,
                         std::string &error) const {
  std::string why;
  if (!format::ensurePrivateFolder(dir, why)) {
    error = "the compile cache is not used: " + why;
    return false;
  }
  llvm::SmallString<256> temp;
  int fd = -1;
  if (std::error_code ec = fs::createUniqueFile(dir + "/" + key + ".tmp-%%%%%%%%", fd, temp)) {
    error = "cannot write into the compile cache " + dir + ": " + ec.message();
    return false;
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
    os.close();
    if (os.has_error()) {
      error = "cannot write " + temp.str().str() + ": " + os.error().message();
      os.clear_error();
      fs::remove(temp);
      return false;
    }
  }
  if (std::error_code ec = fs::rename(temp, pathOf(key))) {
    error = "cannot store " + pathOf(key) + ": " + ec.message();
    fs::remove(temp);
    return false;
  }
  trim();
  return true;
}

std::vector<std::string> CompileCache::memoFiles(llvm::StringRef subfolder) const {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir + "/" + subfolder.str(), ec), end; !ec && it != end;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (name.endswith(".txt") || name.contains(".txt.tmp-"))
      out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

size_t CompileCache::clearMemo(llvm::StringRef subfolder) const {
  size_t removed = 0;
  for (const std::string &path : memoFiles(subfolder))
    removed += !fs::remove(path);
  return removed;
}

std::vector<CompileCache::Entry> CompileCache::entries() const {
  std::vector<Entry> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    fs::file_status st;
    if (!name.endswith(".cgc") || fs::status(it->path(), st))
      continue;
    out.push_back({name.drop_back(4).str(), st.getSize(), st.getLastModificationTime()});
  }
  std::sort(out.begin(), out.end(), [](const Entry &a, const Entry &b) {
    return a.lastUse != b.lastUse ? a.lastUse > b.lastUse : a.key < b.key;
  });
  return out;
}

bool CompileCache::remove(const std::string &key) const {
  fs::remove(dir + "/" + key + ".sig"); // cgc.compile's call signature, if any.
  return !fs::remove(pathOf(key));
}

size_t CompileCache::clear() const {
  size_t removed = 0;
  for (const Entry &e : entries())
    removed += remove(e.key);
  return removed;
}

void CompileCache::trim() const {
  std::vector<Entry> all = entries();
  uint64_t total = 0;
  for (const Entry &e : all)
    total += e.bytes;
  for (size_t i = all.size(); i-- > 1 && total > maxBytes;) { // Keeps the newest.
    remove(all[i].key);
    total -= all[i].bytes;
  }
}
