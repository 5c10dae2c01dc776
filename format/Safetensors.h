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
