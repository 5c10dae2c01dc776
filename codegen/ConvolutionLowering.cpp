//===- ConvolutionLowering.cpp - Convolutions to cuDNN calls ---------------===//
//
// A conv whose schedule record is library_convolution becomes one cuDNN
// step: x [N, C, D...], w [O, C / G, K...] and y [N, O, E...] in cuDNN's
// N, C, spatial order with the strides of their row-major storage (NCHW,
// or NHWC for a channels_last conv), the padding, strides and dilations
// of the node (ir/ConvolutionShape.h). A conv_transpose is the backward
// data operation of the conv it transposes (x its result, w its weights,
// y its input), a conv_weight_grad the backward filter operation (x its
// input, w its result, y its gradient operand).
// cuDNN runs 2-D and 3-D convolutions: a 1-D one is given as a 2-D one
// whose first spatial dim is 1 (kernel 1, no padding, stride and dilation
// 1). expand-convolution has moved any bias out to an add. A conv_fusion
// adds its epilogue (ir/ConvolutionEpilogue.h), one step per member after
// the conv, which cuDNN runs in the same call.
//
//===----------------------------------------------------------------------===//
#include "codegen/Lowering.h"
#include "ir/ConvolutionEpilogue.h"
#include "ir/ConvolutionShape.h"

#include <cassert>

using namespace cgc;
namespace fmt = cgc::format;

namespace {

/// A tensor in cuDNN's terms: dims in N, C, spatial order and the strides
/// (in elements) of its row-major storage.
struct CudnnTensor {
  std::vector<int64_t> dims, strides;
};

/// The tensor of \p v, whose storage is [N, C, D...] or (\p channelsLast)
/// [N, D..., C]; a 1-D one gains a unit first spatial dim.
CudnnTensor cudnnTensor(const Value *v, bool channelsLast) {
  std::vector<int64_t> stored;
  for (const Dim &d : v->getType().dims)
    stored.push_back(d.extent());
  if (stored.size() == 3)
    stored.insert(stored.begin() + spatialAxis(channelsLast, 0), 1);
  std::vector<int64_t> strides(stored.size(), 1);
  for (size_t i = stored.size(); i-- > 1;)
    strides[i - 1] = strides[i] * stored[i];
  if (!channelsLast)
    return {stored, strides};
  CudnnTensor t;
  for (int64_t axis : channelsFirstPerm(unsigned(stored.size()))) {
    t.dims.push_back(stored[size_t(axis)]);
    t.strides.push_back(strides[size_t(axis)]);
  }
  return t;
}

/// A per-spatial-dim list, with \p unit before it for a 1-D convolution.
std::vector<int64_t> spatial(std::vector<int64_t> values, int64_t unit) {
  if (values.size() == 1)
    values.insert(values.begin(), unit);
  return values;
}

} // namespace

/// The artifact's op of epilogue member \p op (the type rule admits only
/// these five).
static fmt::ConvolutionStep::Op stepOp(OpKind op) {
  if (op == OpKind::Add)
    return fmt::ConvolutionStep::Op::Add;
  if (op == OpKind::Sub)
    return fmt::ConvolutionStep::Op::Sub;
  if (op == OpKind::Mul)
    return fmt::ConvolutionStep::Op::Mul;
  if (op == OpKind::Div)
    return fmt::ConvolutionStep::Op::Div;
  return fmt::ConvolutionStep::Op::Relu;
}

const Value *cgc::boundOperand(const Node &node, const Value *v) {
  if (node.numRegions() == 0)
    return v;
  const auto &inputs = node.region(0).inputs();
  for (unsigned k = 0; k < inputs.size(); ++k)
    if (inputs[k].value == v)
      return node.operand(k);
  return v;
}

