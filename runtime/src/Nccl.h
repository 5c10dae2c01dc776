//===- Nccl.h - Lazily loaded NCCL -------------------------------*- C++ -*-===//
//
// The runtime never links NCCL. An engine whose artifact has collectives
// dlopens it when the caller joins it to its ranks (cgc_engine_join); an
// artifact without collectives never touches it. Where the library comes
// from (Dlopen.h):
//   1. the file CGC_NCCL_LIBRARY names, when that variable is set;
//   2. "libnccl.so.2" through the dynamic loader: the copy the process has
//      already loaded (PyTorch's, which torch.distributed uses) comes
//      first, then LD_LIBRARY_PATH, RUNPATH, ld.so.cache;
//   3. "libnccl.so".
// The library must be NCCL 2.18 or newer (ncclAvg, captured collectives
// and ncclCommGetAsyncError are all older). A communicator the caller
// hands over must come from this same library. Only the types come from
// <nccl.h>.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_RUNTIME_NCCL_H
#define CGC_RUNTIME_NCCL_H

#include <nccl.h>

#include <string>

namespace cgc {
namespace rt {

// Every NCCL entry point the runtime requires.
#define CGC_NCCL_FUNCS(X)                                                      \
  X(ncclGetVersion)                                                            \
  X(ncclGetErrorString)                                                        \
  X(ncclGetLastError)                                                          \
  X(ncclGetUniqueId)                                                           \
  X(ncclCommInitRank)                                                          \
  X(ncclCommDestroy)                                                           \
  X(ncclCommAbort)                                                             \
  X(ncclCommGetAsyncError)                                                     \
  X(ncclCommCount)                                                             \
  X(ncclCommUserRank)                                                          \
  X(ncclGroupStart)                                                            \
  X(ncclGroupEnd)                                                              \
  X(ncclAllReduce)                                                             \
  X(ncclAllGather)                                                             \
  X(ncclBroadcast)

struct Nccl {
#define CGC_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
  CGC_NCCL_FUNCS(CGC_NCCL_MEMBER)
#undef CGC_NCCL_MEMBER
  std::string library; ///< The name or path that loaded.
  int version = 0;     ///< ncclGetVersion, e.g. 22809.

  /// "2.28.9".
  std::string versionText() const;
  /// "ncclFoo failed: <error string> (<the communicator's last error>)".
  std::string errorText(const char *api, ncclResult_t r,
                        ncclComm_t comm = nullptr) const;
};

/// The oldest NCCL the runtime accepts (ncclGetVersion's code).
constexpr int kMinNcclVersion = 21800;

/// Returns the process-wide NCCL table, loading it on the first call, or
/// null with a reason.
const Nccl *getNccl(std::string &reason);

} // namespace rt
} // namespace cgc

#endif // CGC_RUNTIME_NCCL_H
