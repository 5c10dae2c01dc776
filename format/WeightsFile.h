//===- WeightsFile.h - Weights kept beside an artifact ----------*- C++ -*-===//
//
// An artifact may leave its weights in their own safetensors file beside it
// (Manifest::weightsFile; docs/artifact.md, "Weights beside the
// artifact"): the manifest names the file by a path relative to the
// artifact's folder, its size and its content hash, and each state tensor
// that comes from it by its name and byte offset there. This file holds
// the one definition of that hash, of which paths may be named, and of how
// the file is read and checked: by the compiler when it writes the
// reference and by the runtime when it loads the weights.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_FORMAT_WEIGHTSFILE_H
#define CGC_FORMAT_WEIGHTSFILE_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace cgc {
namespace format {

struct WeightsFileDesc;

/// The content hash of a weights file ("cgc-hash64"): the bytes are read as
/// little-endian 64-bit words, 32-byte stripes feeding four lanes with
/// xxHash64's round (acc = rotl(acc + w * P2, 31) * P1); the lanes merge as
/// rotl(a0,1) + rotl(a1,7) + rotl(a2,12) + rotl(a3,18), the last partial
/// stripe's bytes are folded in with FNV-1a, then the length, then
/// xxHash64's avalanche. Not xxHash64 itself; fast (several GB/s), and any
/// one changed byte changes it. The same bytes give the same hash however
/// they are split across update() calls.
class ContentHash {
public:
  void update(const uint8_t *data, size_t size);
  uint64_t finish() const;

private:
  void stripe(const uint8_t *p);
  uint64_t lanes[4] = {0x9E3779B185EBCA87ull, 0xC2B2AE3D27D4EB4Full,
                       0x165667B19E3779F9ull, 0x85EBCA77C2B2AE63ull};
  uint8_t pending[32] = {};
  size_t pendingSize = 0;
  uint64_t length = 0;
};

/// Whether \p path may name a weights file from an artifact: non-empty,
/// relative (no leading '/'), no '..' or '.' component, no empty component,
/// no backslash or NUL; false with the reason in \p why.
bool isSafeWeightsPath(const std::string &path, std::string &why);

/// A weights file mapped read-only into memory, checked (regular file, size,
/// content hash) before anyone reads a tensor from it. Unmapped on
/// destruction.
class MappedWeights {
public:
  MappedWeights() = default;
  MappedWeights(const MappedWeights &) = delete;
  MappedWeights &operator=(const MappedWeights &) = delete;
  ~MappedWeights();

  /// Maps the regular file \p path and hashes it. With \p expected, the
  /// size is compared before any byte is read and the hash after: a
  /// mismatch fails, naming the file, the expected and the actual value.
  bool open(const std::string &path, const WeightsFileDesc *expected,
            std::string &error);
  const uint8_t *data() const { return bytes; }
  uint64_t size() const { return length; }
  uint64_t hash() const { return contentHash; }
  /// open() failed because the size or the hash differ from the expected.
  bool mismatched() const { return mismatch; }

private:
  bool mismatch = false;
  const uint8_t *bytes = nullptr;
  uint64_t length = 0;
  uint64_t contentHash = 0;
};

/// The path of the weights file \p relative (Manifest::weightsFile.path)
/// of the artifact at \p artifactPath: joined to the artifact's folder.
std::string weightsPathBeside(const std::string &artifactPath,
                              const std::string &relative);

/// "0x" and the 16 lower-case hex digits of \p v (how the manifest writes
/// the hash, and the dump every 64-bit checksum).
std::string hashText(uint64_t v);
/// The value of hashText's spelling; false for anything else.
bool parseHashText(const std::string &text, uint64_t &v);

} // namespace format
} // namespace cgc

#endif // CGC_FORMAT_WEIGHTSFILE_H
