//===- ConvolutionGraph.cpp - A convolution's cuDNN operation graph ------===//
//
// Per convolution, a backend operation graph:
//
//   x, w --conv--> t0 --step 1--> t1 ... --step n--> y
//
// one pointwise operation per step of the artifact's epilogue (add, sub,
// mul or div with a per-channel or a full operand, relu); the
// convolution's output is y itself when there is no epilogue, else a
// virtual f32 tensor, as is every intermediate (y's dims and strides), and
// the last operation writes y. A derivative is its one operation, no
// epilogue: backward data (y, w --> x) or backward filter (x, y --> w).
// Real tensors have their dtype, dims, strides (elements) and the
// alignment their address always has (guaranteedAlignment); a per-channel
// operand is [1, O, 1, 1(, 1)] of the convolution's dtype with strides in
// y's layout. Compute is f32.
// ConvolutionPlans.cpp asks cuDNN's heuristic for engines of it.
//
//===----------------------------------------------------------------------===//
#include "ConvolutionGraph.h"

using cgc::format::ConvolutionDesc;
using cgc::format::ConvolutionStep;
using cgc::format::Manifest;
using cgc::format::PointerDesc;

namespace {

using namespace cgc::rt;

/// x, w, y and the residual have the convolution's dtype (validated: f32,
/// f16, bf16); scale and bias are f32.
cudnnDataType_t dataType(const std::string &dtype) {
  if (dtype == "f16")
    return CUDNN_DATA_HALF;
  if (dtype == "bf16")
    return CUDNN_DATA_BFLOAT16;
  return CUDNN_DATA_FLOAT;
}

cudnnPointwiseMode_t modeOf(ConvolutionStep::Op op) {
  switch (op) {
  case ConvolutionStep::Op::Add: return CUDNN_POINTWISE_ADD;
  case ConvolutionStep::Op::Sub: return CUDNN_POINTWISE_SUB;
  case ConvolutionStep::Op::Mul: return CUDNN_POINTWISE_MUL;
  case ConvolutionStep::Op::Div: return CUDNN_POINTWISE_DIV;
  case ConvolutionStep::Op::Relu: return CUDNN_POINTWISE_RELU_FWD;
  }
  return CUDNN_POINTWISE_ADD;
}

/// Creates, sets and finalizes the descriptors of one operation graph.
/// Each descriptor goes into \p owned as soon as it exists (so
/// releaseConvolutions destroys it, whatever happens next); after the first
/// failure every call does nothing and \p status holds that failure.
struct GraphBuilder {
  const Cudnn &dnn;
  std::vector<cudnnBackendDescriptor_t> &owned;
  std::string what;
  cgc_status status = CGC_OK;

  cudnnBackendDescriptor_t create(cudnnBackendDescriptorType_t type) {
    cudnnBackendDescriptor_t d = nullptr;
    if (status)
      return nullptr;
    cudnnStatus_t s = dnn.cudnnBackendCreateDescriptor(type, &d);
    if (s != CUDNN_STATUS_SUCCESS)
      status = failCudnn(dnn, what, "cudnnBackendCreateDescriptor", s);
    else
      owned.push_back(d);
    return d;
  }
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, int64_t count,
           const void *values) {
    if (status)
      return;
    cudnnStatus_t s =
        dnn.cudnnBackendSetAttribute(d, name, type, count, values);
    if (s != CUDNN_STATUS_SUCCESS)
      status = failCudnn(
          dnn, what,
          ("cudnnBackendSetAttribute of attribute " + std::to_string(int(name)))
              .c_str(),
          s);
  }
  /// Sets a descriptor-valued attribute of one element.
  void link(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
            cudnnBackendDescriptor_t value) {
    set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value);
  }
  void finalize(cudnnBackendDescriptor_t d, const char *role) {
    if (status)
      return;
    cudnnStatus_t s = dnn.cudnnBackendFinalize(d);
    if (s != CUDNN_STATUS_SUCCESS)
      status = failCudnn(
          dnn, what, (std::string("cudnnBackendFinalize of ") + role).c_str(),
          s);
  }
};

