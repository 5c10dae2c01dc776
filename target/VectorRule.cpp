//===- VectorRule.cpp - How vectorized kernels read their operands ---------===//
#include "target/VectorRule.h"

using namespace cgc;

static int64_t productFrom(const Extents &shape, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < shape.size(); ++i)
    p *= shape[i];
  return p;
}

llvm::Optional<OperandRead> cgc::vectorRead(const Extents &shape,
                                            const Extents &iter,
                                            unsigned width) {
  int64_t n = productFrom(shape, 0);
  if (shape == iter)
    return OperandRead{VectorRead::Full, 0};
  if (n == 1)
    return OperandRead{VectorRead::Scalar, 0};
  size_t lead = iter.size() - shape.size();
  // First dim (of iter) where the operand is not 1, and the last.
  size_t first = iter.size(), last = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1) {
      first = std::min(first, d + lead);
      last = d + lead;
    }
  bool equalFromFirst = true, oneAfterLast = true;
  for (size_t d = first; d < iter.size(); ++d)
    equalFromFirst &= d < lead || shape[d - lead] == iter[d];
  for (size_t d = 0; d <= last; ++d)
    oneAfterLast &= d < lead ? iter[d] == 1 : shape[d - lead] == iter[d];
  if (equalFromFirst && n % width == 0)
    return OperandRead{VectorRead::Row, n / width};
  int64_t trailing = productFrom(iter, last + 1);
  if (oneAfterLast && trailing % width == 0)
    return OperandRead{VectorRead::Column, trailing / width};
  return llvm::None;
}

bool cgc::isWholeWord(unsigned bytes) {
  return bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8 || bytes == 16;
}

bool cgc::vectorAccess(DType dtype, const Extents &shape, const Extents &iter,
                       unsigned width) {
  auto read = vectorRead(shape, iter, width);
  if (!read)
    return false;
  bool wide = read->read == VectorRead::Full || read->read == VectorRead::Row;
  return width == 1 || !wide || isWholeWord(dtypeSize(dtype) * width);
}

Extents cgc::extentsOf(const TensorType &type) {
  Extents e;
  for (Dim d : type.dims)
    e.push_back(d.isStatic() ? d.extent() : 0);
  return e;
}
