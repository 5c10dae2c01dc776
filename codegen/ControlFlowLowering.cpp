//===- ControlFlowLowering.cpp - `if` and `while` as conditional steps -------===//
//
// An `if` becomes a setter kernel, which reads the device bool and calls
// cudaGraphSetConditional, and an IF conditional step whose bodies are the
// arms (then, else); an arm with no steps is left out (an `if` whose then
// arm is empty sets the negated predicate and runs only the else arm). A
// `while` becomes: the copies of carried values into their slots, a memset
// of its trip counter, the `cond` region's steps, a setter kernel, and a
// WHILE conditional step whose body is the `body` region's steps, the
// copies of the next values into their slots, the `cond` region's steps
// again and the setter again. The while setter sets the handle to
// `predicate && trips < bound` and counts the trip, so `max_iterations`
// (else kDefaultLoopBound) holds on the device. Memory comes from the plan
// (passes/MemoryPlan.cpp); the runtime builds each body graph explicitly.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"

#include "llvm/Support/ErrorHandling.h"

using namespace cgc;

static KernelParam pointerParam(const Storage &s, bool written) {
  KernelParam p;
  p.kind = KernelParam::Kind::Pointer;
  p.storage = s;
  p.written = written;
  return p;
}

static KernelParam numberParam(KernelParam::Kind kind, uint32_t number) {
  KernelParam p;
  p.kind = kind;
  p.number = number;
  return p;
}

Kernel Lowerer::ifSetter(const Node &n, unsigned handle,
                         const Storage &predicate, bool invert) {
  Kernel k;
  k.name = "cgc_set_if";
  k.inPrelude = true; // Defined in codegen/device/conditionals.cuh.
  k.node = &n;
  k.params = {pointerParam(predicate, false),
              numberParam(KernelParam::Kind::U32, invert),
              numberParam(KernelParam::Kind::Handle, handle)};
  return k;
}

Kernel Lowerer::whileSetter(const Node &n, unsigned handle,
                            const Storage &predicate) {
  Kernel k;
  k.name = "cgc_set_while";
  k.inPrelude = true;
  k.node = &n;
  int64_t bound = n.intAttr("max_iterations", kDefaultLoopBound);
  k.params = {pointerParam(predicate, false),
              pointerParam(bufferStorage(plan.tripCounter.lookup(&n)), true),
              numberParam(KernelParam::Kind::U32, uint32_t(bound)),
              numberParam(KernelParam::Kind::Handle, handle)};
  return k;
}

static void appendRanges(std::vector<ByteRange> &to,
                         const std::vector<ByteRange> &from) {
  to.insert(to.end(), from.begin(), from.end());
}

Step Lowerer::conditionalStep(const Node &n, unsigned handle,
                              std::vector<unsigned> bodies,
                              const Storage &predicate) {
  Step step;
  step.kind = Step::Kind::Conditional;
  step.node = &n;
  switch (n.getOp()) {
  case OpKind::If:
    step.condition = Step::Condition::If;
    break;
  case OpKind::While:
    step.condition = Step::Condition::While;
    step.trips = bufferStorage(plan.tripCounter.lookup(&n));
    break;
#define CGC_CONTROL_FLOW_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
    llvm_unreachable("not an if or while");
  }
  step.label = mnemonic(n.getOp()).str();
  step.handle = handle;
  step.predicate = predicate;
  step.maxIterations = n.intAttr("max_iterations", kDefaultLoopBound);
  step.reads.push_back({predicate.region, predicate.offset,
                        predicate.offset + predicate.bytes});
  step.handlesRead.push_back(handle);
  for (unsigned b : bodies)
    for (const Step &inner : program.bodies[b].steps) {
      appendRanges(step.reads, inner.reads);
      appendRanges(step.writes, inner.writes);
    }
  step.bodies = std::move(bodies);
  return step;
}

unsigned Lowerer::addBody(StepGraph body) {
  batchPointwiseKernels(body, program);
  planEdges(body, program); // Programmatic edges as in top-level graphs.
  program.bodies.push_back(std::move(body));
  return program.bodies.size() - 1;
}

void Lowerer::lowerIf(const Node &n, StepGraph &out) {
  StepGraph arms[2];
  for (unsigned r = 0; r < 2; ++r)
    lowerNodes(n.region(r), arms[r]);
  if (arms[0].steps.empty() && arms[1].steps.empty())
    return;
  program.usesConditionals = true;
  Storage predicate = storageOf(n.operand(0));
  bool invert = arms[0].steps.empty();
  std::vector<unsigned> bodies;
  for (unsigned r = invert ? 1 : 0; r < 2; ++r)
    if (!arms[r].steps.empty())
      bodies.push_back(addBody(std::move(arms[r])));
  unsigned handle = handles++;
  addKernelStep(ifSetter(n, handle, predicate, invert), out);
  out.steps.push_back(conditionalStep(n, handle, std::move(bodies), predicate));
  out.steps.back().invert = invert;
}

void Lowerer::lowerWhile(const Node &n, StepGraph &out) {
  if (n.intAttr("max_iterations", 1) > kMaxLoopBound) {
    diag.nodeError(n, "max_iterations above " + std::to_string(kMaxLoopBound) +
                          " is not supported by codegen (the device counts "
                          "trips in 31 bits)");
    ok = false;
    return;
  }
  program.usesConditionals = true;
  const Graph &cond = n.region(0);
  Storage predicate = storageOf(cond.outputs[0].value);
  unsigned handle = handles++;
  addCopies(plan.copiesBefore(n), out);
  addMemset(bufferStorage(plan.tripCounter.lookup(&n)), &n, out);
  lowerNodes(cond, out);
  addKernelStep(whileSetter(n, handle, predicate), out);
  StepGraph body;
  lowerNodes(n.region(1), body);
  lowerNodes(cond, body);
  addKernelStep(whileSetter(n, handle, predicate), body);
  unsigned index = addBody(std::move(body));
  out.steps.push_back(conditionalStep(n, handle, {index}, predicate));
}