cudnnBackendDescriptor_t tensor(GraphBuilder &b, int64_t uid,
                                cudnnDataType_t type,
                                const std::vector<int64_t> &dims,
                                const std::vector<int64_t> &strides,
                                int64_t alignment, bool isVirtual) {
  cudnnBackendDescriptor_t t = b.create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  int64_t rank = int64_t(dims.size());
  bool virtualFlag = isVirtual;
  b.set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  b.set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, rank, dims.data());
  b.set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank, strides.data());
  b.set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  b.set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  if (isVirtual)
    b.set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virtualFlag);
  b.finalize(t, "a tensor descriptor");
  return t;
}

/// A scale or bias: f32 whatever the convolution's dtype, [1, O, 1, 1(, 1)],
/// contiguous, with strides in y's layout ({O, 1, O, O} for NHWC,
/// {O, 1, 1, 1} for NCHW).
cudnnBackendDescriptor_t channelTensor(GraphBuilder &b, int64_t uid,
                                       const ConvolutionDesc &c,
                                       int64_t alignment) {
  int64_t channels = c.yDims[1];
  std::vector<int64_t> dims(c.yDims.size(), 1), strides(c.yDims.size(), 1);
  dims[1] = channels;
  strides[0] = channels;
  if (channelsLast(c.yStrides))
    std::fill(strides.begin() + 2, strides.end(), channels);
  return tensor(b, uid, dataType(c.dtype), dims, strides, alignment, false);
}

