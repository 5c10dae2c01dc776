//===- ManifestChecks.h - What the manifest's validators share -*- C++ -*-===//
//
// Private to format/: ManifestValidate.cpp checks the manifest as a whole,
// LibraryCallsValidate.cpp its library calls (products, convolutions,
// collectives), with these helpers.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_FORMAT_MANIFESTCHECKS_H
#define CGC_FORMAT_MANIFESTCHECKS_H

#include "format/ArtifactFormat.h"

#include <string>

namespace cgc::format::checks {

/// Helper collecting the first validation error.
struct Checker {
  std::string &error;
  bool fail(const std::string &msg) {
    error = "manifest: " + msg;
    return false;
  }
};

inline bool mulNoOverflow(uint64_t a, uint64_t b, uint64_t &product) {
  return !__builtin_mul_overflow(a, b, &product);
}

inline bool addNoOverflow(uint64_t a, uint64_t b, uint64_t &sum) {
  sum = a + b;
  return sum >= a;
}

inline bool checkRange(Checker &c, const Manifest &m, Region r, uint64_t offset,
                uint64_t bytes, const std::string &what) {
  uint64_t limit = r == Region::Arena ? m.arenaSize : m.persistentSize;
  uint64_t end;
  if (!addNoOverflow(offset, bytes, end) || end > limit)
    return c.fail(what + ": range [" + std::to_string(offset) + ", +" +
                  std::to_string(bytes) + ") exceeds " + regionName(r) +
                  " size " + std::to_string(limit));
  return true;
}

inline const TensorDesc *findIO(const Manifest &m, const std::string &name) {
  for (const auto *list : {&m.inputs, &m.outputs})
    for (const TensorDesc &t : *list)
      if (t.name == name)
        return &t;
  return nullptr;
}

inline bool checkBinding(Checker &c, const Manifest &m, const std::string &binding,
                  Region r, uint64_t offset, uint64_t bytes,
                  const std::string &p) {
  if (binding.empty())
    return true;
  const TensorDesc *t = findIO(m, binding);
  if (!t)
    return c.fail(p + ": binding '" + binding +
                  "' names no graph input or output");
  if (t->region != r || offset < t->offset ||
      offset + bytes > t->offset + t->bytes || offset >= t->offset + t->bytes)
    return c.fail(p + ": binding '" + binding +
                  "' does not contain the referenced bytes");
  return true;
}

/// The library calls' own checks: each operand in its region (with its
/// leading dimension, batch stride or strides), shapes consistent.
bool checkProduct(Checker &c, const Manifest &m, const ProductDesc &d, const std::string &p);
bool checkConvolution(Checker &c, const Manifest &m, const ConvolutionDesc &d,
                      const std::string &p);
bool checkCollective(Checker &c, const Manifest &m, const CollectiveDesc &d,
                     const std::string &p);

} // namespace cgc::format::checks

#endif
