//===- JsonReader.h - JSON IR to Graph ---------------------------*- C++ -*-===//
//
// Reads the JSON IR of docs/ir.md into a typed Graph. Every problem is
// reported at its place in the file (`file:line:col: error: ...`) and the
// result is null when any error was reported; malformed input never
// crashes, hangs or aborts.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_JSONREADER_H
#define CGC_IR_JSONREADER_H

#include "ir/Diagnostics.h"
#include "ir/Graph.h"

#include <memory>

namespace cgc {

struct ReadOptions {
  bool allowComments = false; ///< cgc-opt accepts // comments (lit tests).
  unsigned maxDepth = 64;     ///< JSON nesting limit.
  /// JSON values per file; bounds the reader's memory (about 6 values, and
  /// 2 KB of memory, per node).
  uint64_t maxValues = uint64_t(1) << 23;
  uint64_t maxFileBytes = uint64_t(1) << 30;
  bool checkWeights = true;   ///< Open the weights file and check tensors.
};

/// The bytes of an IR file ("-" for standard input): only a regular file
/// of at most options.maxFileBytes; null after a diagnostic otherwise.
std::unique_ptr<llvm::MemoryBuffer> readIRFile(llvm::StringRef path,
                                               DiagnosticEngine &diag,
                                               const ReadOptions &options);

/// Reads \p path ("-" for standard input).
std::unique_ptr<Graph> readGraphFile(llvm::StringRef path,
                                     DiagnosticEngine &diag,
                                     const ReadOptions &options);

/// Reads a buffer already registered with \p diag; weights paths resolve
/// against \p baseDir.
std::unique_ptr<Graph> readGraphBuffer(uint32_t bufferId,
                                       llvm::StringRef baseDir,
                                       DiagnosticEngine &diag,
                                       const ReadOptions &options);

/// Checks that a name uses only letters, digits and `_ . : / -`.
bool isValidName(llvm::StringRef name);

} // namespace cgc

#endif
