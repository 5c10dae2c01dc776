//===- ProductLowering.cpp - Matrix products to kernels or cuBLASLt calls ---===//
//
// productParts() reads a product node and its epilogue. A product whose
// schedule record is library_product becomes cuBLASLt calls: the
// row-major product out = A B is the column-major product out^T = B^T A^T,
// so cuBLASLt's A is the IR's B and its m is the IR's n. Batch dims run as
// one strided-batch call when every operand's batch stride pattern folds
// into a single stride (a broadcast operand gets stride 0); the leading
// dims that do not fold become separate calls. A bias becomes the BIAS
// epilogue (n elements, one per output column), relu and gelu_tanh the
// RELU and GELU epilogues, a residual the beta = 1 input C.
//
//===----------------------------------------------------------------------===//
#include "ir/RowFusion.h"
#include "codegen/CudaText.h"
#include "codegen/Lowering.h"
#include "codegen/Product.h"
#include "ir/ProductEpilogue.h"

#include "llvm/Support/ErrorHandling.h"

using namespace cgc;
namespace fmt = cgc::format;

ProductParts cgc::productParts(const Node &node, const MemoryPlan &plan) {
  auto outer = [&](const Value *v) { return boundOperand(node, v); };
  ProductParts p;
  p.packedConcats = &plan.packedConcats;
  p.product = &productOf(node);
  p.problem = productProblem(*p.product);
  p.a = outer(p.product->operand(0));
  p.b = outer(p.product->operand(1));
  if (p.product->numOperands() == 3)
    p.bias = outer(p.product->operand(2));
  p.result = node.result();
  if (node.getOp() != OpKind::ProductFusion)
    return p;
  ProductEpilogue epilogue(p.bias != nullptr);
  const Value *previous = nullptr;
  bool before = true; // Members before the product compute its input.
  for (const auto &member : node.region(0).nodes()) {
    if (member.get() == p.product) {
      before = false;
    } else if (before && isRowNorm(*member)) {
      p.inputNorm = member.get();
      p.a = outer(member->operand(0));
      if (member->numOperands() > 1)
        p.normWeight = outer(member->operand(1));
      if (member->numOperands() > 2)
        p.normBias = outer(member->operand(2));
    } else if (before) {
      p.prologue.ops.push_back(member.get());
      p.a = nullptr;
    } else {
      // The type rule's reading of the chain (ProductEpilogue.h); an add's
      // other operand is the bias or the residual.
      auto other = [&] {
        return outer(member->operand(member->operand(0) == previous ? 1 : 0));
      };
      switch (epilogue.admit(*member, previous)) {
      case ProductEpilogue::Role::Bias: p.bias = other(); break;
      case ProductEpilogue::Role::Residual: p.residual = other(); break;
      case ProductEpilogue::Role::Activation: p.activation = member.get(); break;
      case ProductEpilogue::Role::Refused:
        llvm_unreachable("the product_fusion type rule admits the chain");
      }
    }
    previous = member->result();
  }
  const Graph &body = node.region(0);
  for (unsigned i = 0; i < node.numOperands(); ++i) {
    const Value *in = body.inputs()[i].value;
    bool read = llvm::any_of(p.prologue.ops, [&](const Node *n) {
      return llvm::is_contained(n->getOperands(), in);
    });
    if (read)
      p.prologue.inputs.push_back({in, node.operand(i)});
  }
  return p;
}

namespace {

/// Per batch dim of the result: each operand's stride in elements (0
/// where it broadcasts).
struct BatchStrides {
  std::vector<int64_t> sizes, a, b, out;
};

std::vector<int64_t> operandStrides(const std::vector<int64_t> &own,
                                    const std::vector<int64_t> &batch,
                                    int64_t matrix) {
  std::vector<int64_t> strides(batch.size(), 0);
  int64_t stride = matrix;
  size_t shift = batch.size() - own.size();
  for (size_t d = own.size(); d-- > 0;) {
    strides[d + shift] = own[d] == 1 ? 0 : stride;
    stride *= own[d];
  }
  return strides;
}

/// The strides of the batch dims with more than one element (a dim of one
/// element moves nothing and must not keep the others from folding).
BatchStrides batchStrides(const ProductProblem &p) {
  std::vector<int64_t> a = operandStrides(p.batchA, p.batch, p.m * p.k);
  std::vector<int64_t> b = operandStrides(p.batchB, p.batch, p.k * p.n);
  std::vector<int64_t> out = operandStrides(p.batch, p.batch, p.m * p.n);
  BatchStrides s;
  for (size_t d = 0; d < p.batch.size(); ++d)
    if (p.batch[d] != 1) {
      s.sizes.push_back(p.batch[d]);
      s.a.push_back(a[d]);
      s.b.push_back(b[d]);
      s.out.push_back(out[d]);
    }
  return s;
}

/// Whether batch dims d and d + 1 fold into one stride for every operand.
bool folds(const BatchStrides &s, size_t d) {
  auto ok = [&](const std::vector<int64_t> &st) {
    return s.sizes[d] == 1 || st[d] == st[d + 1] * s.sizes[d + 1];
  };
  return ok(s.a) && ok(s.b) && ok(s.out);
}

/// The stride of the folded dims [from, end): that of the innermost dim
/// with more than one element.
int64_t foldedStride(const BatchStrides &s, const std::vector<int64_t> &st,
                     size_t from) {
  for (size_t d = s.sizes.size(); d-- > from;)
    if (s.sizes[d] > 1)
      return st[d];
  return 0;
}

fmt::ProductDesc::Epilogue epilogueOf(const ProductParts &parts) {
  using E = fmt::ProductDesc::Epilogue;
  bool bias = parts.bias != nullptr;
  if (!parts.activation)
    return bias ? E::Bias : E::None;
  switch (*ProductEpilogue::activationOf(parts.activation->getOp())) {
  case ProductEpilogue::Activation::Relu: return bias ? E::ReluBias : E::Relu;
  // cuBLASLt's GELU epilogue is the tanh form.
  case ProductEpilogue::Activation::GeluTanh: return bias ? E::GeluBias : E::Gelu;
  case ProductEpilogue::Activation::Gelu:
    llvm_unreachable("the scheduler gives cuBLASLt no erf gelu (checkSchedule)");
  }
  llvm_unreachable("an Activation value");
}

Storage shifted(Storage s, int64_t elements, size_t elem, uint64_t bytes) {
  s.offset += uint64_t(elements) * elem;
  s.bytes = bytes;
  return s;
}

} // namespace

