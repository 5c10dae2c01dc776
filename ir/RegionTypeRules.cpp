//===- RegionTypeRules.cpp - Types of regions and data-dependent ops --------===//
//
// `if`, `while` and the fusions type their results from their regions,
// whose inputs must match the operands passed (a fusion body holds only
// elementwise ops, dropouts and sources; product_fusion and row_fusion
// bodies have the shapes their kernels run); nonzero, masked_select and item
// give results whose size depends on data (a `<node>#n` dim bounded by the
// operand's element count) or that a host would read.
//
//===----------------------------------------------------------------------===//
#include "ir/ProductEpilogue.h"
#include "ir/ConvolutionEpilogue.h"
#include "ir/PointwiseFusion.h"
#include "ir/RowFusion.h"
#include "ir/TypeChecker.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/ErrorHandling.h"

using namespace cgc;
using namespace cgc::typerules;

/// all_reduce: each result has its operand's type; float operands only
/// (gradients), and a reduction NCCL has (sum, or avg as "mean").
bool TypeChecker::collective(Types &out) {
  std::string reduction = node.strAttr("reduction", "sum");
  if (reduction != "sum" && reduction != "mean")
    return fail("attribute 'reduction' is '" + reduction +
                "', expected 'sum' or 'mean'");
  for (unsigned i = 0; i < node.numOperands(); ++i) {
    const TensorType &x = operandType(i);
    if (!isFloat(x.dtype))
      return fail("operand #" + std::to_string(i) + " is " + str(x) +
                  ", expected a float tensor");
    out.push_back(x);
  }
  return true;
}

bool TypeChecker::syncPoint(Types &out) {
  const TensorType &x = operandType(0);
  switch (node.getOp()) {
  case OpKind::Item:
    if (!x.isStatic() || x.numElements() != 1)
      return fail("item needs exactly one element, got " + str(x));
    out.push_back(TensorType::scalar(x.dtype));
    return true;
  case OpKind::MaskedSelect: {
    const TensorType &mask = operandType(1);
    if (mask.dtype != DType::Bool || mask.dims != x.dims)
      return fail("mask is " + str(mask) + ", expected bool" + str(x.dims));
    break;
  }
  case OpKind::NonZero:
    break;
#define CGC_SYNC_POINT_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("not a sync point");
  }
  int64_t maxCount = x.maxElements(table);
  if (node.attr("max_count")) {
    if (node.intAttr("max_count", 0) <= 0)
      return fail("attribute 'max_count' must be positive");
    maxCount = std::min(maxCount, node.intAttr("max_count", 0));
  }
  // `#` cannot appear in user names, so this never meets a declared dim.
  std::string symbolName = node.getName() + "#n";
  auto symbol = table.lookup(symbolName);
  if (!symbol) {
    SymbolicDim dim;
    dim.name = symbolName;
    dim.min = 0;
    dim.max = maxCount;
    dim.dataDependent = true;
    symbol = table.add(dim);
  }
  switch (node.getOp()) {
  case OpKind::NonZero: // The coordinates of each nonzero element.
    out.push_back(TensorType(DType::I64, {Dim::symbol(*symbol),
                                          Dim::fixed(x.rank())}));
    return true;
  case OpKind::MaskedSelect: // The selected elements.
    out.push_back(TensorType(x.dtype, {Dim::symbol(*symbol)}));
    return true;
  case OpKind::Item: // Typed above.
#define CGC_SYNC_POINT_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    break;
  }
  llvm_unreachable("a nonzero or masked_select");
}

bool TypeChecker::regionSignature(Graph &region, llvm::StringRef name,
                                  llvm::ArrayRef<TensorType> inputs) {
  if (region.inputs().size() != inputs.size())
    return fail("region '" + name + "' takes " +
                llvm::Twine(region.inputs().size()) + " inputs, but " +
                llvm::Twine(inputs.size()) + " are passed");
  for (unsigned i = 0; i < inputs.size(); ++i)
    if (region.inputs()[i].value->getType() != inputs[i])
      return fail("region '" + name + "' input #" + llvm::Twine(i) + " is " +
                  str(region.inputs()[i].value->getType()) + ", but " +
                  str(inputs[i]) + " is passed");
  return true;
}

static llvm::SmallVector<TensorType, 4> outputTypes(const Graph &g) {
  llvm::SmallVector<TensorType, 4> types;
  for (const GraphOutput &o : g.outputs)
    types.push_back(o.value->getType());
  return types;
}

