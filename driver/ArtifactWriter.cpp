//===- ArtifactWriter.cpp - Filling the manifest -----------------------------===//
//
// Inputs, outputs and state are described from the model (shapes at their
// largest, symbolic axes named) and take their storage from the memory
// plan of the first graph; every graph of the artifact shares those slots
// (checked here). Each kernel's pointer parameters carry the region,
// offset and binding (the graph input or output whose slot it is) that
// lowering resolved. Initial values of state (parameters from their
// initializers or weights file, constant tensors from their attribute) are
// packed into the "weights" blob at 256-byte-aligned offsets, except state
// of zeros (which the runtime zeroes: no bytes) and the
// weights read from the IR's weights file when they stay beside the
// artifact (`--weights-beside`, or when the state would pass the limit an
// artifact carries): then the manifest names that file (relative to the
// artifact's folder, with its size and content hash) and each such state
// tensor its offset there; the file is indexed and hashed, never copied.
// Nothing
// depends on time or addresses, so the same model and options give the
// same bytes.
//
// The writer is the driver's last step (it reads the driver's Compilation
// and CompileOptions: the graphs, their memory plans, the bound dims and
// largestExtent), so it lives in driver/; codegen/ includes nothing from
// driver/.
//
//===----------------------------------------------------------------------===//
#include "driver/Compiler.h"

#include "format/ArtifactFormat.h"
#include "ir/Initializers.h"
#include "format/WeightsFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <set>

using namespace cgc;
namespace fmt = cgc::format;

static fmt::Region regionOf(const Storage &s) {
  switch (s.region) {
  case Storage::Region::Arena: return fmt::Region::Arena;
  case Storage::Region::Persistent: return fmt::Region::Persistent;
  }
  llvm_unreachable("a Storage::Region value");
}

/// The name a caller may bind at \p s (none for zero bytes: nothing to
/// rebind, and the validator refuses a binding into an empty tensor).
static std::string bindingOf(const Storage &s) {
  return s.bytes ? s.binding : "";
}

namespace {
class ManifestBuilder {
public:
  ManifestBuilder(const Graph &model, const Compilation &compilation,
                  const CompileOptions &options, DiagnosticEngine &diag)
      : model(model), compilation(compilation), options(options),
        first(*compilation.graphs.front().plan), diag(diag) {}
  bool build(fmt::Manifest &m, std::vector<uint8_t> &weights);

private:
  fmt::TensorDesc tensorDesc(const std::string &name, llvm::StringRef kind,
                             const Value *v, const Storage &s) const;
  void addDims(fmt::Manifest &m) const;
  bool addInputs(fmt::Manifest &m, std::vector<uint8_t> &weights);
  bool staysBeside(const GraphInput &in) const;
  uint64_t stateBytes(bool fromWeightsFile) const;
  bool placeWeights(fmt::Manifest &m);
  bool referToWeights(const GraphInput &in, fmt::TensorDesc &t);
  void addConstants(fmt::Manifest &m, std::vector<uint8_t> &weights) const;
  void addOutputs(fmt::Manifest &m) const;
  void addKernels(fmt::Manifest &m) const;
  void addProducts(fmt::Manifest &m) const;
  void addConvolutions(fmt::Manifest &m) const;
  void addCollectives(fmt::Manifest &m) const;
  void reportDuplicateName(const std::string &name) const;
  fmt::GraphDesc graphDesc(const StepGraph &g) const;

  const Graph &model;
  const Compilation &compilation;
  const CompileOptions &options;
  const MemoryPlan &first;
  DiagnosticEngine &diag;
  format::TensorMap weightsCache;
  /// The weights file's header, when its weights stay beside the artifact.
  format::SafetensorsIndex besideIndex;
  bool beside = false;
  /// Bytes of the initial values the artifact carries (placeWeights).
  uint64_t carriedBytes = 0;
};
} // namespace

/// The path of \p target relative to the folder \p dir, or "" when
/// \p target is not inside it (both made absolute, without dots).
static std::string pathInside(llvm::StringRef dir, llvm::StringRef target) {
  llvm::SmallString<256> d(dir), t(target);
  if (llvm::sys::fs::make_absolute(d) || llvm::sys::fs::make_absolute(t))
    return "";
  llvm::sys::path::remove_dots(d, /*remove_dot_dot=*/true);
  llvm::sys::path::remove_dots(t, /*remove_dot_dot=*/true);
  std::string prefix = std::string(d.str());
  if (prefix.empty() || prefix.back() != '/')
    prefix += '/';
  if (!llvm::StringRef(t).startswith(prefix))
    return "";
  return std::string(llvm::StringRef(t).drop_front(prefix.size()));
}

