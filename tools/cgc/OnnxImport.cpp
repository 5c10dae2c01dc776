//===- OnnxImport.cpp - `cgc model.onnx`: the ONNX importer, run first ----===//
#include "OnnxImport.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace cgc;

bool cgc::isOnnxModel(const std::string &path) {
  return llvm::StringRef(path).endswith(".onnx");
}

// The directory that holds the importer's package `cgc`: beside this
// driver's bin/ when a wheel bundles it (site-packages/cgc/bin/cgc), else
// the source tree's python/.
static std::string importerPackageParent() {
  static int anchor;
  llvm::SmallString<256> dir(llvm::sys::fs::getMainExecutable(nullptr, &anchor));
  llvm::sys::path::remove_filename(dir); // .../cgc/bin
  llvm::sys::path::remove_filename(dir); // .../cgc
  llvm::SmallString<256> cli(dir);
  llvm::sys::path::append(cli, "onnx_cli.py");
  if (!llvm::sys::fs::exists(cli))
    return CGC_PYTHON_DIR;
  llvm::sys::path::remove_filename(dir);
  return dir.str().str();
}

bool cgc::importOnnx(const std::string &onnxPath, std::string &jsonPath,
                     std::string &dir, std::string &error) {
  const char *python = std::getenv("CGC_PYTHON");
  auto found = llvm::sys::findProgramByName(python ? python : "python3");
  if (!found)
    return error = "cannot find " + std::string(python ? python : "python3") +
                   " to run the ONNX importer (set CGC_PYTHON)",
           false;
  llvm::SmallString<128> tmp;
  if (llvm::sys::fs::createUniqueDirectory("cgc-onnx", tmp))
    return error = "cannot create a temporary directory", false;
  dir = tmp.str().str();
  llvm::SmallString<128> json(tmp);
  llvm::sys::path::append(json, "model.json");
  jsonPath = json.str().str();
  // The importer's package, ahead of whatever PYTHONPATH holds.
  std::string path = importerPackageParent();
  if (const char *old = std::getenv("PYTHONPATH"))
    path += std::string(":") + old;
  setenv("PYTHONPATH", path.c_str(), 1);
  llvm::StringRef args[] = {*found, "-m", "cgc.onnx_cli", onnxPath, "-o", jsonPath};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*found, args, llvm::None, {}, 0, 0, &message);
  if (rc < 0)
    return error = "the ONNX importer did not run: " + message, false;
  return rc == 0; // Else the importer printed the refusal.
}
