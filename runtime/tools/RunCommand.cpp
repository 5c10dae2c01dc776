//===- RunCommand.cpp - `cgc run` ------------------------------------------===//
//
// `run` checks everything it can on the CPU first (artifact, input file,
// output path), then loads the engine, copies inputs in (zero-padded to the
// static shapes), replays one graph and writes the real-shaped outputs,
// then prints the trips each `while` ran. `--print-algorithms` prints the
// cuBLASLt algorithm of each matrix product and the cuDNN engine of each
// convolution once the engine is loaded.
//
//===----------------------------------------------------------------------===//
#include "RunCommands.h"

#include "CommandSupport.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace cgc::format;
using namespace cgc::tools;

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
  for (const TensorDesc *t : stateWrites) {
    // Per-context state (region arena) is the context's.
    const void *bytes = inputs[t->name].bytes.data();
    cgc_status st = t->region == cgc::format::Region::Arena
                        ? cgc_context_state_write(s.ctx, t->name.c_str(), bytes, t->bytes)
                        : cgc_engine_state_write(s.engine, t->name.c_str(), bytes, t->bytes);
    if (st)
      return runtimeError(st);
  }
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
