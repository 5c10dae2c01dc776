//===- Permutation.h - A tensor's elements in transposed order ---*- C++ -*-===//
//
// A state tensor may be stored in one layout and used in another (the
// layout pass holds convolution weights channels last): its value is the
// stored tensor transposed by a permutation, whose axis i is the stored
// tensor's axis perm[i]. The compiler (ir/Initializers.cpp) and the
// runtime (uploading a weights file's tensor) both walk it with
// forEachPermuted.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_FORMAT_PERMUTATION_H
#define CGC_FORMAT_PERMUTATION_H

#include <cstdint>
#include <vector>

namespace cgc {
namespace format {

/// Whether \p perm holds each of 0..rank-1 once.
inline bool isPermutation(const std::vector<int64_t> &perm, size_t rank) {
  if (perm.size() != rank)
    return false;
  std::vector<bool> seen(rank, false);
  for (int64_t a : perm) {
    if (a < 0 || size_t(a) >= rank || seen[size_t(a)])
      return false;
    seen[size_t(a)] = true;
  }
  return true;
}

/// The stored dims of a value of \p dims held transposed by \p perm.
inline std::vector<int64_t> storedDims(const std::vector<int64_t> &dims,
                                       const std::vector<int64_t> &perm) {
  std::vector<int64_t> stored(dims.size());
  for (size_t i = 0; i < perm.size(); ++i)
    stored[size_t(perm[i])] = dims[i];
  return stored;
}

/// Calls copy(to, from) for every element of the value (of \p dims, a
/// valid \p perm of the stored tensor): `to` its row-major index in the
/// value, `from` its index in the stored tensor, in increasing `to`.
template <class Copy>
void forEachPermuted(const std::vector<int64_t> &dims,
                     const std::vector<int64_t> &perm, Copy copy) {
  size_t rank = dims.size();
  std::vector<int64_t> stored = storedDims(dims, perm);
  std::vector<int64_t> storedStride(rank, 1), step(rank);
  for (size_t a = rank; a-- > 1;)
    storedStride[a - 1] = storedStride[a] * stored[a];
  int64_t total = 1;
  for (size_t i = 0; i < rank; ++i) {
    step[i] = storedStride[size_t(perm[i])];
    total *= dims[i];
  }
  std::vector<int64_t> at(rank, 0);
  int64_t from = 0;
  for (int64_t to = 0; to < total; ++to) {
    copy(to, from);
    for (size_t i = rank; i-- > 0;) { // Odometer over the value's dims.
      from += step[i];
      if (++at[i] < dims[i])
        break;
      from -= step[i] * dims[i];
      at[i] = 0;
    }
  }
}

} // namespace format
} // namespace cgc

#endif
