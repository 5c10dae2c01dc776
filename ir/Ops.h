//===- Ops.h - Operator kinds and their static metadata ---------*- C++ -*-===//
//
// OpKind enumerates Ops.def; opInfo() gives each kind's mnemonic, family,
// operand bounds, flags, attribute schema and region names from one
// constexpr table.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_OPS_H
#define CGC_IR_OPS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>

namespace cgc {

/// What an op is, for dispatch: the type rules, the interpreter and codegen
/// switch over the family first, then over the few ops of one family.
enum OpFamily : uint8_t {
  Elementwise,   ///< One result element from the same-index operands.
  Source,        ///< No operands; the result comes from attributes.
  Reduction,     ///< sum, mean, max, min, prod, argmax over axes.
  Scan,          ///< cumsum: running sums along one axis.
  Normalization, ///< softmax, log_softmax, layernorm: row-wise.
  Loss,          ///< mse_loss, cross_entropy.
  Random,        ///< Reads the Philox stream (dropout).
  MatMul,        ///< Matrix products, lowered to a library call (cuBLASLt).
  Attention,     ///< softmax(q k^T) v: a fused kernel, or written out.
  Convolution,   ///< conv, written out by expand-convolution.
  Movement,      ///< Moves or copies elements without arithmetic.
  SyncPoint,     ///< Needs a host sync unless rewritten.
  Collective,    ///< all_reduce across ranks (NCCL).
  ControlFlow,   ///< if, while.
  Fused,         ///< A fusion: its region runs as one kernel.
};

enum OpFlags : uint32_t {
  NoFlags = 0,
  Unary = 1u << 0,
  Compare = 1u << 1,   ///< Result dtype is bool.
  AllowInt = 1u << 2,  ///< Integer operands are accepted.
  AllowBool = 1u << 3, ///< Bool operands are accepted.
  BoolOnly = 1u << 4,  ///< Only bool operands are accepted.
  NoFloat = 1u << 5,   ///< Float operands are refused (the bitwise ops).
};

enum class OpKind : uint8_t {
#define CGC_OP(Enum, ...) Enum,
#include "ir/Ops.def"
};

constexpr unsigned NumOpKinds = 0
#define CGC_OP(...) +1
#include "ir/Ops.def"
    ;

enum class AttrKind : uint8_t {
  Int, Float, Bool, Str, Ints, Floats, DType, Shape, Number, Values
};

struct AttrSpec {
  llvm::StringRef name;
  AttrKind kind;
  bool optional;
};

struct OpInfo {
  llvm::StringRef mnemonic;
  OpFamily family;
  int minOperands;
  int maxOperands; ///< -1: variadic.
  uint32_t flags;
  llvm::StringRef attrSchema;
  llvm::StringRef regionNames;

  bool has(uint32_t flag) const { return (flags & flag) == flag; }
  /// Whether the op belongs to \p of.
  bool has(OpFamily of) const { return family == of; }
};

const OpInfo &opInfo(OpKind kind);
inline OpFamily opFamily(OpKind kind) { return opInfo(kind).family; }
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