void Lowerer::lowerLibraryProduct(const Node &node, const ProductParts &parts,
                                  StepGraph &out) {
  const ProductProblem &p = parts.problem;
  fmt::ProductDesc d;
  d.dtype = dtypeName(p.dtype).str();
  d.allowTf32 = program.allowTf32 && p.dtype == DType::F32;
  d.transA = p.transB;
  d.transB = p.transA;
  d.m = p.n;
  d.n = p.m;
  d.k = p.k;
  d.lda = p.transB ? p.k : p.n;
  d.ldb = p.transA ? p.m : p.k;
  d.ldc = p.n;
  d.epilogue = epilogueOf(parts);
  d.beta = parts.residual ? 1.0f : 0.0f;
  d.workspaceBytes = uint64_t((*node.schedule())[ScheduleField::Scratch]);
  d.source = {node.getName(), mnemonic(node.getOp()).str(),
              node.getSourceLoc()};
  BatchStrides s = batchStrides(p);
  size_t split = s.sizes.empty() ? 0 : s.sizes.size() - 1;
  while (split > 0 && folds(s, split - 1))
    --split;
  d.batch = 1;
  for (size_t k = split; k < s.sizes.size(); ++k)
    d.batch *= s.sizes[k];
  d.strideA = foldedStride(s, s.b, split); // cuBLASLt's A is the IR's B.
  d.strideB = foldedStride(s, s.a, split);
  d.strideC = foldedStride(s, s.out, split);
  int64_t calls = 1;
  for (size_t k = 0; k < split; ++k)
    calls *= s.sizes[k];
  for (int64_t call = 0; call < calls; ++call) {
    int64_t offA = 0, offB = 0, offOut = 0, rest = call;
    for (size_t k = split; k-- > 0;) {
      int64_t idx = rest % s.sizes[k];
      rest /= s.sizes[k];
      offA += idx * s.a[k];
      offB += idx * s.b[k];
      offOut += idx * s.out[k];
    }
    addLibraryStep(node, parts, d, {offA, offB, offOut}, out);
  }
}

void Lowerer::addLibraryStep(const Node &node, const ProductParts &parts,
                             const fmt::ProductDesc &desc,
                             std::array<int64_t, 3> offsets, StepGraph &out) {
  size_t elem = dtypeSize(parts.problem.dtype);
  LibraryProduct lp;
  lp.node = &node;
  lp.desc = desc;
  // One call's extent of each operand, in bytes, for its byte ranges.
  auto extent = [&](int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
    return uint64_t((desc.batch - 1) * stride + (cols - 1) * ld + rows) * elem;
  };
  uint64_t bytesA = extent(desc.transA ? desc.k : desc.m,
                           desc.transA ? desc.m : desc.k, desc.lda, desc.strideA);
  uint64_t bytesB = extent(desc.transB ? desc.n : desc.k,
                           desc.transB ? desc.k : desc.n, desc.ldb, desc.strideB);
  uint64_t bytesD = extent(desc.m, desc.n, desc.ldc, desc.strideC);
  lp.a = shifted(storageOf(parts.b), offsets[1], elem, bytesA);
  lp.b = shifted(storageOf(parts.a), offsets[0], elem, bytesB);
  lp.d = shifted(storageOf(parts.result), offsets[2], elem, bytesD);
  lp.workspace = bufferStorage(plan.scratch.lookup(&node));
  Step step;
  step.kind = Step::Kind::Product;
  step.label = "cublasLt";
  step.node = &node;
  step.product = program.products.size();
  step.reads = {rangeOf(lp.a), rangeOf(lp.b)};
  if (parts.residual) {
    lp.c = shifted(storageOf(parts.residual), offsets[2], elem, bytesD);
    step.reads.push_back(rangeOf(lp.c));
  }
  if (parts.bias) {
    lp.bias = storageOf(parts.bias);
    step.reads.push_back(rangeOf(lp.bias));
  }
  step.writes = {rangeOf(lp.d), rangeOf(lp.workspace)};
  program.products.push_back(std::move(lp));
  out.steps.push_back(std::move(step));
}
