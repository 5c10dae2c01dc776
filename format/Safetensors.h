//===- Safetensors.h - Read and write .safetensors files --------*- C++ -*-===//
//
// Strictly validated safetensors I/O (8-byte little-endian header length,
// JSON header, contiguous data section without holes). Shared by the
// interpreter, `cgc run` and the tests.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_FORMAT_SAFETENSORS_H
#define CGC_FORMAT_SAFETENSORS_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cgc {
namespace format {

struct TensorData {
  std::string dtype; ///< Safetensors spelling: F32, F16, BF16, I32, I64, BOOL.
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

using TensorMap = std::map<std::string, TensorData>;

/// Where one tensor's bytes are: [begin, end) of the file (absolute
/// offsets, past the header).
struct TensorEntry {
  std::string dtype; ///< Safetensors spelling.
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

/// A safetensors file's header, without its data: what a file too large to
/// read whole (weights beside an artifact) is checked and addressed by.
struct SafetensorsIndex {
  std::map<std::string, TensorEntry> tensors;
  uint64_t fileSize = 0;
};

/// Parses the header of a safetensors image of \p fileSize bytes whose
/// first \p available bytes are at \p data (at least the 8-byte length and
/// the header): every field, bounds, no overlaps, holes or trailing bytes.
bool parseSafetensorsHeader(const uint8_t *data, size_t available,
                            uint64_t fileSize, SafetensorsIndex &out,
                            std::string &error,
                            std::map<std::string, std::string> *metadata =
                                nullptr);

/// Reads only the header of the regular file \p path (any size).
bool indexSafetensorsFile(const std::string &path, SafetensorsIndex &out,
                          std::string &error);

/// Parses an in-memory safetensors image.
bool parseSafetensors(const uint8_t *data, size_t size, TensorMap &out,
                      std::string &error,
                      std::map<std::string, std::string> *metadata = nullptr);

bool readSafetensors(const std::string &path, TensorMap &out,
                     std::string &error,
                     std::map<std::string, std::string> *metadata = nullptr);

/// Serializes tensors (sorted by name) to a safetensors image.
bool serializeSafetensors(const TensorMap &tensors, std::vector<uint8_t> &out,
                          std::string &error,
                          const std::map<std::string, std::string> *metadata =
                              nullptr);

/// Writes through a temporary file and a rename. Refuses to replace an
/// existing file unless \p overwrite is set.
bool writeSafetensors(const std::string &path, const TensorMap &tensors,
                      std::string &error, bool overwrite = false,
                      const std::map<std::string, std::string> *metadata =
                          nullptr);

/// Element size of a safetensors dtype, or 0 if unsupported.
size_t safetensorsDtypeSize(const std::string &dtype);
/// Manifest dtype (f32) <-> safetensors dtype (F32); "" if unknown.
std::string toSafetensorsDtype(const std::string &manifestDtype);
std::string fromSafetensorsDtype(const std::string &safetensorsDtype);

} // namespace format
} // namespace cgc

#endif // CGC_FORMAT_SAFETENSORS_H
