//===- RunCommands.cpp - `cgc run` and `cgc bench` -----------------------===//
//
// `run` checks everything it can on the CPU first (artifact, input file,
// output path), then loads the engine, copies inputs in (zero-padded to the
// static shapes), replays one graph and writes the real-shaped outputs.
// `bench` times back-to-back replays with CUDA events, graph vs eager
// (random inputs, or those of `--inputs FILE`). Both print the trips each
// `while` ran in the last run. The timed graph replays run between
// cudaProfilerStart and cudaProfilerStop, so `ncu --profile-from-start off`
// profiles them and not engine load's product timing.
// `--print-algorithms` prints the cuBLASLt algorithm of each matrix product
// once the engine is loaded (to stderr for `bench`, whose stdout is parsed).
//
//===----------------------------------------------------------------------===//
#include "RunCommands.h"

#include "format/ArtifactFormat.h"
#include "format/Safetensors.h"
#include "format/WeightsFile.h"
#include "cgc/cgc_runtime.h"

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace cgc::format;

namespace {

int error(const std::string &msg) {
  std::fprintf(stderr, "cgc: error: %s\n", msg.c_str());
  return 1;
}

int runtimeError(cgc_status s) {
  const char *detail = cgc_last_error();
  return error(*detail ? detail : cgc_status_message(s));
}

struct Options {
  std::string model, inputs, outputs, graph;
  /// bench --dims B=5,S=100: the dim values to run (padded artifacts: any
  /// size up to the largest bucket; the graph is the smallest that fits).
  std::vector<std::pair<std::string, int64_t>> dims;
  /// bench --alternate-dims B=7: every other replay runs at these values
  /// instead (the same graph), so each replay writes new real dims.
  std::vector<std::pair<std::string, int64_t>> alternateDims;
  bool overwrite = false, eager = false, printAlgorithms = false;
  int device = 0;
  long iters = 1000, warmup = 100, repeats = 5;
  long steps = 1; ///< run: replays (a training step's updates carry over).
};

bool parseLong(const char *s, long &out) {
  char *end = nullptr;
  out = std::strtol(s, &end, 10);
  return end && *end == 0 && out >= 0;
}

/// "B=5,S=100" into \p out; an error naming \p flag otherwise.
bool parseDimList(const std::string &flag, const std::string &list,
                  std::vector<std::pair<std::string, int64_t>> &out) {
  for (size_t at = 0; at < list.size();) {
    size_t end = std::min(list.find(',', at), list.size());
    std::string item = list.substr(at, end - at);
    size_t eq = item.find('=');
    long n = 0;
    if (eq == std::string::npos || !parseLong(item.c_str() + eq + 1, n))
      return error(flag + " takes NAME=V,..., not '" + list + "'"), false;
    out.push_back({item.substr(0, eq), n});
    at = end + 1;
  }
  return true;
}

/// Parses argv[1..]; returns false after printing an error.
bool parseOptions(int argc, char **argv, bool bench, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char *what) -> const char * {
      if (i + 1 >= argc) {
        error("missing value after " + a + " (" + what + ")");
        return nullptr;
      }
      return argv[++i];
    };
    const char *v = nullptr;
    long n = 0;
    if (a == "--inputs") {
      if (!(v = value("file")))
        return false;
      o.inputs = v;
    } else if (!bench && a == "--outputs") {
      if (!(v = value("file")))
        return false;
      o.outputs = v;
    } else if (!bench && a == "--overwrite") {
      o.overwrite = true;
    } else if (!bench && a == "--eager") {
      o.eager = true;
    } else if (a == "--print-algorithms") {
      o.printAlgorithms = true;
    } else if (bench && (a == "--dims" || a == "--alternate-dims")) {
      if (!(v = value("NAME=V,...")) ||
          !parseDimList(a, v, a == "--dims" ? o.dims : o.alternateDims))
        return false;
    } else if (a == "--graph") {
      if (!(v = value("name or index")))
        return false;
      o.graph = v;
    } else if (!bench && a == "--steps") {
      if (!(v = value("integer")))
        return false;
      if (!parseLong(v, n) || n < 1)
        return error("--steps needs a positive integer, not '" + std::string(v) + "'"), false;
      o.steps = n;
    } else if (a == "--device" || (bench && (a == "--iters" ||
                                             a == "--warmup" ||
                                             a == "--repeats"))) {
      if (!(v = value("integer")))
        return false;
      if (!parseLong(v, n))
        return error("bad integer '" + std::string(v) + "' for " + a), false;
      if (a == "--device")
        o.device = int(n);
      else if (a == "--iters")
        o.iters = n;
      else if (a == "--warmup")
        o.warmup = n;
      else
        o.repeats = n;
    } else if (!a.empty() && a[0] != '-' && o.model.empty()) {
      o.model = a;
    } else {
      return error("unknown argument '" + a + "'"), false;
    }
  }
  if (o.model.empty())
    return error("no model (.cgc) given"), false;
  if (bench && (o.iters == 0 || o.repeats == 0))
    return error("--iters and --repeats must be positive"), false;
  return true;
}

