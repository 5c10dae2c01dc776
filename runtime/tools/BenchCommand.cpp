//===- BenchCommand.cpp - `cgc bench` --------------------------------------===//
//
// `bench` times back-to-back replays with CUDA events, graph vs eager
// (random inputs, or those of `--inputs FILE`), and the context's creation;
// then prints the trips each `while` ran. The timed graph replays run
// between cudaProfilerStart and cudaProfilerStop, so `ncu
// --profile-from-start off` profiles them and not engine load's product
// and convolution timing. `--print-algorithms` prints the cuBLASLt
// algorithm of each matrix product and the cuDNN engine of each
// convolution to stderr (stdout is parsed).
//
//===----------------------------------------------------------------------===//
#include "RunCommands.h"

#include "CommandSupport.h"

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace cgc::format;
using namespace cgc::tools;

namespace {

/// The stream and events of `cgc bench` (CUDA runtime API, which shares the
/// primary context with the cgc runtime), released on every path.
struct Timer {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  bool create() {
    return cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) ==
               cudaSuccess &&
           cudaEventCreate(&start) == cudaSuccess &&
           cudaEventCreate(&stop) == cudaSuccess;
  }
  ~Timer() {
    if (stream)
      cudaStreamSynchronize(stream);
    if (start)
      cudaEventDestroy(start);
    if (stop)
      cudaEventDestroy(stop);
    if (stream)
      cudaStreamDestroy(stream);
  }
};

/// Seeded values in [-2, 2] (floats; multiples of 1/8, exact in f16 and
/// bf16), [0, 4) (integers) or {0, 1} (bool), so that timings do not run
/// on the zeros of a fresh arena.
std::vector<uint8_t> randomBytes(const std::string &dtype, size_t bytes,
                                 uint64_t &state) {
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return uint32_t(state >> 33);
  };
  std::vector<uint8_t> out(bytes);
  size_t size = cgc::format::dtypeSize(dtype);
  for (size_t i = 0; size && i + size <= bytes; i += size) {
    float f = float(int(next() % 33) - 16) / 8.0f;
    uint32_t fbits, value = next() % 4;
    std::memcpy(&fbits, &f, 4);
    if (dtype == "f32")
      std::memcpy(&out[i], &f, 4);
    else if (dtype == "bf16")
      value = fbits >> 16;
    else if (dtype == "f16") // Exact for multiples of 1/8 in [-2, 2].
      value = f == 0 ? 0
                     : ((fbits >> 16) & 0x8000) |
                           ((((fbits >> 23) & 0xff) - 112) << 10) |
                           ((fbits >> 13) & 0x3ff);
    else if (dtype == "bool")
      value %= 2;
    if (dtype != "f32")
      std::memcpy(&out[i], &value, std::min<size_t>(size, 4));
  }
  return out;
}

/// Median wall time of 5 cgc_context_create calls (arena allocation, then
/// every graph built node by node, instantiated and uploaded).
cgc_status timeContextCreation(cgc_engine engine, double &ms) {
  std::vector<double> samples;
  for (int r = 0; r < 5; ++r) {
    auto start = std::chrono::steady_clock::now();
    cgc_context ctx = nullptr;
    cgc_status st = cgc_context_create(engine, nullptr, 0, &ctx);
    samples.push_back(std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count());
    cgc_context_destroy(ctx);
    if (st)
      return st;
  }
  std::sort(samples.begin(), samples.end());
  ms = samples[samples.size() / 2];
  return CGC_OK;
}

cgc_status fillRandomInputs(Session &s, const Artifact &art) {
  uint64_t state = 42;
  for (const cgc::format::TensorDesc &t : art.manifest.inputs) {
    if (t.kind == "dim_size")
      continue; // cgc_run writes it.
    std::vector<uint8_t> bytes = randomBytes(t.dtype, t.bytes, state);
    if (cgc_status st = cgc_context_write_input(s.ctx, t.name.c_str(),
                                                bytes.data(), bytes.size(),
                                                nullptr))
      return st;
  }
  return cgc_stream_synchronize(nullptr);
}

/// `cgc bench --inputs FILE`: the inputs FILE names replace the random
/// ones (static shapes only: each must fill its input exactly).
bool writeBenchInputs(Session &s, const Artifact &art, const std::string &path) {
  TensorMap inputs;
  std::string err;
  if (!readSafetensors(path, inputs, err))
    return error(err), false;
  for (const auto &[name, t] : inputs) {
    const TensorDesc *d = art.findTensor(name);
    if (!d || d->kind != "user_input")
      return error("'" + name + "' in " + path + " is not a model input"), false;
    if (t.bytes.size() != d->bytes)
      return error("input '" + name + "' needs " + std::to_string(d->bytes) +
                   " bytes, " + path + " has " + std::to_string(t.bytes.size())),
             false;
    if (cgc_status st = cgc_context_write_input(s.ctx, name.c_str(),
                                                t.bytes.data(), t.bytes.size(),
                                                nullptr))
      return runtimeError(st), false;
  }
  return true;
}

