//===- ToolSupport.cpp - Shared pieces of the command-line tools -------------===//
#include "support/ToolSupport.h"
#include "format/FileIO.h"

#include "llvm/Support/raw_ostream.h"

using namespace cgc;

bool cgc::writeFileAtomically(llvm::StringRef path, llvm::StringRef bytes,
                              bool overwrite, std::string &error) {
  if (path == "-") {
    llvm::outs() << bytes;
    llvm::outs().flush();
    return true;
  }
  return format::writeFileReplacing(path.str(), bytes.data(), bytes.size(),
                                    overwrite, error);
}
