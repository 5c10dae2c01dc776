//===- ConvolutionGraph.h - A convolution's cuDNN operation graph -*- C++ -*-===//
//
// What ConvolutionPlans.cpp (planning, execution) and ConvolutionGraph.cpp
// (the operation graph) share: the tensor uids of the variant packs, the
// chain of cuDNN calls, and the graph's builder. Private to the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_RUNTIME_CONVOLUTIONGRAPH_H
#define CGC_RUNTIME_CONVOLUTIONGRAPH_H

#include "Internal.h"

namespace cgc {
namespace rt {

/// Unique ids of the tensors that variant packs name; the virtual
/// intermediates are numbered from kUidVirtual.
enum : int64_t {
  kUidX = 1,
  kUidW,
  kUidY,
  kUidStep = 10, ///< Epilogue step k's operand: kUidStep + k.
  kUidVirtual = 100
};

inline const format::ConvolutionDesc &convolutionOf(const cgc_engine_s &e, size_t index) {
  return e.artifact.manifest.convolutions[index];
}

/// The channel is a tensor's innermost dim (NHWC, NDHWC).
inline bool channelsLast(const std::vector<int64_t> &strides) {
  return strides[1] == 1;
}

/// cuDNN calls made in turn until one fails, remembering which.
struct CallChain {
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  const char *api = "";
  template <class Call> CallChain &then(const char *name, Call call) {
    if (status == CUDNN_STATUS_SUCCESS) {
      api = name;
      status = call();
    }
    return *this;
  }
  bool ok() const { return status == CUDNN_STATUS_SUCCESS; }
};

/// Builds convolution \p index's operation graph (the convolution and its
/// epilogue's pointwise operations) into its plan's descriptors, \p graph
/// the finalized operation graph.
cgc_status buildConvolutionGraph(cgc_engine_s &e, size_t index,
                                 cudnnBackendDescriptor_t &graph);

} // namespace rt
} // namespace cgc

#endif
