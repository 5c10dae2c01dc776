//===- Problem.cpp - Products and reductions in the rules' terms -------------===//
#include "target/Problem.h"

#include "ir/TypeRules.h"

#include "llvm/Support/ErrorHandling.h"

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

llvm::Optional<ReducedRun> cgc::reducedRun(const Node &node) {
  OpKind op = node.getOp();
  if (op != OpKind::Sum && op != OpKind::Mean && op != OpKind::Max &&
      op != OpKind::Min && op != OpKind::Prod)
    return llvm::None;
  const TensorType &in = node.operand(0)->getType();
  if (!in.isStatic())
    return llvm::None;
  auto axes = reductionAxes(node, in.rank());
  if (axes.empty())
    return llvm::None;
  for (unsigned k = 1; k < axes.size(); ++k)
    if (axes[k] != axes[0] + k)
      return llvm::None;
  ReducedRun run;
  for (unsigned d = 0; d < in.rank(); ++d) {
    int64_t e = in.dims[d].extent();
    (d < axes.front() ? run.outer : d <= axes.back() ? run.length : run.inner) *= e;
  }
  if (run.outer * run.inner == 0)
    return llvm::None; // An empty result: nothing to schedule.
  return run;
}

RowSchedule cgc::rowScheduleIn(const Schedule &r) {
  assert(r.strategy == Strategy::Rows && "a row kernel's record");
  RowSchedule s;
  s.rows = r[ScheduleField::Rows];
  s.length = r[ScheduleField::Length];
  s.vector = unsigned(r[ScheduleField::Vector]);
  s.lanes = unsigned(r[ScheduleField::Lanes]);
  s.loads = r[ScheduleField::Loads];
  return s;
}

ReductionSplit cgc::reductionSplitIn(const Schedule &r) {
  assert(r.strategy == Strategy::SplitRows && "a split reduction's record");
  ReductionSplit s;
  s.rows = r[ScheduleField::Rows];
  s.length = r[ScheduleField::Length];
  s.vector = unsigned(r[ScheduleField::Vector]);
  s.chunks = r[ScheduleField::Chunks];
  s.partialBytes = unsigned(r[ScheduleField::Scratch] / (s.rows * s.chunks));
  return s;
}

ColumnSplit cgc::columnSplitIn(const Schedule &r) {
  assert(r.strategy == Strategy::Columns && "a column reduction's record");
  ColumnSplit c;
  c.outer = r[ScheduleField::Rows];
  c.length = r[ScheduleField::Length];
  c.inner = r[ScheduleField::Inner];
  c.vector = unsigned(r[ScheduleField::Vector]);
  c.chunks = r[ScheduleField::Chunks];
  c.partialBytes = c.chunks > 1 ? unsigned(r[ScheduleField::Scratch] /
                                           (c.chunks * c.outer * c.inner))
                                : 0;
  return c;
}

bool cgc::hasStaticTypes(const Node &node) {
  for (const Value *v : node.getOperands())
    if (!v->getType().isStatic())
      return false;
  for (unsigned r = 0; r < node.numResults(); ++r)
    if (!node.result(r)->getType().isStatic())
      return false;
  return true;
}

AttentionShape cgc::attentionShape(const Node &node) {
  const auto &q = node.operand(0)->getType().dims, &k = node.operand(1)->getType().dims;
  size_t rank = q.size();
  AttentionShape s;
  for (size_t a = 0; a + 3 < rank; ++a)
    s.outer *= q[a].extent();
  s.qHeads = q[rank - 3].extent();
  s.kvHeads = k[rank - 3].extent();
  s.rows = q[rank - 2].extent();
  s.keys = k[rank - 2].extent();
  s.width = q[rank - 1].extent();
  s.valueWidth = node.operand(2)->getType().dims[rank - 1].extent();
  if (node.numOperands() < 4)
    return s;
  const auto &mask = node.operand(3)->getType().dims;
  size_t missing = rank - mask.size();
  std::vector<int64_t> strides(mask.size(), 1);
  for (size_t a = mask.size(); a-- > 1;)
    strides[a - 1] = strides[a] * mask[a].extent();
  // Over (heads, rows, keys): the mask's own stride where it is not 1.
  for (size_t t = 0; t < 3; ++t) {
    size_t a = rank - 3 + t;
    if (a >= missing && mask[a - missing].extent() != 1)
      s.maskStrides[t + 1] = strides[a - missing];
  }
  // The leading dims, merged: the mask's when it has them all (the fused
  // kernel takes no mask broadcast over only some of them).
  int64_t maskOuter = 1;
  for (size_t a = 0; a + 3 < mask.size(); ++a)
    maskOuter *= mask[a].extent();
  if (s.outer > 1 && maskOuter == s.outer)
    s.maskStrides[0] = strides[rank - 4 - missing];
  return s;
}