namespace {
/// A library convolution's values in the forward's roles x, w and y, and
/// which of them it writes.
struct ConvolutionRoles {
  const Value *x, *w, *y;
  fmt::ConvolutionDesc::Operation operation;
  const Value *written() const {
    switch (operation) {
    case fmt::ConvolutionDesc::Operation::Forward: return y;
    case fmt::ConvolutionDesc::Operation::BackwardData: return x;
    case fmt::ConvolutionDesc::Operation::BackwardFilter: return w;
    }
    return y;
  }
};

ConvolutionRoles rolesOf(const Node &conv) {
  using Operation = fmt::ConvolutionDesc::Operation;
  if (conv.getOp() == OpKind::ConvTranspose)
    return {conv.result(), conv.operand(1), conv.operand(0), Operation::BackwardData};
  if (conv.getOp() == OpKind::ConvWeightGrad)
    return {conv.operand(0), conv.result(), conv.operand(1), Operation::BackwardFilter};
  return {conv.operand(0), conv.operand(1), conv.result(), Operation::Forward};
}
} // namespace

void Lowerer::lowerLibraryConvolution(const Node &node, StepGraph &out) {
  ConvolutionEpilogue epilogue;
  if (node.getOp() == OpKind::ConvolutionFusion) { // Verified by its type rule.
    std::string why;
    epilogue = *convolutionEpilogue(node.region(0), why); // Verified.
  } else {
    epilogue.conv = &node;
  }
  const Node &conv = *epilogue.conv;
  std::string why;
  auto shape = convolutionShape(conv, why);
  assert(shape && "the schedule pass checked the conv");
  assert(conv.numOperands() == 2 && "expand-convolution moved the bias out");
  ConvolutionRoles roles = rolesOf(conv);
  fmt::ConvolutionDesc d;
  d.operation = roles.operation;
  d.dtype = dtypeName(conv.result()->getType().dtype).str();
  d.allowTf32 = program.allowTf32 && conv.result()->getType().dtype == DType::F32;
  CudnnTensor x = cudnnTensor(roles.x, shape->channelsLast),
              w = cudnnTensor(roles.w, shape->channelsLast),
              y = cudnnTensor(roles.y, shape->channelsLast);
  d.xDims = x.dims;
  d.xStrides = x.strides;
  d.wDims = w.dims;
  d.wStrides = w.strides;
  d.yDims = y.dims;
  d.yStrides = y.strides;
  d.prePadding = spatial(shape->before, 0);
  d.postPadding = spatial(shape->after, 0);
  d.strides = spatial(shape->strides, 1);
  d.dilations = spatial(shape->dilations, 1);
  for (const ConvolutionEpilogue::Step &step : epilogue.steps)
    d.epilogue.push_back({stepOp(step.node->getOp()),
                          !step.operand  ? fmt::ConvolutionStep::Operand::None
                          : step.residual ? fmt::ConvolutionStep::Operand::Full
                                          : fmt::ConvolutionStep::Operand::Channel,
                          {}});
  d.workspaceBytes = uint64_t((*node.schedule())[ScheduleField::Scratch]);
  d.source = {node.getName(), mnemonic(node.getOp()).str(), node.getSourceLoc()};
  LibraryConvolution lc;
  lc.node = &node;
  lc.desc = std::move(d);
  auto storage = [&](const Value *v) {
    return storageOf(v == conv.result() ? node.result() : boundOperand(node, v));
  };
  lc.x = storage(roles.x);
  lc.w = storage(roles.w);
  lc.y = storage(roles.y);
  Step step;
  step.kind = Step::Kind::Convolution;
  step.label = "cudnn";
  step.node = &node;
  step.convolution = unsigned(program.convolutions.size());
  const Value *written = roles.written();
  for (auto [value, stored] : {std::pair(roles.x, &lc.x), std::pair(roles.w, &lc.w),
                               std::pair(roles.y, &lc.y)})
    (value == written ? step.writes : step.reads).push_back(rangeOf(*stored));
  for (const ConvolutionEpilogue::Step &e : epilogue.steps) {
    lc.steps.emplace_back();
    if (!e.operand)
      continue;
    lc.steps.back() = storageOf(boundOperand(node, e.operand));
    step.reads.push_back(rangeOf(lc.steps.back()));
  }
  if (lc.desc.workspaceBytes) {
    lc.workspace = bufferStorage(plan.scratch.lookup(&node));
    step.writes.push_back(rangeOf(lc.workspace));
  }
  program.convolutions.push_back(std::move(lc));
  out.steps.push_back(std::move(step));
}
