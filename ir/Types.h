//===- Types.h - Element types, dims and tensor types -----------*- C++ -*-===//
//
// A TensorType is a dtype (from format/DTypes.def) plus a list of Dims. A
// Dim is either a static extent or a reference to a symbolic dim of the
// graph's DimTable (for example `B` in [1, 64], with optional buckets).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_TYPES_H
#define CGC_IR_TYPES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/ErrorHandling.h"
#include <cstdint>
#include <string>
#include <vector>

namespace cgc {

/// The element types of format/DTypes.def.
enum class DType : uint8_t {
#define CGC_DTYPE(Enum, ...) Enum,
#include "format/DTypes.def"
};

llvm::StringRef dtypeName(DType dtype);
llvm::Optional<DType> parseDType(llvm::StringRef name);
unsigned dtypeSize(DType dtype);
inline bool isFloat(DType dtype) {
  switch (dtype) {
  case DType::F32: case DType::F16: case DType::BF16: return true;
  case DType::I32: case DType::I64: case DType::Bool: return false;
  }
  llvm_unreachable("invalid DType");
}
inline bool isInteger(DType dtype) {
  switch (dtype) {
  case DType::I32: case DType::I64: return true;
  case DType::F32: case DType::F16: case DType::BF16: case DType::Bool:
    return false;
  }
  llvm_unreachable("invalid DType");
}

/// A static extent (>= 0) or a symbolic dim (index into a DimTable).
class Dim {
public:
  static Dim fixed(int64_t extent) { return Dim(extent); }
  static Dim symbol(unsigned index) { return Dim(-1 - int64_t(index)); }

  bool isStatic() const { return raw >= 0; }
  int64_t extent() const { return raw; }
  unsigned symbolIndex() const { return unsigned(-1 - raw); }
  bool operator==(const Dim &other) const { return raw == other.raw; }
  bool operator!=(const Dim &other) const { return raw != other.raw; }
  bool operator<(const Dim &other) const { return raw < other.raw; }

private:
  explicit Dim(int64_t raw) : raw(raw) {}
  int64_t raw;
};

/// A symbolic dim: declared in the graph's `dims`, or created by a
/// data-dependent op (nonzero, masked_select) with its upper bound.
struct SymbolicDim {
  std::string name;
  int64_t min = 1;
  int64_t max = 1;
  std::vector<int64_t> buckets;
  bool dataDependent = false;
};

class DimTable {
public:
  unsigned add(SymbolicDim dim);
  llvm::Optional<unsigned> lookup(llvm::StringRef name) const;
  const SymbolicDim &get(unsigned index) const { return dims[index]; }
  SymbolicDim &get(unsigned index) { return dims[index]; }
  size_t size() const { return dims.size(); }
  const std::vector<SymbolicDim> &all() const { return dims; }

  /// The largest value \p dim can take.
  int64_t upperBound(Dim dim) const {
    return dim.isStatic() ? dim.extent() : dims[dim.symbolIndex()].max;
  }

private:
  std::vector<SymbolicDim> dims;
};

struct TensorType {
  DType dtype = DType::F32;
  llvm::SmallVector<Dim, 4> dims;

  TensorType() = default;
  TensorType(DType dtype, llvm::ArrayRef<Dim> dims)
      : dtype(dtype), dims(dims.begin(), dims.end()) {}
  static TensorType scalar(DType dtype) { return TensorType(dtype, {}); }

  unsigned rank() const { return dims.size(); }
  bool isStatic() const;
  /// Element count; only for static types.
  int64_t numElements() const;
  /// Each dim's extent, 0 for a symbolic one.
  std::vector<int64_t> extents() const;
  /// Element count with every symbolic dim at its upper bound.
  int64_t maxElements(const DimTable &table) const;
  bool operator==(const TensorType &other) const {
    return dtype == other.dtype && dims == other.dims;
  }
  bool operator!=(const TensorType &other) const { return !(*this == other); }
};

/// Prints `f32[4,B,8]`; symbolic dims print by name.
std::string typeToString(const TensorType &type, const DimTable &table);
std::string dimToString(Dim dim, const DimTable &table);
std::string shapeToString(llvm::ArrayRef<Dim> dims, const DimTable &table);

/// NumPy broadcasting of two shapes; None when they do not broadcast.
llvm::Optional<llvm::SmallVector<Dim, 4>>
broadcastShapes(llvm::ArrayRef<Dim> lhs, llvm::ArrayRef<Dim> rhs);

/// Whether a tensor of type \p t crosses the boundary of a padded graph
/// packed (pad-dynamic-shapes): a dim after axis 0 is symbolic and not
/// data-dependent, so its packed and padded layouts differ.
bool crossesPacked(const TensorType &t, const DimTable &table);

/// Normalizes a possibly negative axis; None when out of range.
llvm::Optional<unsigned> normalizeAxis(int64_t axis, unsigned rank);

} // namespace cgc

#endif
