//===- LibraryCallsValidate.cpp - Checks of a manifest's library calls ---===//
//
// validateManifest()'s checks of products, convolutions and collectives
// (ManifestValidate.cpp opens with the whole list).
//
//===----------------------------------------------------------------------===//
#include "format/ManifestChecks.h"

#include <algorithm>
#include <map>

namespace cgc::format::checks {
namespace {

/// Checks that a stored matrix of \p rows x \p cols (column-major, leading
/// dimension \p ld, \p batch of them \p stride apart) lies in its region.
bool checkMatrix(Checker &c, const Manifest &m, const PointerDesc &ptr,
                 int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                 int64_t stride, size_t elem, const std::string &p) {
  if (ld < rows)
    return c.fail(p + ": leading dimension " + std::to_string(ld) +
                  " is less than the " + std::to_string(rows) + " rows");
  if (stride < 0 || stride > (int64_t(1) << 48))
    return c.fail(p + ": bad batch stride " + std::to_string(stride));
  uint64_t batches, columns, elements, bytes;
  if (!mulNoOverflow(uint64_t(batch - 1), uint64_t(stride), batches) ||
      !mulNoOverflow(uint64_t(cols - 1), uint64_t(ld), columns) ||
      !addNoOverflow(batches, columns, elements) ||
      !addNoOverflow(elements, uint64_t(rows), elements) ||
      !mulNoOverflow(elements, elem, bytes))
    return c.fail(p + ": the matrices' extent overflows 64 bits");
  return checkRange(c, m, ptr.region, ptr.offset, bytes, p) &&
         checkBinding(c, m, ptr.binding, ptr.region, ptr.offset, bytes, p);
}

/// Checks that a strided tensor of \p dims lies in its region.
bool checkStrided(Checker &c, const Manifest &m, const PointerDesc &ptr,
                  const std::vector<int64_t> &dims,
                  const std::vector<int64_t> &strides, size_t elem,
                  const std::string &p) {
  if (strides.size() != dims.size())
    return c.fail(p + ": " + std::to_string(strides.size()) +
                  " strides for " + std::to_string(dims.size()) + " dims");
  uint64_t last = 0; // The offset of the last element, in elements.
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 1 || dims[i] >= (int64_t(1) << 31) || strides[i] < 1 ||
        strides[i] > (int64_t(1) << 48))
      return c.fail(p + ": dims must be in [1, 2^31) and strides in [1, 2^48]");
    uint64_t term;
    if (!mulNoOverflow(uint64_t(dims[i] - 1), uint64_t(strides[i]), term) ||
        !addNoOverflow(last, term, last))
      return c.fail(p + ": the tensor's extent overflows 64 bits");
  }
  uint64_t bytes;
  if (!addNoOverflow(last, 1, last) || !mulNoOverflow(last, elem, bytes))
    return c.fail(p + ": the tensor's extent overflows 64 bits");
  return checkRange(c, m, ptr.region, ptr.offset, bytes, p) &&
         checkBinding(c, m, ptr.binding, ptr.region, ptr.offset, bytes, p);
}

