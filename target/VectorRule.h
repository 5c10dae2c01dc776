//===- VectorRule.h - How vectorized kernels read their operands -*- C++ -*-===//
//
// A vectorized kernel's thread takes `width` adjacent elements of its
// iteration space per step and reads each operand by one pattern: the
// whole vector, a vector of a broadcast row, one element of a broadcast
// column, or one scalar. Full and row reads move width * element bytes in
// one access, which must be a machine word (the prelude's cgc_ldv and
// cgc_stv). Codegen's emitters and fuse-rows, which must only make row
// fusions codegen can run, ask this one rule.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TARGET_VECTORRULE_H
#define CGC_TARGET_VECTORRULE_H

#include "ir/Types.h"

#include "llvm/ADT/Optional.h"
#include <cstdint>
#include <vector>

namespace cgc {

/// Static extents of a shape, outermost first.
using Extents = std::vector<int64_t>;
/// The extents of a static type (symbolic dims as 0).
Extents extentsOf(const TensorType &type);

/// How a vectorized thread reads one operand: the whole vector (same
/// shape as the iteration space), one vector of a row repeated along the
/// leading dims (`Row`: the operand is the iteration space's trailing
/// dims), one element per vector (`Column`: the operand is the leading
/// dims, broadcast along trailing dims whose size the width divides), or
/// one element for all (`Scalar`).
enum class VectorRead { Full, Row, Column, Scalar };
struct OperandRead {
  VectorRead read = VectorRead::Full;
  int64_t period = 0; ///< Row: vectors per row. Column: vectors per element.
};
/// The read of an operand of shape \p shape (right-aligned to \p iter) by
/// \p width-element vectors, if one pattern fits.
llvm::Optional<OperandRead> vectorRead(const Extents &shape,
                                       const Extents &iter, unsigned width);

/// Whether \p bytes is one machine access (1, 2, 4, 8 or 16 bytes).
bool isWholeWord(unsigned bytes);
/// Whether a kernel over \p iter, \p width elements per step, reads (or
/// writes) a buffer of \p dtype and \p shape: one vectorRead pattern, and
/// whole words for full and row reads.
bool vectorAccess(DType dtype, const Extents &shape, const Extents &iter,
                  unsigned width);

} // namespace cgc

#endif
