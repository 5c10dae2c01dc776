//===- LibraryCallsJson.cpp - JSON -> the manifest's library calls ---------===//
//
// Reads the cuBLASLt products, the cuDNN convolutions and the NCCL
// collectives of the manifest (ManifestJson.cpp reads the rest).
//
//===----------------------------------------------------------------------===//
#include "format/ManifestReader.h"

namespace cgc {
namespace format {
namespace manifest_json {
namespace {

bool readEpilogue(Reader &r, const json &j, const std::string &p,
                  ProductDesc::Epilogue &out) {
  std::string name;
  if (!r.str(j, p, "epilogue", name))
    return false;
  for (unsigned e = 0; e < ProductDesc::NumEpilogues; ++e)
    if (name == epilogueName(static_cast<ProductDesc::Epilogue>(e))) {
      out = static_cast<ProductDesc::Epilogue>(e);
      return true;
    }
  return r.fail(p + ".epilogue", "unknown epilogue '" + name + "'");
}

bool readProduct(Reader &r, const json &j, const std::string &p,
                 ProductDesc &d) {
  if (!r.str(j, p, "dtype", d.dtype) ||
      !readBool(r, j, p, "allow_tf32", d.allowTf32) ||
      !readBool(r, j, p, "trans_a", d.transA) ||
      !readBool(r, j, p, "trans_b", d.transB) || !r.i64(j, p, "m", d.m) ||
      !r.i64(j, p, "n", d.n) || !r.i64(j, p, "k", d.k) ||
      !r.i64(j, p, "lda", d.lda) || !r.i64(j, p, "ldb", d.ldb) ||
      !r.i64(j, p, "ldc", d.ldc) || !r.i64(j, p, "batch", d.batch) ||
      !r.i64(j, p, "stride_a", d.strideA) ||
      !r.i64(j, p, "stride_b", d.strideB) ||
      !r.i64(j, p, "stride_c", d.strideC) ||
      !readFloat(r, j, p, "alpha", d.alpha) ||
      !readFloat(r, j, p, "beta", d.beta) || !readEpilogue(r, j, p, d.epilogue) ||
      !readPointer(r, j, p, "a", d.a) || !readPointer(r, j, p, "b", d.b) ||
      !readPointer(r, j, p, "d", d.d) ||
      !readPointer(r, j, p, "workspace", d.workspace) ||
      !r.u64(j, p, "workspace_bytes", d.workspaceBytes))
    return false;
  if ((d.beta != 0 && !readPointer(r, j, p, "c", d.c)) ||
      (d.hasBias() && !readPointer(r, j, p, "bias", d.bias)))
    return false;
  const json *source = r.field(j, p, "source");
  return source && r.str(*source, p + ".source", "node", d.source.node) &&
         r.str(*source, p + ".source", "op", d.source.op) &&
         r.str(*source, p + ".source", "loc", d.source.loc, true);
}

bool readStep(Reader &r, const json &j, const std::string &p, ConvolutionStep &s) {
  if (!readEnum(r, j, p, "op", ConvolutionStep::NumOps, stepOpName, s.op) ||
      !readEnum(r, j, p, "operand", ConvolutionStep::NumOperands, stepOperandName,
                s.operand))
    return false;
  return s.operand == ConvolutionStep::Operand::None ||
         readPointer(r, j, p, "pointer", s.pointer);
}

bool readConvolution(Reader &r, const json &j, const std::string &p,
                     ConvolutionDesc &d) {
  // "operation" came with version 9; an older convolution is a forward.
  if ((r.field(j, p, "operation", true) &&
       !readEnum(r, j, p, "operation", ConvolutionDesc::NumOperations,
                 convolutionOperationName, d.operation)) ||
      !r.str(j, p, "dtype", d.dtype) ||
      !readBool(r, j, p, "allow_tf32", d.allowTf32) ||
      !readI64s(r, j, p, "x_dims", d.xDims) ||
      !readI64s(r, j, p, "x_strides", d.xStrides) ||
      !readI64s(r, j, p, "w_dims", d.wDims) ||
      !readI64s(r, j, p, "w_strides", d.wStrides) ||
      !readI64s(r, j, p, "y_dims", d.yDims) ||
      !readI64s(r, j, p, "y_strides", d.yStrides) ||
      !readI64s(r, j, p, "pre_padding", d.prePadding) ||
      !readI64s(r, j, p, "post_padding", d.postPadding) ||
      !readI64s(r, j, p, "strides", d.strides) ||
      !readI64s(r, j, p, "dilations", d.dilations) ||
      !readPointer(r, j, p, "x", d.x) || !readPointer(r, j, p, "w", d.w) ||
      !readPointer(r, j, p, "y", d.y) ||
      !readPointer(r, j, p, "workspace", d.workspace) ||
      !r.u64(j, p, "workspace_bytes", d.workspaceBytes))
    return false;
  const json *steps = r.array(j, p, "epilogue");
  if (!steps)
    return false;
  d.epilogue.resize(steps->size());
  for (size_t i = 0; i < steps->size(); ++i)
    if (!readStep(r, (*steps)[i], at(p + ".epilogue", i), d.epilogue[i]))
      return false;
  const json *source = r.field(j, p, "source");
  return source && r.str(*source, p + ".source", "node", d.source.node) &&
         r.str(*source, p + ".source", "op", d.source.op) &&
         r.str(*source, p + ".source", "loc", d.source.loc, true);
}

bool readCollective(Reader &r, const json &j, const std::string &p,
                    CollectiveDesc &d) {
  if (!readEnum(r, j, p, "reduction", CollectiveDesc::NumReductions,
                reductionName, d.reduction))
    return false;
  const json *buffers = r.array(j, p, "buffers");
  if (!buffers)
    return false;
  d.buffers.resize(buffers->size());
  for (size_t i = 0; i < buffers->size(); ++i) {
    std::string bp = at(p + ".buffers", i);
    CollectiveDesc::Buffer &b = d.buffers[i];
    if (!r.str((*buffers)[i], bp, "dtype", b.dtype) ||
        !r.i64((*buffers)[i], bp, "count", b.count) ||
        !readPointer(r, (*buffers)[i], bp, "data", b.data))
      return false;
  }
  const json *source = r.field(j, p, "source");
  return source && r.str(*source, p + ".source", "node", d.source.node) &&
         r.str(*source, p + ".source", "op", d.source.op) &&
         r.str(*source, p + ".source", "loc", d.source.loc, true);
}

} // namespace

bool readLibraryCalls(Reader &r, const json &root, Manifest &m) {
  const json *products = r.array(root, "$", "products");
  if (!products)
    return false;
  m.products.resize(products->size());
  for (size_t i = 0; i < products->size(); ++i)
    if (!readProduct(r, (*products)[i], at("products", i), m.products[i]))
      return false;
  const json *convolutions = r.array(root, "$", "convolutions");
  if (!convolutions)
    return false;
  m.convolutions.resize(convolutions->size());
  for (size_t i = 0; i < convolutions->size(); ++i)
    if (!readConvolution(r, (*convolutions)[i], at("convolutions", i),
                         m.convolutions[i]))
      return false;
  if (const json *collectives = r.field(root, "$", "collectives", true)) {
    if (!collectives->is_array())
      return r.fail("$.collectives", "expected an array");
    m.collectives.resize(collectives->size());
    for (size_t i = 0; i < collectives->size(); ++i)
      if (!readCollective(r, (*collectives)[i], at("collectives", i),
                          m.collectives[i]))
        return false;
  }
  return true;
}

} // namespace manifest_json
} // namespace format
} // namespace cgc