/// A state tensor from the weights file that may stay there: its bytes in
/// the file are the tensor's as the device holds it (same dtype, checked by
/// the IR reader), except bool, which the artifact normalizes to 0 and 1.
bool ManifestBuilder::staysBeside(const GraphInput &in) const {
  return isPersistent(in.kind) &&
         in.init.source == Initializer::Source::Weights &&
         in.value->getType().dtype != DType::Bool;
}

/// Bytes of the initial values of the state that may stay in the weights
/// file (\p fromWeightsFile) or must be in the artifact (the rest:
/// seeded initializers, bool weights, constant data).
uint64_t ManifestBuilder::stateBytes(bool fromWeightsFile) const {
  uint64_t total = 0;
  auto bytesOf = [&](const Value *v) {
    return uint64_t(v->getType().maxElements(model.dims())) *
           dtypeSize(v->getType().dtype);
  };
  for (const GraphInput &in : model.inputs())
    if (isPersistent(in.kind) && in.init.source != Initializer::Source::None &&
        !in.init.zeroedByRuntime() && staysBeside(in) == fromWeightsFile)
      total += bytesOf(in.value);
  if (!fromWeightsFile)
    for (const CompiledGraph &g : compilation.graphs)
      for (const Node *n : g.plan->constantData)
        total += bytesOf(n->result());
  return total;
}

/// Decides whether the weights stay beside the artifact and, if so, names
/// the file in \p m (its path relative to the artifact's folder, size and
/// content hash).
bool ManifestBuilder::placeWeights(fmt::Manifest &m) {
  uint64_t file = stateBytes(true), carried = stateBytes(false);
  uint64_t limit = options.artifactStateLimit;
  beside = file && (options.weightsBeside || file + carried > limit);
  carriedBytes = beside ? carried : file + carried;
  if (carriedBytes > limit) {
    diag.error({}, "the artifact would carry " + std::to_string(carriedBytes) +
                       " bytes of initial state; it holds at most " +
                       std::to_string(limit) +
                       (beside ? " (the weights file's tensors stay beside "
                                 "it; these are initializers and constants)"
                               : ""));
    return false;
  }
  if (!beside)
    return true;
  const Graph &root = model.root();
  auto refuse = [&](const std::string &why) {
    diag.error({}, "the weights (" + std::to_string(file) +
                       " bytes) stay beside the artifact" +
                       (options.weightsBeside ? "" : " (more than the " +
                        std::to_string(limit) + " bytes an artifact holds)") +
                       ", but " + why);
    return false;
  };
  if (options.artifactPath.empty())
    return refuse("the artifact has no path (-o)");
  llvm::SmallString<256> dir(options.artifactPath);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  std::string relative = pathInside(dir, root.weightsPath);
  std::string why;
  if (relative.empty() || !fmt::isSafeWeightsPath(relative, why))
    return refuse("the weights file '" + root.weightsPath +
                  "' is not in the artifact's folder '" + std::string(dir) +
                  "' or below it: write the artifact beside it");
  std::string error;
  fmt::MappedWeights mapped;
  if (!fmt::indexSafetensorsFile(root.weightsPath, besideIndex, error) ||
      !mapped.open(root.weightsPath, nullptr, error))
    return refuse(error);
  if (mapped.size() != besideIndex.fileSize)
    return refuse("the weights file changed while it was read");
  m.weightsFile.path = relative;
  m.weightsFile.size = mapped.size();
  m.weightsFile.checksum = mapped.hash();
  return true;
}

/// Points \p t at its tensor in the weights file beside the artifact.
bool ManifestBuilder::referToWeights(const GraphInput &in,
                                     fmt::TensorDesc &t) {
  auto it = besideIndex.tensors.find(in.init.tensor);
  if (it == besideIndex.tensors.end() ||
      it->second.end - it->second.begin != t.bytes ||
      fmt::fromSafetensorsDtype(it->second.dtype) != t.dtype) {
    diag.error(in.loc, "input '" + in.value->getName() + "': tensor '" +
                           in.init.tensor + "' of the weights file is not " +
                           t.dtype + " of " + std::to_string(t.bytes) +
                           " bytes");
    return false;
  }
  if (t.bytes) {
    t.initTensor = in.init.tensor;
    t.initOffset = it->second.begin;
    t.initPermutation = in.init.permutation;
  }
  return true;
}

