//===- FuzzArtifact.cpp - Fuzz target: the artifact reader and validator --===//
//
// Any bytes: parseArtifact (what `cgc --dump-artifact`, `cgc run` and the
// C ABI's cgc_engine_load call before touching a GPU) must accept or
// refuse with a message, never crash; an accepted artifact must dump.
//
// The mutator keeps the frame valid: it mutates the manifest's JSON (or a
// blob's bytes) and then rewrites the header's sizes and checksum, so that
// mutants reach the manifest validator instead of the checksum test.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "format/ArtifactFormat.h"

#include <cstring>

using namespace cgc;
using namespace cgc::format;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Artifact artifact;
  std::string error;
  if (parseArtifact(data, size, artifact, error))
    (void)dumpManifest(artifact);
  return 0;
}

static uint64_t readU64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}

static void writeU64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i, v >>= 8)
    p[i] = uint8_t(v);
}

static uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  uint64_t manifestSize = size >= kHeaderSize ? readU64(data + 8) : 0;
  if (size < kHeaderSize || seed % 8 == 0 ||
      manifestSize > size - kHeaderSize)
    return LLVMFuzzerMutate ? LLVMFuzzerMutate(data, size, maxSize) : size;
  std::string manifest(reinterpret_cast<char *>(data + kHeaderSize),
                       manifestSize);
  uint64_t dataStart = alignUp(kHeaderSize + manifestSize, kBlobAlignment);
  std::vector<uint8_t> blobs(data + std::min<uint64_t>(dataStart, size),
                             data + size);
  if (seed % 4 == 1 && !blobs.empty() && LLVMFuzzerMutate)
    blobs.resize(LLVMFuzzerMutate(blobs.data(), blobs.size(), blobs.size()));
  else if (!fuzz::mutateJson(manifest, seed))
    return LLVMFuzzerMutate ? LLVMFuzzerMutate(data, size, maxSize) : size;
  uint64_t newStart = alignUp(kHeaderSize + manifest.size(), kBlobAlignment);
  if (newStart + blobs.size() > maxSize)
    return size;
  std::vector<uint8_t> out(newStart + blobs.size(), 0);
  std::memcpy(out.data(), data, kHeaderSize);
  std::memcpy(out.data() + kHeaderSize, manifest.data(), manifest.size());
  if (!blobs.empty())
    std::memcpy(out.data() + newStart, blobs.data(), blobs.size());
  writeU64(out.data() + 8, manifest.size());
  writeU64(out.data() + 16, out.size());
  writeU64(out.data() + 24, artifactChecksum(out.data(), out.size()));
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
