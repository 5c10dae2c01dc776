//===- JsonReader.cpp - Files, graphs and signatures ------------------------===//
//
// Reading goes: load the file (size, directory and existence checks), scan
// it (syntax, nesting, duplicate keys, number range, offsets), parse it with
// nlohmann_json, then build the graph: header fields, dims, inputs and
// outputs (SignatureReader.cpp), nodes (NodeReader.cpp), and finally the
// weights check. Field checks and regions are in ReaderContext.cpp.
//
//===----------------------------------------------------------------------===//
#include "ir/JsonReader.h"
#include "ir/GraphReader.h"

#include "format/Permutation.h"

#include "ir/ReaderContext.h"
#include "format/Safetensors.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace cgc;


bool GraphReader::readHeader(const Json &top, Graph &g) {
  static const llvm::StringRef fields[] = {
      "format_version", "name", "doc", "dims", "weights_file",
      "source_names", "optimizer", "inputs", "nodes", "outputs", "entries"};
  if (!ctx.checkFields(top, "", fields,
                       {"format_version", "name", "inputs", "nodes", "outputs"},
                       "graph"))
    return false;
  const Json &version = top["format_version"];
  if (!version.is_number_integer() || version.get<int64_t>() != 1) {
    ctx.error("/format_version", "unsupported format_version " +
                                     quoteName(version.dump()) +
                                     "; this cgc reads version 1");
    return false;
  }
  if (!ctx.readName(top["name"], "/name", "graph name", g.name))
    return false;
  if (top.contains("doc") && !top["doc"].is_string()) {
    ctx.error("/doc", "graph: 'doc' must be a string");
    return false;
  }
  g.doc = top.value("doc", "");
  if (top.contains("optimizer")) {
    OptimizerDecl decl;
    if (!readOptimizer(ctx, top["optimizer"], decl))
      return false;
    g.optimizer = decl;
  }
  if (top.contains("weights_file")) {
    const Json &w = top["weights_file"];
    if (!w.is_string() || w.get<std::string>().empty()) {
      ctx.error("/weights_file", "graph: 'weights_file' must be a path");
      return false;
    }
    g.weightsFile = w.get<std::string>();
    llvm::SmallString<256> path(baseDir);
    llvm::sys::path::append(path, g.weightsFile);
    g.weightsPath = std::string(path);
  }
  return true;
}

bool GraphReader::readDim(const Json &j, const std::string &p, Graph &g) {
  if (!ctx.expectObject(j, p, "a dim") ||
      !ctx.checkFields(j, p, {"name", "min", "max", "buckets"}, {"name", "max"},
                       "dim"))
    return false;
  SymbolicDim dim;
  if (!ctx.readName(j["name"], p + "/name", "dim name", dim.name))
    return false;
  std::string what = "dim '" + dim.name + "'";
  if (g.dims().lookup(dim.name)) {
    ctx.error(p + "/name", what + " is declared twice");
    return false;
  }
  for (const char *key : {"min", "max"}) {
    if (!j.contains(key))
      continue;
    const Json &v = j[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
        v.get<int64_t>() > (int64_t(1) << 40)) {
      ctx.error(p + "/" + key, what + ": '" + key +
                                   "' must be an integer in [0, 2^40]");
      return false;
    }
    (std::string(key) == "min" ? dim.min : dim.max) = v.get<int64_t>();
  }
  if (dim.max < dim.min) {
    ctx.error(p + "/max", what + ": max " + std::to_string(dim.max) +
                              " is below min " + std::to_string(dim.min));
    return false;
  }
  if (j.contains("buckets")) {
    const Json &b = j["buckets"];
    int64_t previous = dim.min - 1;
    for (size_t i = 0; b.is_array() && i < b.size(); ++i) {
      if (!b[i].is_number_integer() || b[i].get<int64_t>() <= previous ||
          b[i].get<int64_t>() > dim.max) {
        ctx.error(p + "/buckets/" + std::to_string(i),
                  what + ": buckets must increase within [min, max]");
        return false;
      }
      previous = b[i].get<int64_t>();
      dim.buckets.push_back(previous);
    }
    if (!b.is_array() || dim.buckets.empty() || dim.buckets.back() != dim.max) {
      ctx.error(p + "/buckets",
                what + ": buckets must be a non-empty list ending at max " +
                    std::to_string(dim.max));
      return false;
    }
  }
  g.dims().add(std::move(dim));
  return true;
}