/// Each dim's value: \p given by name, the rest at their maximum.
bool dimValues(const Manifest &m,
               const std::vector<std::pair<std::string, int64_t>> &given,
               std::vector<int64_t> &dims, std::string &err) {
  dims.clear();
  for (const auto &d : m.dims)
    dims.push_back(d.max);
  for (const auto &[name, value] : given) {
    size_t k = 0;
    while (k < m.dims.size() && m.dims[k].name != name)
      ++k;
    if (k == m.dims.size())
      return err = "--dims: the artifact has no dim '" + name + "'", false;
    dims[k] = value;
  }
  return true;
}

} // namespace

int cgcBenchMain(int argc, char **argv) {
  Options o;
  if (!parseOptions(argc, argv, /*bench=*/true, o))
    return 2; // a usage mistake
  Artifact art;
  size_t graph = 0;
  if (!loadArtifact(o, art, graph))
    return 1;
  Session s;
  if (cgc_status st =
          s.open(art, o.model, o.device, o.printAlgorithms ? stderr : nullptr))
    return runtimeError(st);
  double buildMs = 0;
  if (cgc_status st = timeContextCreation(s.engine, buildMs))
    return runtimeError(st);
  if (cgc_status st = fillRandomInputs(s, art))
    return runtimeError(st);
  if (!o.inputs.empty() && !writeBenchInputs(s, art, o.inputs))
    return 1;
  const Manifest &m = art.manifest;
  std::vector<int64_t> dims, other;
  if (!o.dims.empty()) {
    std::string err;
    if (!dimValues(m, o.dims, dims, err) ||
        (o.graph.empty() && !findGraphForDims(m, dims, graph, err)))
      return error(err);
  }
  if (!o.alternateDims.empty()) {
    std::string err;
    size_t otherGraph = graph;
    if (!dimValues(m, o.alternateDims, other, err) ||
        !findGraphForDims(m, other, otherGraph, err))
      return error(err);
    if (otherGraph != graph || dims.empty())
      return error("--alternate-dims must pick the graph --dims picks");
  }
  Timer timer;
  if (!timer.create())
    return error(std::string("cannot create a stream or events: ") +
                 cudaGetErrorString(cudaGetLastError()));
  cudaStream_t stream = timer.stream;
  std::printf("graph=%s nodes=%zu iters=%ld warmup=%ld repeats=%ld\n",
              art.manifest.graphs[graph].name.c_str(),
              art.manifest.graphs[graph].nodes.size(), o.iters, o.warmup,
              o.repeats);
  std::printf("context_create_ms=%.3f\n", buildMs);
  int rc = 0;
  for (bool eager : {false, true}) {
    bool flip = false;
    auto launch = [&] {
      const std::vector<int64_t> &at = flip && !other.empty() ? other : dims;
      flip = !flip;
      return eager ? cgc_run_eager(s.ctx, graph, at.data(), at.size(), stream)
                   : cgc_run(s.ctx, graph, at.data(), at.size(), stream);
    };
    cgc_status st = CGC_OK;
    for (long i = 0; i < o.warmup && !st; ++i)
      st = launch();
    std::vector<double> samples;
    if (!eager) // A profiler started with its capture off sees these replays.
      cudaProfilerStart();
    for (long r = 0; r < o.repeats && !st; ++r) {
      cudaEventRecord(timer.start, stream);
      for (long i = 0; i < o.iters && !st; ++i)
        st = launch();
      cudaEventRecord(timer.stop, stream);
      float ms = 0;
      if (cudaEventSynchronize(timer.stop) != cudaSuccess ||
          cudaEventElapsedTime(&ms, timer.start, timer.stop) != cudaSuccess) {
        rc = error("event timing failed");
        break;
      }
      samples.push_back(1000.0 * ms / double(o.iters));
    }
    if (!eager)
      cudaProfilerStop();
    if (st) {
      rc = runtimeError(st);
      break;
    }
    if (samples.empty())
      break;
    std::sort(samples.begin(), samples.end());
    const char *mode = eager ? "eager" : "graph";
    std::printf("%s_us_per_run=%.3f\n", mode, samples[samples.size() / 2]);
    std::printf("%s_us_samples=", mode);
    for (size_t i = 0; i < samples.size(); ++i)
      std::printf("%s%.3f", i ? "," : "", samples[i]);
    std::printf("\n");
    if (cgc_status st = printLoopTrips(s, art.manifest,
                                       eager ? "eager_trips_" : "graph_trips_"))
      return runtimeError(st);
  }
  return rc;
}
