//===- Diagnostics.h - Located errors, warnings and notes -------*- C++ -*-===//
//
// The DiagnosticEngine owns the SourceMgr holding every input buffer and
// prints `file:line:col: error: message` with the source line and a caret.
// It stops printing after an error limit and remembers whether any error
// was reported, so callers can exit with status 1.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_DIAGNOSTICS_H
#define CGC_IR_DIAGNOSTICS_H

#include "ir/Location.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include <memory>
#include <string>

namespace cgc {

class Node;

class DiagnosticEngine {
public:
  explicit DiagnosticEngine(llvm::raw_ostream &os = llvm::errs(),
                            unsigned errorLimit = 20)
      : os(os), errorLimit(errorLimit) {}

  /// Registers a buffer; locations point into it by (id, offset).
  uint32_t addBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer);
  llvm::StringRef bufferText(uint32_t bufferId) const;
  llvm::StringRef bufferName(uint32_t bufferId) const;

  void error(Location loc, const llvm::Twine &message);
  void warning(Location loc, const llvm::Twine &message);
  void note(Location loc, const llvm::Twine &message);
  /// An error about a file as a whole (`file: error: ...`).
  void fileError(llvm::StringRef file, const llvm::Twine &message);
  /// `node 'name' (op): message` at the node, plus a note with the
  /// user's source location when the node carries one.
  void nodeError(const Node &node, const llvm::Twine &message);
  /// The same at \p at, a place inside the node (one of its fields).
  void nodeError(const Node &node, Location at, const llvm::Twine &message);

  unsigned errorCount() const { return errors; }
  bool hasErrors() const { return errors != 0; }
  void setErrorLimit(unsigned limit) { errorLimit = limit; }
  /// Prints every located diagnostic as `file: error: message`, without
  /// line, column or source line, and file errors under \p file too: for
  /// an IR the driver imported into a temporary file (cgc model.onnx),
  /// whose nodes' `loc` name the user's source instead.
  void showLocationsAs(llvm::StringRef file) { shownFile = file.str(); }

  /// Source lines longer than this are shown clipped around the column.
  static constexpr size_t kMaxShownLine = 160;

private:
  void emit(Location loc, llvm::SourceMgr::DiagKind kind,
            const llvm::Twine &message);
  void printClipped(const llvm::SMDiagnostic &d);
  bool suppressed();

  llvm::raw_ostream &os;
  llvm::SourceMgr srcMgr;
  unsigned errorLimit;
  unsigned errors = 0;
  bool limitReported = false;
  bool lastSuppressed = false;
  std::string shownFile;
};

} // namespace cgc

#endif
