//===- ProductRule.cpp - How a matrix product runs ----------------------------===//
#include "passes/ProductRule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include <algorithm>

using namespace cgc;

static std::vector<int64_t> dimsOf(const TensorType &t, size_t from,
                                   size_t to) {
  std::vector<int64_t> out;
  for (size_t d = from; d < to; ++d)
    out.push_back(t.dims[d].extent());
  return out;
}

static int64_t productOfDims(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

int64_t ProductProblem::batchCount() const { return productOfDims(batch); }

ProductProblem cgc::productProblem(const Node &node) {
  const TensorType &a = node.operand(0)->getType();
  const TensorType &b = node.operand(1)->getType();
  const TensorType &out = node.result()->getType();
  ProductProblem p;
  p.dtype = out.dtype;
  switch (node.getOp()) {
  case OpKind::Linear:
    // x[..., k] times weight[n, k]: the leading dims fold into m.
    p.m = productOfDims(dimsOf(a, 0, a.rank() - 1));
    p.k = a.dims.back().extent();
    p.n = b.dims[0].extent();
    p.transB = true;
    return p;
  case OpKind::MatMul:
    break;
#define CGC_MATMUL_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("not a product");
  }
  p.transA = node.boolAttr("transpose_a", false);
  p.transB = node.boolAttr("transpose_b", false);
  size_t ra = a.rank(), rb = b.rank(), ro = out.rank();
  p.m = out.dims[ro - 2].extent();
  p.n = out.dims[ro - 1].extent();
  p.k = a.dims[ra - (p.transA ? 2 : 1)].extent();
  p.batch = dimsOf(out, 0, ro - 2);
  p.batchA = dimsOf(a, 0, ra - 2);
  p.batchB = dimsOf(b, 0, rb - 2);
  // A product whose batch is all ones (or whose B is shared by every
  // batch of a contiguous, untransposed A) is one 2-D product.
  if (productOfDims(p.batch) == 1) {
    p.batch.clear();
    p.batchA.clear();
    p.batchB.clear();
  } else if (!p.transA && productOfDims(p.batchB) == 1 &&
             p.batchA == p.batch) {
    p.m *= productOfDims(p.batch);
    p.batch.clear();
    p.batchA.clear();
    p.batchB.clear();
  }
  return p;
}

const Node &cgc::productOf(const Node &node) {
  if (node.getOp() != OpKind::ProductFusion)
    return node;
  for (const auto &member : node.region(0).nodes())
    if (member->info().has(MatMul))
      return *member;
  llvm_unreachable("a product_fusion body holds a product (its type rule)");
}

/// Whether the rows are few enough for a generated kernel (ProductRule.h).
static bool fewRowsWin(const ProductProblem &p) {
  if (p.dtype == DType::F32)
    return p.m <= kGeneratedProductMaxRows;
  uint64_t weight = uint64_t(p.n) * uint64_t(p.k) * dtypeSize(p.dtype);
  return p.m == 1 || (p.m <= kGeneratedHalfProductMaxRows &&
                      weight <= kGeneratedHalfProductSmallWeight);
}

/// Whether the tiled kernel can run \p p: one batch, f32, a contraction.
static bool tileable(const ProductProblem &p) {
  return p.batch.empty() && p.dtype == DType::F32 && p.k > 0 &&
         p.m <= int64_t(65535) * 32; // grid.y

}

/// The measured rule of ProductRule.h.
static bool tiledWins(const ProductProblem &p) {
  uint64_t outputs = uint64_t(p.m) * uint64_t(p.n);
  uint64_t macs = outputs * uint64_t(p.k);
  return p.k <= kTiledProductMaxK && outputs <= kTiledProductMaxOutputs &&
         macs <= kTiledProductMaxMacs &&
         (p.k <= kTiledProductShortK || macs <= kTiledProductLongKMaxMacs);
}

ProductStrategy cgc::productStrategy(const ProductProblem &p,
                                     ProductPolicy policy) {
  // An empty contraction reads no weight at all: only the epilogue runs.
  bool small = p.batch.empty() && p.m <= kGeneratedProductMaxRows;
  if (small && p.k == 0)
    return ProductStrategy::Generated; // cuBLASLt cannot run k = 0
  switch (policy) {
  case ProductPolicy::CostRule:
    if (small && p.transB && !p.transA && fewRowsWin(p))
      return ProductStrategy::Generated;
    if (tileable(p) && tiledWins(p))
      return ProductStrategy::Tiled;
    return ProductStrategy::Library;
  case ProductPolicy::LibraryOnly: return ProductStrategy::Library;
  case ProductPolicy::TiledWherePossible:
    return tileable(p) ? ProductStrategy::Tiled : ProductStrategy::Library;
  }
  llvm_unreachable("a ProductPolicy value");
}

bool cgc::fusesInputLayerNorm(const ProductProblem &p, ProductPolicy policy) {
  uint64_t rows = uint64_t(p.m) * uint64_t(p.k) * dtypeSize(p.dtype);
  return productStrategy(p, policy) == ProductStrategy::Generated &&
         rows <= kNormalizedInputMaxBytes && p.k > 0;
}

uint64_t cgc::productWorkspaceBytes(const ProductProblem &p) {
  uint64_t bytes = 4 * uint64_t(p.m) * uint64_t(p.n) *
                   uint64_t(std::max<int64_t>(p.batchCount(), 1));
  return std::clamp<uint64_t>(bytes, uint64_t(1) << 20, uint64_t(32) << 20);
}
