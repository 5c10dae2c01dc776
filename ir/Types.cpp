//===- Types.cpp - Element types, dims and tensor types ---------------------===//
#include "ir/Types.h"

#include "llvm/ADT/StringSwitch.h"
#include <algorithm>

using namespace cgc;

llvm::StringRef cgc::dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32: return "f32";
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::Bool: return "bool";
  }
  return "?";
}

llvm::Optional<DType> cgc::parseDType(llvm::StringRef name) {
  return llvm::StringSwitch<llvm::Optional<DType>>(name)
      .Case("f32", DType::F32)
      .Case("f16", DType::F16)
      .Case("bf16", DType::BF16)
      .Case("i32", DType::I32)
      .Case("i64", DType::I64)
      .Case("bool", DType::Bool)
      .Default(llvm::None);
}

unsigned cgc::dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32: case DType::I32: return 4;
  case DType::F16: case DType::BF16: return 2;
  case DType::I64: return 8;
  case DType::Bool: return 1;
  }
  return 0;
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
