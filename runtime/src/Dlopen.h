//===- Dlopen.h - Finding a vendor library at run time ----------*- C++ -*-===//
//
// The runtime links no vendor library: cuBLASLt, cuDNN and NCCL are
// dlopened by the engines whose artifacts need them. openVendorLibrary()
// is the one search: the file \p envVar names when that variable is set
// (then only that file), else each of \p names in order through the
// dynamic loader (a copy the process already has, LD_LIBRARY_PATH, the
// program's RUNPATH, ld.so.cache).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_RUNTIME_DLOPEN_H
#define CGC_RUNTIME_DLOPEN_H

#include <initializer_list>
#include <string>

namespace cgc {
namespace rt {

/// The handle of the first library that loads, its name or path in
/// \p loaded; null with the first failure (and the names also tried) in
/// \p reason. \p envVar may be null (no override).
void *openVendorLibrary(const char *envVar,
                        std::initializer_list<const char *> names,
                        std::string &loaded, std::string &reason);

} // namespace rt
} // namespace cgc

#endif // CGC_RUNTIME_DLOPEN_H
