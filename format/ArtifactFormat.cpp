//===- ArtifactFormat.cpp - .cgc serialization and validation ------------===//
//
// Writes and reads the 32-byte header, the manifest and the 256-aligned data
// section, and validates every index, offset and size of a manifest so that
// the runtime can trust a parsed Artifact without further checks.
//
//===----------------------------------------------------------------------===//
#include "format/ArtifactFormat.h"
#include "format/FileIO.h"
#include "format/WeightsFile.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace cgc {
namespace format {
namespace {

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

void putU32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void putU64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t getU32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}
uint64_t getU64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

bool addNoOverflow(uint64_t a, uint64_t b, uint64_t &sum) {
  sum = a + b;
  return sum >= a;
}

} // namespace

uint64_t artifactChecksum(const uint8_t *data, size_t size) {
  ContentHash h;
  h.update(data, 24);
  h.update(data + kHeaderSize, size - kHeaderSize);
  return h.finish();
}

uint64_t fnv1a64(const uint8_t *data, size_t size, uint64_t seed) {
  uint64_t h = seed;
  for (size_t i = 0; i < size; ++i) {
    h ^= data[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

size_t dtypeSize(const std::string &dtype) {
#define CGC_DTYPE(Enum, Name, Size, ...)                                       \
  if (dtype == Name)                                                           \
    return Size;
#include "format/DTypes.def"
  return 0;
}

std::vector<const NodeDesc *> whileNodes(const Manifest &m) {
  std::vector<const NodeDesc *> out;
  for (const auto *graphs : {&m.graphs, &m.bodies})
    for (const GraphDesc &g : *graphs)
      for (const NodeDesc &n : g.nodes)
        if (n.kind == NodeDesc::Kind::Conditional &&
            n.condition == NodeDesc::Condition::While)
          out.push_back(&n);
  return out;
}

bool findGraphForDims(const Manifest &m, const std::vector<int64_t> &dims,
                      size_t &index, std::string &error) {
  std::string sizes, compiled;
  for (size_t d = 0; d < m.dims.size() && d < dims.size(); ++d)
    sizes += (d ? "," : "") + m.dims[d].name + "=" + std::to_string(dims[d]);
  for (size_t g = 0; g < m.graphs.size(); ++g) {
    bool match = true;
    for (const auto &[name, value] : m.graphs[g].dimValues)
      for (size_t d = 0; d < m.dims.size() && d < dims.size(); ++d)
        match &= m.dims[d].name != name ||
                 (m.graphs[g].padded ? dims[d] <= value : dims[d] == value);
    if (match) {
      index = g;
      return true;
    }
    compiled += (g ? ", " : "") + m.graphs[g].name;
  }
  error = "no graph is compiled for " + sizes + " (the artifact has: " +
          compiled + ")";
  return false;
}

const char *regionName(Region r) {
  return r == Region::Arena ? "arena" : "persistent";
}

const char *paramKindName(ParamDesc::Kind k) {
  switch (k) {
  case ParamDesc::Kind::Ptr: return "ptr";
  case ParamDesc::Kind::I32: return "i32";
  case ParamDesc::Kind::I64: return "i64";
  case ParamDesc::Kind::F32: return "f32";
  case ParamDesc::Kind::U64: return "u64";
  case ParamDesc::Kind::Handle: return "handle";
  }
  return "?"; // Not a Kind value: only a corrupt cast gets here.
}

const char *nodeKindName(NodeDesc::Kind k) {
  switch (k) {
  case NodeDesc::Kind::Kernel: return "kernel";
  case NodeDesc::Kind::Memset: return "memset";
  case NodeDesc::Kind::Memcpy: return "memcpy";
  case NodeDesc::Kind::Conditional: return "conditional";
  case NodeDesc::Kind::Product: return "product";
  case NodeDesc::Kind::Convolution: return "convolution";
  case NodeDesc::Kind::Collective: return "collective";
  }
  return "?"; // Not a Kind value: only a corrupt cast gets here.
}

const char *reductionName(CollectiveDesc::Reduction r) {
  switch (r) {
  case CollectiveDesc::Reduction::Sum: return "sum";
  case CollectiveDesc::Reduction::Mean: return "mean";
  }
  return "?"; // Not a Reduction value: only a corrupt cast gets here.
}

const char *stepOpName(ConvolutionStep::Op op) {
  switch (op) {
  case ConvolutionStep::Op::Add: return "add";
  case ConvolutionStep::Op::Sub: return "sub";
  case ConvolutionStep::Op::Mul: return "mul";
  case ConvolutionStep::Op::Div: return "div";
  case ConvolutionStep::Op::Relu: return "relu";
  }
  return "?"; // Not an Op value: only a corrupt cast gets here.
}

const char *convolutionOperationName(ConvolutionDesc::Operation operation) {
  switch (operation) {
  case ConvolutionDesc::Operation::Forward: return "forward";
  case ConvolutionDesc::Operation::BackwardData: return "backward_data";
  case ConvolutionDesc::Operation::BackwardFilter: return "backward_filter";
  }
  return "?"; // Not an Operation value: only a corrupt cast gets here.
}

const char *stepOperandName(ConvolutionStep::Operand operand) {
  switch (operand) {
  case ConvolutionStep::Operand::None: return "none";
  case ConvolutionStep::Operand::Channel: return "channel";
  case ConvolutionStep::Operand::Full: return "full";
  }
  return "?"; // Not an Operand value: only a corrupt cast gets here.
}

const char *epilogueName(ProductDesc::Epilogue e) {
  switch (e) {
  case ProductDesc::Epilogue::None: return "none";
  case ProductDesc::Epilogue::Relu: return "relu";
  case ProductDesc::Epilogue::Bias: return "bias";
  case ProductDesc::Epilogue::ReluBias: return "relu_bias";
  case ProductDesc::Epilogue::Gelu: return "gelu";
  case ProductDesc::Epilogue::GeluBias: return "gelu_bias";
  }
  return "?";
}

const char *conditionName(NodeDesc::Condition c) {
  switch (c) {
  case NodeDesc::Condition::If: return "if";
  case NodeDesc::Condition::While: return "while";
  }
  return "?";
}

std::pair<const uint8_t *, size_t>
Artifact::blob(const std::string &name) const {
  for (const BlobDesc &b : manifest.blobs)
    if (b.name == name)
      return {bytes.data() + dataStart + b.offset, b.size};
  return {nullptr, 0};
}

const TensorDesc *Artifact::findTensor(const std::string &name) const {
  for (const auto *list : {&manifest.inputs, &manifest.outputs,
                           &manifest.state})
    for (const TensorDesc &t : *list)
      if (t.name == name)
        return &t;
  return nullptr;
}

/// What of \p m needs a version newer than 7, and that version (7 and
/// empty when nothing does).
static std::pair<uint32_t, const char *> newestNeed(const Manifest &m) {
  for (const ConvolutionDesc &c : m.convolutions)
    if (c.operation != ConvolutionDesc::Operation::Forward)
      return {9, "a convolution's derivative (a backward operation)"};
  for (const TensorDesc &t : m.state)
    if (t.region == Region::Arena)
      return {8, "per-context state (state in the arena)"};
  return {kOldestFormatVersion, ""};
}

uint32_t formatVersionOf(const Manifest &m) { return newestNeed(m).first; }

std::vector<uint8_t> serializeArtifact(const Manifest &manifest,
                                       const BlobList &blobs) {
  Manifest m = manifest;
  m.blobs.clear();
  uint64_t offset = 0;
  for (const auto &b : blobs) {
    offset = alignUp(offset, kBlobAlignment);
    m.blobs.push_back({b.first, offset, b.second.size()});
    offset += b.second.size();
  }
  std::string json = manifestToJson(m);
  uint64_t dataStart = alignUp(kHeaderSize + json.size(), kBlobAlignment);
  std::vector<uint8_t> out(dataStart + offset, 0);
  std::memcpy(out.data(), kArtifactMagic, 4);
  putU32(out.data() + 4, formatVersionOf(m));
  putU64(out.data() + 8, json.size());
  putU64(out.data() + 16, out.size());
  std::memcpy(out.data() + kHeaderSize, json.data(), json.size());
  for (size_t i = 0; i < blobs.size(); ++i)
    if (!blobs[i].second.empty())
      std::memcpy(out.data() + dataStart + m.blobs[i].offset,
                  blobs[i].second.data(), blobs[i].second.size());
  putU64(out.data() + 24, artifactChecksum(out.data(), out.size()));
  return out;
}

bool parseArtifactManifest(const uint8_t *data, size_t size, Manifest &manifest,
                           std::string &error, bool verifyChecksum,
                           ArtifactHeader *header, uint64_t *dataStartOut) {
  auto fail = [&](const std::string &msg) {
    error = msg;
    return false;
  };
  if (!data || size < kHeaderSize)
    return fail("artifact: file too small for a header (" +
                std::to_string(size) + " bytes)");
  if (std::memcmp(data, kArtifactMagic, 4) != 0)
    return fail("artifact: bad magic (not a .cgc file)");
  ArtifactHeader h;
  h.formatVersion = getU32(data + 4);
  h.manifestSize = getU64(data + 8);
  h.fileSize = getU64(data + 16);
  h.checksum = getU64(data + 24);
  if (h.formatVersion < kOldestFormatVersion || h.formatVersion > kArtifactFormatVersion)
    return fail("artifact: format version " +
                std::to_string(h.formatVersion) +
                " is not supported: this runtime reads versions " +
                std::to_string(kOldestFormatVersion) + " to " +
                std::to_string(kArtifactFormatVersion) +
                " (compile the model again with this cgc)");
  if (h.fileSize != size)
    return fail("artifact: header says " + std::to_string(h.fileSize) +
                " bytes but the file has " + std::to_string(size) +
                " (truncated?)");
  if (h.manifestSize > size - kHeaderSize)
    return fail("artifact: manifest size exceeds the file");
  uint64_t dataStart = alignUp(kHeaderSize + h.manifestSize, kBlobAlignment);
  if (dataStart > size)
    return fail("artifact: data section starts past the end of the file");
  if (verifyChecksum && artifactChecksum(data, size) != h.checksum)
    return fail("artifact: checksum mismatch (file is corrupt)");
  Manifest m;
  if (!manifestFromJson(reinterpret_cast<const char *>(data + kHeaderSize),
                        h.manifestSize, m, error))
    return false;
  uint64_t dataSize = size > dataStart ? size - dataStart : 0;
  for (const BlobDesc &b : m.blobs) {
    uint64_t end;
    if (!addNoOverflow(b.offset, b.size, end) || end > dataSize)
      return fail("manifest: blob '" + b.name + "' exceeds the file");
  }
  if (!validateManifest(m, error))
    return false;
  auto [needed, what] = newestNeed(m);
  if (needed > h.formatVersion)
    return fail("artifact: " + std::string(what) + " needs format version " +
                std::to_string(needed) + "; the header says " +
                std::to_string(h.formatVersion));
  manifest = std::move(m);
  if (header)
    *header = h;
  if (dataStartOut)
    *dataStartOut = dataStart;
  return true;
}

bool parseArtifact(const uint8_t *data, size_t size, Artifact &out,
                   std::string &error, bool verifyChecksum) {
  if (!parseArtifactManifest(data, size, out.manifest, error, verifyChecksum,
                             &out.header, &out.dataStart))
    return false;
  out.bytes.assign(data, data + size);
  return true;
}

bool parseArtifact(std::vector<uint8_t> &&bytes, Artifact &out, std::string &error) {
  if (!parseArtifactManifest(bytes.data(), bytes.size(), out.manifest, error,
                             /*verifyChecksum=*/true, &out.header, &out.dataStart))
    return false;
  out.bytes = std::move(bytes);
  return true;
}

bool loadArtifactFile(const std::string &path, Artifact &out,
                      std::string &error) {
  std::vector<uint8_t> bytes;
  if (!readFileBounded(path, bytes, error))
    return false;
  if (!parseArtifact(std::move(bytes), out, error)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

} // namespace format
} // namespace cgc
