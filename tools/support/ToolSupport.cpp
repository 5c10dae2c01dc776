//===- ToolSupport.cpp - Shared pieces of the command-line tools -------------===//
#include "support/ToolSupport.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace cgc;

bool cgc::writeFileAtomically(llvm::StringRef path, llvm::StringRef bytes,
                              bool overwrite, std::string &error) {
  if (path == "-") {
    llvm::outs() << bytes;
    llvm::outs().flush();
    return true;
  }
  if (!overwrite && llvm::sys::fs::exists(path)) {
    error = "'" + path.str() + "' exists; refusing to overwrite it";
    return false;
  }
  llvm::SmallString<256> model(path);
  model += ".tmp-%%%%%%";
  int fd;
  llvm::SmallString<256> tempPath;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(model, fd, tempPath)) {
    error = "cannot create a file next to '" + path.str() + "': " + ec.message();
    return false;
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << bytes;
    os.close();
    if (os.has_error()) {
      error = "cannot write '" + path.str() + "': " + os.error().message();
      os.clear_error();
      llvm::sys::fs::remove(tempPath);
      return false;
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(tempPath, path)) {
    error = "cannot write '" + path.str() + "': " + ec.message();
    llvm::sys::fs::remove(tempPath);
    return false;
  }
  return true;
}
