//===- ConvolutionTuning.cpp - Convolution engines timed at engine load --===//
//
// cuDNN's heuristic ranks engine configurations by a model of the GPU, and
// its first choice is not always the fastest. At engine load, after
// planning (ConvolutionPlans.cpp), each convolution with more than one
// usable candidate runs each of them on scratch tensors on a private
// stream (kWarmups runs, then kRepeats runs each timed alone with CUDA
// events) and keeps the one of the lowest median; the other plans are
// destroyed. The scratch (x, w, y, scale, bias, residual and workspace, each
// zeroed, at the largest size any convolution needs) is allocated once and
// freed when all are timed. Convolutions that share a plan share its
// timing.
//
// Requires: the candidates of planConvolutions, each a finalized plan
// within the convolution's workspace reserve.
// Guarantees: each convolution's plan is one of its candidates, the fastest
// of those measured, in this load or in an earlier one on this GPU model
// (TuningMemory.h) (the heuristic's first usable one when none could be
// measured, or with CGC_CONVOLUTION_TUNING=0 in the environment, when
// planning keeps only that one); only that plan is left; graph building
// runs nothing (the timing is done here).
//
//===----------------------------------------------------------------------===//
#include "Internal.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using cgc::format::ConvolutionDesc;

namespace {

using namespace cgc::rt;

constexpr int kWarmups = 1, kRepeats = 5;

/// Bytes a tensor of \p dims with element strides \p strides spans.
uint64_t extentBytes(const std::vector<int64_t> &dims,
                     const std::vector<int64_t> &strides,
                     const std::string &dtype) {
  uint64_t last = 0;
  for (size_t i = 0; i < dims.size(); ++i)
    last += uint64_t(dims[i] - 1) * uint64_t(strides[i]);
  return (last + 1) * cgc::format::dtypeSize(dtype);
}

/// An owner of a plan with more than one candidate to choose from.
bool needsTiming(const cgc_engine_s &e, size_t index) {
  const ConvolutionPlan &plan = e.convolutions[index];
  return plan.owner == index && plan.candidates.size() > 1;
}

/// Device scratch and the stream and events of the timing runs, released
/// when it goes out of scope.
struct Scratch {
  const cgc_engine_s &e;
  std::vector<CUdeviceptr> buffers;
  CUstream stream = nullptr;
  CUevent start = nullptr, stop = nullptr;
  ConvolutionOperands operands;
  explicit Scratch(const cgc_engine_s &engine) : e(engine) {}
  ~Scratch() {
    const Driver &drv = *e.drv;
    if (stream)
      drv.cuStreamSynchronize(stream);
    for (CUdeviceptr b : buffers)
      drv.cuMemFree(b);
    if (start)
      drv.cuEventDestroy(start);
    if (stop)
      drv.cuEventDestroy(stop);
    if (stream)
      drv.cuStreamDestroy(stream);
  }
  /// A zeroed buffer of at least \p bytes (256-aligned, as regions are), or
  /// null for none.
  cgc_status allocate(uint64_t bytes, void *&out) {
    const Driver &drv = *e.drv;
    out = nullptr;
    if (bytes == 0)
      return CGC_OK;
    bytes = std::max<uint64_t>(bytes, 256);
    CUdeviceptr p = 0;
    CGC_CHECK_CU(drv, cuMemAlloc(&p, bytes));
    buffers.push_back(p);
    CGC_CHECK_CU(drv, cuMemsetD8(p, 0, bytes));
    out = reinterpret_cast<void *>(p);
    return CGC_OK;
  }
};

/// Allocates each operand at the largest size any timed convolution needs,
/// and the stream and events.
cgc_status setUp(const cgc_engine_s &e, Scratch &s) {
  uint64_t x = 0, w = 0, y = 0, operand = 0, workspace = 0;
  for (size_t i = 0; i < e.convolutions.size(); ++i) {
    if (!needsTiming(e, i))
      continue;
    const ConvolutionDesc &c = e.artifact.manifest.convolutions[i];
    uint64_t yBytes = extentBytes(c.yDims, c.yStrides, c.dtype);
    x = std::max(x, extentBytes(c.xDims, c.xStrides, c.dtype));
    w = std::max(w, extentBytes(c.wDims, c.wStrides, c.dtype));
    y = std::max(y, yBytes);
    // One buffer of y's extent serves every step's operand (a channel
    // vector reads its first O elements).
    if (!c.epilogue.empty())
      operand = std::max(operand, yBytes);
    workspace = std::max(workspace, c.workspaceBytes);
  }
  ConvolutionOperands &o = s.operands;
  void *shared = nullptr;
  const std::pair<uint64_t, void **> buffers[] = {{x, &o.x},
                                                  {w, &o.w},
                                                  {y, &o.y},
                                                  {operand, &shared},
                                                  {workspace, &o.workspace}};
  for (const auto &[bytes, out] : buffers)
    if (cgc_status st = s.allocate(bytes, *out))
      return st;
  for (void *&step : o.steps)
    step = shared;
  const Driver &drv = *e.drv;
  CGC_CHECK_CU(drv, cuStreamCreate(&s.stream, CU_STREAM_NON_BLOCKING));
  CGC_CHECK_CU(drv, cuEventCreate(&s.start, CU_EVENT_DEFAULT));
  CGC_CHECK_CU(drv, cuEventCreate(&s.stop, CU_EVENT_DEFAULT));
  return CGC_OK;
}

/// The median time (ms) of one run of \p plan, or a negative value if a run
/// fails.
float timeCandidate(const cgc_engine_s &e, size_t index,
                    cudnnBackendDescriptor_t plan, const Scratch &s) {
  const Driver &drv = *e.drv;
  const char *api = nullptr;
  ConvolutionStream on(e, s.stream);
  if (on.status() != CUDNN_STATUS_SUCCESS)
    return -1;
  auto run = [&] {
    return executeConvolution(e, index, plan, s.operands, api) ==
           CUDNN_STATUS_SUCCESS;
  };
  for (int i = 0; i < kWarmups; ++i)
    if (!run())
      return -1;
  float times[kRepeats];
  for (float &ms : times)
    if (drv.cuEventRecord(s.start, s.stream) != CUDA_SUCCESS || !run() ||
        drv.cuEventRecord(s.stop, s.stream) != CUDA_SUCCESS ||
        drv.cuEventSynchronize(s.stop) != CUDA_SUCCESS ||
        drv.cuEventElapsedTime(&ms, s.start, s.stop) != CUDA_SUCCESS)
      return -1;
  std::nth_element(times, times + kRepeats / 2, times + kRepeats);
  return times[kRepeats / 2];
}

/// Makes candidate \p chosen the first and destroys every other.
void keepOnly(const cgc_engine_s &e, ConvolutionPlan &plan, size_t chosen) {
  std::swap(plan.candidates.front(), plan.candidates[chosen]);
  for (size_t k = 1; k < plan.candidates.size(); ++k) {
    e.dnn->cudnnBackendDestroyDescriptor(plan.candidates[k].plan);
    e.dnn->cudnnBackendDestroyDescriptor(plan.candidates[k].config);
  }
  plan.candidates.resize(1);
}

/// Times convolution \p index's candidates and keeps the fastest.
void tuneConvolution(cgc_engine_s &e, size_t index, const Scratch &s) {
  ConvolutionPlan &plan = e.convolutions[index];
  float best = -1;
  size_t chosen = 0;
  for (size_t k = 0; k < plan.candidates.size(); ++k) {
    float ms = timeCandidate(e, index, plan.candidates[k].plan, s);
    if (ms >= 0 && (best < 0 || ms < best)) {
      best = ms;
      chosen = k;
    }
  }
  plan.timed = best >= 0;
  keepOnly(e, plan, chosen);
  if (plan.timed)
    e.tuning.remember(plan.memoryKey, plan.candidates.front().tag);
}

} // namespace

namespace cgc {
namespace rt {

bool convolutionTuningEnabled() {
  const char *value = std::getenv("CGC_CONVOLUTION_TUNING");
  return !value || std::strcmp(value, "0") != 0;
}

cgc_status tuneConvolutions(cgc_engine_s &e) {
  bool any = false;
  for (size_t i = 0; i < e.convolutions.size(); ++i)
    any = any || needsTiming(e, i);
  if (any && convolutionTuningEnabled()) {
    Scratch s(e);
    if (cgc_status st = setUp(e, s))
      return st;
    for (size_t i = 0; i < e.convolutions.size(); ++i)
      if (needsTiming(e, i))
        tuneConvolution(e, i, s);
  }
  for (ConvolutionPlan &plan : e.convolutions) // Untimed: the first.
    if (plan.candidates.size() > 1)
      keepOnly(e, plan, 0);
  adoptCandidates(e);
  return CGC_OK;
}

} // namespace rt
} // namespace cgc