bool TypeChecker::ifOp(Types &out) {
  if (operandType(0) != TensorType::scalar(DType::Bool))
    return fail("operand #0 (the condition) is " + str(operandType(0)) +
                ", expected bool[]");
  llvm::SmallVector<TensorType, 4> passed;
  for (unsigned i = 1; i < node.numOperands(); ++i)
    passed.push_back(operandType(i));
  if (!regionSignature(node.region(0), "then", passed) ||
      !regionSignature(node.region(1), "else", passed))
    return false;
  auto thenTypes = outputTypes(node.region(0));
  auto elseTypes = outputTypes(node.region(1));
  if (thenTypes.size() != elseTypes.size())
    return fail("region 'then' gives " + llvm::Twine(thenTypes.size()) +
                " results but region 'else' gives " +
                llvm::Twine(elseTypes.size()));
  for (unsigned i = 0; i < thenTypes.size(); ++i)
    if (thenTypes[i] != elseTypes[i])
      return fail("result #" + llvm::Twine(i) + " is " + str(thenTypes[i]) +
                  " in region 'then' but " + str(elseTypes[i]) +
                  " in region 'else'");
  out.append(thenTypes.begin(), thenTypes.end());
  return true;
}

bool TypeChecker::whileOp(Types &out) {
  llvm::SmallVector<TensorType, 4> carried;
  for (Value *v : node.getOperands())
    carried.push_back(v->getType());
  if (!regionSignature(node.region(0), "cond", carried) ||
      !regionSignature(node.region(1), "body", carried))
    return false;
  auto condTypes = outputTypes(node.region(0));
  if (condTypes.size() != 1 || condTypes[0] != TensorType::scalar(DType::Bool))
    return fail("region 'cond' must give exactly one bool[] result");
  auto bodyTypes = outputTypes(node.region(1));
  if (llvm::makeArrayRef(bodyTypes) != llvm::makeArrayRef(carried))
    return fail("region 'body' must give back the carried types");
  if (node.intAttr("max_iterations", 1) <= 0)
    return fail("attribute 'max_iterations' must be positive");
  out.append(carried.begin(), carried.end());
  return true;
}

llvm::Optional<ProductEpilogue::Activation>
ProductEpilogue::activationOf(OpKind op) {
  if (op == OpKind::Relu)
    return Activation::Relu;
  if (op == OpKind::Gelu)
    return Activation::Gelu;
  if (op == OpKind::GeluTanh)
    return Activation::GeluTanh;
  return llvm::None; // Any other op ends the epilogue.
}

ProductEpilogue::Role ProductEpilogue::admit(const Node &member,
                                             const Value *running) {
  OpKind op = member.getOp();
  if (activationOf(op)) {
    if (activated || member.operand(0) != running)
      return Role::Refused;
    activated = true;
    return Role::Activation;
  }
  if (op != OpKind::Add || activated ||
      member.operand(0) == member.operand(1) ||
      !llvm::is_contained(member.getOperands(), running))
    return Role::Refused;
  const Value *other = member.operand(member.operand(0) == running ? 1 : 0);
  const TensorType &t = other->getType(), &r = running->getType();
  if (!bias && t.rank() == 1 && t.dims[0] == r.dims.back()) {
    bias = true;
    return Role::Bias;
  }
  if (residual || t.dims != r.dims)
    return Role::Refused;
  residual = true;
  return Role::Residual;
}

static bool isBodyInput(const Graph &body, const Value *v) {
  return llvm::any_of(body.inputs(),
                      [&](const GraphInput &in) { return in.value == v; });
}

