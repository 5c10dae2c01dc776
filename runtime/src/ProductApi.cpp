//===- ProductApi.cpp - The matrix products of an engine, in the C API ---===//
//
// Count, describe, read and pin the cuBLASLt algorithm of each product that
// the engine planned at load (ProductPlans.cpp). A pinned algorithm is
// checked with cublasLtMatmulAlgoCheck and used by contexts created
// afterwards; pinning is refused while contexts of the engine exist, since
// they captured the previous algorithm.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"

#include <algorithm>
#include <cstring>
#include <new>

using cgc::format::ProductDesc;

namespace {

using namespace cgc::rt;

const ProductDesc &productOf(const cgc_engine_s &e, size_t index) {
  return e.artifact.manifest.products[index];
}

/// One algorithm configuration attribute (all are 4 bytes), or "?".
std::string configValue(const CublasLt &lt, const cublasLtMatmulAlgo_t &algo,
                        cublasLtMatmulAlgoConfigAttributes_t attribute,
                        bool isSigned) {
  uint32_t raw = 0;
  size_t written = 0;
  if (lt.cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &raw,
                                              sizeof raw, &written) !=
      CUBLAS_STATUS_SUCCESS)
    return "?";
  return isSigned ? std::to_string(int32_t(raw)) : std::to_string(raw);
}

/// The line cgc_engine_describe_product writes.
std::string describeProduct(const cgc_engine_s &e, size_t index) {
  const ProductDesc &p = productOf(e, index);
  const ProductPlan &plan = e.products[index];
  const CublasLt &lt = *e.lt;
  auto config = [&](const char *key,
                    cublasLtMatmulAlgoConfigAttributes_t attribute,
                    bool isSigned = false) {
    return std::string(" ") + key + "=" +
           configValue(lt, plan.algo, attribute, isSigned);
  };
  std::string line = "product " + std::to_string(index) + " node=" +
                     p.source.node + " dtype=" + p.dtype +
                     (p.allowTf32 ? "+tf32" : "") +
                     " m=" + std::to_string(p.m) +
                     " n=" + std::to_string(p.n) +
                     " k=" + std::to_string(p.k) +
                     " transA=" + (p.transA ? "1" : "0") +
                     " transB=" + (p.transB ? "1" : "0") +
                     " batch=" + std::to_string(p.batch) +
                     " epilogue=" + cgc::format::epilogueName(p.epilogue);
  line += config("algo", CUBLASLT_ALGO_CONFIG_ID, true) +
          config("tile", CUBLASLT_ALGO_CONFIG_TILE_ID) +
          config("stages", CUBLASLT_ALGO_CONFIG_STAGES_ID) +
          config("splitk", CUBLASLT_ALGO_CONFIG_SPLITK_NUM, true) +
          config("reduction", CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME) +
          config("swizzle", CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING) +
          config("custom", CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION);
  line += " workspace=" + std::to_string(plan.workspaceUsed) + "/" +
          std::to_string(p.workspaceBytes) +
          (plan.pinned       ? " pinned"
           : plan.remembered ? " remembered"
           : plan.timed      ? " timed"
                             : " heuristic");
  return line;
}

/// Fails unless \p index names a product of \p e.
cgc_status checkIndex(cgc_engine e, size_t index) {
  if (!e)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null engine");
  if (index >= e->products.size())
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                "product index " + std::to_string(index) +
                    " out of range (the artifact has " +
                    std::to_string(e->products.size()) + ")");
  return CGC_OK;
}

/// Checks \p algo against product \p index's descriptors: it must run them
/// on this GPU within the reserved workspace.
cgc_status checkAlgorithm(const cgc_engine_s &e, size_t index,
                          const cublasLtMatmulAlgo_t &algo, size_t &needs) {
  const ProductDesc &p = productOf(e, index);
  std::string what = productLabel(e, index);
  cublasStatus_t s = checkProductAlgorithm(e, index, algo, needs);
  if (s != CUBLAS_STATUS_SUCCESS)
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                what + ": the algorithm does not fit it: " +
                    e.lt->errorText("cublasLtMatmulAlgoCheck", s));
  if (needs > p.workspaceBytes)
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                what + ": the algorithm needs " + std::to_string(needs) +
                    " bytes of workspace, the artifact reserves " +
                    std::to_string(p.workspaceBytes));
  return CGC_OK;
}

} // namespace

namespace cgc {
namespace rt {

cublasStatus_t checkProductAlgorithm(const cgc_engine_s &e, size_t index,
                                     const cublasLtMatmulAlgo_t &algo,
                                     size_t &needs) {
  const ProductPlan &plan = e.products[index];
  cublasLtMatmulHeuristicResult_t result;
  std::memset(&result, 0, sizeof result);
  cublasStatus_t s = e.lt->cublasLtMatmulAlgoCheck(
      e.ltHandle, plan.desc, plan.a, plan.b, plan.c, plan.d, &algo, &result);
  needs = result.workspaceSize;
  return s == CUBLAS_STATUS_SUCCESS ? result.state : s;
}

} // namespace rt
} // namespace cgc

extern "C" {

size_t cgc_engine_num_products(cgc_engine e) {
  return e ? e->products.size() : 0;
}

cgc_status cgc_engine_describe_product(cgc_engine e, size_t index,
                                       char *buffer, size_t size) {
  if (cgc_status s = checkIndex(e, index))
    return s;
  if (!buffer && size)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null buffer");
  try {
    std::string line = describeProduct(*e, index);
    if (size) {
      size_t n = std::min(line.size(), size - 1);
      std::memcpy(buffer, line.data(), n);
      buffer[n] = 0;
    }
    if (line.size() >= size)
      return fail(CGC_ERROR_INVALID_ARGUMENT,
                  "the description of product " + std::to_string(index) +
                      " needs " + std::to_string(line.size() + 1) +
                      " bytes, the buffer has " + std::to_string(size));
    return CGC_OK;
  } catch (const std::bad_alloc &) {
    return fail(CGC_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
}

static_assert(sizeof(cublasLtMatmulAlgo_t) == 8 * sizeof(uint64_t),
              "cgc_runtime.h passes algorithms as uint64_t[8]");

cgc_status cgc_engine_get_product_algorithm(cgc_engine e, size_t index,
                                            uint64_t algo[8]) {
  if (cgc_status s = checkIndex(e, index))
    return s;
  if (!algo)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null algorithm");
  std::memcpy(algo, &e->products[index].algo, sizeof(cublasLtMatmulAlgo_t));
  return CGC_OK;
}

cgc_status cgc_engine_pin_product_algorithm(cgc_engine e, size_t index,
                                            const uint64_t algo[8]) {
  if (cgc_status s = checkIndex(e, index))
    return s;
  if (!algo)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null algorithm");
  if (size_t live = e->contexts.load())
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                "cannot pin the algorithm of " + productLabel(*e, index) +
                    ": " + std::to_string(live) +
                    " context(s) of this engine captured the current one "
                    "(pin before cgc_context_create)");
  try {
    if (cgc_status s = e->makeCurrent())
      return s;
    cublasLtMatmulAlgo_t candidate;
    std::memcpy(&candidate, algo, sizeof candidate);
    size_t needs = 0;
    if (cgc_status s = checkAlgorithm(*e, index, candidate, needs))
      return s;
    ProductPlan &plan = e->products[index];
    plan.algo = candidate;
    plan.workspaceUsed = needs;
    plan.pinned = true;
    return CGC_OK;
  } catch (const std::bad_alloc &) {
    return fail(CGC_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
}

} // extern "C"
