//===- Api.cpp - Status codes, errors, devices and copies ----------------===//
//
// The parts of the C ABI that belong to neither engine nor context: version,
// status text, the thread-local last error, device count and the copies to
// and from a context's inputs and outputs (host copies, device-to-input).
//
//===----------------------------------------------------------------------===//
#include "Internal.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace cgc::rt;

namespace {
thread_local std::string tLastError;
} // namespace

namespace cgc {
namespace rt {

cgc_status fail(cgc_status status, const std::string &message) {
  try {
    tLastError = message;
  } catch (...) {
  }
  return status;
}

cgc_status failDriver(const Driver &drv, const char *api, CUresult r) {
  cgc_status s = r == CUDA_ERROR_OUT_OF_MEMORY ? CGC_ERROR_OUT_OF_MEMORY
                                               : CGC_ERROR_DRIVER;
  std::string name(api);
  name = name.substr(0, name.find('('));
  return fail(s, drv.errorText(name.c_str(), r));
}

cgc_status failCublasLt(const CublasLt &lt, const std::string &what,
                        const char *api, cublasStatus_t s) {
  cgc_status status = CGC_ERROR_DRIVER;
  if (s == CUBLAS_STATUS_ALLOC_FAILED)
    status = CGC_ERROR_OUT_OF_MEMORY;
  else if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_ARCH_MISMATCH)
    status = CGC_ERROR_UNSUPPORTED;
  std::string name(api);
  name = name.substr(0, name.find('('));
  return fail(status, what + ": " + lt.errorText(name.c_str(), s));
}

cgc_status failCudnn(const Cudnn &dnn, const std::string &what, const char *api,
                     cudnnStatus_t s) {
  cgc_status status = CGC_ERROR_DRIVER;
  if (s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    status = CGC_ERROR_OUT_OF_MEMORY;
  else if (CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED)
    status = CGC_ERROR_UNSUPPORTED;
  std::string name(api);
  name = name.substr(0, name.find('('));
  return fail(status, what + ": " + dnn.errorText(name.c_str(), s));
}

cgc_status requireDriver(const Driver *&drv) {
  std::string reason;
  drv = getDriver(reason);
  if (!drv)
    return fail(CGC_ERROR_NO_DEVICE, "no CUDA device: " + reason);
  return CGC_OK;
}

#define CGC_DTYPE(Enum, Name, Size, SafetensorsName, AbiName, AbiCode)         \
  static_assert(AbiName == AbiCode,                                            \
                "format/DTypes.def and cgc_runtime.h disagree on " Name);
#include "format/DTypes.def"

int32_t dtypeCode(const std::string &d) {
#define CGC_DTYPE(Enum, Name, Size, SafetensorsName, AbiName, AbiCode)         \
  if (d == Name)                                                               \
    return AbiName;
#include "format/DTypes.def"
  // Tensors come from validated manifests, and validateManifest() refuses
  // every dtype that format/DTypes.def does not list.
  std::fprintf(stderr, "cgc runtime: internal error: unknown dtype '%s'\n",
               d.c_str());
  std::abort();
}

} // namespace rt
} // namespace cgc

extern "C" {

int cgc_abi_version(void) { return CGC_ABI_VERSION; }

const char *cgc_status_message(cgc_status status) {
  switch (status) {
  case CGC_OK: return "success";
  case CGC_ERROR_INVALID_ARGUMENT: return "invalid argument";
  case CGC_ERROR_NO_DEVICE: return "no CUDA device";
  case CGC_ERROR_INVALID_ARTIFACT: return "invalid artifact";
  case CGC_ERROR_UNSUPPORTED: return "unsupported on this device";
  case CGC_ERROR_OUT_OF_MEMORY: return "out of device memory";
  case CGC_ERROR_NOT_FOUND: return "not found";
  case CGC_ERROR_DRIVER: return "CUDA driver error";
  case CGC_ERROR_IO: return "I/O error";
  case CGC_ERROR_COLLECTIVE: return "collective failed";
  }
  return "unknown status";
}

const char *cgc_last_error(void) { return tLastError.c_str(); }

cgc_status cgc_device_count(int *count) {
  if (!count)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "count is null");
  *count = 0;
  const Driver *drv;
  if (cgc_status s = requireDriver(drv))
    return s;
  CGC_CHECK_CU(*drv, cuDeviceGetCount(count));
  return CGC_OK;
}

cgc_status cgc_device_reset(int device) {
  const Driver *drv;
  if (cgc_status s = requireDriver(drv))
    return s;
  int count = 0;
  CGC_CHECK_CU(*drv, cuDeviceGetCount(&count));
  if (device < 0 || device >= count)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "device " + std::to_string(device) +
                                                " out of range (" + std::to_string(count) +
                                                " devices)");
  CUdevice dev;
  CGC_CHECK_CU(*drv, cuDeviceGet(&dev, device));
  CGC_CHECK_CU(*drv, cuDevicePrimaryCtxReset(dev));
  return CGC_OK;
}