/// The shapes of a convolution agree: ranks, groups and output extents.
bool checkConvolutionShape(Checker &c, const ConvolutionDesc &d,
                           const std::string &p) {
  size_t rank = d.xDims.size(), spatial = rank - 2;
  if ((rank != 4 && rank != 5) || d.wDims.size() != rank ||
      d.yDims.size() != rank)
    return c.fail(p + ": x, w and y must all have rank 4 or 5");
  for (const std::vector<int64_t> *v :
       {&d.prePadding, &d.postPadding, &d.strides, &d.dilations})
    if (v->size() != spatial)
      return c.fail(p + ": padding, strides and dilations need one value "
                        "per spatial dim");
  for (size_t a = 0; a < spatial; ++a)
    if (d.prePadding[a] < 0 || d.postPadding[a] < 0 || d.strides[a] < 1 ||
        d.dilations[a] < 1 || d.prePadding[a] >= (int64_t(1) << 31) ||
        d.postPadding[a] >= (int64_t(1) << 31) ||
        d.strides[a] >= (int64_t(1) << 31) ||
        d.dilations[a] >= (int64_t(1) << 31))
      return c.fail(p + ": bad padding, stride or dilation");
  for (size_t i = 0; i < rank; ++i)
    if (d.xDims[i] < 1 || d.wDims[i] < 1 || d.yDims[i] < 1 ||
        d.xDims[i] >= (int64_t(1) << 31) || d.wDims[i] >= (int64_t(1) << 31) ||
        d.yDims[i] >= (int64_t(1) << 31))
      return c.fail(p + ": dims must be in [1, 2^31)");
  int64_t groups = d.xDims[1] / d.wDims[1];
  if (d.xDims[1] % d.wDims[1] || d.wDims[0] % groups ||
      d.yDims[1] != d.wDims[0] || d.yDims[0] != d.xDims[0])
    return c.fail(p + ": x's channels must be a multiple of w's dim 1, the "
                      "groups must divide w's dim 0, and y must have w's "
                      "dim 0 channels and x's batch");
  for (size_t a = 0; a < spatial; ++a) {
    int64_t span = d.dilations[a] * (d.wDims[a + 2] - 1) + 1;
    int64_t padded = d.xDims[a + 2] + d.prePadding[a] + d.postPadding[a];
    if (span > padded || (padded - span) / d.strides[a] + 1 != d.yDims[a + 2])
      return c.fail(p + ": y's spatial dim " + std::to_string(a) +
                    " does not follow from x, w, padding, stride and "
                    "dilation");
  }
  return true;
}

} // namespace

bool checkProduct(Checker &c, const Manifest &m, const ProductDesc &d,
                  const std::string &p) {
  size_t elem = dtypeSize(d.dtype);
  if (d.dtype != "f32" && d.dtype != "f16" && d.dtype != "bf16")
    return c.fail(p + ": dtype '" + d.dtype + "' is not f32, f16 or bf16");
  if (d.allowTf32 && d.dtype != "f32")
    return c.fail(p + ": allow_tf32 applies to f32 products only");
  const int64_t limit = int64_t(1) << 31;
  for (int64_t v : {d.m, d.n, d.k, d.batch})
    if (v < 1 || v >= limit)
      return c.fail(p + ": m, n, k and batch must be in [1, 2^31)");
  if (d.lda >= limit || d.ldb >= limit || d.ldc >= limit)
    return c.fail(p + ": leading dimensions must be below 2^31");
  if (d.workspace.region != Region::Arena || !d.workspace.binding.empty())
    return c.fail(p + ": the workspace must be arena scratch");
  if (!checkRange(c, m, d.workspace.region, d.workspace.offset,
                  d.workspaceBytes, p + " workspace"))
    return false;
  int64_t rowsA = d.transA ? d.k : d.m, colsA = d.transA ? d.m : d.k;
  int64_t rowsB = d.transB ? d.n : d.k, colsB = d.transB ? d.k : d.n;
  if (!checkMatrix(c, m, d.a, rowsA, colsA, d.lda, d.batch, d.strideA, elem,
                   p + " a") ||
      !checkMatrix(c, m, d.b, rowsB, colsB, d.ldb, d.batch, d.strideB, elem,
                   p + " b") ||
      !checkMatrix(c, m, d.d, d.m, d.n, d.ldc, d.batch, d.strideC, elem,
                   p + " d"))
    return false;
  if (d.beta != 0 && !checkMatrix(c, m, d.c, d.m, d.n, d.ldc, d.batch,
                                  d.strideC, elem, p + " c"))
    return false;
  if (d.hasBias() && !checkMatrix(c, m, d.bias, d.m, 1, d.m, 1, 0, elem,
                                  p + " bias"))
    return false;
  if (d.d.region != Region::Arena && d.d.region != Region::Persistent)
    return c.fail(p + " d: unknown region");
  return true;
}

