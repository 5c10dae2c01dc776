//===- OnnxImport.h - `cgc model.onnx`: the ONNX importer, run first -*- C++ -*-===//
//
// An ONNX model is imported into the JSON IR by the Python importer
// (python/cgc, `python3 -m cgc.onnx_cli`), which refuses what it cannot
// express by name; the driver then compiles the IR as it would a
// model.json. CGC_PYTHON names the interpreter (default python3).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TOOLS_CGC_ONNXIMPORT_H
#define CGC_TOOLS_CGC_ONNXIMPORT_H

#include <string>

namespace cgc {

/// Whether \p path names an ONNX model (by its extension).
bool isOnnxModel(const std::string &path);

/// Imports \p onnxPath into a JSON IR file in a new temporary directory
/// (\p jsonPath; \p dir to remove afterwards). False when the importer
/// refused or could not run (it printed why, or \p error says).
bool importOnnx(const std::string &onnxPath, std::string &jsonPath,
                std::string &dir, std::string &error);

} // namespace cgc

#endif