cudnnBackendDescriptor_t convolutionDescriptor(GraphBuilder &b,
                                               const ConvolutionDesc &c) {
  cudnnBackendDescriptor_t d = b.create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int64_t spatial = int64_t(c.strides.size());
  b.set(d, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  b.set(d, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1,
        &mode);
  b.set(d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  b.set(d, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial,
        c.dilations.data());
  b.set(d, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial,
        c.strides.data());
  b.set(d, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial,
        c.prePadding.data());
  b.set(d, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial,
        c.postPadding.data());
  b.finalize(d, "the convolution descriptor");
  return d;
}

/// The attributes of one of cuDNN's three convolution operations: the
/// forward (y = conv(x, w)), backward data (x from y and w) and backward
/// filter (w from x and y).
struct ConvolutionOperationKind {
  cudnnBackendDescriptorType_t type;
  cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
};

ConvolutionOperationKind operationKind(ConvolutionDesc::Operation operation) {
  switch (operation) {
  case ConvolutionDesc::Operation::Forward:
    return {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
            CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  case ConvolutionDesc::Operation::BackwardData:
    return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
  case ConvolutionDesc::Operation::BackwardFilter:
    return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  }
  return operationKind(ConvolutionDesc::Operation::Forward); // A corrupt cast.
}

/// The convolution operation over x, w and y, whichever it writes (alpha
/// 1, beta 0, as f32 since compute is f32).
cudnnBackendDescriptor_t convolutionOperation(GraphBuilder &b,
                                              ConvolutionDesc::Operation operation,
                                              cudnnBackendDescriptor_t x,
                                              cudnnBackendDescriptor_t w,
                                              cudnnBackendDescriptor_t y,
                                              cudnnBackendDescriptor_t conv) {
  ConvolutionOperationKind kind = operationKind(operation);
  cudnnBackendDescriptor_t op = b.create(kind.type);
  float alpha = 1, beta = 0;
  b.link(op, kind.x, x);
  b.link(op, kind.w, w);
  b.link(op, kind.y, y);
  b.link(op, kind.conv, conv);
  b.set(op, kind.alpha, CUDNN_TYPE_FLOAT, 1, &alpha);
  b.set(op, kind.beta, CUDNN_TYPE_FLOAT, 1, &beta);
  b.finalize(op, "the convolution operation");
  return op;
}

/// y = mode(x, operand) in f32; \p operand is null for a unary mode.
cudnnBackendDescriptor_t pointwiseOperation(GraphBuilder &b,
                                            cudnnPointwiseMode_t mode,
                                            cudnnBackendDescriptor_t x,
                                            cudnnBackendDescriptor_t operand,
                                            cudnnBackendDescriptor_t y) {
  cudnnBackendDescriptor_t pw = b.create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  cudnnDataType_t precision = CUDNN_DATA_FLOAT;
  b.set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  b.set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1,
        &precision);
  b.finalize(pw, "a pointwise descriptor");
  cudnnBackendDescriptor_t op =
      b.create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  b.link(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
  b.link(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (operand)
    b.link(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, operand);
  b.link(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  b.finalize(op, "an epilogue operation");
  return op;
}

/// One pointwise operation of the epilogue: its mode and second operand
/// (none for the activation).
struct EpilogueStep {
  cudnnPointwiseMode_t mode;
  int64_t uid;
  const PointerDesc *operand;
  bool perChannel;
};

std::vector<EpilogueStep> epilogueSteps(const ConvolutionDesc &c) {
  std::vector<EpilogueStep> steps;
  for (size_t k = 0; k < c.epilogue.size(); ++k) {
    const ConvolutionStep &step = c.epilogue[k];
    bool none = step.operand == ConvolutionStep::Operand::None;
    steps.push_back({modeOf(step.op), kUidStep + int64_t(k), none ? nullptr : &step.pointer,
                     step.operand == ConvolutionStep::Operand::Channel});
  }
  return steps;
}

} // namespace

namespace cgc {
namespace rt {

/// Builds convolution \p index's operation graph into its plan.
cgc_status buildConvolutionGraph(cgc_engine_s &e, size_t index,
                      cudnnBackendDescriptor_t &graph) {
  const ConvolutionDesc &c = convolutionOf(e, index);
  const Manifest &m = e.artifact.manifest;
  GraphBuilder b{*e.dnn, e.convolutions[index].graph,
                 convolutionLabel(e, index)};
  cudnnDataType_t type = dataType(c.dtype);
  auto aligned = [&](const PointerDesc &p) {
    return int64_t(guaranteedAlignment(m, p));
  };
  int64_t nextVirtual = kUidVirtual;
  auto intermediate = [&] {
    return tensor(b, nextVirtual++, CUDNN_DATA_FLOAT, c.yDims, c.yStrides, 16,
                  true);
  };
  cudnnBackendDescriptor_t x =
      tensor(b, kUidX, type, c.xDims, c.xStrides, aligned(c.x), false);
  cudnnBackendDescriptor_t w =
      tensor(b, kUidW, type, c.wDims, c.wStrides, aligned(c.w), false);
  cudnnBackendDescriptor_t y =
      tensor(b, kUidY, type, c.yDims, c.yStrides, aligned(c.y), false);
  std::vector<EpilogueStep> steps = epilogueSteps(c);
  cudnnBackendDescriptor_t value = steps.empty() ? y : intermediate();
  std::vector<cudnnBackendDescriptor_t> ops = {
      convolutionOperation(b, c.operation, x, w, value, convolutionDescriptor(b, c))};
  for (size_t k = 0; k < steps.size(); ++k) {
    const EpilogueStep &step = steps[k];
    cudnnBackendDescriptor_t operand = nullptr;
    if (step.operand && step.perChannel)
      operand = channelTensor(b, step.uid, c, aligned(*step.operand));
    else if (step.operand)
      operand = tensor(b, step.uid, type, c.yDims, c.yStrides,
                       aligned(*step.operand), false);
    cudnnBackendDescriptor_t out = k + 1 == steps.size() ? y : intermediate();
    ops.push_back(pointwiseOperation(b, step.mode, value, operand, out));
    value = out;
  }
  graph = b.create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  b.set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        int64_t(ops.size()), ops.data());
  b.set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1,
        &e.dnnHandle);
  b.finalize(graph, "the operation graph");
  return b.status;
}

} // namespace rt
} // namespace cgc