cgc_status cgc_stream_synchronize(void *stream) {
  const Driver *drv;
  if (cgc_status s = requireDriver(drv))
    return s;
  CGC_CHECK_CU(*drv, cuStreamSynchronize(static_cast<CUstream>(stream)));
  return CGC_OK;
}

// Where a copy of `bytes` into (toDevice) or out of input/output `name`
// goes: its current storage, after the checks every copy shares.
static cgc_status copyTarget(cgc_context ctx, const char *name, const void *other,
                             size_t bytes, bool toDevice, bool inputOnly,
                             CUdeviceptr &dev) {
  if (!ctx || !name || (!other && bytes))
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  TensorView *v = ctx->findView(name);
  if (!v)
    return fail(CGC_ERROR_NOT_FOUND,
                std::string("no input or output named '") + name + "'");
  size_t inputs = ctx->engine->artifact.manifest.inputs.size();
  if (inputOnly && static_cast<size_t>(v - ctx->views.data()) >= inputs)
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                std::string("'") + name + "' is an output, not an input");
  if (toDevice && v->desc->kind == "dim_size")
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                std::string("'") + name +
                    "' holds a real dim size, which cgc_run writes from its "
                    "dims argument");
  if (bytes > v->desc->bytes)
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                "copy of " + std::to_string(bytes) + " bytes exceeds '" +
                    name + "' (" + std::to_string(v->desc->bytes) + " bytes)");
  if (cgc_status s = ctx->engine->makeCurrent())
    return s;
  dev = ctx->address(v->desc->region, v->desc->offset, v->desc->name);
  return CGC_OK;
}

static cgc_status copyTensor(cgc_context ctx, const char *name, void *host,
                             size_t bytes, void *stream, bool toDevice) {
  CUdeviceptr dev = 0;
  if (cgc_status s = copyTarget(ctx, name, host, bytes, toDevice, false, dev))
    return s;
  const Driver &drv = *ctx->engine->drv;
  CUstream st = static_cast<CUstream>(stream);
  if (toDevice)
    CGC_CHECK_CU(drv, cuMemcpyHtoDAsync(dev, host, bytes, st));
  else
    CGC_CHECK_CU(drv, cuMemcpyDtoHAsync(host, dev, bytes, st));
  CGC_CHECK_CU(drv, cuStreamSynchronize(st));
  return CGC_OK;
}

cgc_status cgc_context_copy_input(cgc_context ctx, const char *name,
                                  const void *device_src, size_t bytes,
                                  void *stream) {
  CUdeviceptr dev = 0;
  if (cgc_status s = copyTarget(ctx, name, device_src, bytes, true, true, dev))
    return s;
  CGC_CHECK_CU(*ctx->engine->drv,
               cuMemcpyDtoDAsync(dev, reinterpret_cast<CUdeviceptr>(device_src), bytes,
                                 static_cast<CUstream>(stream)));
  return CGC_OK;
}

cgc_status cgc_context_write_input(cgc_context ctx, const char *name,
                                   const void *host_src, size_t bytes,
                                   void *stream) {
  return copyTensor(ctx, name, const_cast<void *>(host_src), bytes, stream,
                    /*toDevice=*/true);
}

cgc_status cgc_context_read_output(cgc_context ctx, const char *name,
                                   void *host_dst, size_t bytes,
                                   void *stream) {
  return copyTensor(ctx, name, host_dst, bytes, stream, /*toDevice=*/false);
}

cgc_status cgc_context_loop_trips(cgc_context ctx, const char *loop,
                                  uint32_t *trips, void *stream) {
  if (!ctx || !loop || !trips)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  const cgc::format::NodeDesc *found = nullptr;
  for (const cgc::format::NodeDesc *n :
       cgc::format::whileNodes(ctx->engine->artifact.manifest))
    if (!found && n->loop == loop)
      found = n;
  if (!found)
    return fail(CGC_ERROR_NOT_FOUND,
                std::string("no while named '") + loop + "'");
  const Driver &drv = *ctx->engine->drv;
  if (cgc_status s = ctx->engine->makeCurrent())
    return s;
  CUstream st = static_cast<CUstream>(stream);
  CUdeviceptr counter =
      ctx->address(cgc::format::Region::Arena, found->tripOffset, "");
  CGC_CHECK_CU(drv, cuMemcpyDtoHAsync(trips, counter, sizeof *trips, st));
  CGC_CHECK_CU(drv, cuStreamSynchronize(st));
  return CGC_OK;
}

cgc_status cgc_context_counters(cgc_context ctx, cgc_counters *out) {
  if (!ctx || !out)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  *out = ctx->counters;
  return CGC_OK;
}

} // extern "C"