fmt::TensorDesc ManifestBuilder::tensorDesc(const std::string &name,
                                            llvm::StringRef kind,
                                            const Value *v,
                                            const Storage &s) const {
  fmt::TensorDesc t;
  t.name = name;
  t.kind = kind.str();
  t.dtype = dtypeName(v->getType().dtype).str();
  const DimTable &table = model.dims();
  uint64_t numel = 1;
  for (Dim d : v->getType().dims) {
    int64_t extent = largestExtent(d, table, options);
    t.shape.push_back(extent);
    t.shapeDims.push_back(d.isStatic() ? "" : table.get(d.symbolIndex()).name);
    numel *= uint64_t(std::max<int64_t>(extent, 0));
  }
  t.region = regionOf(s);
  t.offset = s.offset;
  t.bytes = numel * dtypeSize(v->getType().dtype);
  auto source = model.sourceNames.find(name);
  if (source != model.sourceNames.end())
    t.sourceName = source->second;
  return t;
}

/// Appends a tensor's initial bytes; an empty tensor has none to load.
static void appendBlob(std::vector<uint8_t> &blob, fmt::TensorDesc &t,
                       const std::vector<uint8_t> &bytes) {
  if (bytes.empty())
    return;
  blob.resize((blob.size() + 255) / 256 * 256);
  t.initBlob = "weights";
  t.initOffset = blob.size();
  blob.insert(blob.end(), bytes.begin(), bytes.end());
}

/// Bound dims range over their values; padded ones over their declared
/// bounds (any size up to the largest bucket runs).
void ManifestBuilder::addDims(fmt::Manifest &m) const {
  for (const auto &[name, values] : compilation.bindDims) {
    fmt::DimDesc d;
    d.name = name;
    d.min = *std::min_element(values.begin(), values.end());
    d.max = *std::max_element(values.begin(), values.end());
    if (compilation.padded) {
      const SymbolicDim &sym = model.dims().get(*model.dims().lookup(name));
      d.min = sym.min;
      d.max = sym.max;
    }
    m.dims.push_back(d);
  }
}

bool ManifestBuilder::addInputs(fmt::Manifest &m,
                                std::vector<uint8_t> &weights) {
  const Graph &planned = *compilation.graphs.front().ir;
  for (unsigned i = 0; i < model.inputs().size(); ++i) {
    const GraphInput &in = model.inputs()[i];
    const Storage &s = first.storageOf(planned.inputs()[i].value);
    if (!isPersistent(in.kind)) {
      m.inputs.push_back(tensorDesc(in.value->getName(),
                                    inputKindName(in.kind), in.value, s));
      continue;
    }
    fmt::TensorDesc t = tensorDesc(in.value->getName(),
                                   inputKindName(in.kind), in.value, s);
    if (beside && staysBeside(in)) {
      if (!referToWeights(in, t))
        return false;
    } else if (in.init.source != Initializer::Source::None && !in.init.zeroedByRuntime()) {
      std::vector<uint8_t> bytes;
      std::string error;
      if (!initialBytes(model, in, bytes, error, &weightsCache)) {
        diag.error(in.loc, "input '" + in.value->getName() + "': " + error);
        return false;
      }
      appendBlob(weights, t, bytes);
    }
    m.state.push_back(std::move(t));
  }
  return true;
}

void ManifestBuilder::addConstants(fmt::Manifest &m,
                                   std::vector<uint8_t> &weights) const {
  bool several = compilation.graphs.size() > 1;
  for (const CompiledGraph &g : compilation.graphs)
    for (const Node *n : g.plan->constantData) {
      const Value *v = n->result();
      std::string name = "const:" + (several ? g.name + ":" : "") +
                         v->getName();
      fmt::TensorDesc t = tensorDesc(name, "constant", v, g.plan->storageOf(v));
      appendBlob(weights, t,
                 encodeTensorData(v->getType().dtype, t.shape,
                                  constantElements(*n))
                     .bytes);
      m.state.push_back(std::move(t));
    }
}

void ManifestBuilder::addOutputs(fmt::Manifest &m) const {
  for (size_t i = 0; i < model.outputs.size(); ++i) {
    const GraphOutput &o = model.outputs[i];
    m.outputs.push_back(tensorDesc(o.name, outputKindName(o.kind), o.value,
                                   first.buffers[first.outputBuffer[i]].storage));
  }
}

static fmt::ParamDesc paramDesc(const KernelParam &p) {
  fmt::ParamDesc d;
  switch (p.kind) {
  case KernelParam::Kind::Pointer:
    d.kind = fmt::ParamDesc::Kind::Ptr;
    d.region = regionOf(p.storage);
    d.offset = p.storage.offset;
    d.binding = bindingOf(p.storage);
    return d;
  case KernelParam::Kind::Handle:
    d.kind = fmt::ParamDesc::Kind::Handle;
    d.intValue = p.number;
    return d;
  case KernelParam::Kind::U32:
    d.kind = fmt::ParamDesc::Kind::I32;
    d.intValue = p.number;
    return d;
  }
  llvm_unreachable("a KernelParam::Kind value");
}