/// A product fusion's body: before the product, either a layernorm or
/// rms_norm over the last axis or a prologue (isProductPrologueOp nodes,
/// reading body inputs and earlier prologue values) whose last node
/// computes the product's first operand; then a matmul or linear; then up
/// to two adds (a bias, a residual) and one activation, each reading the
/// node before (so prologue values are read by the prologue and as the
/// product's first operand alone); the last node's result is the only
/// output. Codegen runs exactly these (fuse-epilogue makes them).
bool TypeChecker::productFusionBody() {
  const Graph &body = node.region(0);
  const Node *previous = nullptr, *product = nullptr;
  llvm::SmallPtrSet<const Value *, 8> prologue;
  llvm::SmallVector<const Node *, 8> prologueNodes;
  bool normalized = false;
  ProductEpilogue epilogue(false);
  for (const auto &member : body.nodes()) {
    bool ok = true;
    if (product) {
      ok = epilogue.admit(*member, previous->result()) !=
           ProductEpilogue::Role::Refused;
      for (const Value *v : member->getOperands())
        ok &= v == previous->result() || isBodyInput(body, v);
    } else if (member->info().has(MatMul)) {
      bool computed = previous && (normalized || !prologue.empty());
      ok = !computed || member->operand(0) == previous->result();
      for (unsigned i = computed ? 1 : 0; i < member->numOperands(); ++i)
        ok &= isBodyInput(body, member->operand(i));
    } else if (isRowNorm(*member)) {
      unsigned rank = member->result()->getType().rank();
      ok = !previous && normalizeAxis(member->intAttr("axis", -1), rank) == rank - 1;
      for (const Value *v : member->getOperands())
        ok &= isBodyInput(body, v);
      normalized = true;
    } else {
      ok = !normalized && isProductPrologueOp(*member);
      for (const Value *v : member->getOperands())
        ok &= prologue.count(v) || isBodyInput(body, v);
      prologue.insert(member->result());
      prologueNodes.push_back(member.get());
    }
    if (!ok) {
      diag.nodeError(*member, "cannot be in the body of product_fusion '" +
                                  node.getName() +
                                  "': the body is an optional layernorm or rms_norm of "
                                  "the product's input or a prologue computing it "
                                  "(elementwise ops, splat sources and static slices, "
                                  "transposes, reshapes and broadcasts), a matmul or "
                                  "linear, up to two adds (a bias of n elements, a "
                                  "tensor of the result's type) and one "
                                  "relu, gelu or gelu_tanh, each reading the "
                                  "one before and otherwise only the body's "
                                  "inputs");
      return false;
    }
    if (member->info().has(MatMul)) {
      product = member.get();
      epilogue = ProductEpilogue(product->numOperands() == 3);
    }
    previous = member.get();
  }
  if (!product || body.outputs.size() != 1 ||
      body.outputs[0].value != previous->result())
    return fail("region 'body' must hold a product and give back its last "
                "node's result alone");
  if (prologueEvaluations(prologueNodes, product->operand(0)) > kMaxViewEvaluations)
    return fail("the prologue of product_fusion '" + node.getName() +
                "' evaluates more than " + std::to_string(kMaxViewEvaluations) +
                " values per element (a value once for each set of "
                "coordinates it is read at)");
  return true;
}

/// Whether every dropout of \p body reads its rng state from a body input
/// (a kernel reads it as two scalars, never as a value it computes).
static const Node *dropoutWithComputedRng(const Graph &body) {
  for (const auto &n : body.nodes())
    if (n->getOp() == OpKind::Dropout && n->numOperands() == 2 &&
        !isBodyInput(body, n->operand(1)))
      return n.get();
  return nullptr;
}

/// A row fusion's body (rowFusionParts): one row op, and after it
/// reductions like it (siblings) that read a prologue value or a body
/// input; before them,
/// elementwise ops and dropouts of the shape of its first operand (the
/// prologue); after it, ones of its result's shape that read its result or
/// an epilogue value and no prologue value (the epilogue); splat sources
/// anywhere. The row op's other operands and the dropouts' rng states are
/// body inputs.
bool TypeChecker::rowFusionBody() {
  const Graph &body = node.region(0);
  auto refuse = [&](const Node &member, const std::string &why) {
    diag.nodeError(member, "cannot be in the body of row_fusion '" +
                               node.getName() + "': " + why);
    return false;
  };
  RowFusionParts parts = rowFusionParts(body);
  if (parts.root && !isRowOp(*parts.root))
    return refuse(*parts.root, "the prologue and epilogue hold only "
                               "elementwise ops, dropouts and splat sources");
  if (!parts.others.empty())
    return refuse(*parts.others.front(),
                  "a row_fusion holds one row op, and after it only reductions "
                  "like it (the same operand type, axes and keepdim) before its "
                  "epilogue");
  if (!parts.root)
    return fail("region 'body' of row_fusion must hold one row op (sum, "
                "mean, max, min or prod, softmax or log_softmax over the "
                "last axis, layernorm)");
  const Node &root = *parts.root;
  for (unsigned i = 1; i < root.numOperands(); ++i)
    if (!isBodyInput(body, root.operand(i)))
      return refuse(root, "the row op's operands after the first must be "
                          "body inputs");
  for (const Node *s : parts.sources)
    if (!splatConstant(s->result()))
      return refuse(*s, "the only sources a row_fusion holds are splat "
                        "constants");
  llvm::SmallPtrSet<const Value *, 16> early, siblingResults;
  for (const Node *p : parts.prologue)
    early.insert(p->result());
  for (const Node *s : parts.siblings) {
    const Value *x = s->operand(0);
    if (x == root.result() || siblingResults.count(x) ||
        (!early.count(x) && !isBodyInput(body, x)))
      return refuse(*s, "a sibling reduction reads a prologue value or a body input");
    siblingResults.insert(s->result());
  }
  for (const Node *e : parts.epilogue) {
    if (llvm::any_of(e->getOperands(), [&](Value *v) { return early.count(v); }))
      return refuse(*e, "an epilogue op cannot read a prologue value");
    if (llvm::any_of(e->getOperands(), [&](Value *v) { return siblingResults.count(v); }))
      return refuse(*e, "an epilogue op reads the row op's result, not a sibling's");
    if (e->result()->getType().dims != root.result()->getType().dims)
      return refuse(*e, "an epilogue op has the row op's result shape");
  }
  // A prologue node after the row op reads neither it nor the epilogue.
  bool afterRoot = false;
  for (const auto &n : body.nodes()) {
    afterRoot |= n.get() == &root;
    if (afterRoot && early.count(n->result()))
      return refuse(*n, "an op after the row op must read its result");
    if (early.count(n->result()) &&
        n->result()->getType().dims != root.operand(0)->getType().dims)
      return refuse(*n, "a prologue op has the shape of the row op's first "
                        "operand");
  }
  if (const Node *d = dropoutWithComputedRng(body))
    return refuse(*d, "a dropout's rng state must be a body input");
  return true;
}

