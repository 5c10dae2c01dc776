//===- ToolSupport.h - Shared pieces of the command-line tools --*- C++ -*-===//
#ifndef CGC_TOOLS_TOOLSUPPORT_H
#define CGC_TOOLS_TOOLSUPPORT_H

#include "llvm/ADT/StringRef.h"
#include <string>

namespace cgc {

/// Writes \p bytes to \p path by format::writeFileReplacing's rules (a
/// regular file replaced atomically, a character device written through,
/// anything else refused); "-" is stdout. Refuses to replace an existing
/// file unless \p overwrite is set.
bool writeFileAtomically(llvm::StringRef path, llvm::StringRef bytes,
                         bool overwrite, std::string &error);

} // namespace cgc

#endif
