//===- ArtifactWriter.cpp - Filling the manifest -----------------------------===//
//
// Inputs, outputs and state take their storage from the memory plan; each
// kernel's pointer parameters carry the region and offset of a value, plus
// a binding when they point exactly at a graph input's or output's bytes.
// Initial values of state (parameters from their initializers or weights
// file, constant tensors from their attribute) are packed into the
// "weights" blob at 256-byte-aligned offsets. Nothing depends on time or
// addresses, so the same graph and options give the same bytes.
//
//===----------------------------------------------------------------------===//
#include "codegen/Compiler.h"

#include "format/ArtifactFormat.h"
#include "ir/Initializers.h"

#include <set>

using namespace cgc;
namespace fmt = cgc::format;

static fmt::Region regionOf(const Storage &s) {
  return s.region == Storage::Region::Arena ? fmt::Region::Arena
                                            : fmt::Region::Persistent;
}

static fmt::TensorDesc tensorDesc(const std::string &name, llvm::StringRef kind,
                                  const Value *v, const Storage &s) {
  fmt::TensorDesc t;
  t.name = name;
  t.kind = kind.str();
  t.dtype = dtypeName(v->getType().dtype).str();
  for (Dim d : v->getType().dims)
    t.shape.push_back(d.isStatic() ? d.extent() : 0);
  t.region = regionOf(s);
  t.offset = s.offset;
  t.bytes = s.bytes;
  return t;
}

namespace {
class ManifestBuilder {
public:
  ManifestBuilder(const Graph &graph, const Lowered &lowered,
                  DiagnosticEngine &diag)
      : graph(graph), lowered(lowered), plan(lowered.memory), diag(diag) {}
  bool build(fmt::Manifest &m, std::vector<uint8_t> &weights);

private:
  bool addState(fmt::Manifest &m, std::vector<uint8_t> &weights);
  std::string bindingOf(const fmt::Manifest &m, const Storage &s) const;
  void addKernels(fmt::Manifest &m) const;
  void addGraph(fmt::Manifest &m) const;

  const Graph &graph;
  const Lowered &lowered;
  const MemoryPlan &plan;
  DiagnosticEngine &diag;
};
} // namespace

static void appendBlob(std::vector<uint8_t> &blob, fmt::TensorDesc &t,
                       const std::vector<uint8_t> &bytes) {
  blob.resize((blob.size() + 255) / 256 * 256);
  t.initBlob = "weights";
  t.initOffset = blob.size();
  blob.insert(blob.end(), bytes.begin(), bytes.end());
}

bool ManifestBuilder::addState(fmt::Manifest &m,
                               std::vector<uint8_t> &weights) {
  format::TensorMap cache;
  for (const GraphInput &in : graph.inputs()) {
    const Storage &s = plan.storageOf(in.value);
    if (!isPersistent(in.kind)) {
      m.inputs.push_back(tensorDesc(in.value->getName(), "user_input",
                                    in.value, s));
      continue;
    }
    fmt::TensorDesc t = tensorDesc(in.value->getName(),
                                   inputKindName(in.kind), in.value, s);
    if (in.init.source != Initializer::Source::None) {
      std::vector<double> values;
      std::string error;
      if (!initialValue(graph, in, values, error, &cache)) {
        diag.error(in.loc, "input '" + in.value->getName() + "': " + error);
        return false;
      }
      appendBlob(weights, t,
                 encodeTensorData(in.value->getType().dtype, t.shape, values)
                     .bytes);
    }
    m.state.push_back(std::move(t));
  }
  for (const Node *n : plan.constantData) {
    const Value *v = n->result();
    fmt::TensorDesc t = tensorDesc("const:" + v->getName(), "constant", v,
                                   plan.storageOf(v));
    const auto &values = std::get<std::vector<double>>(*n->attr("value"));
    appendBlob(weights, t,
               encodeTensorData(v->getType().dtype, t.shape, values).bytes);
    m.state.push_back(std::move(t));
  }
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const GraphOutput &o = graph.outputs[i];
    m.outputs.push_back(tensorDesc(o.name, outputKindName(o.kind), o.value,
                                   plan.buffers[plan.outputBuffer[i]].storage));
  }
  std::set<std::string> names;
  for (const auto *list : {&m.inputs, &m.outputs, &m.state})
    for (const fmt::TensorDesc &t : *list)
      if (!names.insert(t.name).second) {
        diag.error({}, "the name '" + t.name + "' is used by two graph "
                       "inputs, outputs or constants; the artifact needs "
                       "unique names");
        return false;
      }
  return true;
}

