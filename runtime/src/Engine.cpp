//===- Engine.cpp - Loading artifacts: code, weights, state --------------===//
//
// cgc_engine_load_*: validate the artifact, pick the device code (sm cubin,
// else PTX through the driver JIT), resolve kernels, plan the matrix
// products (ProductPlans.cpp: cuBLASLt, only if there are any) and the
// convolutions (ConvolutionPlans.cpp: cuDNN, likewise), allocate the
// persistent region and upload initial state. Also engine introspection and
// state I/O.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "Ranks.h"
#include "format/Permutation.h"
#include "format/FileIO.h"
#include "format/WeightsFile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

using namespace cgc::rt;
using cgc::format::TensorDesc;

cgc_engine_s::~cgc_engine_s() {
  if (!drv || !cuContext)
    return;
  makeCurrent();
  if (ranks)
    ranks->release(*drv);
  releaseProducts(*this);
  releaseConvolutions(*this);
  if (persistent)
    drv->cuMemFree(persistent);
  if (library)
    drv->cuLibraryUnload(library);
  if (cuContext)
    drv->cuDevicePrimaryCtxRelease(device);
}

cgc_status cgc_engine_s::makeCurrent() const {
  CUcontext cur = nullptr;
  CGC_CHECK_CU(*drv, cuCtxGetCurrent(&cur));
  if (cur != cuContext)
    CGC_CHECK_CU(*drv, cuCtxSetCurrent(cuContext));
  return CGC_OK;
}

