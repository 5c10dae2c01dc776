//===- FileIO.cpp - Reading and writing files from strangers ----------------===//
#include "format/FileIO.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cgc {
namespace format {
namespace {

bool fail(std::string &error, const std::string &message) {
  error = message;
  return false;
}

std::string systemError() { return std::strerror(errno); }

const char *kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISCHR(mode))
    return "a character device";
  return "not a regular file";
}

/// Writes all of \p data to \p fd.
bool writeAll(int fd, const void *data, size_t size) {
  const char *p = static_cast<const char *>(data);
  while (size) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= size_t(n);
  }
  return true;
}

bool writeThrough(const std::string &path, const void *data, size_t size,
                  std::string &error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(error, "cannot open '" + path + "': " + systemError());
  bool ok = writeAll(fd, data, size);
  std::string why = systemError();
  ::close(fd);
  return ok || fail(error, "cannot write '" + path + "': " + why);
}

bool replaceAtomically(const std::string &path, const void *data,
                       size_t size, std::string &error) {
  std::string tmp = path + ".tmp-XXXXXX";
  int fd = ::mkstemp(&tmp[0]);
  if (fd < 0)
    return fail(error, "cannot create a file next to '" + path +
                           "': " + systemError());
  bool ok = writeAll(fd, data, size) && ::fsync(fd) == 0;
  std::string why = systemError();
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    why = ok ? systemError() : why;
    ::unlink(tmp.c_str());
    return fail(error, "cannot write '" + path + "': " + why);
  }
  return true;
}

} // namespace

bool openRegularFile(const std::string &path, int &fd, uint64_t &size,
                     std::string &error) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return fail(error, "cannot open '" + path + "': " + systemError());
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fd = -1;
    return fail(error, "'" + path + "' is " + kindOf(st.st_mode) +
                           "; only regular files are read");
  }
  size = uint64_t(st.st_size);
  return true;
}

bool readAt(int fd, uint64_t offset, void *data, size_t size) {
  char *p = static_cast<char *>(data);
  while (size) {
    ssize_t n = ::pread(fd, p, size, off_t(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    offset += uint64_t(n);
    size -= size_t(n);
  }
  return true;
}

bool readFileBounded(const std::string &path, std::vector<uint8_t> &out,
                     std::string &error, uint64_t maxBytes) {
  int fd = -1;
  uint64_t size = 0;
  if (!openRegularFile(path, fd, size, error))
    return false;
  if (size > maxBytes) {
    ::close(fd);
    return fail(error, "'" + path + "' is " + std::to_string(size) +
                           " bytes; the limit is " + std::to_string(maxBytes));
  }
  out.resize(size_t(size));
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += size_t(n);
  }
  ::close(fd);
  if (done != out.size())
    return fail(error, "cannot read '" + path + "': it changed size while "
                       "being read");
  return true;
}

bool writeFileReplacing(const std::string &path, const void *data,
                        size_t size, bool overwrite, std::string &error) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) // a new file (or a dangling link)
    return replaceAtomically(path, data, size, error);
  if (!overwrite)
    return fail(error, "'" + path +
                           "' already exists (pass --overwrite to replace it)");
  if (S_ISCHR(st.st_mode))
    return writeThrough(path, data, size, error);
  if (!S_ISREG(st.st_mode))
    return fail(error, "'" + path + "' is " + kindOf(st.st_mode) +
                           "; only a regular file or a character device is "
                           "written");
  // A link to a regular file: replace the file it points to, not the link.
  char resolved[PATH_MAX];
  if (!::realpath(path.c_str(), resolved))
    return fail(error, "cannot resolve '" + path + "': " + systemError());
  return replaceAtomically(resolved, data, size, error);
}

} // namespace format
} // namespace cgc
