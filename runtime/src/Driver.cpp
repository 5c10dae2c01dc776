//===- Driver.cpp - Lazily loaded CUDA driver API ------------------------===//
//
// dlopen("libcuda.so.1") once per process, resolve the function table and
// call cuInit. Failures are remembered and reported on every later call.
//
//===----------------------------------------------------------------------===//
#include "Driver.h"

#include <dlfcn.h>

#include <mutex>

namespace cgc {
namespace rt {
namespace {

using GetProcFn = CUresult (*)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);
// 12.3: cuGraphAddDependencies takes edge data (programmatic edges).
constexpr int kAbiVersion = 12030;

Driver gDriver;
std::string gReason;
bool gOk = false;

void load() {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    gReason = std::string("cannot load libcuda.so.1 (") +
              (e ? e : "unknown error") + ")";
    return;
  }
  auto getProc =
      reinterpret_cast<GetProcFn>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!getProc) {
    gReason = "the CUDA driver is older than 12.0 (no cuGetProcAddress_v2)";
    return;
  }
#define CGC_DRIVER_RESOLVE(name)                                               \
  {                                                                            \
    void *fn = nullptr;                                                        \
    CUdriverProcAddressQueryResult status;                                     \
    if (getProc(#name, &fn, kAbiVersion, CU_GET_PROC_ADDRESS_DEFAULT,          \
                &status) != CUDA_SUCCESS ||                                    \
        !fn) {                                                                 \
      gReason = "the CUDA driver lacks " #name;                                \
      return;                                                                  \
    }                                                                          \
    gDriver.name = reinterpret_cast<decltype(gDriver.name)>(fn);               \
  }
  CGC_DRIVER_FUNCS(CGC_DRIVER_RESOLVE)
#undef CGC_DRIVER_RESOLVE
  CUresult r = gDriver.cuInit(0);
  if (r != CUDA_SUCCESS) {
    gReason = gDriver.errorText("cuInit", r);
    return;
  }
  gDriver.cuDriverGetVersion(&gDriver.version);
  int count = 0;
  r = gDriver.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count == 0) {
    gReason = r != CUDA_SUCCESS ? gDriver.errorText("cuDeviceGetCount", r)
                                : "no CUDA-capable device is present";
    return;
  }
  gOk = true;
}

} // namespace

std::string Driver::errorText(const char *api, CUresult r) const {
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName)
    cuGetErrorName(r, &name);
  if (cuGetErrorString)
    cuGetErrorString(r, &text);
  std::string s = std::string(api) + " failed: ";
  s += name ? name : ("CUresult " + std::to_string(int(r)));
  if (text)
    s += std::string(" (") + text + ")";
  return s;
}

const Driver *getDriver(std::string &reason) {
  static std::once_flag once;
  std::call_once(once, load);
  if (gOk)
    return &gDriver;
  reason = gReason;
  return nullptr;
}

} // namespace rt
} // namespace cgc
