//===- Lowering.cpp - Graph nodes to steps ------------------------------------===//
//
// Walks the planned nodes in order, regions included. Constant data lives in
// the persistent region and reshapes that alias their operand need no step;
// zero fills become memsets; `if` and `while` become conditional steps
// (ControlFlowLowering.cpp); products that call cuBLASLt become library
// steps (ProductLowering.cpp), and so do convolutions that call cuDNN
// (ConvolutionLowering.cpp), and all-reduces NCCL steps
// (CollectiveLowering.cpp); every other supported node becomes one kernel;
// the plan's copies become memcpys. Unsupported ops and symbolic dims get
// located errors; lowering goes on to report them all.
//
//===----------------------------------------------------------------------===//
#include "codegen/CudaText.h"
#include "codegen/Emitters.h"
#include "codegen/Lowering.h"
#include "codegen/Product.h"
#include "ir/Initializers.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include <cmath>

using namespace cgc;

static bool isZeroFill(const Node &n) {
  if (n.getOp() == OpKind::Constant && isConstantData(n))
    return false;
  auto splat = splatConstant(n.result());
  if (!splat)
    return false;
  // All-zero bits: +0.0 for the float dtypes, 0 for the others.
  return realOf(n.result()->getType().dtype, *splat) == 0 &&
         !std::signbit(realOf(n.result()->getType().dtype, *splat));
}

static bool isStaticNode(const Node &n, DiagnosticEngine &diag) {
  const DimTable &dims = n.getParent()->dims();
  auto check = [&](const Value *v) {
    if (v->getType().isStatic())
      return true;
    diag.nodeError(n, "value '" + v->getName() + "' has symbolic type " +
                          typeToString(v->getType(), dims) +
                          "; symbolic dims are not supported by codegen yet");
    return false;
  };
  for (const Value *v : n.getOperands())
    if (!check(v))
      return false;
  for (unsigned r = 0; r < n.numResults(); ++r)
    if (!check(n.result(r)))
      return false;
  return true;
}

/// Whether every result of \p n has no element (a static shape with a 0
/// extent): its kernel would run no thread's work.
static bool writesNoElement(const Node &n) {
  if (n.numResults() == 0)
    return false;
  for (unsigned r = 0; r < n.numResults(); ++r)
    if (n.result(r)->getType().numElements() != 0)
      return false;
  return true;
}

/// A splat source every user reads as a literal needs no step at all.
static bool isInlinedEverywhere(const Node &n) {
  if (n.numResults() != 1 || !splatConstant(n.result()) ||
      !n.result()->hasUses() || n.getParent()->isOutput(n.result()))
    return false;
  return llvm::all_of(n.result()->uses(), [&](const Use &u) {
    return inlinedSplat(*u.user, n.result()).hasValue();
  });
}

/// Launches the function of an earlier kernel with the same key, so nodes
/// that differ only in their buffers share one compiled kernel.
static void shareIdenticalFunction(Kernel &kernel,
                                   llvm::StringMap<std::string> &functions) {
  auto [it, inserted] = functions.try_emplace(kernelKey(kernel), kernel.name);
  if (inserted)
    return;
  kernel.name = it->second;
  kernel.shared = true;
}

/// \p text as a C identifier: other characters become '_', and a leading
/// digit (or nothing) gets a 'k' before it.
static std::string sanitize(llvm::StringRef text) {
  std::string out;
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text.front())))
    out = "k";
  for (char ch : text)
    out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return out;
}

