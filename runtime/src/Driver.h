//===- Driver.h - Lazily loaded CUDA driver API -----------------*- C++ -*-===//
//
// The runtime never links libcuda: it dlopens libcuda.so.1 on first use and
// resolves each entry point through cuGetProcAddress (ABI of CUDA 12.3; a
// 12.0-12.2 driver gives its own entry points and no programmatic edges).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_RUNTIME_DRIVER_H
#define CGC_RUNTIME_DRIVER_H

#include <cuda.h>

#include <string>

namespace cgc {
namespace rt {

// Every driver entry point the runtime uses. Names expand to the header's
// versioned symbols (cuMemAlloc -> cuMemAlloc_v2) for both the member and
// its type; the string passed to cuGetProcAddress is the unexpanded name.
#define CGC_DRIVER_FUNCS(X)                                                    \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceGetName)                                                           \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuDevicePrimaryCtxReset)                                                   \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemcpyHtoDAsync)                                                         \
  X(cuMemcpyDtoHAsync)                                                         \
  X(cuMemcpyDtoDAsync)                                                         \
  X(cuMemsetD8)                                                                \
  X(cuMemsetD8Async)                                                           \
  X(cuMemsetD32Async)                                                          \
  X(cuLibraryLoadData)                                                         \
  X(cuLibraryUnload)                                                           \
  X(cuLibraryGetKernel)                                                        \
  X(cuKernelGetFunction)                                                       \
  X(cuKernelSetAttribute)                                                      \
  X(cuLaunchKernel)                                                            \
  X(cuGraphCreate)                                                             \
  X(cuGraphDestroy)                                                            \
  X(cuGraphAddKernelNode)                                                      \
  X(cuGraphAddMemsetNode)                                                      \
  X(cuGraphAddMemcpyNode)                                                      \
  X(cuGraphAddDependencies)                                                    \
  X(cuGraphAddNode)                                                            \
  X(cuGraphAddChildGraphNode)                                                  \
  X(cuGraphConditionalHandleCreate)                                            \
  X(cuGraphInstantiateWithFlags)                                               \
  X(cuGraphUpload)                                                             \
  X(cuGraphLaunch)                                                             \
  X(cuGraphExecDestroy)                                                        \
  X(cuGraphExecKernelNodeSetParams)                                            \
  X(cuGraphExecMemsetNodeSetParams)                                            \
  X(cuGraphExecMemcpyNodeSetParams)                                            \
  X(cuGraphExecChildGraphNodeSetParams)                                        \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamQuery)                                                             \
  X(cuStreamBatchMemOp)                                                        \
  X(cuStreamBeginCapture)                                                      \
  X(cuStreamEndCapture)                                                        \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventQuery)                                                              \
  X(cuEventElapsedTime)

struct Driver {
#define CGC_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  CGC_DRIVER_FUNCS(CGC_DRIVER_MEMBER)
#undef CGC_DRIVER_MEMBER
  int version = 0; ///< cuDriverGetVersion, e.g. 13000.

  /// "cuFoo failed: CUDA_ERROR_X (text)".
  std::string errorText(const char *api, CUresult r) const;
};

/// Returns the process-wide driver table, loading it on first call, or null
/// with a reason ("libcuda.so.1 not found", "no CUDA-capable device", ...).
const Driver *getDriver(std::string &reason);

} // namespace rt
} // namespace cgc

#endif // CGC_RUNTIME_DRIVER_H
