//===- CublasLt.h - Lazily loaded cuBLASLt ----------------------*- C++ -*-===//
//
// The runtime never links cuBLAS. An engine whose artifact has matrix
// products dlopens cuBLASLt at load (libcublasLt.so.13, else .so.12, else
// the unversioned name) and resolves its entry points with dlsym; an
// artifact without products never touches it. Only the types come from
// <cublasLt.h> (the CUDA headers the runtime builds against).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_RUNTIME_CUBLASLT_H
#define CGC_RUNTIME_CUBLASLT_H

#include <cublasLt.h>

#include <string>

namespace cgc {
namespace rt {

// Every cuBLASLt entry point the runtime uses.
#define CGC_CUBLASLT_FUNCS(X)                                                  \
  X(cublasLtCreate)                                                            \
  X(cublasLtDestroy)                                                           \
  X(cublasLtGetVersion)                                                        \
  X(cublasLtGetStatusName)                                                     \
  X(cublasLtGetStatusString)                                                   \
  X(cublasLtMatmul)                                                            \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescDestroy)                                                 \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutDestroy)                                               \
  X(cublasLtMatrixLayoutSetAttribute)                                          \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceDestroy)                                           \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmulAlgoCheck)                                                   \
  X(cublasLtMatmulAlgoConfigGetAttribute)

struct CublasLt {
#define CGC_CUBLASLT_MEMBER(name) decltype(&::name) name = nullptr;
  CGC_CUBLASLT_FUNCS(CGC_CUBLASLT_MEMBER)
#undef CGC_CUBLASLT_MEMBER
  std::string library; ///< The name that loaded.

  /// "cublasLtFoo failed: CUBLAS_STATUS_X (text)".
  std::string errorText(const char *api, cublasStatus_t s) const;
};

/// Returns the process-wide cuBLASLt table, loading it on the first call, or
/// null with a reason ("libcublasLt.so.13 could not be loaded: ...").
const CublasLt *getCublasLt(std::string &reason);

} // namespace rt
} // namespace cgc

#endif // CGC_RUNTIME_CUBLASLT_H
