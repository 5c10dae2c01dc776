//===- CacheFolder.h - Where cgc keeps what it reuses -----------*- C++ -*-===//
//
// One folder, private to the user, holds what cgc keeps across runs: the
// driver's compiled artifacts (driver/CompileCache.h), cgc.compile's whole
// calls (python/cgc/module_cache.py, which follows the same rule) and the
// runtime's remembered tuning choices (runtime/src/TuningMemory.h). The
// rule, made here once for C++: off with CGC_CACHE=0; else $CGC_CACHE_DIR,
// else $XDG_CACHE_HOME/cgc, else $HOME/.cache/cgc. A folder cgc creates is
// mode 0700; one that another user owns or that others may write to is
// not used (what it holds could be planted).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_FORMAT_CACHEFOLDER_H
#define CGC_FORMAT_CACHEFOLDER_H

#include <string>

namespace cgc {
namespace format {

/// The cache folder the environment names, or "" when caching is off
/// (CGC_CACHE=0) or no folder can be named (no HOME).
std::string cacheFolderFromEnvironment();

/// Creates \p path (and its missing parents) with mode 0700 where missing;
/// true if it is then a folder this user owns that no one else may write
/// to, else false with a one-line reason in \p why.
bool ensurePrivateFolder(const std::string &path, std::string &why);
/// The same test without creating anything (false for a missing folder).
bool isPrivateFolder(const std::string &path, std::string &why);

} // namespace format
} // namespace cgc

#endif