bool GraphReader::readDims(const Json &j, Graph &g) {
  if (!j.is_array()) {
    ctx.error("/dims", "graph: 'dims' must be an array");
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < j.size(); ++i)
    ok &= readDim(j[i], "/dims/" + std::to_string(i), g);
  return ok;
}

static std::string safetensorsDType(DType d) {
  return format::toSafetensorsDtype(dtypeName(d).str());
}

bool GraphReader::checkWeights(Graph &g) {
  bool needed = llvm::any_of(g.inputs(), [](const GraphInput &in) {
    return in.init.source == Initializer::Source::Weights;
  });
  if (!needed)
    return true;
  if (g.weightsFile.empty()) {
    ctx.error("", "graph '" + g.name + "': inputs name a 'weight' but the "
                  "graph has no 'weights_file'");
    return false;
  }
  if (!options.checkWeights)
    return true;
  // Only the header is read: the file may be larger than any file cgc
  // reads whole (its weights then stay beside the artifact).
  format::SafetensorsIndex index;
  std::string error;
  if (!format::indexSafetensorsFile(g.weightsPath, index, error)) {
    ctx.error("/weights_file", "cannot read weights file '" + g.weightsFile +
                                   "': " + error);
    return false;
  }
  const auto &tensors = index.tensors;
  bool ok = true;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const GraphInput &in = g.inputs()[i];
    if (in.init.source != Initializer::Source::Weights)
      continue;
    std::string p = "/inputs/" + std::to_string(i) + "/weight";
    std::string what = "input '" + in.value->getName() + "'";
    auto it = tensors.find(in.init.tensor);
    if (it == tensors.end()) {
      ctx.error(p, what + ": tensor '" + in.init.tensor + "' is not in '" +
                       g.weightsFile + "'");
      ok = false;
      continue;
    }
    const TensorType &type = in.value->getType();
    std::vector<int64_t> shape;
    for (Dim d : type.dims)
      shape.push_back(d.extent());
    if (!in.init.permutation.empty())
      shape = format::storedDims(shape, in.init.permutation);
    if (it->second.dtype != safetensorsDType(type.dtype) ||
        it->second.shape != shape) {
      std::string got = format::fromSafetensorsDtype(it->second.dtype) + "[";
      for (size_t k = 0; k < it->second.shape.size(); ++k)
        got += (k ? "," : "") + std::to_string(it->second.shape[k]);
      ctx.error(p, what + " is " + typeToString(type, g.dims()) +
                       " but tensor '" + in.init.tensor + "' in '" +
                       g.weightsFile + "' is " + got + "]");
      ok = false;
    }
  }
  return ok;
}

/// "source_names": {IR name: the name in the imported model}, for inputs
/// and outputs an importer renamed (kept in the artifact's manifest).
bool GraphReader::readSourceNames(const Json &j, Graph &g) {
  if (!ctx.expectObject(j, "/source_names", "'source_names'"))
    return false;
  for (const auto &item : j.items()) {
    const std::string &name = item.key();
    const Json &source = item.value();
    std::string p = "/source_names/" + name;
    bool known = llvm::any_of(g.inputs(), [&](const GraphInput &in) {
                   return in.value->getName() == name;
                 }) ||
                 llvm::any_of(g.outputs, [&](const GraphOutput &out) {
                   return out.name == name;
                 });
    if (!known) {
      ctx.error(p, "source_names: " + quoteName(name) +
                       " is no input or output of the graph");
      return false;
    }
    if (!source.is_string() || source.get<std::string>().empty() ||
        source.get<std::string>().size() > 4096) {
      ctx.error(p, "source_names: the source name of " + quoteName(name) +
                       " must be a string of 1 to 4096 bytes");
      return false;
    }
    g.sourceNames[name] = source.get<std::string>();
  }
  return true;
}

