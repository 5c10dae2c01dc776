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

void DiagnosticEngine::emit(Location loc, llvm::SourceMgr::DiagKind kind,
                            const llvm::Twine &message) {
  if (!loc.isValid()) {
    llvm::StringRef prefix = kind == llvm::SourceMgr::DK_Error     ? "error"
                             : kind == llvm::SourceMgr::DK_Warning ? "warning"
                                                                   : "note";
    os << "cgc: " << prefix << ": " << message << "\n";
    return;
  }
  const llvm::MemoryBuffer *buf = srcMgr.getMemoryBuffer(loc.bufferId);
  uint32_t offset = std::min<uint32_t>(loc.offset, buf->getBufferSize());
  llvm::SMLoc smLoc = llvm::SMLoc::getFromPointer(buf->getBufferStart() + offset);
  srcMgr.PrintMessage(os, smLoc, kind, message);
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
    os << file << ": error: " << message << "\n";
}

void DiagnosticEngine::nodeError(const Node &node, const llvm::Twine &message) {
  error(node.getLoc(), "node '" + node.getName() + "' (" +
                           mnemonic(node.getOp()) + "): " + message);
  if (!node.getSourceLoc().empty())
    note(node.getLoc(), "node '" + node.getName() + "' comes from " +
                            node.getSourceLoc());
}
