//===- TuningMemory.h - Tuning choices remembered across loads --*- C++ -*-===//
//
// Engine load times library algorithms (ProductTuning.cpp) and engine
// configurations (ConvolutionTuning.cpp). The choices are remembered per
// GPU in the cache folder (format/CacheFolder.h), in
// <folder>/tuning/<GPU name>-sm<cc>-driver<version>.txt, one line each:
//
//   <checksum> <key>\t<value>
//
// The key names the library with its version and everything the timing
// depended on (a product's timing key and candidate count, a convolution's
// plan key, candidate limit and determinism); the value is the choice (a
// cuBLASLt algorithm's 64 bytes in hex, a cuDNN engine configuration's
// tag); the checksum is the FNV-1a hash of "<key>\t<value>" in hex. A later
// load on the same GPU model, driver and library takes a remembered choice
// instead of timing, once the library accepts it again
// (cublasLtMatmulAlgoCheck for an algorithm; for a configuration, cuDNN's
// heuristic offers one with that tag, and only that one is finalized),
// and times as before otherwise. A line whose checksum fails or that does
// not parse is ignored (and dropped at the next save). A save rereads the
// file and merges, then writes a temporary file and renames it, so two
// loads saving at once lose at most each other's new lines, never the
// file. Nothing here fails a load: where the folder cannot be used
// nothing is remembered. Off with CGC_CACHE=0, as every cache of cgc.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_RUNTIME_TUNINGMEMORY_H
#define CGC_RUNTIME_TUNINGMEMORY_H

#include <map>
#include <string>
#include <vector>

namespace cgc {
namespace rt {

class TuningMemory {
public:
  /// Nothing remembered, nothing saved.
  TuningMemory() = default;
  /// The choices in the file at \p path (a missing file: none); save()
  /// writes there.
  static TuningMemory fromFile(std::string path);
  /// The file for a GPU named \p device of compute capability \p major.\p
  /// minor under driver \p driverVersion, in the cache folder of the
  /// environment; nothing (and no saving) when caching is off or that
  /// folder or its tuning/ exists and is not private. Creates nothing:
  /// save() makes the folders when it has something to write.
  static TuningMemory forDevice(const std::string &device, int major,
                                int minor, int driverVersion);

  /// The value remembered for \p key, or null.
  const std::string *recall(const std::string &key) const;
  /// Remembers \p value for \p key (saved by save()).
  void remember(const std::string &key, const std::string &value);
  /// Writes the file if anything new was remembered; failures are ignored.
  void save();
  const std::string &file() const { return path; }

private:
  std::string path;
  /// Made private by save() before it writes (forDevice's: the cache
  /// folder and its tuning/).
  std::vector<std::string> folders;
  std::map<std::string, std::string> choices, fresh;
};

/// \p size bytes as lowercase hex, and back (false unless \p hex is exactly
/// 2 * \p size hex digits).
std::string toHex(const void *data, size_t size);
bool fromHex(const std::string &hex, void *data, size_t size);

} // namespace rt
} // namespace cgc

#endif // CGC_RUNTIME_TUNINGMEMORY_H