std::unique_ptr<Graph> GraphReader::read(const Json &top) {
  if (!ctx.expectObject(top, "", "the graph"))
    return nullptr;
  auto g = std::make_unique<Graph>();
  if (!readHeader(top, *g))
    return nullptr;
  if (top.contains("dims") && !readDims(top["dims"], *g))
    return nullptr;
  if (!readInputs(top["inputs"], *g))
    return nullptr;
  if (!top["nodes"].is_array()) {
    ctx.error("/nodes", "graph: 'nodes' must be an array");
    return nullptr;
  }
  if (!readNodes(ctx, top["nodes"], "/nodes", *g))
    return nullptr;
  if (!readOutputs(top["outputs"], *g) || !checkWeights(*g))
    return nullptr;
  if (top.contains("source_names") && !readSourceNames(top["source_names"], *g))
    return nullptr;
  if (top.contains("entries") && !readEntries(top, *g))
    return nullptr;
  return g;
}

/// "entries": the artifact's further top-level graphs (Graph::entries),
/// each {"name", "nodes", "outputs"} over the model's own inputs (read
/// again from its "dims" and "inputs"), its outputs the model's.
bool GraphReader::readEntries(const Json &top, Graph &main) {
  const Json &list = top["entries"];
  if (!list.is_array()) {
    ctx.error("/entries", "graph: 'entries' must be an array");
    return false;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    std::string p = "/entries/" + std::to_string(i);
    const Json &j = list[i];
    if (!ctx.expectObject(j, p, "an entry") ||
        !ctx.checkFields(j, p, {"name", "nodes", "outputs"},
                         {"name", "nodes", "outputs"}, "entry"))
      return false;
    auto entry = std::make_unique<Graph>();
    if (!ctx.readName(j["name"], p + "/name", "entry name", entry->name))
      return false;
    bool taken = entry->name == "main" ||
                 llvm::any_of(main.entries, [&](const auto &e) {
                   return e->name == entry->name;
                 });
    if (taken) {
      ctx.error(p + "/name", "entry name '" + entry->name +
                                 "' is taken: each entry needs a name of its "
                                 "own, other than \"main\" (the model's graph)");
      return false;
    }
    entry->weightsFile = main.weightsFile;
    entry->weightsPath = main.weightsPath;
    if (top.contains("dims") && !readDims(top["dims"], *entry))
      return false;
    if (!readInputs(top["inputs"], *entry))
      return false;
    if (!j["nodes"].is_array()) {
      ctx.error(p + "/nodes", "entry: 'nodes' must be an array");
      return false;
    }
    if (!readNodes(ctx, j["nodes"], p + "/nodes", *entry) ||
        !readOutputs(j["outputs"], *entry, p) || !matchSignature(*entry, main, p))
      return false;
    main.entries.push_back(std::move(entry));
  }
  return true;
}

/// An entry's outputs are the model's: the same names, kinds, targets and
/// types in the same order (the graphs share every slot and state tensor).
bool GraphReader::matchSignature(const Graph &entry, const Graph &main,
                                 const std::string &at) {
  auto describe = [](const Graph &g, size_t i) {
    if (i >= g.outputs.size())
      return std::string("nothing");
    const GraphOutput &o = g.outputs[i];
    return "'" + o.name + "' (" + outputKindName(o.kind).str() +
           (o.target.empty() ? "" : " of '" + o.target + "'") + ", " +
           typeToString(o.value->getType(), g.dims()) + ")";
  };
  for (size_t i = 0; i < std::max(entry.outputs.size(), main.outputs.size()); ++i) {
    std::string here = describe(entry, i), there = describe(main, i);
    if (here == there)
      continue;
    std::string p = at + "/outputs";
    if (i < entry.outputs.size())
      p += "/" + std::to_string(i);
    ctx.error(p, "entry '" + entry.name + "': output " + std::to_string(i) + " is " +
                     here + " where graph '" + main.name + "' has " + there +
                     "; an entry gives the graph's outputs, in its order");
    return false;
  }
  return true;
}


