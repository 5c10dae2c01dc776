//===- WeightsFile.cpp - Weights kept beside an artifact -----------------===//
#include "format/WeightsFile.h"
#include "format/ArtifactFormat.h"
#include "format/FileIO.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cerrno>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace cgc {
namespace format {
namespace {

constexpr uint64_t P1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t P2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t P3 = 0x165667B19E3779F9ull;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t loadLE64(const uint8_t *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
#else
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
#endif
}

} // namespace

void ContentHash::stripe(const uint8_t *p) {
  for (int i = 0; i < 4; ++i)
    lanes[i] = rotl(lanes[i] + loadLE64(p + 8 * i) * P2, 31) * P1;
}

void ContentHash::update(const uint8_t *data, size_t size) {
  length += size;
  if (pendingSize) {
    size_t take = std::min(size, sizeof pending - pendingSize);
    std::memcpy(pending + pendingSize, data, take);
    pendingSize += take;
    data += take;
    size -= take;
    if (pendingSize < sizeof pending)
      return;
    stripe(pending);
    pendingSize = 0;
  }
  for (; size >= 32; data += 32, size -= 32)
    stripe(data);
  std::memcpy(pending, data, size);
  pendingSize = size;
}

uint64_t ContentHash::finish() const {
  uint64_t h = rotl(lanes[0], 1) + rotl(lanes[1], 7) + rotl(lanes[2], 12) +
               rotl(lanes[3], 18);
  uint64_t tail = fnv1a64(pending, pendingSize);
  h = (h ^ tail) * P1;
  h = (h ^ length) * P2;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}

bool isSafeWeightsPath(const std::string &path, std::string &why) {
  if (path.empty())
    return (why = "the path is empty"), false;
  if (path[0] == '/')
    return (why = "the path is absolute"), false;
  if (path.find('\\') != std::string::npos ||
      path.find('\0') != std::string::npos)
    return (why = "the path holds a backslash or a NUL"), false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos)
      end = path.size();
    std::string part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..")
      return (why = "the path has a '" + part +
                    "' component (it must name a file in the artifact's "
                    "folder or below it)"),
             false;
    start = end + 1;
  }
  return true;
}

MappedWeights::~MappedWeights() {
  if (bytes)
    ::munmap(const_cast<uint8_t *>(bytes), size_t(length));
}

bool MappedWeights::open(const std::string &path,
                         const WeightsFileDesc *expected, std::string &error) {
  int fd = -1;
  uint64_t size = 0;
  if (!openRegularFile(path, fd, size, error)) {
    error = "weights file: " + error;
    return false;
  }
  if (expected && size != expected->size) {
    ::close(fd);
    mismatch = true;
    error = "weights file '" + path + "' is " + std::to_string(size) +
            " bytes; the artifact expects " + std::to_string(expected->size) +
            " (it was compiled against another file)";
    return false;
  }
  void *p = nullptr;
  if (size) {
    p = ::mmap(nullptr, size_t(size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      error = "weights file '" + path + "': cannot map " +
              std::to_string(size) + " bytes: " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    ::madvise(p, size_t(size), MADV_SEQUENTIAL);
  }
  ::close(fd);
  bytes = static_cast<const uint8_t *>(p);
  length = size;
  ContentHash h;
  h.update(bytes, size_t(size));
  contentHash = h.finish();
  if (expected && contentHash != expected->checksum) {
    mismatch = true;
    error = "weights file '" + path + "' has checksum " +
            hashText(contentHash) + "; the artifact expects " +
            hashText(expected->checksum) +
            " (same size, " + std::to_string(size) +
            " bytes): its contents changed since it was compiled";
    return false;
  }
  return true;
}

std::string weightsPathBeside(const std::string &artifactPath,
                              const std::string &relative) {
  size_t slash = artifactPath.rfind('/');
  if (slash == std::string::npos)
    return relative;
  return artifactPath.substr(0, slash + 1) + relative;
}

std::string hashText(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016llx", (unsigned long long)v);
  return buf;
}

bool parseHashText(const std::string &text, uint64_t &v) {
  if (text.size() != 18 || text[0] != '0' || text[1] != 'x')
    return false;
  v = 0;
  for (size_t i = 2; i < text.size(); ++i) {
    char c = text[i];
    unsigned d;
    if (c >= '0' && c <= '9')
      d = unsigned(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = unsigned(c - 'a' + 10);
    else
      return false;
    v = (v << 4) | d;
  }
  return true;
}

} // namespace format
} // namespace cgc