void ManifestBuilder::addKernels(fmt::Manifest &m) const {
  for (const Kernel &k : compilation.program.kernels) {
    fmt::KernelDesc d;
    d.name = k.name;
    std::copy(k.grid, k.grid + 3, d.grid);
    std::copy(k.block, k.block + 3, d.block);
    d.sharedMem = k.sharedMem;
    for (const KernelParam &p : k.params)
      d.params.push_back(paramDesc(p));
    auto addSource = [&](const Node &n) {
      d.sources.push_back({n.getName(), mnemonic(n.getOp()).str(),
                           n.getSourceLoc()});
    };
    for (const Node *node : nodesOf(k)) {
      if (node->info().has(Fused))
        for (const auto &n : node->region(0).nodes())
          addSource(*n);
      else
        addSource(*node);
    }
    m.kernels.push_back(std::move(d));
  }
}

static fmt::PointerDesc pointerDesc(const Storage &s) {
  return {regionOf(s), s.offset, bindingOf(s)};
}

void ManifestBuilder::addProducts(fmt::Manifest &m) const {
  for (const LibraryProduct &lp : compilation.program.products) {
    fmt::ProductDesc d = lp.desc;
    d.a = pointerDesc(lp.a);
    d.b = pointerDesc(lp.b);
    d.d = pointerDesc(lp.d);
    d.workspace = pointerDesc(lp.workspace);
    if (d.beta != 0)
      d.c = pointerDesc(lp.c);
    if (d.hasBias())
      d.bias = pointerDesc(lp.bias);
    m.products.push_back(std::move(d));
  }
}

void ManifestBuilder::addConvolutions(fmt::Manifest &m) const {
  for (const LibraryConvolution &lc : compilation.program.convolutions) {
    fmt::ConvolutionDesc d = lc.desc;
    d.x = pointerDesc(lc.x);
    d.w = pointerDesc(lc.w);
    d.y = pointerDesc(lc.y);
    d.workspace = pointerDesc(lc.workspace);
    for (size_t k = 0; k < d.epilogue.size(); ++k)
      if (d.epilogue[k].operand != fmt::ConvolutionStep::Operand::None)
        d.epilogue[k].pointer = pointerDesc(lc.steps[k]);
    m.convolutions.push_back(std::move(d));
  }
}

void ManifestBuilder::addCollectives(fmt::Manifest &m) const {
  for (const LibraryCollective &lc : compilation.program.collectives) {
    fmt::CollectiveDesc d = lc.desc;
    for (size_t k = 0; k < d.buffers.size(); ++k)
      d.buffers[k].data = pointerDesc(lc.buffers[k]);
    m.collectives.push_back(std::move(d));
  }
}

static fmt::NodeDesc nodeDesc(const Step &step) {
  fmt::NodeDesc d;
  switch (step.kind) {
  case Step::Kind::Kernel:
    d.kind = fmt::NodeDesc::Kind::Kernel;
    d.kernel = step.kernel;
    return d;
  case Step::Kind::Memcpy:
    d.kind = fmt::NodeDesc::Kind::Memcpy;
    d.srcRegion = regionOf(step.src);
    d.srcOffset = step.src.offset;
    d.srcBinding = bindingOf(step.src);
    [[fallthrough]];
  case Step::Kind::Memset:
    if (step.kind == Step::Kind::Memset)
      d.kind = fmt::NodeDesc::Kind::Memset;
    d.dstRegion = regionOf(step.dst);
    d.dstOffset = step.dst.offset;
    d.dstBinding = bindingOf(step.dst);
    d.bytes = step.dst.bytes;
    return d;
  case Step::Kind::Conditional:
    d.kind = fmt::NodeDesc::Kind::Conditional;
    d.condition = step.condition == Step::Condition::While
                      ? fmt::NodeDesc::Condition::While
                      : fmt::NodeDesc::Condition::If;
    d.handle = step.handle;
    d.bodies.assign(step.bodies.begin(), step.bodies.end());
    d.predRegion = regionOf(step.predicate);
    d.predOffset = step.predicate.offset;
    d.predBinding = bindingOf(step.predicate);
    d.invert = step.invert;
    d.maxIterations = step.maxIterations;
    if (step.condition == Step::Condition::While) {
      d.loop = step.node->getName();
      d.tripOffset = step.trips.offset;
    }
    return d;
  case Step::Kind::Product:
    d.kind = fmt::NodeDesc::Kind::Product;
    d.product = step.product;
    return d;
  case Step::Kind::Convolution:
    d.kind = fmt::NodeDesc::Kind::Convolution;
    d.convolution = step.convolution;
    return d;
  case Step::Kind::Collective:
    d.kind = fmt::NodeDesc::Kind::Collective;
    d.collective = step.collective;
    return d;
  }
  llvm_unreachable("a Step::Kind value");
}

