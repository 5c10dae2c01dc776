//===- Dlopen.cpp - Finding a vendor library at run time -------------------===//
#include "Dlopen.h"

#include <dlfcn.h>

#include <cstdlib>

namespace cgc {
namespace rt {

static std::string loadError(const std::string &name) {
  const char *e = dlerror();
  return name + " could not be loaded: " + (e ? e : "unknown error");
}

void *openVendorLibrary(const char *envVar,
                        std::initializer_list<const char *> names,
                        std::string &loaded, std::string &reason) {
  const char *path = envVar ? std::getenv(envVar) : nullptr;
  if (path && *path) {
    if (void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
      loaded = path;
      return lib;
    }
    reason = loadError(path) + " (the file " + envVar + " names)";
    return nullptr;
  }
  std::string first, others;
  for (const char *name : names) {
    if (void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
      loaded = name;
      return lib;
    }
    if (first.empty())
      first = loadError(name);
    else
      others += std::string(others.empty() ? "" : ", ") + name;
  }
  reason = first + (others.empty() ? "" : " (nor could " + others + ")");
  return nullptr;
}

} // namespace rt
} // namespace cgc