bool selectGraph(const Artifact &a, const std::string &g, size_t &index) {
  const auto &graphs = a.manifest.graphs;
  if (graphs.empty())
    return error("artifact has no graphs"), false;
  if (g.empty())
    return (index = 0), true;
  for (size_t i = 0; i < graphs.size(); ++i)
    if (graphs[i].name == g)
      return (index = i), true;
  long n;
  if (parseLong(g.c_str(), n) && size_t(n) < graphs.size())
    return (index = size_t(n)), true;
  return error("no graph '" + g + "' in the artifact"), false;
}

/// Checks \p t against input \p d and records the dims it determines.
bool matchInput(const Manifest &m, const TensorDesc &d, const TensorData &t,
                std::vector<int64_t> &dims, std::vector<bool> &known) {
  if (fromSafetensorsDtype(t.dtype) != d.dtype)
    return error("input '" + d.name + "' has dtype " + t.dtype +
                 ", the model expects " + toSafetensorsDtype(d.dtype)),
           false;
  if (t.shape.size() != d.shape.size())
    return error("input '" + d.name + "' has rank " +
                 std::to_string(t.shape.size()) + ", the model expects " +
                 std::to_string(d.shape.size())),
           false;
  for (size_t a = 0; a < d.shape.size(); ++a) {
    std::string dim = a < d.shapeDims.size() ? d.shapeDims[a] : "";
    std::string where = "input '" + d.name + "' axis " + std::to_string(a);
    if (dim.empty()) {
      if (t.shape[a] != d.shape[a])
        return error(where + " is " + std::to_string(t.shape[a]) +
                     ", the model expects " + std::to_string(d.shape[a])),
               false;
      continue;
    }
    for (size_t k = 0; k < m.dims.size(); ++k) {
      if (m.dims[k].name != dim)
        continue;
      if (t.shape[a] < m.dims[k].min || t.shape[a] > m.dims[k].max)
        return error(where + " (dim " + dim + ") = " +
                     std::to_string(t.shape[a]) + " is outside [" +
                     std::to_string(m.dims[k].min) + ", " +
                     std::to_string(m.dims[k].max) + "]"),
               false;
      if (known[k] && dims[k] != t.shape[a])
        return error(where + ": dim " + dim + " is " +
                     std::to_string(t.shape[a]) + " here but " +
                     std::to_string(dims[k]) + " elsewhere"),
               false;
      dims[k] = t.shape[a];
      known[k] = true;
    }
  }
  return true;
}

/// Shared start of both commands: parse the artifact on the CPU.
bool loadArtifact(const Options &o, Artifact &a, size_t &graph) {
  std::string err;
  if (!loadArtifactFile(o.model, a, err))
    return error(err), false;
  return selectGraph(a, o.graph, graph);
}

/// One line per matrix product (cgc_engine_describe_product) on \p out.
cgc_status printAlgorithms(cgc_engine engine, FILE *out) {
  size_t n = cgc_engine_num_products(engine);
  if (n == 0)
    std::fprintf(out, "no matrix products\n");
  for (size_t i = 0; i < n; ++i) {
    std::vector<char> line(512);
    cgc_status st = cgc_engine_describe_product(engine, i, line.data(),
                                                line.size());
    if (st == CGC_ERROR_INVALID_ARGUMENT) { // Too long: a long node name.
      line.resize(1 << 16);
      st = cgc_engine_describe_product(engine, i, line.data(), line.size());
    }
    if (st)
      return st;
    std::fprintf(out, "%s\n", line.data());
  }
  return CGC_OK;
}

struct Session {
  cgc_engine engine = nullptr;
  cgc_context ctx = nullptr;
  ~Session() {
    cgc_context_destroy(ctx);
    cgc_engine_destroy(engine);
  }
  /// Loads the engine, prints its products' algorithms on \p algorithms
  /// (when not null) and creates a context.
  cgc_status open(const Artifact &a, const std::string &path, int device,
                  FILE *algorithms) {
    const std::string &weights = a.manifest.weightsFile.path;
    cgc_status s =
        weights.empty()
            ? cgc_engine_load_memory(a.bytes.data(), a.bytes.size(), device,
                                     &engine)
            : cgc_engine_load_memory_weights(
                  a.bytes.data(), a.bytes.size(),
                  cgc::format::weightsPathBeside(path, weights).c_str(),
                  device, &engine);
    if (s)
      return s;
    if (algorithms)
      if (cgc_status s = printAlgorithms(engine, algorithms))
        return s;
    return cgc_context_create(engine, nullptr, 0, &ctx);
  }
};

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

