//===- CublasLt.cpp - Lazily loaded cuBLASLt -----------------------------===//
//
// dlopen cuBLASLt once per process (the first engine with matrix products)
// and resolve the function table with dlsym. Failures are remembered and
// reported on every later call.
//
//===----------------------------------------------------------------------===//
#include "CublasLt.h"
#include "Dlopen.h"

#include <dlfcn.h>

#include <mutex>

namespace cgc {
namespace rt {
namespace {

#define CGC_STRINGIFY2(x) #x
#define CGC_STRINGIFY(x) CGC_STRINGIFY2(x)
/// Tried in order: the cuBLAS major version of the headers the runtime is
/// built with, then whatever the unversioned name finds; either must report
/// that major version (the types and enums come from those headers).
constexpr const char *kLibraries[] = {
    "libcublasLt.so." CGC_STRINGIFY(CUBLAS_VER_MAJOR), "libcublasLt.so"};

CublasLt gLt;
std::string gReason;
bool gOk = false;

/// Opens the first library that loads; on failure explains the first one.
void *openLibrary() {
  return openVendorLibrary(nullptr, {kLibraries[0], kLibraries[1]}, gLt.library,
                           gReason);
}

void load() {
  void *lib = openLibrary();
  if (!lib)
    return;
#define CGC_CUBLASLT_RESOLVE(name)                                             \
  gLt.name = reinterpret_cast<decltype(gLt.name)>(dlsym(lib, #name));          \
  if (!gLt.name) {                                                             \
    gReason = std::string(gLt.library) + " lacks " #name;                      \
    return;                                                                    \
  }
  CGC_CUBLASLT_FUNCS(CGC_CUBLASLT_RESOLVE)
#undef CGC_CUBLASLT_RESOLVE
  size_t version = gLt.cublasLtGetVersion();
  if (version / 10000 != CUBLAS_VER_MAJOR) {
    gReason = std::string(gLt.library) + " is cuBLASLt " +
              std::to_string(version) + ", but this runtime was built for "
              "cuBLASLt " CGC_STRINGIFY(CUBLAS_VER_MAJOR) ".x";
    return;
  }
  gOk = true;
}

} // namespace

std::string CublasLt::errorText(const char *api, cublasStatus_t s) const {
  const char *name = cublasLtGetStatusName ? cublasLtGetStatusName(s) : nullptr;
  const char *text =
      cublasLtGetStatusString ? cublasLtGetStatusString(s) : nullptr;
  std::string out = std::string(api) + " failed: ";
  out += name ? name : ("cublasStatus_t " + std::to_string(int(s)));
  if (text)
    out += std::string(" (") + text + ")";
  return out;
}

const CublasLt *getCublasLt(std::string &reason) {
  static std::once_flag once;
  std::call_once(once, load);
  if (gOk)
    return &gLt;
  reason = gReason;
  return nullptr;
}

} // namespace rt
} // namespace cgc