namespace {

/// Loads one code image and resolves every kernel in it. On failure undoes
/// the load, appends the reason to \p why and returns false; a symbol that
/// is missing from loadable code is a broken artifact (\p status).
bool tryImage(cgc_engine_s &e, const void *image, const char *what,
              std::string &why, cgc_status &status) {
  const Driver &drv = *e.drv;
  CUresult r = drv.cuLibraryLoadData(&e.library, image, nullptr, nullptr, 0,
                                     nullptr, nullptr, 0);
  if (r != CUDA_SUCCESS) {
    why += std::string("; ") + what + ": " +
           drv.errorText("cuLibraryLoadData", r);
    e.library = nullptr;
    return false;
  }
  for (const auto &k : e.artifact.manifest.kernels) {
    CUkernel kern = nullptr;
    CUfunction fn = nullptr;
    r = drv.cuLibraryGetKernel(&kern, e.library, k.name.c_str());
    const char *api = "cuLibraryGetKernel";
    if (r == CUDA_SUCCESS && k.sharedMem > 48 * 1024) {
      api = "cuKernelSetAttribute";
      r = drv.cuKernelSetAttribute(
          CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(k.sharedMem),
          kern, e.device);
    }
    if (r == CUDA_SUCCESS) {
      api = "cuKernelGetFunction";
      r = drv.cuKernelGetFunction(&fn, kern);
    }
    if (r != CUDA_SUCCESS) {
      why += std::string("; ") + what + ": kernel '" + k.name +
             "': " + drv.errorText(api, r);
      if (r == CUDA_ERROR_NOT_FOUND)
        status = CGC_ERROR_INVALID_ARTIFACT;
      drv.cuLibraryUnload(e.library);
      e.library = nullptr;
      e.kernels.clear();
      e.functions.clear();
      return false;
    }
    e.kernels.push_back(kern);
    e.functions.push_back(fn);
  }
  return true;
}

/// Picks the device code: the cubin, else the PTX (driver JIT).
cgc_status loadCode(cgc_engine_s &e) {
  const Driver &drv = *e.drv;
  const auto &m = e.artifact.manifest;
  if (m.kernels.empty())
    return CGC_OK;
  int major = 0, minor = 0;
  CGC_CHECK_CU(drv, cuDeviceGetAttribute(
                        &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                        e.device));
  CGC_CHECK_CU(drv, cuDeviceGetAttribute(
                        &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                        e.device));
  std::string deviceArch =
      "sm_" + std::to_string(major) + std::to_string(minor);
  // Edge data in cuGraphAddDependencies needs a 12.3 driver.
  e.programmaticEdges = major >= 9 && drv.version >= 12030;
  std::string why;
  cgc_status status = CGC_ERROR_UNSUPPORTED;
  auto cubin = e.artifact.blob(cgc::format::kCubinBlob);
  if (!cubin.first || !cubin.second)
    why += "; no cubin blob";
  else if (tryImage(e, cubin.first, "cubin", why, status))
    return CGC_OK;
  auto ptx = e.artifact.blob(cgc::format::kPtxBlob);
  if (!ptx.first || !ptx.second) {
    why += "; no ptx blob";
  } else {
    std::string text(reinterpret_cast<const char *>(ptx.first), ptx.second);
    if (tryImage(e, text.c_str(), "ptx", why, status))
      return CGC_OK;
  }
  return fail(status, "no loadable device code for " + deviceArch +
                          " (artifact targets " + m.targetArch +
                          "): " + why.substr(2));
}

/// Allocates the persistent region (the limit on the state is the device's
/// free memory: cuMemAlloc's out-of-memory is the error) and uploads the
/// initial values: from the artifact's blobs and from \p weights, the
/// checked weights file beside it (when the artifact names one).
cgc_status uploadState(cgc_engine_s &e,
                       const cgc::format::MappedWeights &weights) {
  const Driver &drv = *e.drv;
  const auto &m = e.artifact.manifest;
  if (m.persistentSize == 0)
    return CGC_OK;
  CGC_CHECK_CU(drv, cuMemAlloc(&e.persistent, m.persistentSize));
  CGC_CHECK_CU(drv, cuMemsetD8(e.persistent, 0, m.persistentSize));
  for (const TensorDesc &t : m.state) {
    if (t.region != cgc::format::Region::Persistent || !t.bytes)
      continue;
    const uint8_t *src = nullptr;
    if (!t.initBlob.empty())
      src = e.artifact.blob(t.initBlob).first + t.initOffset;
    else if (!t.initTensor.empty())
      src = weights.data() + t.initOffset; // In range: validateManifest.
    std::vector<uint8_t> held; // The file's tensor, permuted as it is used.
    if (src && !t.initPermutation.empty()) {
      held.resize(t.bytes);
      size_t elem = cgc::format::dtypeSize(t.dtype);
      cgc::format::forEachPermuted(
          t.shape, t.initPermutation, [&](int64_t to, int64_t from) {
            std::memcpy(&held[size_t(to) * elem], src + size_t(from) * elem, elem);
          });
      src = held.data();
    }
    if (src)
      CGC_CHECK_CU(drv, cuMemcpyHtoD(e.persistent + t.offset, src, t.bytes));
  }
  return CGC_OK;
}

/// Maps and checks the weights file the artifact names, if any: at
/// \p weightsPath when given, else beside \p artifactPath. Done before the
/// driver loads, so a wrong file never reaches the GPU.
cgc_status mapWeights(const cgc::format::Manifest &m,
                      const char *artifactPath, const char *weightsPath,
                      cgc::format::MappedWeights &weights) {
  const cgc::format::WeightsFileDesc &desc = m.weightsFile;
  if (desc.path.empty()) {
    if (weightsPath)
      return fail(CGC_ERROR_INVALID_ARGUMENT,
                  std::string("a weights file was given ('") + weightsPath +
                      "') but the artifact carries all its state");
    return CGC_OK;
  }
  if (!weightsPath && !artifactPath)
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                "the artifact keeps its weights in '" + desc.path +
                    "' beside it: load it with cgc_engine_load_file, or "
                    "name the file with cgc_engine_load_memory_weights");
  std::string path =
      weightsPath ? std::string(weightsPath)
                  : cgc::format::weightsPathBeside(artifactPath, desc.path);
  std::string error;
  if (weights.open(path, &desc, error))
    return CGC_OK;
  // A file that is not there or cannot be read is an I/O error; one of
  // another size or content does not belong to this artifact.
  return fail(weights.mismatched() ? CGC_ERROR_INVALID_ARTIFACT : CGC_ERROR_IO,
              error);
}

/// The tuning choices remembered for the engine's GPU (TuningMemory.h);
/// none for an artifact with nothing to tune, or when the GPU is not named.
cgc::rt::TuningMemory tuningMemoryOf(const cgc_engine_s &e) {
  const auto &m = e.artifact.manifest;
  if (m.products.empty() && m.convolutions.empty())
    return cgc::rt::TuningMemory();
  const Driver &drv = *e.drv;
  char name[256] = {};
  int major = 0, minor = 0;
  if (drv.cuDeviceGetName(name, int(sizeof name), e.device) != CUDA_SUCCESS ||
      drv.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                               e.device) != CUDA_SUCCESS ||
      drv.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                               e.device) != CUDA_SUCCESS)
    return cgc::rt::TuningMemory();
  return cgc::rt::TuningMemory::forDevice(name, major, minor, drv.version);
}

