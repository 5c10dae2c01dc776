//===- ContextState.cpp - Per-context state: initial values and access ----===//
//
// State with scope "context" (a KV cache, a stream's position) lives in each
// context's arena at the slot the manifest gives it (region "arena"), not
// in the engine: contexts of one engine run such models concurrently, each
// over its own copy. Every copy starts from the state's initial value (its
// blob; zeros without one), set when the context is created and again by
// cgc_context_reset_state.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"

using namespace cgc::rt;
using cgc::format::Region;
using cgc::format::TensorDesc;

namespace {

cgc_status contextStateCopy(cgc_context ctx, const char *name, void *host, size_t bytes,
                            bool toDevice) {
  const TensorDesc *t = nullptr;
  if (!ctx)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  if (cgc_status s = findState(*ctx->engine, name, Region::Arena, t))
    return s;
  return copyState(*ctx->engine, *t, ctx->arena, host, bytes, toDevice);
}

} // namespace

cgc_status cgc::rt::resetContextState(cgc_context_s &ctx, CUstream stream) {
  const cgc_engine_s &e = *ctx.engine;
  for (const TensorDesc &t : e.artifact.manifest.state) {
    if (t.region != Region::Arena || !t.bytes)
      continue;
    CUdeviceptr at = ctx.arena + t.offset;
    if (t.initBlob.empty()) {
      CGC_CHECK_CU(*e.drv, cuMemsetD8Async(at, 0, t.bytes, stream));
      continue;
    }
    const uint8_t *init = e.artifact.blob(t.initBlob).first + t.initOffset;
    CGC_CHECK_CU(*e.drv, cuMemcpyHtoDAsync(at, init, t.bytes, stream));
  }
  return CGC_OK;
}

extern "C" {

cgc_status cgc_context_state_read(cgc_context ctx, const char *name, void *host_dst,
                                  size_t bytes) {
  return contextStateCopy(ctx, name, host_dst, bytes, /*toDevice=*/false);
}

cgc_status cgc_context_state_write(cgc_context ctx, const char *name,
                                   const void *host_src, size_t bytes) {
  return contextStateCopy(ctx, name, const_cast<void *>(host_src), bytes,
                          /*toDevice=*/true);
}

cgc_status cgc_context_state_data(cgc_context ctx, const char *name, void **device,
                                  size_t *bytes) {
  const TensorDesc *t = nullptr;
  if (!ctx || !device)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  if (cgc_status s = findState(*ctx->engine, name, Region::Arena, t))
    return s;
  *device = reinterpret_cast<void *>(ctx->arena + t->offset);
  if (bytes)
    *bytes = t->bytes;
  return CGC_OK;
}

cgc_status cgc_context_reset_state(cgc_context ctx, void *stream) {
  if (!ctx)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null context");
  if (cgc_status s = ctx->engine->makeCurrent())
    return s;
  return resetContextState(*ctx, static_cast<CUstream>(stream));
}

} // extern "C"
