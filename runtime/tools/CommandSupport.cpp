//===- CommandSupport.cpp - What `cgc run` and `cgc bench` share ----------===//
//
// Options, the artifact checked on the CPU, the engine and context, and
// the report of loop trips (CommandSupport.h).
//
//===----------------------------------------------------------------------===//
#include "CommandSupport.h"

#include "format/WeightsFile.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>

using namespace cgc::format;

namespace cgc {
namespace tools {

int error(const std::string &msg) {
  std::fprintf(stderr, "cgc: error: %s\n", msg.c_str());
  return 1;
}

int runtimeError(cgc_status s) {
  const char *detail = cgc_last_error();
  return error(*detail ? detail : cgc_status_message(s));
}

namespace {

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

} // namespace

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

namespace {

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

/// One line per matrix product (cgc_engine_describe_product) on \p out.
cgc_status printProducts(cgc_engine engine, FILE *out) {
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

/// One line per convolution (cgc_engine_convolution_info) on \p out:
/// "convolution I node=NODE engine=ID tag=TAG workspace=USED/RESERVED
/// candidates=N cudnn=V heuristic|timed|remembered"; nothing when there are none.
cgc_status printConvolutions(cgc_engine engine, FILE *out) {
  for (size_t i = 0; i < cgc_engine_num_convolutions(engine); ++i) {
    cgc_convolution_info info;
    if (cgc_status st = cgc_engine_convolution_info(engine, i, &info))
      return st;
    std::fprintf(out,
                 "convolution %zu node=%s engine=%lld tag=%s "
                 "workspace=%llu/%llu candidates=%d cudnn=%d %s\n",
                 i, info.node, (long long)info.engine_id, info.tag,
                 (unsigned long long)info.workspace_bytes,
                 (unsigned long long)info.workspace_reserved,
                 int(info.candidates), int(info.cudnn_version),
                 info.timed == 2 ? "remembered" : info.timed ? "timed" : "heuristic");
  }
  return CGC_OK;
}

/// The library plans of the engine: its products, then its convolutions.
cgc_status printAlgorithms(cgc_engine engine, FILE *out) {
  if (cgc_status st = printProducts(engine, out))
    return st;
  return printConvolutions(engine, out);
}

} // namespace

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

cgc_status Session::open(const Artifact &a, const std::string &path, int device,
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

} // namespace tools
} // namespace cgc
