//===- Location.h - Source locations ----------------------------*- C++ -*-===//
//
// A Location is a byte offset into a buffer of the DiagnosticEngine's
// SourceMgr. Nodes made by passes copy the location of the node they came
// from, so diagnostics always point into the user's JSON.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_LOCATION_H
#define CGC_IR_LOCATION_H

#include <cstdint>

namespace cgc {

struct Location {
  uint32_t bufferId = 0; ///< 0: unknown.
  uint32_t offset = 0;

  bool isValid() const { return bufferId != 0; }
};

} // namespace cgc

#endif
