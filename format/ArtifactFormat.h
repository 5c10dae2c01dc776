//===- ArtifactFormat.h - The .cgc artifact format --------------*- C++ -*-===//
//
// In-memory form of a compiled cgc artifact and its (de)serialization. The
// byte layout is documented in docs/artifact.md. Pure C++17: no CUDA here, so
// the compiler, the runtime and the tools all share this one definition.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_FORMAT_ARTIFACTFORMAT_H
#define CGC_FORMAT_ARTIFACTFORMAT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cgc {
namespace format {

constexpr char kArtifactMagic[4] = {'C', 'G', 'C', 'A'};
constexpr uint32_t kArtifactFormatVersion = 1;
constexpr size_t kHeaderSize = 32;
constexpr size_t kBlobAlignment = 256;
/// Conventional blob names for device code.
constexpr const char *kCubinBlob = "cubin";
constexpr const char *kPtxBlob = "ptx";

/// Memory regions that pointers and tensors live in. The arena belongs to an
/// execution context; the persistent region belongs to the engine.
enum class Region { Arena, Persistent };

struct DimDesc {
  std::string name;
  int64_t min = 1;
  int64_t max = 1;
  std::vector<int64_t> buckets; ///< Sorted, each in [min, max].
};

struct BlobDesc {
  std::string name;
  uint64_t offset = 0; ///< Relative to the data section (256-aligned).
  uint64_t size = 0;
};

/// One kernel argument.
struct ParamDesc {
  enum class Kind { Ptr, I32, I64, F32, U64 };
  Kind kind = Kind::Ptr;
  // Ptr.
  Region region = Region::Arena;
  uint64_t offset = 0;
  std::string binding; ///< Graph input/output whose storage this points into.
  // Scalars.
  int64_t intValue = 0;   ///< I32, I64.
  uint64_t uintValue = 0; ///< U64.
  float floatValue = 0;   ///< F32.
  std::string dim; ///< I32/I64 only: value is the run-time value of this dim.
};

struct SourceRef {
  std::string node; ///< IR node id.
  std::string op;   ///< IR op name.
  std::string loc;  ///< Source location, "file:line:col" or empty.
};

struct KernelDesc {
  std::string name; ///< extern "C" symbol in the device code.
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t sharedMem = 0;
  std::vector<ParamDesc> params;
  std::vector<SourceRef> sources;
};

/// A graph node. Library and Conditional are reserved for later versions.
struct NodeDesc {
  enum class Kind { Kernel, Memset, Memcpy };
  Kind kind = Kind::Kernel;
  uint32_t kernel = 0; ///< Kernel: index into Manifest::kernels.
  // Memset: dst*, bytes, value. Memcpy: src*, dst*, bytes.
  Region dstRegion = Region::Arena;
  uint64_t dstOffset = 0;
  std::string dstBinding;
  Region srcRegion = Region::Arena;
  uint64_t srcOffset = 0;
  std::string srcBinding;
  uint64_t bytes = 0;
  uint8_t value = 0;
};

struct GraphDesc {
  std::string name;
  std::vector<NodeDesc> nodes;
  std::vector<std::pair<uint32_t, uint32_t>> edges; ///< (from, to).
  /// Per edge (or empty: none): the edge joins two kernels and may use
  /// programmatic dependent launch, where the device supports it.
  std::vector<uint8_t> programmatic;

  bool isProgrammatic(size_t edge) const {
    return edge < programmatic.size() && programmatic[edge];
  }
};

/// An input, output or state tensor.
struct TensorDesc {
  std::string name;
  std::string kind;  ///< "user_input", "parameter", "output", "loss", ...
  std::string dtype; ///< f32, f16, bf16, i32, i64, bool.
  std::vector<int64_t> shape;          ///< Static (maximum) shape.
  std::vector<std::string> shapeDims;  ///< Per axis: dim name or "" (static).
  Region region = Region::Arena;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  std::string initBlob; ///< State only: initial value blob, or empty.
  uint64_t initOffset = 0;
};

struct Manifest {
  std::string compilerVersion;
  std::string targetArch = "sm_90";
  int64_t minDriverVersion = 12000;
  uint64_t arenaSize = 0;
  uint64_t persistentSize = 0;
  std::vector<DimDesc> dims;
  std::vector<BlobDesc> blobs;
  std::vector<KernelDesc> kernels;
  std::vector<GraphDesc> graphs;
  std::vector<TensorDesc> inputs;
  std::vector<TensorDesc> outputs;
  std::vector<TensorDesc> state;
};

struct ArtifactHeader {
  uint32_t formatVersion = 0;
  uint64_t manifestSize = 0;
  uint64_t fileSize = 0;
  uint64_t checksum = 0;
};

/// A parsed, fully validated artifact; owns a copy of the file bytes.
struct Artifact {
  ArtifactHeader header;
  Manifest manifest;
  std::vector<uint8_t> bytes;
  uint64_t dataStart = 0; ///< File offset of the data section.

  /// Returns the blob's bytes, or {nullptr, 0} if there is no such blob.
  std::pair<const uint8_t *, size_t> blob(const std::string &name) const;
  const TensorDesc *findTensor(const std::string &name) const;
};

using BlobList = std::vector<std::pair<std::string, std::vector<uint8_t>>>;

/// Serializes \p manifest and \p blobs into .cgc bytes. The blob table of the
/// manifest is replaced by one computed from \p blobs (in the given order).
std::vector<uint8_t> serializeArtifact(const Manifest &manifest,
                                       const BlobList &blobs);

/// Parses and validates a .cgc image. Never crashes on corrupt input; on
/// failure returns false with a one-line reason in \p error.
bool parseArtifact(const uint8_t *data, size_t size, Artifact &out,
                   std::string &error);

/// Reads a file and parses it.
bool loadArtifactFile(const std::string &path, Artifact &out,
                      std::string &error);

/// Validates a manifest on its own (used by parseArtifact; blob sizes are
/// checked against the blob table only).
bool validateManifest(const Manifest &m, std::string &error);

/// Human-readable, deterministic summary (for `cgc --dump-artifact`).
std::string dumpManifest(const Artifact &artifact);

/// FNV-1a 64-bit hash, continuing from \p seed.
uint64_t fnv1a64(const uint8_t *data, size_t size,
                 uint64_t seed = 0xcbf29ce484222325ull);

/// Size in bytes of one element of a manifest dtype, or 0 if unknown.
size_t dtypeSize(const std::string &dtype);

const char *regionName(Region r);
const char *paramKindName(ParamDesc::Kind k);
const char *nodeKindName(NodeDesc::Kind k);

// Manifest <-> JSON text (ManifestJson.cpp).
std::string manifestToJson(const Manifest &m);
bool manifestFromJson(const char *text, size_t size, Manifest &out,
                      std::string &error);

} // namespace format
} // namespace cgc

#endif // CGC_FORMAT_ARTIFACTFORMAT_H