fmt::GraphDesc ManifestBuilder::graphDesc(const StepGraph &g) const {
  fmt::GraphDesc d;
  d.name = g.name;
  d.handles = g.handles;
  d.dimValues.assign(g.dims.begin(), g.dims.end());
  d.padded = g.padded;
  for (const Step &step : g.steps)
    d.nodes.push_back(nodeDesc(step));
  d.edges.assign(g.edges.begin(), g.edges.end());
  d.programmatic = g.programmatic;
  return d;
}

/// The artifact names each input, output and state tensor once; an output
/// named like an input (a passthrough) is the usual case: say how to name
/// it apart, at the output.
void ManifestBuilder::reportDuplicateName(const std::string &name) const {
  for (const GraphOutput &o : model.outputs)
    if (o.name == name) {
      diag.error(o.loc, "output '" + name + "' has the name of another "
                        "input, output or state tensor; the artifact names "
                        "each once: name the output apart, e.g. {\"name\": "
                        "\"" + name + "_out\", \"value\": \"" +
                        o.value->getName() + "\"}");
      return;
    }
  diag.error({}, "the name '" + name + "' is used by two graph inputs, "
                 "outputs or constants; the artifact needs unique names");
}

bool ManifestBuilder::build(fmt::Manifest &m, std::vector<uint8_t> &weights) {
  if (!slotsAgree(compilation)) {
    diag.error({}, "internal error: the graphs of the artifact put an input "
                   "or output at different offsets");
    return false;
  }
  for (const CompiledGraph &g : compilation.graphs) {
    m.arenaSize = std::max(m.arenaSize, g.plan->arenaSize);
    m.persistentSize = std::max(m.persistentSize, g.plan->persistentSize);
  }
  addDims(m);
  if (!placeWeights(m))
    return false;
  // The blob's size up to alignment: no reallocation copies its bytes again.
  size_t tensors = model.inputs().size();
  for (const CompiledGraph &g : compilation.graphs)
    tensors += g.plan->constantData.size();
  weights.reserve(carriedBytes + tensors * 256);
  if (!addInputs(m, weights))
    return false;
  addConstants(m, weights);
  addOutputs(m);
  std::set<std::string> names;
  for (const auto *list : {&m.inputs, &m.outputs, &m.state})
    for (const fmt::TensorDesc &t : *list)
      if (!names.insert(t.name).second) {
        reportDuplicateName(t.name);
        return false;
      }
  addKernels(m);
  addProducts(m);
  addConvolutions(m);
  addCollectives(m);
  for (const StepGraph &g : compilation.program.graphs)
    m.graphs.push_back(graphDesc(g));
  for (const StepGraph &g : compilation.program.bodies)
    m.bodies.push_back(graphDesc(g));
  return true;
}

bool cgc::writeArtifact(const Graph &model, const Compilation &compilation,
                        const DeviceCode &code, const CompileOptions &options,
                        std::vector<uint8_t> &bytes, DiagnosticEngine &diag) {
  fmt::Manifest m;
  m.compilerVersion = kCompilerVersion;
  m.targetArch = options.arch;
  m.minDriverVersion = 13000; // NVRTC 13.0 output needs a CUDA 13 driver.
  std::vector<uint8_t> weights;
  if (!ManifestBuilder(model, compilation, options, diag).build(m, weights))
    return false;
  fmt::BlobList blobs;
  blobs.push_back({fmt::kCubinBlob, code.cubin});
  blobs.push_back({fmt::kPtxBlob,
                   std::vector<uint8_t>(code.ptx.begin(), code.ptx.end())});
  if (!weights.empty())
    blobs.push_back({"weights", std::move(weights)});
  bytes = fmt::serializeArtifact(m, blobs);
  fmt::Artifact check;
  std::string error;
  // The structure is checked; the checksum was summed over these bytes.
  if (!fmt::parseArtifact(bytes.data(), bytes.size(), check, error,
                          /*verifyChecksum=*/false)) {
    diag.error({}, "internal error: the generated artifact is invalid: " +
                       error);
    return false;
  }
  return true;
}
