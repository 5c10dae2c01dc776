//===- Cudnn.cpp - Lazily loaded cuDNN -----------------------------------===//
//
// dlopen cuDNN once per process (the first engine with convolutions), in
// the order Cudnn.h gives, resolve the function table with dlsym and check
// that the library is cuDNN 9. Failures are remembered and reported on
// every later call.
//
//===----------------------------------------------------------------------===//
#include "Cudnn.h"
#include "Dlopen.h"

#include <dlfcn.h>

#include <mutex>

namespace cgc {
namespace rt {
namespace {

constexpr size_t kMinVersion = 90000, kEndVersion = 100000;

Cudnn gDnn;
std::string gReason;
bool gOk = false;

/// Opens cuDNN in Cudnn.h's order.
void *openLibrary() {
  return openVendorLibrary("CGC_CUDNN_LIBRARY", {"libcudnn.so.9", "libcudnn.so"},
                           gDnn.library, gReason);
}

/// "8.9.7" for cuDNN 8's encoding (major * 1000 + minor * 100 + patch),
/// "9.19.0" for cuDNN 9's (major * 10000 + minor * 100 + patch).
std::string versionString(size_t v) {
  size_t major = v < 10000 ? v / 1000 : v / 10000;
  size_t minor = v < 10000 ? v / 100 % 10 : v / 100 % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(v % 100);
}

void load() {
  void *lib = openLibrary();
  if (!lib)
    return;
#define CGC_CUDNN_RESOLVE(name)                                                \
  gDnn.name = reinterpret_cast<decltype(gDnn.name)>(dlsym(lib, #name));        \
  if (!gDnn.name) {                                                            \
    gReason = gDnn.library + " lacks " #name;                                  \
    return;                                                                    \
  }
  CGC_CUDNN_FUNCS(CGC_CUDNN_RESOLVE)
#undef CGC_CUDNN_RESOLVE
  gDnn.cudnnGetLastErrorString =
      reinterpret_cast<decltype(gDnn.cudnnGetLastErrorString)>(
          dlsym(lib, "cudnnGetLastErrorString"));
  gDnn.version = gDnn.cudnnGetVersion();
  if (gDnn.version < kMinVersion || gDnn.version >= kEndVersion) {
    gReason = gDnn.library + " is cuDNN " + versionString(gDnn.version) +
              "; this runtime needs cuDNN 9 (9.0 or newer)";
    return;
  }
  gOk = true;
}

} // namespace

std::string Cudnn::versionText() const { return versionString(version); }

std::string Cudnn::errorText(const char *api, cudnnStatus_t s) const {
  const char *name = cudnnGetErrorString ? cudnnGetErrorString(s) : nullptr;
  std::string out = std::string(api) + " failed: ";
  out += name ? name : ("cudnnStatus_t " + std::to_string(int(s)));
  if (cudnnGetLastErrorString) {
    char detail[512] = {0};
    cudnnGetLastErrorString(detail, sizeof detail);
    detail[sizeof detail - 1] = 0;
    if (detail[0])
      out += std::string(" (") + detail + ")";
  }
  return out;
}

const Cudnn *getCudnn(std::string &reason) {
  static std::once_flag once;
  std::call_once(once, load);
  if (gOk)
    return &gDnn;
  reason = gReason;
  return nullptr;
}

} // namespace rt
} // namespace cgc
