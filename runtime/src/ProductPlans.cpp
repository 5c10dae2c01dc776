//===- ProductPlans.cpp - Matrix products planned at engine load ---------===//
//
// An engine whose artifact has matrix products loads cuBLASLt (CublasLt.h),
// creates one handle and, per product, its matmul descriptor, the four
// matrix layouts (strided batches when batch > 1) and a preference (the
// reserved workspace, the alignment each operand is guaranteed), then asks
// cublasLtMatmulAlgoGetHeuristic on the actual GPU and keeps the first
// algorithm, which ProductTuning.cpp then replaces with the fastest
// candidate it times; every context of the engine captures the plan's
// algorithm. The product part of the C API is in ProductApi.cpp.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"

#include <algorithm>
#include <cstring>

using cgc::format::Manifest;
using cgc::format::PointerDesc;
using cgc::format::ProductDesc;

namespace {

using namespace cgc::rt;

const ProductDesc &productOf(const cgc_engine_s &e, size_t index) {
  return e.artifact.manifest.products[index];
}

/// A, B, C, D and bias share it (validated: f32, f16 or bf16).
cudaDataType dataType(const std::string &dtype) {
  if (dtype == "f16")
    return CUDA_R_16F;
  if (dtype == "bf16")
    return CUDA_R_16BF;
  return CUDA_R_32F;
}

cublasLtEpilogue_t epilogueOf(ProductDesc::Epilogue e) {
  switch (e) {
  case ProductDesc::Epilogue::None: return CUBLASLT_EPILOGUE_DEFAULT;
  case ProductDesc::Epilogue::Relu: return CUBLASLT_EPILOGUE_RELU;
  case ProductDesc::Epilogue::Bias: return CUBLASLT_EPILOGUE_BIAS;
  case ProductDesc::Epilogue::ReluBias: return CUBLASLT_EPILOGUE_RELU_BIAS;
  case ProductDesc::Epilogue::Gelu: return CUBLASLT_EPILOGUE_GELU;
  case ProductDesc::Epilogue::GeluBias: return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

/// The largest power of two up to \p cap that divides \p value.
uint32_t alignmentOf(uint64_t value, uint32_t cap) {
  uint32_t a = cap;
  while (a > 1 && value % a)
    a /= 2;
  return a;
}

/// C is read only when beta != 0; otherwise D stands in for it.
const PointerDesc &operandC(const ProductDesc &p) {
  return p.beta != 0 ? p.c : p.d;
}

cgc_status createLayout(const cgc_engine_s &e, const std::string &what,
                        const ProductDesc &p, int64_t rows, int64_t cols,
                        int64_t ld, int64_t stride,
                        cublasLtMatrixLayout_t &layout) {
  const CublasLt &lt = *e.lt;
  CGC_CHECK_LT(lt, what,
               cublasLtMatrixLayoutCreate(&layout, dataType(p.dtype),
                                          uint64_t(rows), uint64_t(cols), ld));
  if (p.batch == 1)
    return CGC_OK;
  int32_t count = int32_t(p.batch);
  CGC_CHECK_LT(lt, what,
               cublasLtMatrixLayoutSetAttribute(
                   layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                   sizeof count));
  CGC_CHECK_LT(lt, what,
               cublasLtMatrixLayoutSetAttribute(
                   layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                   &stride, sizeof stride));
  return CGC_OK;
}

cgc_status createLayouts(const cgc_engine_s &e, size_t index,
                         ProductPlan &plan) {
  const ProductDesc &p = productOf(e, index);
  std::string what = productLabel(e, index);
  int64_t rowsA = p.transA ? p.k : p.m, colsA = p.transA ? p.m : p.k;
  int64_t rowsB = p.transB ? p.n : p.k, colsB = p.transB ? p.k : p.n;
  if (cgc_status s =
          createLayout(e, what, p, rowsA, colsA, p.lda, p.strideA, plan.a))
    return s;
  if (cgc_status s =
          createLayout(e, what, p, rowsB, colsB, p.ldb, p.strideB, plan.b))
    return s;
  if (cgc_status s = createLayout(e, what, p, p.m, p.n, p.ldc, p.strideC,
                                  plan.c))
    return s;
  return createLayout(e, what, p, p.m, p.n, p.ldc, p.strideC, plan.d);
}

cgc_status createPreference(const cgc_engine_s &e, size_t index,
                            ProductPlan &plan) {
  const CublasLt &lt = *e.lt;
  const ProductDesc &p = productOf(e, index);
  const Manifest &m = e.artifact.manifest;
  std::string what = productLabel(e, index);
  CGC_CHECK_LT(lt, what, cublasLtMatmulPreferenceCreate(&plan.preference));
  uint64_t workspace = p.workspaceBytes;
  CGC_CHECK_LT(lt, what,
               cublasLtMatmulPreferenceSetAttribute(
                   plan.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                   &workspace, sizeof workspace));
  const std::pair<cublasLtMatmulPreferenceAttributes_t, const PointerDesc *>
      operands[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &p.a},
                    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &p.b},
                    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &operandC(p)},
                    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &p.d}};
  for (const auto &[attribute, operand] : operands) {
    uint32_t align = guaranteedAlignment(m, *operand);
    CGC_CHECK_LT(lt, what,
                 cublasLtMatmulPreferenceSetAttribute(
                     plan.preference, attribute, &align, sizeof align));
  }
  return CGC_OK;
}

