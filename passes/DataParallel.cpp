//===- DataParallel.cpp - Gradients averaged over the ranks, in buckets ----===//
//
// Algorithm: after autodiff, take every `<p>.grad` output of a float
// parameter p but those a source op makes (a gradient autodiff fills with
// zeros is zero on every rank), in the order the graph computes them
// (backward's order). Walking that order, cut buckets of at least
// ctx.dataParallel.bucketBytes bytes on the wire (the last one smaller). Each bucket
// becomes one `all_reduce` node (reduction "mean": torch DDP's average)
// placed right after the node that computes its last gradient, so that
// its collective can start while backward goes on; the `.grad` outputs
// read its results, and apply-optimizer (clipping, the non-finite check,
// the update) then sees the averaged gradients on every rank alike. With
// ctx.dataParallel.wireType bf16, f32 gradients are cast to bf16 before the
// collective and back after it. Where the last gradient larger than a
// bucket is a 2-D matmul's (the first layer's weight gradient, which
// backward ends with and nothing would overlap), that product is split by
// rows into bucket-sized chunks, each reduced as soon as it exists, and
// the reduced rows are joined by a concat (chunkLastLarge).
// Requires: autodiff's outputs; with `accumulate: k`, the last micro-step
// of accumulate-gradients (whose `.grad` outputs are the sums; the other
// micro-steps reduce nothing). Guarantees: every non-constant
// gradient output is an all_reduce result (or a concat of reduced chunks); the graph is the same for
// every rank (nothing here depends on the rank or the world size).
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"
#include "passes/ValueBuilder.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>

using namespace cgc;

namespace {

struct Gradient {
  size_t output;   ///< Index in graph.outputs.
  size_t position; ///< Index of the node computing it.
};

class DataParallelPass : public Pass {
public:
  llvm::StringRef name() const override { return "data-parallel"; }
  llvm::StringRef summary() const override {
    return "average every parameter gradient over the ranks, in buckets of "
           "all_reduce nodes placed where backward finishes them";
  }
  bool run(Graph &graph, PassContext &ctx) override;

private:
  std::vector<Gradient> gradients(const Graph &graph) const;
  bool reduceBucket(Graph &graph, llvm::ArrayRef<Gradient> bucket,
                    size_t index, PassContext &ctx);
  int chunkLastLarge(Graph &graph, const std::vector<Gradient> &order, PassContext &ctx);
  /// Bytes of \p v on the wire.
  static uint64_t wireBytes(const Value *v, const PassContext &ctx) {
    return uint64_t(std::max<int64_t>(v->getType().numElements(), 0)) *
           dtypeSize(ctx.dataParallel.wireType);
  }
};

} // namespace

/// The `.grad` outputs of float parameters that a node computes, in the
/// order of their nodes.
std::vector<Gradient> DataParallelPass::gradients(const Graph &graph) const {
  llvm::DenseMap<const Node *, size_t> position;
  for (size_t i = 0; i < graph.nodes().size(); ++i)
    position[graph.nodes()[i].get()] = i;
  llvm::StringMap<bool> parameters;
  for (const GraphInput &in : graph.inputs())
    if (in.kind == InputKind::Parameter && isFloat(in.value->getType().dtype))
      parameters[in.value->getName()] = true;
  std::vector<Gradient> out;
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const GraphOutput &o = graph.outputs[i];
    llvm::StringRef param = o.name;
    const Node *def = o.value->getDef();
    if (o.kind != OutputKind::Output || !param.consume_back(".grad") ||
        !parameters.count(param) || (def && def->info().has(Source)))
      continue;
    out.push_back({i, def ? position.lookup(def) : 0});
  }
  std::stable_sort(out.begin(), out.end(), [](const Gradient &a, const Gradient &b) {
    return a.position < b.position;
  });
  return out;
}

/// \p values averaged over the ranks by one all_reduce \p base (result i
/// named names[i]) at \p vb's insertion point: each sent in the wire dtype
/// and returned in own[i]; empty after a reported error.
static std::vector<Value *> averageOverRanks(ValueBuilder &vb, const std::string &base,
                                             llvm::ArrayRef<Value *> values,
                                             llvm::ArrayRef<std::string> names,
                                             DType wire, llvm::ArrayRef<DType> own) {
  std::vector<Value *> sent, out;
  for (Value *v : values)
    sent.push_back(vb.cast(v, wire, "wire"));
  if (vb.hasFailed())
    return out;
  GraphBuilder &b = vb.builder();
  Node *reduce = b.createWithRegions(OpKind::AllReduce, base, sent,
                                     {{"reduction", std::string("mean")}});
  if (!b.addResults(*reduce, names))
    return out;
  for (unsigned i = 0; i < reduce->numResults(); ++i)
    out.push_back(vb.cast(reduce->result(i), own[i], "unwire"));
  return vb.hasFailed() ? std::vector<Value *>() : out;
}

