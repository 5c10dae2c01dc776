//===- ConvolutionNode.cpp - Convolution nodes (cuDNN) -------------------===//
//
// A convolution node runs one manifest convolution: cudnnBackendExecute of
// the execution plan its engine chose (ConvolutionPlans.cpp), with a
// variant pack built per call at the context's current addresses. Like a
// product, the node is that call captured into a child graph node, and
// captured again when a caller binding changes one of its tensors
// (CapturedCall.cpp); the same plan captures the same topology. The
// engine's one cuDNN handle carries a stream: a capture holds the engine's
// cuDNN lock and points the handle at the capture stream before the
// capture begins and back at the default stream after it ends
// (ConvolutionStream), so an engine's contexts build, rebind and run
// convolutions eagerly one at a time; replays do not call cuDNN. Eager runs
// execute the plan on the caller's stream likewise.
//
//===----------------------------------------------------------------------===//
#include "Nodes.h"

namespace cgc {
namespace rt {

using format::ConvolutionDesc;
using format::PointerDesc;

static const ConvolutionDesc &convolutionOf(const NodeSite &site) {
  return site.ctx.engine->artifact.manifest
      .convolutions[site.desc().convolution];
}

static void *addressOf(const NodeSite &site, const PointerDesc &p) {
  return reinterpret_cast<void *>(
      site.ctx.address(p.region, p.offset, p.binding));
}

/// Executes the convolution's plan at the context's current addresses on
/// the stream the engine's handle points at (a live ConvolutionStream's).
static cgc_status execute(const NodeSite &site, CUstream) {
  const cgc_engine_s &e = *site.ctx.engine;
  uint32_t index = site.desc().convolution;
  const ConvolutionDesc &c = convolutionOf(site);
  ConvolutionOperands o;
  o.x = addressOf(site, c.x);
  o.w = addressOf(site, c.w);
  o.y = addressOf(site, c.y);
  for (size_t k = 0; k < c.epilogue.size(); ++k)
    if (c.epilogue[k].operand != format::ConvolutionStep::Operand::None)
      o.steps[k] = addressOf(site, c.epilogue[k].pointer);
  if (c.workspaceBytes)
    o.workspace = addressOf(site, c.workspace);
  const char *api = "";
  cudnnStatus_t s =
      executeConvolution(e, index, e.convolutions[index].plan, o, api);
  if (s != CUDNN_STATUS_SUCCESS)
    return failCudnn(*e.dnn, convolutionLabel(e, index), api, s);
  return CGC_OK;
}

/// Fails unless \p on pointed the handle at its stream.
static cgc_status checkStream(const NodeSite &site,
                              const ConvolutionStream &on) {
  if (on.status() == CUDNN_STATUS_SUCCESS)
    return CGC_OK;
  const cgc_engine_s &e = *site.ctx.engine;
  return failCudnn(*e.dnn, convolutionLabel(e, site.desc().convolution),
                   "cudnnSetStream", on.status());
}

/// Captures the convolution with the handle on the capture stream.
static cgc_status captureConvolution(const NodeSite &site, CUgraph &graph) {
  CUstream stream = nullptr;
  if (cgc_status s = captureStreamOf(site.ctx, stream))
    return s;
  ConvolutionStream on(*site.ctx.engine, stream);
  if (cgc_status s = checkStream(site, on))
    return s;
  return captureCall(site, execute, graph);
}

cgc_status addConvolutionNode(const NodeSite &site, const Deps &deps) {
  return addCapturedNode(site, deps, captureConvolution);
}

cgc_status refreshConvolutionNode(const NodeSite &site) {
  return refreshCapturedNode(site, captureConvolution, convolutionLabel,
                             site.desc().convolution);
}

cgc_status runConvolutionNodeEager(const NodeSite &site, CUstream stream) {
  ConvolutionStream on(*site.ctx.engine, stream);
  if (cgc_status s = checkStream(site, on))
    return s;
  return execute(site, stream);
}

bool convolutionNodeUsesBinding(const NodeSite &site, const std::string &name) {
  const ConvolutionDesc &c = convolutionOf(site);
  if (c.x.binding == name || c.w.binding == name || c.y.binding == name)
    return true;
  for (const format::ConvolutionStep &s : c.epilogue)
    if (s.operand != format::ConvolutionStep::Operand::None && s.pointer.binding == name)
      return true;
  return false;
}

} // namespace rt
} // namespace cgc
