//===- Nccl.cpp - Lazily loaded NCCL -------------------------------------===//
//
// dlopen NCCL once per process, in the order Nccl.h gives, resolve the
// function table with dlsym and check the version. Failures are remembered
// and reported on every later call.
//
//===----------------------------------------------------------------------===//
#include "Nccl.h"
#include "Dlopen.h"

#include <dlfcn.h>

#include <mutex>

namespace cgc {
namespace rt {
namespace {

Nccl gNccl;
std::string gReason;
bool gOk = false;

/// NCCL's code: major * 10000 + minor * 100 + patch (2.9 and later).
std::string versionString(int v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

void load() {
  void *lib = openVendorLibrary("CGC_NCCL_LIBRARY", {"libnccl.so.2", "libnccl.so"},
                                gNccl.library, gReason);
  if (!lib)
    return;
#define CGC_NCCL_RESOLVE(name)                                                 \
  gNccl.name = reinterpret_cast<decltype(gNccl.name)>(dlsym(lib, #name));      \
  if (!gNccl.name) {                                                           \
    gReason = gNccl.library + " lacks " #name;                                 \
    return;                                                                    \
  }
  CGC_NCCL_FUNCS(CGC_NCCL_RESOLVE)
#undef CGC_NCCL_RESOLVE
  if (gNccl.ncclGetVersion(&gNccl.version) != ncclSuccess ||
      gNccl.version < kMinNcclVersion) {
    gReason = gNccl.library + " is NCCL " + versionString(gNccl.version) +
              "; this runtime needs NCCL " + versionString(kMinNcclVersion) +
              " or newer";
    return;
  }
  gOk = true;
}

} // namespace

std::string Nccl::versionText() const { return versionString(version); }

std::string Nccl::errorText(const char *api, ncclResult_t r,
                            ncclComm_t comm) const {
  std::string out = std::string(api) + " failed: ";
  const char *name = ncclGetErrorString ? ncclGetErrorString(r) : nullptr;
  out += name ? name : "ncclResult_t " + std::to_string(int(r));
  const char *detail = ncclGetLastError ? ncclGetLastError(comm) : nullptr;
  if (detail && *detail)
    out += std::string(" (") + detail + ")";
  return out;
}

const Nccl *getNccl(std::string &reason) {
  static std::once_flag once;
  std::call_once(once, load);
  if (gOk)
    return &gNccl;
  reason = gReason;
  return nullptr;
}

} // namespace rt
} // namespace cgc