/// Prints how many trips each `while` ran in the last run, one line each:
/// "<prefix>NAME=N".
cgc_status printLoopTrips(Session &s, const Manifest &m, const char *prefix) {
  for (const NodeDesc *n : whileNodes(m)) {
    uint32_t trips = 0;
    if (cgc_status st =
            cgc_context_loop_trips(s.ctx, n->loop.c_str(), &trips, nullptr))
      return st;
    std::printf("%s%s=%u\n", prefix, n->loop.c_str(), trips);
  }
  return CGC_OK;
}

} // namespace

int cgcRunMain(int argc, char **argv) {
  Options o;
  if (!parseOptions(argc, argv, /*bench=*/false, o))
    return 2; // a usage mistake
  if (o.inputs.empty() || o.outputs.empty()) {
    error("cgc run needs --inputs FILE and --outputs FILE");
    return 2;
  }
  std::error_code ec;
  if (!o.overwrite && std::filesystem::exists(o.outputs, ec))
    return error("'" + o.outputs +
                 "' already exists (pass --overwrite to replace it)");
  Artifact art;
  size_t graph = 0;
  if (!loadArtifact(o, art, graph))
    return 1;
  const Manifest &m = art.manifest;
  TensorMap inputs;
  std::string err;
  if (!readSafetensors(o.inputs, inputs, err))
    return error(err);
  std::vector<int64_t> dims(m.dims.size());
  std::vector<bool> known(m.dims.size(), false);
  for (size_t k = 0; k < m.dims.size(); ++k)
    dims[k] = m.dims[k].max;
  for (const TensorDesc &d : m.inputs) {
    if (d.kind == "dim_size")
      continue; // cgc_run writes the real dims there.
    auto it = inputs.find(d.name);
    if (it == inputs.end())
      return error("input '" + d.name + "' is missing from " + o.inputs);
    if (!matchInput(m, d, it->second, dims, known))
      return 1;
  }
  if (o.graph.empty() && !findGraphForDims(m, dims, graph, err))
    return error(err);
  std::vector<const TensorDesc *> stateWrites;
  for (const auto &kv : inputs) {
    const TensorDesc *t = art.findTensor(kv.first);
    bool isInput = false;
    for (const TensorDesc &d : m.inputs)
      isInput |= d.name == kv.first;
    if (isInput)
      continue;
    if (!t || t->kind == "output" ||
        std::find_if(m.state.begin(), m.state.end(), [&](const TensorDesc &s) {
          return s.name == kv.first;
        }) == m.state.end())
      return error("'" + kv.first + "' in " + o.inputs +
                   " is neither a model input nor a state tensor");
    if (kv.second.bytes.size() != t->bytes)
      return error("state '" + t->name + "' needs " +
                   std::to_string(t->bytes) + " bytes");
    stateWrites.push_back(t);
  }

  Session s;
  if (cgc_status st =
          s.open(art, o.model, o.device, o.printAlgorithms ? stdout : nullptr))
    return runtimeError(st);
  for (const TensorDesc *t : stateWrites)
    if (cgc_status st = cgc_engine_state_write(
            s.engine, t->name.c_str(), inputs[t->name].bytes.data(), t->bytes))
      return runtimeError(st);
  for (const TensorDesc &d : m.inputs) {
    if (d.kind == "dim_size")
      continue;
    // The real elements, contiguous: a padded artifact's graphs read them
    // from the front (or its runtime moves them into the padded layout).
    const TensorData &t = inputs[d.name];
    if (cgc_status st = cgc_context_write_input(
            s.ctx, d.name.c_str(), t.bytes.data(), t.bytes.size(), nullptr))
      return runtimeError(st);
  }
  cgc_status st = CGC_OK;
  for (long step = 0; step < o.steps && !st; ++step)
    st = o.eager ? cgc_run_eager(s.ctx, graph, dims.data(), dims.size(), nullptr)
                 : cgc_run(s.ctx, graph, dims.data(), dims.size(), nullptr);
  if (st || (st = cgc_stream_synchronize(nullptr)) ||
      (st = printLoopTrips(s, m, "trips: ")))
    return runtimeError(st);
  TensorMap outputs;
  for (const TensorDesc &d : m.outputs) {
    cgc_tensor view;
    if ((st = cgc_context_output(s.ctx, d.name.c_str(), &view)))
      return runtimeError(st);
    TensorData &out = outputs[d.name];
    out.dtype = toSafetensorsDtype(d.dtype);
    out.shape.assign(view.shape, view.shape + view.ndim);
    size_t numel = 1;
    for (int64_t x : out.shape)
      numel *= size_t(x);
    out.bytes.assign(numel * dtypeSize(d.dtype), 0);
    if (!out.bytes.empty() &&
        (st = cgc_context_read_output(s.ctx, d.name.c_str(), out.bytes.data(),
                                      out.bytes.size(), nullptr)))
      return runtimeError(st);
  }
  if (!writeSafetensors(o.outputs, outputs, err, o.overwrite))
    return error(err);
  return 0;
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
