//===- CacheFolder.cpp - Where cgc keeps what it reuses -------------------===//
#include "format/CacheFolder.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace cgc {
namespace format {

std::string cacheFolderFromEnvironment() {
  const char *off = std::getenv("CGC_CACHE");
  if (off && std::strcmp(off, "0") == 0)
    return "";
  if (const char *d = std::getenv("CGC_CACHE_DIR"); d && *d)
    return d;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/cgc";
  if (const char *h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.cache/cgc";
  return "";
}

bool ensurePrivateFolder(const std::string &path, std::string &why) {
  if (path.empty()) {
    why = "no folder named";
    return false;
  }
  // Parents first (made 0700 too when missing), then the folder itself.
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1))
    if (::mkdir(path.substr(0, slash).c_str(), 0700) != 0 && errno != EEXIST) {
      why = "cannot create " + path.substr(0, slash) + ": " + std::strerror(errno);
      return false;
    }
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    why = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  return isPrivateFolder(path, why);
}

bool isPrivateFolder(const std::string &path, std::string &why) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    why = path + " is not a folder";
    return false;
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
    why = path + " is another user's or others may write to it";
    return false;
  }
  return true;
}

} // namespace format
} // namespace cgc