/// A conv_fusion's body is the chain of ir/ConvolutionEpilogue.h.
bool TypeChecker::convolutionFusionBody() {
  std::string why;
  if (!convolutionEpilogue(node.region(0), why))
    return fail("region 'body' of conv_fusion: " + why);
  return true;
}

/// A fusion runs as one pointwise kernel (ir/PointwiseFusion.h): its body
/// holds only elementwise ops, sources, dropouts and index moves (what
/// fuse-elementwise and fuse-views make and codegen lowers); a dropout
/// numbers the elements of the fusion's iteration space, so it has the
/// shape of the first result, and a body with index moves holds none
/// (they would read it at other coordinates) and gives results of one
/// shape (the kernel's iteration space).
bool TypeChecker::pointwiseFusionBody() {
  const Graph &body = node.region(0);
  bool moves = movesElements(body);
  auto refuse = [&](const Node &member, const std::string &why) {
    diag.nodeError(member, "cannot be in the body of fusion '" + node.getName() +
                               "': " + why);
    return false;
  };
  for (const auto &member : body.nodes()) {
    const OpInfo &info = member->info();
    if (info.has(Elementwise) || info.has(Source) || isIndexMove(*member))
      continue;
    if (member->getOp() == OpKind::Dropout && moves)
      return refuse(*member, "a fusion body with movement ops holds no dropout");
    if (member->getOp() == OpKind::Dropout &&
        member->result()->getType().dims == body.outputs[0].value->getType().dims &&
        (member->numOperands() == 1 || isBodyInput(body, member->operand(1))))
      continue;
    return refuse(*member,
                  "fusion bodies hold only elementwise ops, sources, movement "
                  "ops of static shapes (transpose, reshape, broadcast_to, "
                  "slice, concat, gather, embedding) and dropouts of the "
                  "fusion's shape whose rng state is a body input");
  }
  for (const GraphOutput &out : body.outputs)
    if (moves && out.value->getType().dims != body.outputs[0].value->getType().dims)
      return fail("the results of fusion '" + node.getName() +
                  "', whose body holds movement ops, must have one shape");
  uint64_t evaluations = moves ? viewEvaluations(body) : 0;
  if (evaluations > kMaxViewEvaluations)
    return fail("the body of fusion '" + node.getName() +
                "' evaluates more than " + std::to_string(kMaxViewEvaluations) +
                " values per element (a value once for each set of "
                "coordinates it is read at: a concat reads each operand at "
                "its own)");
  return true;
}

bool TypeChecker::fusion(Types &out) {
  llvm::SmallVector<TensorType, 4> passed;
  for (Value *v : node.getOperands())
    passed.push_back(v->getType());
  if (!regionSignature(node.region(0), "body", passed))
    return false;
  if (node.region(0).outputs.empty())
    return fail("region 'body' gives no results");
  bool ok = false;
  switch (node.getOp()) {
  case OpKind::Fusion: ok = pointwiseFusionBody(); break;
  case OpKind::ProductFusion: ok = productFusionBody(); break;
  case OpKind::ConvolutionFusion: ok = convolutionFusionBody(); break;
  case OpKind::RowFusion: ok = rowFusionBody(); break;
#define CGC_FUSED_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("not a fusion");
  }
  if (!ok)
    return false;
  auto bodyTypes = outputTypes(node.region(0));
  out.append(bodyTypes.begin(), bodyTypes.end());
  return true;
}

