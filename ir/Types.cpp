//===- Types.cpp - Element types, dims and tensor types ---------------------===//
#include "ir/Types.h"

#include "llvm/Support/ErrorHandling.h"
#include <algorithm>

using namespace cgc;

llvm::StringRef cgc::dtypeName(DType dtype) {
  switch (dtype) {
#define CGC_DTYPE(Enum, Name, ...)                                             \
  case DType::Enum:                                                            \
    return Name;
#include "format/DTypes.def"
  }
  llvm_unreachable("invalid DType");
}

llvm::Optional<DType> cgc::parseDType(llvm::StringRef name) {
#define CGC_DTYPE(Enum, Name, ...)                                             \
  if (name == Name)                                                            \
    return DType::Enum;
#include "format/DTypes.def"
  return llvm::None;
}

unsigned cgc::dtypeSize(DType dtype) {
  switch (dtype) {
#define CGC_DTYPE(Enum, Name, Size, ...)                                       \
  case DType::Enum:                                                            \
    return Size;
#include "format/DTypes.def"
  }
  llvm_unreachable("invalid DType");
}

unsigned DimTable::add(SymbolicDim dim) {
  dims.push_back(std::move(dim));
  return dims.size() - 1;
}

llvm::Optional<unsigned> DimTable::lookup(llvm::StringRef name) const {
  for (unsigned i = 0; i < dims.size(); ++i)
    if (dims[i].name == name)
      return i;
  return llvm::None;
}

bool TensorType::isStatic() const {
  return std::all_of(dims.begin(), dims.end(),
                     [](Dim d) { return d.isStatic(); });
}

int64_t TensorType::numElements() const {
  int64_t n = 1;
  for (Dim d : dims)
    n *= d.extent();
  return n;
}

std::vector<int64_t> TensorType::extents() const {
  std::vector<int64_t> out;
  for (Dim d : dims)
    out.push_back(d.isStatic() ? d.extent() : 0);
  return out;
}

int64_t TensorType::maxElements(const DimTable &table) const {
  int64_t n = 1;
  for (Dim d : dims)
    n *= table.upperBound(d);
  return n;
}

std::string cgc::dimToString(Dim dim, const DimTable &table) {
  if (dim.isStatic())
    return std::to_string(dim.extent());
  return table.get(dim.symbolIndex()).name;
}

std::string cgc::shapeToString(llvm::ArrayRef<Dim> dims,
                               const DimTable &table) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i)
      out += ",";
    out += dimToString(dims[i], table);
  }
  return out + "]";
}

std::string cgc::typeToString(const TensorType &type, const DimTable &table) {
  return dtypeName(type.dtype).str() + shapeToString(type.dims, table);
}

llvm::Optional<llvm::SmallVector<Dim, 4>>
cgc::broadcastShapes(llvm::ArrayRef<Dim> lhs, llvm::ArrayRef<Dim> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  llvm::SmallVector<Dim, 4> out(rank, Dim::fixed(1));
  for (size_t i = 0; i < rank; ++i) {
    Dim a = i < rank - lhs.size() ? Dim::fixed(1) : lhs[i - (rank - lhs.size())];
    Dim b = i < rank - rhs.size() ? Dim::fixed(1) : rhs[i - (rank - rhs.size())];
    if (a == b || b == Dim::fixed(1))
      out[i] = a;
    else if (a == Dim::fixed(1))
      out[i] = b;
    else
      return llvm::None;
  }
  return out;
}

llvm::Optional<unsigned> cgc::normalizeAxis(int64_t axis, unsigned rank) {
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= int64_t(rank))
    return llvm::None;
  return unsigned(axis);
}

bool cgc::crossesPacked(const TensorType &t, const DimTable &table) {
  for (unsigned a = 1; a < t.rank(); ++a)
    if (!t.dims[a].isStatic() && !table.get(t.dims[a].symbolIndex()).dataDependent)
      return true;
  return false;
}
