//===- Diagnostics.cpp - Located errors, warnings and notes -----------------===//
#include "ir/Diagnostics.h"

#include "ir/Graph.h"

using namespace cgc;

uint32_t DiagnosticEngine::addBuffer(std::unique_ptr<llvm::MemoryBuffer> buf) {
  return srcMgr.AddNewSourceBuffer(std::move(buf), llvm::SMLoc());
}

llvm::StringRef DiagnosticEngine::bufferText(uint32_t bufferId) const {
  return srcMgr.getMemoryBuffer(bufferId)->getBuffer();
}

llvm::StringRef DiagnosticEngine::bufferName(uint32_t bufferId) const {
  return srcMgr.getMemoryBuffer(bufferId)->getBufferIdentifier();
}

bool DiagnosticEngine::suppressed() {
  // As in clang's -ferror-limit, 0 means no limit.
  if (errorLimit == 0 || errors < errorLimit)
    return false;
  if (!limitReported) {
    os << "error: too many errors emitted, stopping now\n";
    limitReported = true;
  }
  return true;
}

static llvm::StringRef kindName(llvm::SourceMgr::DiagKind kind) {
  return kind == llvm::SourceMgr::DK_Error     ? "error"
         : kind == llvm::SourceMgr::DK_Warning ? "warning"
                                               : "note";
}

void DiagnosticEngine::emit(Location loc, llvm::SourceMgr::DiagKind kind,
                            const llvm::Twine &message) {
  if (!loc.isValid()) {
    os << "cgc: " << kindName(kind) << ": " << message << "\n";
    return;
  }
  if (!shownFile.empty()) {
    os << shownFile << ": " << kindName(kind) << ": " << message << "\n";
    return;
  }
  const llvm::MemoryBuffer *buf = srcMgr.getMemoryBuffer(loc.bufferId);
  uint32_t offset = std::min<uint32_t>(loc.offset, buf->getBufferSize());
  llvm::SMLoc smLoc = llvm::SMLoc::getFromPointer(buf->getBufferStart() + offset);
  llvm::SMDiagnostic d = srcMgr.GetMessage(smLoc, kind, message);
  if (d.getLineContents().size() <= kMaxShownLine) {
    srcMgr.PrintMessage(os, d);
    return;
  }
  printClipped(d);
}

/// Like SMDiagnostic::print, but shows only kMaxShownLine characters of the
/// source line around the column (clang and rustc cut long lines too), so
/// a megabyte-long line is not printed once per error.
void DiagnosticEngine::printClipped(const llvm::SMDiagnostic &d) {
  llvm::StringRef line = d.getLineContents();
  size_t col = size_t(std::max(d.getColumnNo(), 0));
  size_t half = kMaxShownLine / 2;
  size_t start = col > half ? col - half : 0;
  start = std::min(start, line.size() > kMaxShownLine ? line.size() - kMaxShownLine : 0);
  llvm::StringRef shown = line.substr(start, kMaxShownLine);
  const char *kind = d.getKind() == llvm::SourceMgr::DK_Error     ? "error"
                     : d.getKind() == llvm::SourceMgr::DK_Warning ? "warning"
                                                                  : "note";
  std::string lead = start ? "..." : "";
  os << d.getFilename() << ":" << d.getLineNo() << ":" << col + 1 << ": "
     << kind << ": " << d.getMessage() << "\n"
     << lead << shown << (start + shown.size() < line.size() ? "..." : "")
     << "\n"
     << std::string(lead.size() + (col - start), ' ') << "^\n";
}

void DiagnosticEngine::error(Location loc, const llvm::Twine &message) {
  lastSuppressed = suppressed();
  ++errors;
  if (!lastSuppressed)
    emit(loc, llvm::SourceMgr::DK_Error, message);
}

void DiagnosticEngine::warning(Location loc, const llvm::Twine &message) {
  emit(loc, llvm::SourceMgr::DK_Warning, message);
}

void DiagnosticEngine::note(Location loc, const llvm::Twine &message) {
  if (!lastSuppressed)
    emit(loc, llvm::SourceMgr::DK_Note, message);
}

void DiagnosticEngine::fileError(llvm::StringRef file,
                                 const llvm::Twine &message) {
  lastSuppressed = suppressed();
  ++errors;
  if (!lastSuppressed)
    os << (shownFile.empty() ? file : llvm::StringRef(shownFile))
       << ": error: " << message << "\n";
}

void DiagnosticEngine::nodeError(const Node &node, const llvm::Twine &message) {
  nodeError(node, node.getLoc(), message);
}

void DiagnosticEngine::nodeError(const Node &node, Location at,
                                 const llvm::Twine &message) {
  if (!shownFile.empty() && !node.getSourceLoc().empty()) {
    error(at, node.getSourceLoc() + ": in cgc's node '" + node.getName() +
                  "' (" + mnemonic(node.getOp()) + "): " + message);
    return;
  }
  error(at, "node '" + node.getName() + "' (" + mnemonic(node.getOp()) +
                "): " + message);
  if (!node.getSourceLoc().empty())
    note(at, "node '" + node.getName() + "' comes from " +
                 node.getSourceLoc());
}
