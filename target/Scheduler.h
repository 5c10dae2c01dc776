//===- Scheduler.h - The one place heavy nodes are scheduled ----*- C++ -*-===//
//
// The scheduling library's public face. The schedule pass asks scheduleOf()
// for the record of every heavy node and checks hand-written records with
// checkSchedule(); fuse-epilogue and fuse-rows ask the queries below
// ("can this be scheduled?") before they build a fusion. Nothing outside
// target/ includes the rules (target/ProductRule.h, ReductionRule.h): after
// the schedule pass, plan-memory, lowering and the emitters read the record
// (ir/Schedule.h) and decide nothing again. scripts/test.sh checks it.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TARGET_SCHEDULER_H
#define CGC_TARGET_SCHEDULER_H

#include "ir/Graph.h"
#include "ir/Schedule.h"
#include "target/Problem.h"
#include "target/Target.h"

#include "llvm/ADT/Optional.h"
#include <string>

namespace cgc {

/// Whether \p node is a matrix product: matmul, linear or product_fusion.
bool isProductNode(const Node &node);
/// Whether \p node is a convolution cuDNN may run: conv, conv_transpose,
/// conv_weight_grad or conv_fusion.
bool isConvolutionNode(const Node &node);
/// Whether \p node runs on row or column kernels: a sum, mean, max, min
/// or prod over one run of dims, softmax or log_softmax over the innermost
/// axis, layernorm, cross_entropy, row_fusion.
bool runsOnRows(const Node &node);
/// Whether \p node is heavy: a static product with a non-empty result, a
/// static node that runs on rows, a static attention or conv. Heavy nodes carry
/// a record from the schedule pass on; lowering refuses one without.
bool needsSchedule(const Node &node);
/// expand-attention: whether \p attention stays whole, to run as one
/// fused kernel (target/AttentionRule.h: where the kernel can run it and
/// measured faster, or where the node carries a record, hand-written in
/// the JSON), under \p target's policy (Expand: none stays).
bool attentionRunsFused(const Node &attention, const Target &target);
/// expand-convolution: whether `conv` node \p conv stays whole, to run on
/// cuDNN (target/ConvolutionRule.h: where it can, or where the node
/// carries a record), under \p target's policy (Expand: none stays).
bool convolutionRunsOnLibrary(const Node &conv, const Target &target);
/// fuse-convolution-epilogue: whether cuDNN's fused engines take an
/// epilogue after `conv` node \p conv (target/ConvolutionRule.h).
bool convolutionTakesEpilogue(const Node &conv, const Target &target);

/// The record the rules give heavy node \p node on \p target; none, with
/// \p error set, when no strategy can run it.
llvm::Optional<Schedule> scheduleOf(const Node &node, const Target &target,
                                    std::string &error);
/// Why \p record cannot run \p node on \p target; empty when it can.
std::string checkSchedule(const Node &node, const Schedule &record,
                          const Target &target);

/// fuse-epilogue: the strategy the rules give matmul or linear \p product
/// (static) on \p target, and whether that strategy can also compute the
/// product's input rows (a layernorm or a prologue folded before it).
Strategy productStrategyOf(const Node &product, const Target &target);
bool productComputesInput(const Node &product, const Target &target);
/// Whether it can compute them by a prologue of \p ops ops
/// (computesInputPrologue).
bool productComputesPrologue(const Node &product, size_t ops, const Target &target);
/// codegen: the dynamic shared memory of the tensor-core product kernel of
/// \p problem under an mma_product record of \p columns per block.
uint64_t mmaProductSharedBytesOf(const ProductProblem &problem, int64_t columns);
/// codegen: the launch of decode_attention \p record on attention \p node.
DecodeAttentionLaunch decodeAttentionLaunchOf(const Node &attention, const Schedule &record);
/// fuse-rows: whether \p node runs as one row kernel that reads each input
/// element once (a reduction over rows that does not split, softmax,
/// log_softmax or layernorm whose rows fit registers), and the elements per
/// load of that kernel, which its prologue and epilogue must share.
bool readsRowsOnce(const Node &node);
/// Whether row node \p node is one row (a whole-tensor reduction): its
/// kernel is one block.
bool runsAsOneRow(const Node &node);
unsigned rowVectorOf(const Node &node);

} // namespace cgc

#endif
