//===- Cudnn.h - Lazily loaded cuDNN -----------------------------*- C++ -*-===//
//
// The runtime never links cuDNN. An engine whose artifact has convolutions
// dlopens it at load and resolves its entry points with dlsym; an artifact
// without convolutions never touches it. Where the library comes from:
//   1. the file CGC_CUDNN_LIBRARY names, when that variable is set (then
//      only that file is tried);
//   2. "libcudnn.so.9" through the dynamic loader: a copy the process has
//      already loaded (PyTorch's, say), LD_LIBRARY_PATH, the RUNPATH of the
//      program, ld.so.cache;
//   3. "libcudnn.so".
// The library must report cuDNN 9 (cudnnGetVersion in [90000, 100000)): the
// backend (graph) API as of 9.0 is all the runtime uses. Only the types come
// from <cudnn_graph.h>.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_RUNTIME_CUDNN_H
#define CGC_RUNTIME_CUDNN_H

#include <cudnn_graph.h>

#include <string>

namespace cgc {
namespace rt {

// Every cuDNN entry point the runtime requires.
#define CGC_CUDNN_FUNCS(X)                                                     \
  X(cudnnGetVersion)                                                           \
  X(cudnnGetErrorString)                                                       \
  X(cudnnCreate)                                                               \
  X(cudnnDestroy)                                                              \
  X(cudnnSetStream)                                                            \
  X(cudnnBackendCreateDescriptor)                                              \
  X(cudnnBackendDestroyDescriptor)                                             \
  X(cudnnBackendSetAttribute)                                                  \
  X(cudnnBackendGetAttribute)                                                  \
  X(cudnnBackendFinalize)                                                      \
  X(cudnnBackendExecute)

struct Cudnn {
#define CGC_CUDNN_MEMBER(name) decltype(&::name) name = nullptr;
  CGC_CUDNN_FUNCS(CGC_CUDNN_MEMBER)
#undef CGC_CUDNN_MEMBER
  /// Optional (resolved when present): the detail of the thread's last error.
  decltype(&::cudnnGetLastErrorString) cudnnGetLastErrorString = nullptr;
  std::string library; ///< The name or path that loaded.
  size_t version = 0;  ///< cudnnGetVersion, e.g. 91900.

  /// "9.19.0".
  std::string versionText() const;
  /// "cudnnFoo failed: CUDNN_STATUS_X (the library's last error message)".
  std::string errorText(const char *api, cudnnStatus_t s) const;
};

/// Returns the process-wide cuDNN table, loading it on the first call, or
/// null with a reason ("libcudnn.so.9 could not be loaded: ...", "... is
/// cuDNN 8.9.7; this runtime needs cuDNN 9").
const Cudnn *getCudnn(std::string &reason);

} // namespace rt
} // namespace cgc

#endif // CGC_RUNTIME_CUDNN_H