bool checkConvolution(Checker &c, const Manifest &m, const ConvolutionDesc &d,
                      const std::string &p) {
  size_t elem = dtypeSize(d.dtype);
  if (d.dtype != "f32" && d.dtype != "f16" && d.dtype != "bf16")
    return c.fail(p + ": dtype '" + d.dtype + "' is not f32, f16 or bf16");
  if (d.allowTf32 && d.dtype != "f32")
    return c.fail(p + ": allow_tf32 applies to f32 convolutions only");
  if (!checkConvolutionShape(c, d, p))
    return false;
  if (d.workspace.region != Region::Arena || !d.workspace.binding.empty())
    return c.fail(p + ": the workspace must be arena scratch");
  if (!checkRange(c, m, d.workspace.region, d.workspace.offset,
                  d.workspaceBytes, p + " workspace"))
    return false;
  if (!checkStrided(c, m, d.x, d.xDims, d.xStrides, elem, p + " x") ||
      !checkStrided(c, m, d.w, d.wDims, d.wStrides, elem, p + " w") ||
      !checkStrided(c, m, d.y, d.yDims, d.yStrides, elem, p + " y"))
    return false;
  if (d.epilogue.size() > kMaxConvolutionSteps)
    return c.fail(p + ": an epilogue holds at most " +
                  std::to_string(kMaxConvolutionSteps) + " steps");
  if (!d.epilogue.empty() && d.operation != ConvolutionDesc::Operation::Forward)
    return c.fail(p + ": only a forward convolution has an epilogue");
  const std::vector<int64_t> channel = {d.yDims[1]}, unit = {1};
  for (size_t k = 0; k < d.epilogue.size(); ++k) {
    const ConvolutionStep &s = d.epilogue[k];
    std::string q = p + " epilogue[" + std::to_string(k) + "]";
    bool unary = s.op == ConvolutionStep::Op::Relu;
    if (unary != (s.operand == ConvolutionStep::Operand::None))
      return c.fail(q + ": relu takes no operand, every other step one");
    if ((s.operand == ConvolutionStep::Operand::Channel &&
         !checkStrided(c, m, s.pointer, channel, unit, elem, q)) ||
        (s.operand == ConvolutionStep::Operand::Full &&
         !checkStrided(c, m, s.pointer, d.yDims, d.yStrides, elem, q)))
      return false;
  }
  return true;
}

/// Every buffer of a bucket is a known float dtype lying in its region;
/// no two buffers overlap (each is reduced in place).
bool checkCollective(Checker &c, const Manifest &m, const CollectiveDesc &d,
                     const std::string &p) {
  if (d.buffers.empty())
    return c.fail(p + ": a collective needs at least one buffer");
  // Reduced in place: no two buffers may share bytes of one storage.
  std::map<std::pair<Region, std::string>, std::vector<std::pair<uint64_t, uint64_t>>>
      storages;
  for (size_t i = 0; i < d.buffers.size(); ++i) {
    const CollectiveDesc::Buffer &b = d.buffers[i];
    std::string q = p + " buffers[" + std::to_string(i) + "]";
    if (b.dtype != "f32" && b.dtype != "f16" && b.dtype != "bf16")
      return c.fail(q + ": dtype '" + b.dtype + "' is not f32, f16 or bf16");
    if (b.count < 1 || b.count >= (int64_t(1) << 40))
      return c.fail(q + ": count must be in [1, 2^40)");
    if (!checkStrided(c, m, b.data, {b.count}, {1}, dtypeSize(b.dtype), q))
      return false;
    storages[{b.data.region, b.data.binding}].push_back(
        {b.data.offset, b.data.offset + uint64_t(b.count) * dtypeSize(b.dtype)});
  }
  for (auto &[storage, ranges] : storages) {
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i)
      if (ranges[i].first < ranges[i - 1].second)
        return c.fail(p + ": two buffers overlap");
  }
  return true;
}

} // namespace cgc::format::checks