/// Runs the heuristic on the current GPU and keeps its first algorithm.
cgc_status chooseAlgorithm(cgc_engine_s &e, size_t index, ProductPlan &plan) {
  const CublasLt &lt = *e.lt;
  std::string what = productLabel(e, index);
  cublasLtMatmulHeuristicResult_t result;
  std::memset(&result, 0, sizeof result);
  int found = 0;
  CGC_CHECK_LT(lt, what,
               cublasLtMatmulAlgoGetHeuristic(e.ltHandle, plan.desc, plan.a,
                                              plan.b, plan.c, plan.d,
                                              plan.preference, 1, &result,
                                              &found));
  if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
    return fail(CGC_ERROR_UNSUPPORTED,
                what + ": cuBLASLt has no algorithm for it on this GPU within " +
                    std::to_string(productOf(e, index).workspaceBytes) +
                    " bytes of workspace");
  plan.algo = result.algo;
  plan.workspaceUsed = result.workspaceSize;
  return CGC_OK;
}

cgc_status planProduct(cgc_engine_s &e, size_t index) {
  ProductPlan &plan = e.products[index];
  const ProductDesc &p = productOf(e, index);
  // Heuristics read the bias pointer only for its alignment: a stand-in
  // address with exactly the alignment the real one is guaranteed.
  CUdeviceptr standIn = (CUdeviceptr(1) << 40) +
                        guaranteedAlignment(e.artifact.manifest, p.bias);
  if (cgc_status s = createMatmulDesc(e, index, standIn, plan.desc))
    return s;
  if (cgc_status s = createLayouts(e, index, plan))
    return s;
  if (cgc_status s = createPreference(e, index, plan))
    return s;
  return chooseAlgorithm(e, index, plan);
}

} // namespace

namespace cgc {
namespace rt {

uint32_t guaranteedAlignment(const Manifest &m, const PointerDesc &p) {
  uint32_t align = alignmentOf(p.offset, 256);
  if (p.binding.empty())
    return align;
  for (const auto *list : {&m.inputs, &m.outputs})
    for (const auto &t : *list)
      if (t.name == p.binding)
        align = std::min(align, alignmentOf(p.offset - t.offset, 16));
  return align;
}

std::string productLabel(const cgc_engine_s &e, size_t index) {
  const ProductDesc &p = productOf(e, index);
  return "product " + std::to_string(index) + " (node '" + p.source.node +
         "', " + p.dtype + (p.allowTf32 ? "+tf32" : "") +
         " m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) +
         " k=" + std::to_string(p.k) + (p.transA ? " A^T" : "") +
         (p.transB ? " B^T" : "") + " batch=" + std::to_string(p.batch) +
         " epilogue=" + format::epilogueName(p.epilogue) + ")";
}

cgc_status createMatmulDesc(const cgc_engine_s &e, size_t index,
                            CUdeviceptr bias, cublasLtMatmulDesc_t &desc) {
  const CublasLt &lt = *e.lt;
  const ProductDesc &p = productOf(e, index);
  std::string what = productLabel(e, index);
  cublasComputeType_t compute =
      p.allowTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  CGC_CHECK_LT(lt, what, cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F));
  int32_t transA = p.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  int32_t transB = p.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  uint32_t epilogue = epilogueOf(p.epilogue);
  CGC_CHECK_LT(lt, what,
               cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                              &transA, sizeof transA));
  CGC_CHECK_LT(lt, what,
               cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                              &transB, sizeof transB));
  CGC_CHECK_LT(lt, what,
               cublasLtMatmulDescSetAttribute(
                   desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                   sizeof epilogue));
  if (!p.hasBias())
    return CGC_OK;
  const void *pointer = reinterpret_cast<const void *>(bias);
  int32_t biasType = dataType(p.dtype);
  CGC_CHECK_LT(lt, what,
               cublasLtMatmulDescSetAttribute(
                   desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &pointer,
                   sizeof pointer));
  CGC_CHECK_LT(lt, what,
               cublasLtMatmulDescSetAttribute(
                   desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType,
                   sizeof biasType));
  return CGC_OK;
}

cgc_status planProducts(cgc_engine_s &e) {
  size_t count = e.artifact.manifest.products.size();
  if (count == 0)
    return CGC_OK;
  std::string reason;
  e.lt = getCublasLt(reason);
  if (!e.lt)
    return fail(CGC_ERROR_UNSUPPORTED,
                "this artifact runs " + std::to_string(count) +
                    (count == 1 ? " matrix product" : " matrix products") +
                    " with cuBLASLt, but " + reason);
  CGC_CHECK_LT(*e.lt, "cuBLASLt", cublasLtCreate(&e.ltHandle));
  e.products.resize(count);
  for (size_t i = 0; i < count; ++i)
    if (cgc_status s = planProduct(e, i))
      return s;
  return CGC_OK;
}

void releaseProducts(cgc_engine_s &e) {
  if (!e.lt)
    return;
  const CublasLt &lt = *e.lt;
  for (ProductPlan &plan : e.products) {
    if (plan.desc)
      lt.cublasLtMatmulDescDestroy(plan.desc);
    for (cublasLtMatrixLayout_t layout : {plan.a, plan.b, plan.c, plan.d})
      if (layout)
        lt.cublasLtMatrixLayoutDestroy(layout);
    if (plan.preference)
      lt.cublasLtMatmulPreferenceDestroy(plan.preference);
  }
  e.products.clear();
  if (e.ltHandle)
    lt.cublasLtDestroy(e.ltHandle);
  e.ltHandle = nullptr;
}

} // namespace rt
} // namespace cgc
