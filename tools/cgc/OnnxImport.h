//===- OnnxImport.h - `cgc model.onnx`: the ONNX importer, run first -*- C++ -*-===//
//
// An ONNX model is imported into the JSON IR by the Python importer
// (python/cgc/onnx, cgc.onnx.cli), which refuses what it cannot express by
// name; the driver then compiles the IR as it would a model.json.
// CGC_PYTHON names the interpreter (default python3). The importer is
// started so that the working folder cannot inject modules, and a SIGINT
// or SIGTERM while the imported IR exists stops the importer and removes
// the temporary folder before cgc dies of the signal (docs/onnx.md).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TOOLS_CGC_ONNXIMPORT_H
#define CGC_TOOLS_CGC_ONNXIMPORT_H

#include "llvm/ADT/ArrayRef.h"

#include <string>

namespace cgc {

/// Whether \p path names an ONNX model (by its extension, in any case).
bool isOnnxModel(const std::string &path);

/// One import into a new temporary folder, removed (and the signal
/// handlers that guard it restored) when the OnnxImport is destroyed. At
/// most one OnnxImport exists at a time.
class OnnxImport {
public:
  OnnxImport() = default;
  OnnxImport(const OnnxImport &) = delete;
  OnnxImport &operator=(const OnnxImport &) = delete;
  ~OnnxImport();

  /// Imports \p onnxPath (\p shapes: `NAME=D,D,...` for inputs with
  /// dynamic dims). False when the importer refused, could not run or was
  /// stopped: it printed why, or \p error says; \p status is the exit
  /// status cgc should end with (1, or 128 + the importer's signal).
  bool run(const std::string &onnxPath, llvm::ArrayRef<std::string> shapes,
           std::string &error, int &status);

  /// The imported IR (valid after a successful run).
  const std::string &jsonPath() const { return json; }

private:
  std::string dir, json;
};

} // namespace cgc

#endif
