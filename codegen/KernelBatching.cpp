//===- KernelBatching.cpp - Independent small pointwise kernels as one ------===//
//
// Algorithm: in each step graph, in program order, gather the grid-stride
// kernels (pointwise and movement, Kernel::gridStride) that launch at most
// one wave each and that no step between them orders. A candidate joins
// the open batch when it conflicts with no member (reads what a member
// writes, or writes what a member reads or writes); a step that conflicts
// with a member closes the batch, since the batch moves to the place of
// its last member. A batch of two or more becomes one kernel there: its
// blocks are the members' blocks one after another, and a block runs the
// member whose range holds it, with the member's own block index and grid
// size (bx and gx). The batch is a description like any kernel's: its
// members keep their bodies and parameter ranges (BatchMember), and
// KernelText.cpp renders each distinct member once as a device function
// the batch calls; nothing is renamed in text. Each merged kernel saves a
// graph node (about a microsecond of a replay on an H100);
// apply-optimizer's updates of every parameter and the dropout stream's
// advance become one kernel this way.
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

using namespace cgc;

/// At most this many kernels, and parameters, in one batch.
static const size_t kMaxMembers = 16, kMaxParams = 256;

static bool batchable(const Step &s, const Program &program) {
  if (s.kind != Step::Kind::Kernel)
    return false;
  const Kernel &k = program.kernels[s.kernel];
  return k.gridStride && k.grid[0] <= program.multiprocessors;
}

/// One kernel running \p members (indices into \p program.kernels).
static Kernel mergedKernel(const std::vector<unsigned> &members,
                           Program &program) {
  Kernel merged;
  std::string name = "batched_" + program.kernels[members[0]].name;
  merged.name = name;
  for (unsigned n = 1; !program.kernelNames.insert(merged.name).second; ++n)
    merged.name = name + "_" + std::to_string(n);
  merged.node = program.kernels[members[0]].node;
  merged.block[0] = 256;
  uint32_t first = 0;
  for (unsigned m : members) {
    const Kernel &k = program.kernels[m];
    assert(k.block[0] == merged.block[0] && "grid-stride kernels of 256");
    merged.members.push_back({k.node, k.name, k.body,
                              uint32_t(merged.params.size()),
                              uint32_t(k.params.size()), first, k.grid[0]});
    merged.params.insert(merged.params.end(), k.params.begin(), k.params.end());
    first += k.grid[0];
  }
  merged.grid[0] = first;
  return merged;
}

/// Replaces the steps of \p batch by one kernel step at the last one's place.
static void mergeBatch(StepGraph &graph, const std::vector<unsigned> &batch,
                       Program &program, std::vector<bool> &dropped) {
  std::vector<unsigned> kernels;
  for (unsigned s : batch)
    kernels.push_back(graph.steps[s].kernel);
  program.kernels.push_back(mergedKernel(kernels, program));
  Step &last = graph.steps[batch.back()];
  for (unsigned s : batch) {
    if (s == batch.back())
      continue;
    last.reads.insert(last.reads.end(), graph.steps[s].reads.begin(),
                      graph.steps[s].reads.end());
    last.writes.insert(last.writes.end(), graph.steps[s].writes.begin(),
                       graph.steps[s].writes.end());
    dropped[s] = true;
  }
  last.kernel = program.kernels.size() - 1;
  last.label = program.kernels.back().name;
}

void cgc::batchPointwiseKernels(StepGraph &graph, Program &program) {
  if (!program.batchKernels)
    return;
  std::vector<bool> dropped(graph.steps.size(), false);
  std::vector<unsigned> batch;
  size_t params = 0;
  auto close = [&] {
    if (batch.size() > 1)
      mergeBatch(graph, batch, program, dropped);
    batch.clear();
    params = 0;
  };
  for (unsigned i = 0; i < graph.steps.size(); ++i) {
    const Step &s = graph.steps[i];
    bool ordered = false;
    for (unsigned m : batch)
      ordered |= stepsConflict(graph.steps[m], s); // members touch no handle
    if (ordered)
      close();
    if (!batchable(s, program))
      continue;
    size_t n = program.kernels[s.kernel].params.size();
    if (batch.size() == kMaxMembers || params + n > kMaxParams)
      close();
    batch.push_back(i);
    params += n;
  }
  close();
  std::vector<Step> kept;
  for (unsigned i = 0; i < graph.steps.size(); ++i)
    if (!dropped[i])
      kept.push_back(std::move(graph.steps[i]));
  graph.steps = std::move(kept);
}

void cgc::dropUnusedKernels(Program &program) {
  std::vector<bool> used(program.kernels.size(), false);
  for (const auto *list : {&program.graphs, &program.bodies})
    for (const StepGraph &g : *list)
      for (const Step &s : g.steps)
        if (s.kind == Step::Kind::Kernel)
          used[s.kernel] = true;
  // A kept kernel that shares the function of a dropped one renders it.
  llvm::StringMap<unsigned> definer;
  for (unsigned k = 0; k < program.kernels.size(); ++k)
    if (!program.kernels[k].shared && !program.kernels[k].inPrelude)
      definer[program.kernels[k].name] = k;
  for (unsigned k = 0; k < program.kernels.size(); ++k) {
    Kernel &kernel = program.kernels[k];
    auto it = definer.find(kernel.name);
    if (!used[k] || !kernel.shared || it == definer.end() || used[it->second])
      continue;
    kernel.shared = false;
    it->second = k;
  }
  std::vector<unsigned> index(program.kernels.size(), 0);
  std::vector<Kernel> kept;
  for (unsigned k = 0; k < program.kernels.size(); ++k)
    if (used[k]) {
      index[k] = kept.size();
      kept.push_back(std::move(program.kernels[k]));
    }
  program.kernels = std::move(kept);
  for (auto *list : {&program.graphs, &program.bodies})
    for (StepGraph &g : *list)
      for (Step &s : g.steps)
        if (s.kind == Step::Kind::Kernel)
          s.kernel = index[s.kernel];
}
