//===- CollectiveLowering.cpp - all_reduce to one NCCL group step ----------===//
//
// An all_reduce becomes one collective step: NCCL reduces each result's
// buffer in place, as one group. A result that plan-memory placed over its
// operand (the usual case: the gradient dies there) needs nothing else;
// any other is first filled from its operand by a copy; an empty result
// is left out of the group. Inside an `if` or
// `while` body the node is refused: every rank must run every collective,
// and NCCL's captured calls bring nodes that conditional bodies reject
// (docs/distributed.md).
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"
#include "ir/OpAttrs.h"

using namespace cgc;
namespace fmt = cgc::format;

void Lowerer::lowerCollective(const Node &node, StepGraph &out) {
  for (const Graph *g = node.getParent(); g && g->isRegion();
       g = g->getParentNode()->getParent())
    if (g->getParentNode()->info().has(ControlFlow)) {
      diag.nodeError(node, "all_reduce inside the body of '" +
                               g->getParentNode()->getName() +
                               "': every rank must run every collective");
      ok = false;
      return;
    }
  LibraryCollective lc;
  lc.node = &node;
  lc.desc.reduction = allReduceAverages(node) ? fmt::CollectiveDesc::Reduction::Mean
                                              : fmt::CollectiveDesc::Reduction::Sum;
  lc.desc.source = {node.getName(), mnemonic(node.getOp()).str(),
                    node.getSourceLoc()};
  Step step;
  step.kind = Step::Kind::Collective;
  step.label = "nccl";
  step.node = &node;
  step.collective = unsigned(program.collectives.size());
  for (unsigned k = 0; k < node.numResults(); ++k) {
    const Value *r = node.result(k);
    if (r->getType().numElements() == 0)
      continue; // Nothing to reduce (lowerNode skips an all-empty node).
    copyUnlessInPlace(node.operand(k), r, out);
    Storage s = storageOf(r);
    lc.desc.buffers.push_back(
        {dtypeName(r->getType().dtype).str(), r->getType().numElements(), {}});
    step.reads.push_back(rangeOf(s));
    step.writes.push_back(rangeOf(s));
    lc.buffers.push_back(std::move(s));
  }
  program.collectives.push_back(std::move(lc));
  out.steps.push_back(std::move(step));
}
