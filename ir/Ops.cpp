//===- Ops.cpp - Operator metadata ------------------------------------------===//
#include "ir/Ops.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ErrorHandling.h"
#include <array>
#include <cassert>
#include <vector>

using namespace cgc;

static constexpr OpInfo OpTable[] = {
#define CGC_OP(Enum, Mnemonic, Family, MinOps, MaxOps, Flags, Attrs, Regions)  \
  {Mnemonic, Family, MinOps, MaxOps, Flags, Attrs, Regions},
#include "ir/Ops.def"
};

const OpInfo &cgc::opInfo(OpKind kind) {
  return OpTable[static_cast<unsigned>(kind)];
}

llvm::StringRef cgc::mnemonic(OpKind kind) { return opInfo(kind).mnemonic; }

llvm::Optional<OpKind> cgc::lookupOp(llvm::StringRef name) {
  for (unsigned i = 0; i < NumOpKinds; ++i)
    if (OpTable[i].mnemonic == name)
      return static_cast<OpKind>(i);
  return llvm::None;
}

static AttrKind parseAttrKind(llvm::StringRef text) {
  auto kind = llvm::StringSwitch<llvm::Optional<AttrKind>>(text)
                  .Case("int", AttrKind::Int)
                  .Case("float", AttrKind::Float)
                  .Case("bool", AttrKind::Bool)
                  .Case("str", AttrKind::Str)
                  .Case("ints", AttrKind::Ints)
                  .Case("floats", AttrKind::Floats)
                  .Case("dtype", AttrKind::DType)
                  .Case("shape", AttrKind::Shape)
                  .Case("number", AttrKind::Number)
                  .Case("values", AttrKind::Values)
                  .Default(llvm::None);
  assert(kind && "unknown attribute kind in Ops.def");
  return *kind;
}

namespace {
struct ParsedTables {
  std::array<std::vector<AttrSpec>, NumOpKinds> attrs;
  std::array<std::vector<llvm::StringRef>, NumOpKinds> regions;

  ParsedTables() {
    for (unsigned i = 0; i < NumOpKinds; ++i) {
      llvm::SmallVector<llvm::StringRef, 4> entries;
      OpTable[i].attrSchema.split(entries, ',', -1, /*KeepEmpty=*/false);
      for (llvm::StringRef entry : entries) {
        bool optional = entry.consume_back("?");
        auto [name, kind] = entry.split(':');
        attrs[i].push_back({name, parseAttrKind(kind), optional});
      }
      llvm::SmallVector<llvm::StringRef, 2> names;
      OpTable[i].regionNames.split(names, ',', -1, /*KeepEmpty=*/false);
      regions[i].assign(names.begin(), names.end());
    }
  }
};
} // namespace

static const ParsedTables &tables() {
  static const ParsedTables parsed;
  return parsed;
}

llvm::ArrayRef<AttrSpec> cgc::attrSpecs(OpKind kind) {
  return tables().attrs[static_cast<unsigned>(kind)];
}

const AttrSpec *cgc::findAttrSpec(OpKind kind, llvm::StringRef name) {
  for (const AttrSpec &spec : attrSpecs(kind))
    if (spec.name == name)
      return &spec;
  return nullptr;
}

llvm::ArrayRef<llvm::StringRef> cgc::regionNames(OpKind kind) {
  return tables().regions[static_cast<unsigned>(kind)];
}

llvm::StringRef cgc::attrKindName(AttrKind kind) {
  switch (kind) {
  case AttrKind::Int: return "an integer";
  case AttrKind::Float: return "a number";
  case AttrKind::Bool: return "a boolean";
  case AttrKind::Str: return "a string";
  case AttrKind::Ints: return "a list of integers";
  case AttrKind::Floats: return "a list of numbers";
  case AttrKind::DType: return "a dtype name";
  case AttrKind::Shape: return "a shape (integers or dim names)";
  case AttrKind::Number: return "a number";
  case AttrKind::Values: return "a number or a list of numbers";
  }
  llvm_unreachable("invalid AttrKind");
}