std::string ManifestBuilder::bindingOf(const fmt::Manifest &m,
                                       const Storage &s) const {
  // A zero-byte tensor holds nothing to rebind (and the manifest validator
  // rejects a binding into one): leave such params unbound.
  if (s.bytes == 0)
    return "";
  for (const auto *list : {&m.inputs, &m.outputs})
    for (const fmt::TensorDesc &t : *list)
      if (t.region == regionOf(s) && t.offset == s.offset && t.bytes == s.bytes)
        return t.name;
  return "";
}

void ManifestBuilder::addKernels(fmt::Manifest &m) const {
  for (const Kernel &k : lowered.program.kernels) {
    fmt::KernelDesc d;
    d.name = k.name;
    std::copy(k.grid, k.grid + 3, d.grid);
    std::copy(k.block, k.block + 3, d.block);
    d.sharedMem = k.sharedMem;
    for (const KernelParam &p : k.params) {
      const Storage &s = plan.storageOf(p.value);
      fmt::ParamDesc param;
      param.kind = fmt::ParamDesc::Kind::Ptr;
      param.region = regionOf(s);
      param.offset = s.offset;
      param.binding = bindingOf(m, s);
      d.params.push_back(param);
    }
    auto addSource = [&](const Node &n) {
      d.sources.push_back({n.getName(), mnemonic(n.getOp()).str(),
                           n.getSourceLoc()});
    };
    if (k.node->getOp() == OpKind::Fusion)
      for (const auto &n : k.node->region(0).nodes())
        addSource(*n);
    else
      addSource(*k.node);
    m.kernels.push_back(std::move(d));
  }
}

void ManifestBuilder::addGraph(fmt::Manifest &m) const {
  fmt::GraphDesc g;
  g.name = "main";
  for (const PlanNode &pn : lowered.graph.nodes) {
    fmt::NodeDesc d;
    const Step &step = pn.step;
    if (step.kind == Step::Kind::Kernel) {
      d.kind = fmt::NodeDesc::Kind::Kernel;
      d.kernel = step.kernel;
    } else {
      const Storage &dst = step.kind == Step::Kind::Memset
                               ? plan.storageOf(step.value)
                               : plan.buffers[plan.copies[step.copy].buffer].storage;
      d.kind = step.kind == Step::Kind::Memset ? fmt::NodeDesc::Kind::Memset
                                               : fmt::NodeDesc::Kind::Memcpy;
      d.dstRegion = regionOf(dst);
      d.dstOffset = dst.offset;
      d.dstBinding = bindingOf(m, dst);
      d.bytes = dst.bytes;
      if (step.kind == Step::Kind::Memcpy) {
        const Storage &src = plan.storageOf(plan.copies[step.copy].source);
        d.srcRegion = regionOf(src);
        d.srcOffset = src.offset;
        d.srcBinding = bindingOf(m, src);
      }
    }
    g.nodes.push_back(d);
  }
  g.edges = lowered.graph.edges;
  g.programmatic = lowered.graph.programmatic;
  m.graphs.push_back(std::move(g));
}

bool ManifestBuilder::build(fmt::Manifest &m, std::vector<uint8_t> &weights) {
  m.arenaSize = plan.arenaSize;
  m.persistentSize = plan.persistentSize;
  if (!addState(m, weights))
    return false;
  addKernels(m);
  addGraph(m);
  return true;
}

bool cgc::writeArtifact(const Graph &graph, const Lowered &lowered,
                        const DeviceCode &code, const CompileOptions &options,
                        std::vector<uint8_t> &bytes, DiagnosticEngine &diag) {
  fmt::Manifest m;
  m.compilerVersion = kCompilerVersion;
  m.targetArch = options.arch;
  m.minDriverVersion = 13000; // NVRTC 13.0 output needs a CUDA 13 driver.
  std::vector<uint8_t> weights;
  if (!ManifestBuilder(graph, lowered, diag).build(m, weights))
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
  if (!fmt::parseArtifact(bytes.data(), bytes.size(), check, error)) {
    diag.error({}, "internal error: the generated artifact is invalid: " +
                       error);
    return false;
  }
  return true;
}
