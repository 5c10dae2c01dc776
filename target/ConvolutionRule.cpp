//===- ConvolutionRule.cpp - When a convolution runs on cuDNN --------------===//
#include "target/ConvolutionRule.h"

#include "ir/ConvolutionEpilogue.h"
#include "ir/ConvolutionShape.h"

using namespace cgc;

std::string cgc::libraryConvolutionRefusal(const Node &node) {
  if (node.getOp() == OpKind::ConvolutionFusion) {
    std::string why;
    if (!convolutionEpilogue(node.region(0), why))
      return why;
    std::string refusal = convolutionEpilogueRefusal(*node.region(0).nodes()[0]);
    return refusal.empty() ? libraryConvolutionRefusal(*node.region(0).nodes()[0]) : refusal;
  }
  const Node &conv = node;
  if (!isWeightedConvolution(conv.getOp()))
    return "only conv, conv_transpose, conv_weight_grad and conv_fusion run on cuDNN";
  for (const Value *v : conv.getOperands())
    if (!v->getType().isStatic())
      return "cuDNN runs static convolutions";
  DType dtype = conv.result()->getType().dtype;
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    return "cuDNN runs f32, f16 and bf16 convolutions";
  std::string why;
  auto shape = convolutionShape(conv, why);
  if (!shape)
    return why;
  if (shape->in.size() > 3)
    return "cuDNN runs convolutions of 1 to 3 spatial dims";
  if (!transposesConv(*shape))
    return "cuDNN's backward data runs a conv_transpose whose output_padding is below "
           "its stride (the forward from its result must give its input's extents)";
  for (const Value *v : {conv.operand(0), conv.operand(1), conv.result()})
    if (v->getType().numElements() == 0)
      return "cuDNN runs convolutions of non-empty tensors";
  return "";
}

std::string cgc::convolutionEpilogueRefusal(const Node &conv) {
  std::string why;
  auto shape = convolutionShape(conv, why);
  if (!shape)
    return why;
  DType dtype = conv.result()->getType().dtype;
  if (dtype != DType::F16 && dtype != DType::BF16)
    return "cuDNN fuses epilogues into f16 and bf16 convolutions";
  if (!shape->channelsLast || shape->in.size() != 2 || shape->groups != 1)
    return "cuDNN fuses epilogues into 2-D channels-last convolutions of one group";
  if (shape->channels % 8 != 0 || shape->outChannels % 8 != 0)
    return "cuDNN's fused engines need channel counts that are multiples of 8";
  return "";
}
