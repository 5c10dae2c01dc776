//===- FileIO.h - Reading and writing files from strangers ------*- C++ -*-===//
//
// Every file cgc reads (models' weights, artifacts, safetensors inputs)
// and writes (artifacts, outputs) goes through these two functions, so the
// rules hold everywhere: a read takes only a regular file of at most
// kMaxFileBytes (a device, a FIFO or a directory is refused, never read
// without bound or waited on); a write replaces a regular file atomically
// (a temporary file in the same folder, then a rename), writes through to
// a character device (/dev/null, a terminal) and refuses anything else.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_FORMAT_FILEIO_H
#define CGC_FORMAT_FILEIO_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cgc {
namespace format {

/// The largest file read: 1 GiB.
constexpr uint64_t kMaxFileBytes = uint64_t(1) << 30;

/// Reads the regular file \p path (at most \p maxBytes) into \p out; false
/// with a one-line reason otherwise.
bool readFileBounded(const std::string &path, std::vector<uint8_t> &out,
                     std::string &error, uint64_t maxBytes = kMaxFileBytes);

/// Opens the regular file \p path for reading (O_NONBLOCK: a FIFO is not
/// waited on) and gives its size; false with a one-line reason (missing, a
/// directory, a FIFO, a device ...). The caller closes \p fd.
bool openRegularFile(const std::string &path, int &fd, uint64_t &size,
                     std::string &error);

/// Reads exactly \p size bytes at \p offset of \p fd; false on a short read.
bool readAt(int fd, uint64_t offset, void *data, size_t size);

/// Writes \p size bytes to \p path by the rules above; refuses an existing
/// target unless \p overwrite. A failed write leaves no partial file.
bool writeFileReplacing(const std::string &path, const void *data,
                        size_t size, bool overwrite, std::string &error);

} // namespace format
} // namespace cgc

#endif