/// The last gradient in backward's order that is larger than a bucket, when
/// a 2-D matmul makes it (a linear layer's weight gradient: the first
/// layer's comes last, and nothing after it would overlap its all-reduce):
/// the product is split by rows into chunks of about a bucket, each
/// averaged as soon as it exists (an all_reduce of its own), and the
/// averaged rows joined by a concat, which the `.grad` output then reads.
/// Returns that output's index, -1 when none qualifies, -2 on an error.
int DataParallelPass::chunkLastLarge(Graph &graph, const std::vector<Gradient> &order,
                                     PassContext &ctx) {
  uint64_t bucket = ctx.dataParallel.bucketBytes;
  auto large = std::find_if(order.rbegin(), order.rend(), [&](const Gradient &g) {
    return wireBytes(graph.outputs[g.output].value, ctx) > bucket;
  });
  if (large == order.rend())
    return -1;
  GraphOutput &o = graph.outputs[large->output];
  Node *product = o.value->getDef();
  // Under autocast the f32 gradient is a cast of a 16-bit product.
  if (product && product->getOp() == OpKind::Cast)
    product = product->operand(0)->getDef();
  if (!product || product->getOp() != OpKind::MatMul || o.value->getType().rank() != 2 ||
      product->operand(0)->getType().rank() != 2 || !o.value->getType().isStatic())
    return -1;
  int64_t rows = o.value->getType().dims[0].extent();
  int64_t chunks = std::min<int64_t>(
      rows, int64_t((wireBytes(o.value, ctx) + bucket - 1) / bucket));
  int64_t per = (rows + chunks - 1) / chunks;
  unsigned axis = product->boolAttr("transpose_a", false) ? 1 : 0;
  GraphBuilder b(graph, ctx.diag);
  b.setInsertionPoint(*product);
  b.setOrigin(*product);
  ValueBuilder vb(b);
  std::vector<Value *> parts;
  for (int64_t r0 = 0, k = 0; r0 < rows; r0 += per, ++k) {
    std::string base = o.name + ".chunk" + std::to_string(k);
    vb.setBase(base);
    Value *part = vb.op(OpKind::MatMul,
                        {vb.slice(product->operand(0), axis, r0, std::min(rows, r0 + per)),
                         product->operand(1)},
                        product->attrs());
    std::vector<Value *> mean =
        vb.hasFailed() ? std::vector<Value *>()
                       : averageOverRanks(vb, base + ".all_reduce", {part}, {base + ".mean"},
                                          ctx.dataParallel.wireType, {o.value->getType().dtype});
    if (mean.empty())
      return -2;
    parts.push_back(mean[0]);
  }
  vb.setBase(o.name + ".mean");
  o.value = parts.size() == 1 ? parts[0]
                              : vb.op(OpKind::Concat, parts, {{"axis", int64_t(0)}});
  return vb.hasFailed() ? -2 : int(large->output);
}

bool DataParallelPass::reduceBucket(Graph &graph, llvm::ArrayRef<Gradient> bucket,
                                    size_t index, PassContext &ctx) {
  GraphBuilder b(graph, ctx.diag);
  size_t after = bucket.back().position + 1;
  if (after < graph.nodes().size())
    b.setInsertionPoint(*graph.nodes()[after]);
  else
    b.setInsertionPointToEnd(graph);
  ValueBuilder vb(b);
  std::vector<Value *> values;
  std::vector<std::string> names;
  std::vector<DType> own;
  for (const Gradient &g : bucket) {
    values.push_back(graph.outputs[g.output].value);
    names.push_back(graph.outputs[g.output].name + ".mean");
    own.push_back(values.back()->getType().dtype);
  }
  std::string base = "grad_bucket_" + std::to_string(index);
  vb.setBase(base);
  std::vector<Value *> mean =
      averageOverRanks(vb, base, values, names, ctx.dataParallel.wireType, own);
  for (size_t i = 0; i < mean.size(); ++i)
    graph.outputs[bucket[i].output].value = mean[i];
  return !mean.empty();
}

bool DataParallelPass::run(Graph &graph, PassContext &ctx) {
  if (graph.optimizer && graph.optimizer->accumulate > 1 &&
      ctx.microStep != PassContext::MicroStep::Last) {
    ctx.diag.error(graph.optimizer->loc,
                   "data-parallel: with accumulate: " +
                       std::to_string(graph.optimizer->accumulate) +
                       ", only the last micro-step's graph reduces "
                       "(accumulate-gradients; cgc --train --data-parallel "
                       "compiles it and the micro-step graph)");
    return false;
  }
  int chunked = chunkLastLarge(graph, gradients(graph), ctx);
  if (chunked == -2)
    return false;
  std::vector<Gradient> order;
  for (const Gradient &g : gradients(graph)) // Positions after the chunks.
    if (int(g.output) != chunked)
      order.push_back(g);
  // Cut buckets in backward's order, then place them last to first so
  // that each bucket's recorded positions stay valid while inserting.
  std::vector<std::pair<size_t, size_t>> buckets;
  uint64_t bytes = 0;
  size_t first = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    bytes += wireBytes(graph.outputs[order[i].output].value, ctx);
    if (bytes >= ctx.dataParallel.bucketBytes || i + 1 == order.size()) {
      buckets.push_back({first, i + 1});
      first = i + 1;
      bytes = 0;
    }
  }
  for (size_t b = buckets.size(); b-- > 0;) {
    auto [first, last] = buckets[b];
    if (!reduceBucket(graph, llvm::ArrayRef<Gradient>(order).slice(first, last - first),
                      b, ctx))
      return false;
  }
  return true;
}

std::unique_ptr<Pass> cgc::createDataParallelPass() {
  return std::make_unique<DataParallelPass>();
}