/// Whether a kernel may not be named \p name: a C++ keyword, or a name
/// CUDA's headers declare with C linkage (the math library, printf and
/// friends, the built-in variables). A node named `cos` (DETR's sine
/// position embedding) would otherwise name its kernel `cos`.
static bool reservedName(llvm::StringRef name) {
  static const llvm::StringSet<> reserved = {
      // C++ keywords.
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case",
      "catch", "char", "class", "const", "constexpr", "const_cast",
      "continue", "decltype", "default", "delete", "do", "double",
      "dynamic_cast", "else", "enum", "explicit", "export", "extern",
      "false", "float", "for", "friend", "goto", "if", "inline", "int",
      "long", "mutable", "namespace", "new", "noexcept", "not", "nullptr",
      "operator", "or", "private", "protected", "public", "register",
      "reinterpret_cast", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template",
      "this", "throw", "true", "try", "typedef", "typeid", "typename",
      "union", "unsigned", "using", "virtual", "void", "volatile", "while",
      "xor",
      // CUDA's built-in variables and C library functions.
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "printf",
      "malloc", "free", "memcpy", "memset", "assert", "abort",
      // The math library (each also with an 'f' suffix, below).
      "abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh",
      "cbrt", "ceil", "copysign", "cos", "cosh", "cospi", "cyl_bessel_i0",
      "cyl_bessel_i1", "erf", "erfc", "erfcinv", "erfcx", "erfinv", "exp",
      "exp10", "exp2", "expm1", "fabs", "fdim", "floor", "fma", "fmax",
      "fmin", "fmod", "frexp", "hypot", "ilogb", "isfinite", "isinf",
      "isnan", "j0", "j1", "jn", "labs", "ldexp", "lgamma", "llabs",
      "llmax", "llmin", "llrint", "llround", "log", "log10", "log1p",
      "log2", "logb", "lrint", "lround", "max", "min", "modf", "nan",
      "nearbyint", "nextafter", "norm", "norm3d", "norm4d", "normcdf",
      "normcdfinv", "pow", "rcbrt", "remainder", "remquo", "rhypot", "rint",
      "rnorm", "rnorm3d", "rnorm4d", "round", "rsqrt", "scalbln", "scalbn",
      "signbit", "sin", "sincos", "sincospi", "sinh", "sinpi", "sqrt", "tan",
      "tanh", "tgamma", "trunc", "ullmax", "ullmin", "umax", "umin", "y0",
      "y1", "yn"};
  return reserved.contains(name) ||
         (name.endswith("f") && reserved.contains(name.drop_back()));
}

/// Chooses the emitter by op family; false when codegen does not handle
/// the family yet (a located error follows).
static bool emitKernel(const Node &node, const MemoryPlan &plan, Kernel &kernel) {
  switch (node.info().family) {
  case Elementwise: case Source:
    emitPointwise(node, kernel);
    return true;
  case Fused:
    switch (node.getOp()) {
    case OpKind::Fusion:
      emitPointwise(node, kernel);
      return true;
    case OpKind::ProductFusion:
      emitProductKernel(productParts(node, plan), *node.schedule(), kernel);
      return true;
    case OpKind::RowFusion: // Always a row schedule (lowerRowNode).
    case OpKind::ConvolutionFusion: // Always cuDNN (lowerLibraryConvolution).
#define CGC_FUSED_OP(...)
#define CGC_OP(Enum, ...) case OpKind::Enum:
#include "ir/Ops.def"
      break;
    }
    llvm_unreachable("not a fusion or product_fusion");
  case MatMul:
    emitProductKernel(productParts(node, plan), *node.schedule(), kernel);
    return true;
  case Random: emitPointwise(node, kernel); return true;
  case Reduction: case Scan: emitReduction(node, kernel); return true;
  case Normalization: emitNormalization(node, kernel); return true;
  case Loss: return false; // expand-mse-loss writes mse_loss out; cross_entropy runs on rows.
  case Movement: emitMovement(node, kernel); return true;
  case SyncPoint: return false;
  case Collective:
    llvm_unreachable("all_reduce lowers to a collective step, not a kernel");
  case Convolution: return false; // expand-convolution writes it out first.
  case Attention: // A fused_ or mma_attention record (decode_attention lowers apart).
    emitAttention(node, *node.schedule(), plan.attention.views.lookup(&node), kernel);
    return true;
  case ControlFlow:
    llvm_unreachable("if and while lower to conditional steps, not kernels");
  }
  llvm_unreachable("an OpFamily value");
}

static void noteDTypes(const Node &node, Program &program) {
  auto note = [&](const Value *v) {
    program.usesHalf |= v->getType().dtype == DType::F16;
    program.usesBFloat16 |= v->getType().dtype == DType::BF16;
  };
  for (const Value *v : node.getOperands())
    note(v);
  for (unsigned r = 0; r < node.numResults(); ++r)
    note(node.result(r));
  for (unsigned k = 0; k < node.numRegions(); ++k)
    for (const auto &n : node.region(k).nodes())
      noteDTypes(*n, program);
}

std::string Lowerer::uniqueKernelName(const std::string &base) {
  std::string name = base;
  for (unsigned k = 1;
       reservedName(name) || !program.kernelNames.insert(name).second; ++k)
    name = base + "_" + std::to_string(k);
  return name;
}