cgc_status loadEngine(std::unique_ptr<cgc_engine_s> &e, const uint8_t *data,
                      size_t size, std::vector<uint8_t> *owned, int device,
                      const char *artifactPath, const char *weightsPath) {
  // Every byte is validated before the driver is even loaded: a corrupt
  // artifact (or weights file) never reaches the GPU. Bytes the load owns
  // (a file it read) become the engine's without a copy.
  std::string error;
  if (!(owned ? cgc::format::parseArtifact(std::move(*owned), e->artifact, error)
              : cgc::format::parseArtifact(data, size, e->artifact, error)))
    return fail(CGC_ERROR_INVALID_ARTIFACT, error);
  cgc::format::MappedWeights weights;
  if (cgc_status s =
          mapWeights(e->artifact.manifest, artifactPath, weightsPath, weights))
    return s;
  if (cgc_status s = requireDriver(e->drv))
    return s;
  const Driver &drv = *e->drv;
  if (drv.version < e->artifact.manifest.minDriverVersion)
    return fail(CGC_ERROR_UNSUPPORTED,
                "CUDA driver " + std::to_string(drv.version) +
                    " is older than the artifact's minimum " +
                    std::to_string(e->artifact.manifest.minDriverVersion));
  int count = 0;
  CGC_CHECK_CU(drv, cuDeviceGetCount(&count));
  if (device < 0 || device >= count)
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                "device " + std::to_string(device) + " out of range (" +
                    std::to_string(count) + " devices)");
  CGC_CHECK_CU(drv, cuDeviceGet(&e->device, device));
  CGC_CHECK_CU(drv, cuDevicePrimaryCtxRetain(&e->cuContext, e->device));
  if (cgc_status s = e->makeCurrent())
    return s;
  if (cgc_status s = loadCode(*e))
    return s;
  e->tuning = tuningMemoryOf(*e);
  if (cgc_status s = planProducts(*e))
    return s;
  if (cgc_status s = tuneProducts(*e))
    return s;
  if (cgc_status s = planConvolutions(*e))
    return s;
  if (cgc_status s = tuneConvolutions(*e))
    return s;
  e->tuning.save();
  e->tuning = cgc::rt::TuningMemory();
  return uploadState(*e, weights);
}

/// cgc_engine_load_memory, knowing where the artifact or its weights are;
/// \p owned, when given, holds the bytes and is taken (no copy).
cgc_status loadFromMemory(const void *data, size_t size, int device,
                          const char *artifactPath, const char *weightsPath,
                          cgc_engine *engine, std::vector<uint8_t> *owned = nullptr) {
  if (!engine || (!data && size))
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  *engine = nullptr;
  try {
    auto e = std::make_unique<cgc_engine_s>();
    if (cgc_status s = loadEngine(e, static_cast<const uint8_t *>(data), size,
                                  owned, device, artifactPath, weightsPath))
      return s;
    *engine = e.release();
    return CGC_OK;
  } catch (const std::bad_alloc &) {
    return fail(CGC_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
}

const std::vector<TensorDesc> *tensorList(cgc_engine e, cgc_tensor_role r) {
  const auto &m = e->artifact.manifest;
  switch (r) {
  case CGC_ROLE_INPUT: return &m.inputs;
  case CGC_ROLE_OUTPUT: return &m.outputs;
  case CGC_ROLE_STATE: return &m.state;
  }
  return nullptr;
}

} // namespace

cgc_status cgc::rt::findState(const cgc_engine_s &e, const char *name,
                              cgc::format::Region region, const TensorDesc *&t) {
  if (!name)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  t = nullptr;
  for (const TensorDesc &s : e.artifact.manifest.state)
    if (s.name == name)
      t = &s;
  if (!t)
    return fail(CGC_ERROR_NOT_FOUND, std::string("no state tensor named '") + name + "'");
  if (t->region == region)
    return CGC_OK;
  return fail(CGC_ERROR_UNSUPPORTED,
              region == cgc::format::Region::Persistent
                  ? "state '" + t->name + "' is per-context (scope \"context\"): use "
                    "cgc_context_state_read/write/data"
                  : "state '" + t->name + "' is the engine's, not per-context: use "
                    "cgc_engine_state_read/write/data");
}

cgc_status cgc::rt::copyState(const cgc_engine_s &e, const TensorDesc &t, CUdeviceptr base,
                              void *host, size_t bytes, bool toDevice) {
  if (!host && bytes)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  if (bytes != t.bytes)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "state '" + t.name + "' has " +
                                                std::to_string(t.bytes) + " bytes, not " +
                                                std::to_string(bytes));
  if (cgc_status s = e.makeCurrent())
    return s;
  if (toDevice)
    CGC_CHECK_CU(*e.drv, cuMemcpyHtoD(base + t.offset, host, bytes));
  else
    CGC_CHECK_CU(*e.drv, cuMemcpyDtoH(host, base + t.offset, bytes));
  return CGC_OK;
}

