//===- TypeChecker.h - The type rules' per-node checker ---------*- C++ -*-===//
//
// Internal to ir/: TypeRules.cpp holds the rules of the dataflow ops and
// RegionTypeRules.cpp those of ops with regions and data-dependent shapes;
// both are methods of this checker. Use inferResultTypes() (TypeRules.h).
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_TYPECHECKER_H
#define CGC_IR_TYPECHECKER_H

#include "ir/TypeRules.h"

#include "llvm/ADT/SmallVector.h"
#include <string>

namespace cgc {
namespace typerules {
using Types = llvm::SmallVectorImpl<TensorType>;
using Shape = llvm::SmallVector<Dim, 4>;

class TypeChecker {
public:
  TypeChecker(Node &node, DiagnosticEngine &diag)
      : node(node), diag(diag), table(node.getParent()->dims()) {}

  bool run(Types &out);

private:
  bool fail(const llvm::Twine &message) {
    diag.nodeError(node, message);
    return false;
  }
  const TensorType &operandType(unsigned i) const {
    return node.operand(i)->getType();
  }
  std::string str(const TensorType &t) const { return typeToString(t, table); }
  std::string str(llvm::ArrayRef<Dim> s) const { return shapeToString(s, table); }

  bool dtypeAllowed(DType dtype) const;
  bool checkOperandDTypes(unsigned first, unsigned count);
  bool axisAttr(llvm::StringRef key, int64_t fallback, unsigned rank,
                unsigned &axis);
  bool shapeAttr(Shape &shape);
  bool numbersFit(DType dtype, llvm::ArrayRef<Number> values);

  bool opRule(Types &out);
  bool elementwise(Types &out);
  bool source(Types &out);
  bool reduction(Types &out);
  bool matmul(Types &out);
  bool linear(Types &out);
  bool attention(Types &out);
  bool convolution(Types &out);
  bool convolutionWeightGradient(Types &out);
  bool transpose(Types &out);
  bool reshape(Types &out);
  bool broadcastTo(Types &out);
  bool concat(Types &out);
  bool slice(Types &out);
  bool gather(Types &out);
  bool indexCopy(Types &out);
  bool argTopK(Types &out);
  bool constantIndicesInRange(Dim extent, unsigned axis);
  bool oneHot(Types &out);
  bool packing(Types &out);
  bool normalization(Types &out);
  bool batchNorm(Types &out);
  bool interpolate(Types &out);
  bool dropout(Types &out);
  bool loss(Types &out);
  bool syncPoint(Types &out);
  bool collective(Types &out);
  bool ifOp(Types &out);
  bool whileOp(Types &out);
  bool fusion(Types &out);
  bool productFusionBody();
  bool convolutionFusionBody();
  bool rowFusionBody();
  bool pointwiseFusionBody();
  bool regionSignature(Graph &region, llvm::StringRef name,
                       llvm::ArrayRef<TensorType> inputs);

  Node &node;
  DiagnosticEngine &diag;
  DimTable &table;
};
} // namespace typerules
} // namespace cgc

#endif