void Lowerer::addKernelStep(Kernel kernel, StepGraph &out) {
  Step step;
  step.kind = Step::Kind::Kernel;
  step.node = kernel.node;
  step.label = kernel.name;
  for (KernelParam &p : kernel.params) {
    if (p.kind == KernelParam::Kind::Handle)
      step.handlesSet.push_back(p.number);
    if (p.kind != KernelParam::Kind::Pointer)
      continue;
    if (p.value)
      p.storage = storageOf(p.value);
    (p.written ? step.writes : step.reads).push_back(rangeOf(p.storage));
  }
  step.kernel = program.kernels.size();
  program.kernels.push_back(std::move(kernel));
  out.steps.push_back(std::move(step));
}

void Lowerer::addCopies(const std::vector<Copy> &copies, StepGraph &out) {
  for (const Copy &c : copies)
    addMemcpy(bufferStorage(c.from), bufferStorage(c.to), out);
}

/// A copy of dst.bytes bytes from \p src to \p dst (none when empty).
void Lowerer::addMemcpy(Storage src, const Storage &dst, StepGraph &out) {
  if (!dst.bytes)
    return;
  Step step;
  step.kind = Step::Kind::Memcpy;
  step.label = "memcpy";
  step.src = src;
  step.dst = dst;
  step.src.bytes = dst.bytes;
  step.reads.push_back(rangeOf(step.src));
  step.writes.push_back(rangeOf(step.dst));
  out.steps.push_back(std::move(step));
}

/// Copies \p from into \p to's storage unless plan-memory gave both the
/// same bytes (a node that then writes only part of \p to).
void Lowerer::copyUnlessInPlace(const Value *from, const Value *to,
                                StepGraph &out) {
  Storage src = storageOf(from), dst = storageOf(to);
  if (src.region != dst.region || src.offset != dst.offset)
    addMemcpy(src, dst, out);
}

void Lowerer::addMemset(const Storage &dst, const Node *node, StepGraph &out) {
  if (!dst.bytes)
    return;
  Step step;
  step.kind = Step::Kind::Memset;
  step.label = "memset";
  step.node = node;
  step.dst = dst;
  step.writes.push_back(rangeOf(dst));
  out.steps.push_back(std::move(step));
}

void Lowerer::lowerNode(const Node &node, StepGraph &out) {
  if (!isStaticNode(node, diag)) {
    ok = false;
    return;
  }
  if (node.getOp() == OpKind::If) {
    lowerIf(node, out);
    return;
  }
  if (node.getOp() == OpKind::While) {
    lowerWhile(node, out);
    return;
  }
  if (isConstantData(node) || plan.aliasOf.count(node.result()) ||
      plan.packedConcats.count(&node) || plan.attention.folded.count(&node) ||
      isInlinedEverywhere(node))
    return;
  if (writesNoElement(node))
    return; // Every result is empty: nothing to compute.
  if (isZeroFill(node)) {
    addMemset(storageOf(node.result()), &node, out);
    return;
  }
  // plan-memory refused every heavy node without a record.
  assert((!needsSchedule(node) || node.schedule()) && "a heavy node's record");
  if (runsOnRows(node))
    return lowerRowNode(node, out);
  if (node.getOp() == OpKind::Attention &&
      node.schedule()->strategy == Strategy::DecodeAttention)
    return lowerDecodeAttention(node, out);
  if (isProductNode(node) && node.schedule()->strategy == Strategy::LibraryProduct)
    return lowerLibraryProduct(node, productParts(node, plan), out);
  if (isConvolutionNode(node))
    return lowerLibraryConvolution(node, out);
  if (node.info().has(Collective))
    return lowerCollective(node, out);
  if (node.getOp() == OpKind::IndexCopy || node.getOp() == OpKind::IndexAdd)
    copyUnlessInPlace(node.operand(0), node.result(), out);
  if (node.getOp() == OpKind::ArgTopK && !argTopKFits(node)) {
    diag.nodeError(node, "argtopk of k = " + std::to_string(node.intAttr("k", 1)) +
                             ": its kernel ranks at most 2048 a row");
    ok = false;
    return;
  }
  Kernel kernel;
  kernel.node = &node;
  kernel.name = uniqueKernelName(
      node.getOp() == OpKind::Fusion
          ? sanitize(node.getName())
      : node.getOp() == OpKind::ProductFusion
          ? "product_" + sanitize(node.getName())
          : sanitize(mnemonic(node.getOp())) + "_" + sanitize(node.getName()));
  if (!emitKernel(node, plan, kernel)) {
    diag.nodeError(node, "'" + mnemonic(node.getOp()) +
                             "' is not supported by codegen yet");
    ok = false;
    return;
  }
  shareIdenticalFunction(kernel, program.functions);
  noteDTypes(node, program);
  program.usesAttention |= node.getOp() == OpKind::Attention;
  program.usesArgTopK |= node.getOp() == OpKind::ArgTopK;
  program.usesMmaProduct |= node.schedule() &&
                            node.schedule()->strategy == Strategy::MmaProduct;
  addKernelStep(std::move(kernel), out);
}