/// The engine's state tensor \p name: read or written.
static cgc_status stateCopy(cgc_engine e, const char *name, void *host, size_t bytes,
                            bool toDevice) {
  const TensorDesc *t = nullptr;
  if (!e)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  if (cgc_status s = findState(*e, name, cgc::format::Region::Persistent, t))
    return s;
  return copyState(*e, *t, e->persistent, host, bytes, toDevice);
}

extern "C" {

cgc_status cgc_engine_load_memory(const void *data, size_t size, int device,
                                  cgc_engine *engine) {
  return loadFromMemory(data, size, device, nullptr, nullptr, engine);
}

cgc_status cgc_engine_load_memory_weights(const void *data, size_t size,
                                          const char *weights_path, int device,
                                          cgc_engine *engine) {
  if (!weights_path)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  return loadFromMemory(data, size, device, nullptr, weights_path, engine);
}

cgc_status cgc_engine_load_file(const char *path, int device,
                                cgc_engine *engine) {
  if (!path || !engine)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  *engine = nullptr;
  std::vector<uint8_t> bytes;
  std::string error;
  try {
    if (!cgc::format::readFileBounded(path, bytes, error))
      return fail(CGC_ERROR_IO, error);
  } catch (const std::bad_alloc &) {
    return fail(CGC_ERROR_OUT_OF_MEMORY, "out of host memory");
  }
  cgc_status s = loadFromMemory(bytes.data(), bytes.size(), device, path,
                                nullptr, engine, &bytes);
  if (s == CGC_ERROR_INVALID_ARTIFACT)
    fail(s, std::string(path) + ": " + cgc_last_error());
  return s;
}

void cgc_engine_destroy(cgc_engine engine) { delete engine; }

size_t cgc_engine_num_graphs(cgc_engine e) {
  return e ? e->artifact.manifest.graphs.size() : 0;
}

const char *cgc_engine_graph_name(cgc_engine e, size_t index) {
  if (!e || index >= e->artifact.manifest.graphs.size())
    return nullptr;
  return e->artifact.manifest.graphs[index].name.c_str();
}

cgc_status cgc_engine_find_graph(cgc_engine e, const char *name,
                                 size_t *index) {
  if (!e || !name || !index)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  const auto &graphs = e->artifact.manifest.graphs;
  for (size_t i = 0; i < graphs.size(); ++i)
    if (graphs[i].name == name)
      return (*index = i), CGC_OK;
  return fail(CGC_ERROR_NOT_FOUND, std::string("no graph named '") + name +
                                       "'");
}

cgc_status cgc_engine_select_graph(cgc_engine e, const int64_t *dims,
                                   size_t n_dims, size_t *index) {
  if (!e || !index || (n_dims && !dims))
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  const auto &m = e->artifact.manifest;
  if (n_dims != m.dims.size())
    return fail(CGC_ERROR_INVALID_ARGUMENT,
                "expected " + std::to_string(m.dims.size()) + " dim values");
  std::string error;
  if (!cgc::format::findGraphForDims(m, std::vector<int64_t>(dims, dims + n_dims),
                                     *index, error))
    return fail(CGC_ERROR_NOT_FOUND, error);
  return CGC_OK;
}

size_t cgc_engine_num_tensors(cgc_engine e, cgc_tensor_role role) {
  const auto *list = e ? tensorList(e, role) : nullptr;
  return list ? list->size() : 0;
}

cgc_status cgc_engine_tensor_info(cgc_engine e, cgc_tensor_role role,
                                  size_t index, cgc_tensor_info *info) {
  const auto *list = e ? tensorList(e, role) : nullptr;
  if (!list || !info || index >= list->size())
    return fail(CGC_ERROR_INVALID_ARGUMENT, "bad engine, role or index");
  const TensorDesc &t = (*list)[index];
  info->name = t.name.c_str();
  info->kind = t.kind.c_str();
  info->dtype = dtypeCode(t.dtype);
  info->ndim = static_cast<int32_t>(t.shape.size());
  info->shape = t.shape.data();
  info->bytes = t.bytes;
  return CGC_OK;
}

cgc_status cgc_engine_tensor_dim(cgc_engine e, cgc_tensor_role role,
                                 size_t index, size_t axis, int64_t *dim) {
  const auto *list = e ? tensorList(e, role) : nullptr;
  if (!list || !dim || index >= list->size() || axis >= (*list)[index].shape.size())
    return fail(CGC_ERROR_INVALID_ARGUMENT, "bad engine, role, index or axis");
  const TensorDesc &t = (*list)[index];
  *dim = -1;
  const auto &dims = e->artifact.manifest.dims;
  for (size_t d = 0; d < dims.size() && axis < t.shapeDims.size(); ++d)
    if (!t.shapeDims[axis].empty() && dims[d].name == t.shapeDims[axis])
      *dim = int64_t(d);
  return CGC_OK;
}

size_t cgc_engine_arena_size(cgc_engine e) {
  return e ? e->artifact.manifest.arenaSize : 0;
}

size_t cgc_engine_num_dims(cgc_engine e) {
  return e ? e->artifact.manifest.dims.size() : 0;
}

cgc_status cgc_engine_graph_dim(cgc_engine e, size_t graph, size_t dim,
                                int64_t *extent) {
  if (!e || !extent || graph >= e->artifact.manifest.graphs.size() ||
      dim >= e->artifact.manifest.dims.size())
    return fail(CGC_ERROR_INVALID_ARGUMENT, "bad engine, graph or dim index");
  const auto &m = e->artifact.manifest;
  *extent = -1;
  for (const auto &[name, value] : m.graphs[graph].dimValues)
    if (name == m.dims[dim].name)
      *extent = value;
  return CGC_OK;
}

cgc_status cgc_engine_dim_info(cgc_engine e, size_t index, const char **name,
                               int64_t *min, int64_t *max) {
  if (!e || index >= e->artifact.manifest.dims.size())
    return fail(CGC_ERROR_INVALID_ARGUMENT, "bad engine or dim index");
  const auto &d = e->artifact.manifest.dims[index];
  if (name)
    *name = d.name.c_str();
  if (min)
    *min = d.min;
  if (max)
    *max = d.max;
  return CGC_OK;
}

cgc_status cgc_engine_state_read(cgc_engine e, const char *name,
                                 void *host_dst, size_t bytes) {
  return stateCopy(e, name, host_dst, bytes, /*toDevice=*/false);
}

cgc_status cgc_engine_state_write(cgc_engine e, const char *name,
                                  const void *host_src, size_t bytes) {
  return stateCopy(e, name, const_cast<void *>(host_src), bytes,
                   /*toDevice=*/true);
}

cgc_status cgc_engine_state_data(cgc_engine e, const char *name,
                                 void **device, size_t *bytes) {
  const TensorDesc *t = nullptr;
  if (!e || !device)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null argument");
  if (cgc_status s = findState(*e, name, cgc::format::Region::Persistent, t))
    return s;
  *device = reinterpret_cast<void *>(e->persistent + t->offset);
  if (bytes)
    *bytes = t->bytes;
  return CGC_OK;
}

cgc_status cgc_engine_set_rng_seed(cgc_engine e, uint64_t seed) {
  if (!e)
    return fail(CGC_ERROR_INVALID_ARGUMENT, "null engine");
  for (const TensorDesc &t : e->artifact.manifest.state) {
    if (t.kind != "rng_state" || t.region != cgc::format::Region::Persistent)
      continue; // Per-context streams: cgc_context_state_write.
    std::vector<uint8_t> value(t.bytes, 0);
    std::memcpy(value.data(), &seed, std::min<size_t>(8, value.size()));
    if (cgc_status s = stateCopy(e, t.name.c_str(), value.data(), value.size(), true))
      return s;
  }
  return CGC_OK;
}

} // extern "C"
