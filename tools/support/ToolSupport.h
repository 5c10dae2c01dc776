//===- ToolSupport.h - Shared pieces of the command-line tools --*- C++ -*-===//
#ifndef CGC_TOOLS_TOOLSUPPORT_H
#define CGC_TOOLS_TOOLSUPPORT_H

#include "llvm/ADT/StringRef.h"
#include <string>

namespace cgc {

/// Writes \p bytes to \p path through a temporary file in the same folder
/// and a rename, so a failure never leaves a partial file. "-" is stdout.
/// Refuses to replace an existing file unless \p overwrite is set.
bool writeFileAtomically(llvm::StringRef path, llvm::StringRef bytes,
                         bool overwrite, std::string &error);

} // namespace cgc

#endif