std::unique_ptr<Graph> cgc::readGraphBuffer(uint32_t bufferId,
                                            llvm::StringRef baseDir,
                                            DiagnosticEngine &diag,
                                            const ReadOptions &options) {
  ReaderContext ctx{diag, bufferId, {}};
  llvm::StringRef text = diag.bufferText(bufferId);
  if (auto syntax = scanJson(text, options.allowComments, options.maxDepth,
                             options.maxValues, ctx.offsets)) {
    diag.error({bufferId, syntax->offset}, syntax->message);
    if (syntax->previousOffset != UINT32_MAX)
      diag.note({bufferId, syntax->previousOffset}, "previous key is here");
    return nullptr;
  }
  Json top;
  try {
    top = Json::parse(text.begin(), text.end(), nullptr,
                      /*allow_exceptions=*/true, options.allowComments);
  } catch (const Json::parse_error &e) {
    uint32_t offset = e.byte > 0 ? uint32_t(e.byte - 1) : 0;
    std::string what = e.what();
    diag.error({bufferId, offset}, "invalid JSON: " +
                                       what.substr(what.find(':') + 2));
    return nullptr;
  } catch (const Json::exception &e) {
    diag.error({bufferId, 0}, std::string("invalid JSON: ") + e.what());
    return nullptr;
  }
  return GraphReader(ctx, baseDir, options).read(top);
}

std::unique_ptr<llvm::MemoryBuffer>
cgc::readIRFile(llvm::StringRef path, DiagnosticEngine &diag,
                const ReadOptions &options) {
  if (path != "-") {
    llvm::sys::fs::file_status status;
    if (std::error_code ec = llvm::sys::fs::status(path, status)) {
      diag.fileError(path, "cannot open: " + ec.message());
      return nullptr;
    }
    if (status.type() == llvm::sys::fs::file_type::directory_file) {
      diag.fileError(path, "is a directory, not an IR file");
      return nullptr;
    }
    if (status.type() != llvm::sys::fs::file_type::regular_file) {
      diag.fileError(path, "is not a regular file; only regular files (or "
                           "'-' for standard input) are read");
      return nullptr;
    }
    if (status.getSize() > options.maxFileBytes) {
      diag.fileError(path, "file is " + llvm::Twine(status.getSize()) +
                               " bytes; the limit is " +
                               llvm::Twine(options.maxFileBytes));
      return nullptr;
    }
  }
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false,
                                                   /*RequiresNullTerminator=*/false);
  if (!buffer) {
    diag.fileError(path, "cannot read: " + buffer.getError().message());
    return nullptr;
  }
  if ((*buffer)->getBufferSize() > options.maxFileBytes) {
    diag.fileError(path, "input exceeds " + llvm::Twine(options.maxFileBytes) +
                             " bytes");
    return nullptr;
  }
  return std::move(*buffer);
}

std::unique_ptr<Graph> cgc::readGraphFile(llvm::StringRef path,
                                          DiagnosticEngine &diag,
                                          const ReadOptions &options) {
  std::unique_ptr<llvm::MemoryBuffer> buffer = readIRFile(path, diag, options);
  if (!buffer)
    return nullptr;
  uint32_t id = diag.addBuffer(std::move(buffer));
  llvm::StringRef dir = path == "-" ? "." : llvm::sys::path::parent_path(path);
  return readGraphBuffer(id, dir.empty() ? "." : dir, diag, options);
}
