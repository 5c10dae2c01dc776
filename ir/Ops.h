//===- Ops.h - Operator kinds and their static metadata ---------*- C++ -*-===//
//
// OpKind enumerates Ops.def; opInfo() gives each kind's mnemonic, operand
// bounds, flags, attribute schema and region names from one constexpr table.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_OPS_H
#define CGC_IR_OPS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>

namespace cgc {

enum OpFlags : uint32_t {
  NoFlags = 0,
  Elementwise = 1u << 0, ///< One result element from the same-index operands.
  Unary = 1u << 1,
  Compare = 1u << 2,     ///< Result dtype is bool.
  AllowInt = 1u << 3,    ///< Integer operands are accepted.
  AllowBool = 1u << 4,   ///< Bool operands are accepted.
  BoolOnly = 1u << 5,    ///< Only bool operands are accepted.
  Source = 1u << 6,      ///< No operands; the result comes from attributes.
  Reduction = 1u << 7,
  Library = 1u << 8,     ///< Lowered to a library call (cuBLASLt).
  Movement = 1u << 9,    ///< Moves or copies elements without arithmetic.
  Random = 1u << 10,     ///< Reads the Philox stream.
  SyncPoint = 1u << 11,  ///< Needs a host sync unless rewritten.
  ControlFlow = 1u << 12,
  Fused = 1u << 13,      ///< A fusion: its region runs as one kernel.
};

enum class OpKind : uint8_t {
#define CGC_OP(Enum, Mnemonic, MinOps, MaxOps, Flags, Attrs, Regions) Enum,
#include "ir/Ops.def"
};

constexpr unsigned NumOpKinds = 0
#define CGC_OP(Enum, Mnemonic, MinOps, MaxOps, Flags, Attrs, Regions) +1
#include "ir/Ops.def"
    ;

enum class AttrKind : uint8_t {
  Int, Float, Bool, Str, Ints, Floats, DType, Shape, Values
};

struct AttrSpec {
  llvm::StringRef name;
  AttrKind kind;
  bool optional;
};

struct OpInfo {
  llvm::StringRef mnemonic;
  int minOperands;
  int maxOperands; ///< -1: variadic.
  uint32_t flags;
  llvm::StringRef attrSchema;
  llvm::StringRef regionNames;

  bool has(uint32_t flag) const { return (flags & flag) == flag; }
};

const OpInfo &opInfo(OpKind kind);
llvm::StringRef mnemonic(OpKind kind);
llvm::Optional<OpKind> lookupOp(llvm::StringRef mnemonic);
/// The attribute schema of \p kind, parsed once from Ops.def.
llvm::ArrayRef<AttrSpec> attrSpecs(OpKind kind);
const AttrSpec *findAttrSpec(OpKind kind, llvm::StringRef name);
/// The region names of \p kind ("then", "else"), parsed once from Ops.def.
llvm::ArrayRef<llvm::StringRef> regionNames(OpKind kind);
llvm::StringRef attrKindName(AttrKind kind);

} // namespace cgc

#endif
