//===- CommandSupport.h - What `cgc run` and `cgc bench` share --*- C++ -*-===//
//
// The two runtime subcommands' common steps: their options, the artifact
// parsed on the CPU and its inputs checked, an engine and context opened
// (the products' algorithms and the convolutions' engines printed on
// request), the trips each `while` ran, and the error lines both print.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TOOLS_COMMANDSUPPORT_H
#define CGC_TOOLS_COMMANDSUPPORT_H

#include "format/ArtifactFormat.h"
#include "format/Safetensors.h"
#include "cgc/cgc_runtime.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace cgc {
namespace tools {

/// Prints "cgc: error: MSG"; returns the exit code 1.
int error(const std::string &msg);
/// error() with the runtime's last error (or \p s's message).
int runtimeError(cgc_status s);

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

/// Parses argv[1..] (`bench` takes its own options too); returns false
/// after printing an error.
bool parseOptions(int argc, char **argv, bool bench, Options &o);
/// Checks \p t against input \p d and records the dims it determines.
bool matchInput(const format::Manifest &m, const format::TensorDesc &d,
                const format::TensorData &t, std::vector<int64_t> &dims,
                std::vector<bool> &known);
/// Shared start of both commands: parse the artifact on the CPU.
bool loadArtifact(const Options &o, format::Artifact &a, size_t &graph);

/// An engine and its context, released on every path.
struct Session {
  cgc_engine engine = nullptr;
  cgc_context ctx = nullptr;
  ~Session() {
    cgc_context_destroy(ctx);
    cgc_engine_destroy(engine);
  }
  /// Loads the engine, prints its products' algorithms and convolutions'
  /// engines on \p algorithms (when not null) and creates a context.
  cgc_status open(const format::Artifact &a, const std::string &path, int device,
                  FILE *algorithms);
};

/// Prints how many trips each `while` ran in the last run, one line each:
/// "<prefix>NAME=N".
cgc_status printLoopTrips(Session &s, const format::Manifest &m, const char *prefix);

} // namespace tools
} // namespace cgc

#endif // CGC_TOOLS_COMMANDSUPPORT_H