Lowerer::KernelPair Lowerer::kernelPair(const Node &node, const std::string &base,
                                       const std::string &firstSuffix) {
  KernelPair pair;
  if ((*node.schedule())[ScheduleField::Scratch]) {
    pair.scratchStorage = bufferStorage(plan.scratch.lookup(&node));
    pair.twoKernels = true;
  }
  pair.kernels[0].name = uniqueKernelName(pair.twoKernels ? base + firstSuffix : base);
  if (pair.twoKernels)
    pair.kernels[1].name = uniqueKernelName(base);
  for (Kernel &k : pair.kernels)
    k.node = &node;
  return pair;
}

void Lowerer::addKernelPair(const Node &node, KernelPair &pair, StepGraph &out) {
  noteDTypes(node, program);
  for (unsigned k = 0; k < (pair.twoKernels ? 2u : 1u); ++k) {
    shareIdenticalFunction(pair.kernels[k], program.functions);
    addKernelStep(std::move(pair.kernels[k]), out);
  }
}

void Lowerer::lowerRowNode(const Node &node, StepGraph &out) {
  std::string base = node.getOp() == OpKind::RowFusion
                         ? sanitize(node.getName())
                         : sanitize(mnemonic(node.getOp())) + "_" + sanitize(node.getName());
  KernelPair pair = kernelPair(node, base, "_partials");
  std::string why;
  if (!emitRowKernels(node, *node.schedule(), pair.scratch(), program.multiprocessors,
                      pair.kernels[0], pair.second(), why)) {
    diag.nodeError(node, "cannot run as one row kernel: " + why);
    ok = false;
    return;
  }
  addKernelPair(node, pair, out);
}

void Lowerer::lowerDecodeAttention(const Node &node, StepGraph &out) {
  KernelPair pair = kernelPair(node, "attention_" + sanitize(node.getName()), "_spans");
  emitDecodeAttention(node, *node.schedule(), plan.attention.views.lookup(&node),
                      pair.scratch(), pair.kernels[0], pair.second());
  program.usesAttention = true;
  addKernelPair(node, pair, out);
}

void Lowerer::lowerNodes(const Graph &g, StepGraph &out) {
  for (const auto &node : g.nodes())
    lowerNode(*node, out);
  addCopies(plan.copiesAtExit(g), out);
}

bool Lowerer::lowerTopLevel(const Graph &g, StepGraph &out) {
  for (const GraphInput &in : g.inputs())
    if (!in.value->getType().isStatic()) {
      diag.error(in.loc, "input '" + in.value->getName() + "' has symbolic type " +
                             typeToString(in.value->getType(), g.dims()) +
                             "; codegen takes static shapes (cgc compiles a "
                             "model with symbolic dims into one padded graph "
                             "per bucket, or one graph per --bind-dim value; "
                             "--train does neither yet)");
      ok = false;
    }
  handles = 0;
  lowerNodes(g, out);
  out.handles = handles;
  batchPointwiseKernels(out, program);
  planEdges(out, program);
  return ok;
}

bool cgc::lowerGraph(const Graph &graph, const MemoryPlan &plan,
                     const std::string &name, Program &program,
                     DiagnosticEngine &diag) {
  StepGraph top;
  top.name = name;
  if (!Lowerer(plan, program, diag).lowerTopLevel(graph, top))
    return false;
  program.graphs.push_back(std::move(top));
  return true;
}

size_t Program::numSteps() const {
  size_t n = 0;
  for (const auto *list : {&graphs, &bodies})
    for (const StepGraph &g : *list)
      n += g.steps.size();
  return n;
}
