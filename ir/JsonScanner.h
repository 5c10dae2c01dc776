//===- JsonScanner.h - Validating JSON scanner with offsets -----*- C++ -*-===//
//
// nlohmann_json 3.11 keeps no source positions and accepts duplicate keys,
// so the reader first runs this scanner over the raw text. It validates the
// grammar (with a nesting limit, duplicate-key and number-range checks) and
// records the byte offset of every value and key by JSON pointer, which the
// reader then uses to locate its diagnostics.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_JSONSCANNER_H
#define CGC_IR_JSONSCANNER_H

#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include <string>

namespace cgc {

struct JsonSyntaxError {
  uint32_t offset;
  std::string message;
  uint32_t previousOffset = UINT32_MAX; ///< Earlier definition, for a note.
};

class JsonOffsets {
public:
  void setValue(llvm::StringRef pointer, uint32_t offset) {
    values[pointer] = offset;
  }
  void setKey(llvm::StringRef pointer, uint32_t offset) {
    keys[pointer] = offset;
  }
  /// Offset of the value at \p pointer, or of its nearest recorded parent.
  uint32_t value(llvm::StringRef pointer) const;
  /// Offset of the key naming \p pointer, or of its value if none.
  uint32_t key(llvm::StringRef pointer) const;

private:
  llvm::StringMap<uint32_t> values;
  llvm::StringMap<uint32_t> keys;
};

/// Escapes a key for use as a JSON pointer token.
std::string escapePointerToken(llvm::StringRef key);

/// Scans \p text; past \p maxDepth nesting levels or \p maxValues values
/// (objects, arrays, strings, numbers, literals) it stops with an error.
llvm::Optional<JsonSyntaxError> scanJson(llvm::StringRef text,
                                         bool allowComments,
                                         unsigned maxDepth, uint64_t maxValues,
                                         JsonOffsets &offsets);

} // namespace cgc

#endif
