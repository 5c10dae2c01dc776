//===- ConvolutionApi.cpp - The convolutions of an engine, in the C API --===//
//
// Count the convolutions and report the cuDNN engine the engine chose for
// each at load (ConvolutionPlans.cpp, ConvolutionTuning.cpp).
//
//===----------------------------------------------------------------------===//
#include "Internal.h"

#include <algorithm>
#include <cstring>

extern "C" {

size_t cgc_engine_num_convolutions(cgc_engine e) {
  return e ? e->convolutions.size() : 0;
}

cgc_status cgc_engine_convolution_info(cgc_engine e, size_t index,
                                       cgc_convolution_info *out) {
  using namespace cgc::rt;
  if (!e || !out)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  if (index >= e->convolutions.size())
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                "convolution index " + std::to_string(index) +
                    " out of range (the artifact has " +
                    std::to_string(e->convolutions.size()) + ")");
  const ConvolutionPlan &plan = e->convolutions[index];
  const cgc::format::ConvolutionDesc &c =
      e->artifact.manifest.convolutions[index];
  std::memset(out, 0, sizeof *out);
  out->node = c.source.node.c_str();
  out->engine_id = plan.engineId;
  out->workspace_bytes = uint64_t(plan.workspaceUsed);
  out->workspace_reserved = c.workspaceBytes;
  out->candidates = plan.usable;
  out->timed = plan.remembered ? 2 : plan.timed ? 1 : 0;
  out->cudnn_version = int32_t(e->dnn->version);
  size_t n = std::min(plan.tag.size(), sizeof out->tag - 1);
  std::memcpy(out->tag, plan.tag.data(), n);
  return CGC_OK;
}

} // extern "C"
