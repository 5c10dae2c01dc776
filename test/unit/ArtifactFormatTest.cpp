//===- ArtifactFormatTest.cpp - .cgc format round trip and validation ----===//
//
// Round-trips a manifest through serializeArtifact/parseArtifact, checks the
// byte layout and determinism, and feeds corrupt images (semantic errors,
// byte flips, truncations) that must all be refused without crashing.
//
//===----------------------------------------------------------------------===//
#include "format/ArtifactFormat.h"
#include "SampleArtifact.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

using namespace cgc::format;
using namespace cgc::format::test;

namespace {

TEST(ArtifactFormat, RoundTrip) {
  std::vector<uint8_t> bytes = serializeArtifact(sampleManifest(), sampleBlobs());
  ASSERT_EQ(0, std::memcmp(bytes.data(), "CGCA", 4));
  Artifact a;
  std::string err;
  ASSERT_TRUE(parseArtifact(bytes.data(), bytes.size(), a, err)) << err;
  EXPECT_EQ(a.header.formatVersion, kOldestFormatVersion); // no per-context state
  EXPECT_EQ(a.header.fileSize, bytes.size());
  EXPECT_EQ(a.dataStart % 256, 0u);
  const Manifest &m = a.manifest;
  ASSERT_EQ(m.blobs.size(), 2u);
  EXPECT_EQ(m.blobs[0].offset, 0u);
  EXPECT_EQ(m.blobs[1].offset, 512u);
  auto w = a.blob("weights");
  ASSERT_EQ(w.second, 16u);
  EXPECT_EQ(w.first[5], 5);
  EXPECT_EQ(a.blob("nope").first, nullptr);
  ASSERT_EQ(m.kernels.size(), 1u);
  EXPECT_EQ(m.kernels[0].params[2].dim, "n");
  EXPECT_EQ(m.kernels[0].params[3].floatValue, 0.5f);
  EXPECT_EQ(m.kernels[0].params[0].binding, "x");
  EXPECT_EQ(m.kernels[0].sources[0].loc, "model.py:12:3");
  EXPECT_EQ(m.graphs[0].nodes[2].kind, NodeDesc::Kind::Memcpy);
  EXPECT_EQ(m.inputs[0].shapeDims[0], "n");
  EXPECT_EQ(m.state[0].initBlob, "weights");
  // Deterministic: re-serializing the parsed manifest gives the same bytes.
  EXPECT_EQ(serializeArtifact(m, sampleBlobs()), bytes);
}

TEST(ArtifactFormat, DumpIsReadable) {
  std::vector<uint8_t> bytes = serializeArtifact(sampleManifest(), sampleBlobs());
  Artifact a;
  std::string err;
  ASSERT_TRUE(parseArtifact(bytes.data(), bytes.size(), a, err)) << err;
  std::string d = dumpManifest(a);
  EXPECT_NE(d.find("target: sm_90"), std::string::npos) << d;
  EXPECT_NE(d.find("#0 add_one grid(1,1,1) block(256,1,1)"), std::string::npos)
      << d;
  EXPECT_NE(d.find("from %3 add at model.py:12:3"), std::string::npos) << d;
  EXPECT_NE(d.find("1 kernel, 1 memset, 1 memcpy"), std::string::npos) << d;
  EXPECT_NE(d.find("n2 memcpy dst arena+2048 src arena+1024 64B <- n1"),
            std::string::npos)
      << d;
  EXPECT_EQ(d, dumpManifest(a));
}

TEST(ArtifactFormat, RejectsHeaderDamage) {
  std::vector<uint8_t> good = serializeArtifact(sampleManifest(), sampleBlobs());
  auto b = good;
  b[0] = 'X';
  EXPECT_NE(parseError(b).find("bad magic"), std::string::npos);
  b = good;
  b[4] = 1; // An artifact of the first format: refused, naming both.
  reseal(b);
  EXPECT_NE(parseError(b).find("format version 1 is not supported: this "
                               "runtime reads versions 7 to 9"),
            std::string::npos)
      << parseError(b);
  b = good;
  b.pop_back();
  EXPECT_NE(parseError(b).find("truncated"), std::string::npos);
  b = good;
  b.back() ^= 1;
  EXPECT_NE(parseError(b).find("checksum"), std::string::npos);
  EXPECT_NE(parseError({}).find("too small"), std::string::npos);
}

/// Per-context state (state in the arena) is written as version 8, which
/// a version-7 runtime refuses rather than run it uninitialized; a
/// version-7 header over such a manifest is refused here too.
TEST(ArtifactFormat, PerContextStateIsVersion8) {
  Manifest m = sampleManifest();
  TensorDesc cache = m.state.front();
  cache.name = "cache";
  cache.kind = "buffer";
  cache.region = Region::Arena;
  cache.offset = 0;
  cache.initBlob.clear();
  m.state.push_back(cache);
  std::vector<uint8_t> bytes = serializeArtifact(m, sampleBlobs());
  Artifact a;
  std::string err;
  ASSERT_TRUE(parseArtifact(bytes.data(), bytes.size(), a, err)) << err;
  EXPECT_EQ(a.header.formatVersion, 8u);
  bytes[4] = 7;
  reseal(bytes);
  EXPECT_NE(parseError(bytes).find("per-context state (state in the arena) needs format "
                                   "version 8; the header says 7"),
            std::string::npos)
      << parseError(bytes);
}

TEST(ArtifactFormat, RejectsSemanticErrors) {
  Manifest m = sampleManifest();
  m.graphs[0].nodes[1].kernel = 7;
  EXPECT_NE(errorFor(m).find("kernel index 7 out of range"), std::string::npos);
  m = sampleManifest();
  m.graphs[0].edges.push_back({2, 0});
  EXPECT_NE(errorFor(m).find("cycle"), std::string::npos);
  m = sampleManifest();
  m.graphs[0].edges.push_back({0, 9});
  EXPECT_NE(errorFor(m).find("node index out of range"), std::string::npos);
  m = sampleManifest();
  m.graphs[0].edges.push_back({0, 1});
  EXPECT_NE(errorFor(m).find("duplicate edge"), std::string::npos);
  m = sampleManifest();
  m.outputs[0].offset = 4000;
  EXPECT_NE(errorFor(m).find("exceeds arena size"), std::string::npos);
  m = sampleManifest();
  m.kernels[0].params[1].binding = "x";
  EXPECT_NE(errorFor(m).find("does not contain"), std::string::npos);
  m = sampleManifest();
  m.kernels[0].params[0].binding = "nobody";
  EXPECT_NE(errorFor(m).find("names no graph input"), std::string::npos);
  m = sampleManifest();
  m.state[0].initBlob = "missing";
  EXPECT_NE(errorFor(m).find("unknown init blob"), std::string::npos);
  m = sampleManifest();
  m.inputs[0].dtype = "f8";
  EXPECT_NE(errorFor(m).find("unknown dtype"), std::string::npos);
  m = sampleManifest();
  m.inputs[0].bytes = 100;
  EXPECT_NE(errorFor(m).find("cannot hold"), std::string::npos);
  m = sampleManifest();
  m.dims[0].buckets = {128, 64};
  EXPECT_NE(errorFor(m).find("buckets"), std::string::npos);
  m = sampleManifest();
  m.kernels[0].params[2].intValue = int64_t(1) << 40;
  EXPECT_NE(errorFor(m).find("i32"), std::string::npos);
  m = sampleManifest();
  m.persistentSize = 8;
  EXPECT_NE(errorFor(m).find("exceeds persistent size"), std::string::npos);
}

/// sampleManifest plus a WHILE node whose body holds an IF node with two
/// bodies; the body kernel sets handle 1.
Manifest conditionalManifest() {
  Manifest m = sampleManifest();
  KernelDesc setter;
  setter.name = "cgc_set_if";
  ParamDesc pred, handle;
  pred.region = Region::Arena, pred.offset = 3072;
  handle.kind = ParamDesc::Kind::Handle, handle.intValue = 1;
  setter.params = {pred, handle};
  m.kernels.push_back(setter);
  GraphDesc &g = m.graphs[0];
  g.handles = 2;
  g.dimValues = {{"n", 128}};
  NodeDesc loop;
  loop.kind = NodeDesc::Kind::Conditional;
  loop.condition = NodeDesc::Condition::While;
  loop.handle = 0, loop.bodies = {0}, loop.predOffset = 3072;
  loop.maxIterations = 7;
  loop.loop = "refine", loop.tripOffset = 3076;
  g.nodes.push_back(loop);
  g.edges.push_back({2, 3});
  GraphDesc body, thenArm, elseArm;
  NodeDesc set, branch, kn;
  set.kind = NodeDesc::Kind::Kernel, set.kernel = 1;
  branch.kind = NodeDesc::Kind::Conditional;
  branch.handle = 1, branch.bodies = {1, 2}, branch.predOffset = 3072;
  branch.invert = true;
  body.nodes = {set, branch};
  body.edges = {{0, 1}};
  kn.kind = NodeDesc::Kind::Kernel, kn.kernel = 0;
  thenArm.nodes = {kn};
  elseArm.nodes = {kn};
  m.bodies = {body, thenArm, elseArm};
  return m;
}

TEST(ArtifactFormat, ConditionalNodesRoundTrip) {
  std::vector<uint8_t> bytes =
      serializeArtifact(conditionalManifest(), sampleBlobs());
  Artifact a;
  std::string err;
  ASSERT_TRUE(parseArtifact(bytes.data(), bytes.size(), a, err)) << err;
  const Manifest &m = a.manifest;
  ASSERT_EQ(m.bodies.size(), 3u);
  const NodeDesc &loop = m.graphs[0].nodes[3];
  EXPECT_EQ(loop.kind, NodeDesc::Kind::Conditional);
  EXPECT_EQ(loop.condition, NodeDesc::Condition::While);
  EXPECT_EQ(loop.maxIterations, 7);
  EXPECT_EQ(loop.loop, "refine");
  EXPECT_EQ(loop.tripOffset, 3076u);
  EXPECT_EQ(m.graphs[0].handles, 2u);
  ASSERT_EQ(m.graphs[0].dimValues.size(), 1u);
  EXPECT_EQ(m.graphs[0].dimValues[0].second, 128);
  const NodeDesc &branch = m.bodies[0].nodes[1];
  EXPECT_EQ(branch.condition, NodeDesc::Condition::If);
  EXPECT_TRUE(branch.invert);
  EXPECT_EQ(branch.bodies, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(m.kernels[1].params[1].kind, ParamDesc::Kind::Handle);
  EXPECT_EQ(serializeArtifact(m, sampleBlobs()), bytes);
  std::string d = dumpManifest(a);
  EXPECT_NE(d.find("n3 conditional while handle 0 predicate arena+3072 "
                   "max_iterations 7 loop 'refine' trips arena+3076 bodies #0 <- n2"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("conditional if handle 1 predicate arena+3072 inverted "
                   "bodies #1 #2"),
            std::string::npos)
      << d;
}

TEST(ArtifactFormat, RejectsBadConditionals) {
  Manifest m = conditionalManifest();
  m.bodies[0].nodes[1].bodies = {1, 1};
  EXPECT_NE(errorFor(m).find("owned by two conditional nodes"),
            std::string::npos)
      << errorFor(m);
  m = conditionalManifest();
  m.bodies.push_back(m.bodies[1]);
  EXPECT_NE(errorFor(m).find("bodies[3]: no conditional node"),
            std::string::npos);
  m = conditionalManifest();
  m.bodies[0].nodes[1].bodies = {0};
  EXPECT_NE(errorFor(m).find("owned by two"), std::string::npos)
      << "a body that holds itself";
  m = conditionalManifest();
  m.graphs[0].handles = 1;
  EXPECT_NE(errorFor(m).find("sets handle 1, but its graph has 1"),
            std::string::npos)
      << errorFor(m);
  m = conditionalManifest();
  m.bodies[0].nodes[1].handle = 0;
  EXPECT_NE(errorFor(m).find("handle 0 is used by two conditional nodes"),
            std::string::npos);
  m = conditionalManifest();
  m.graphs[0].nodes[3].bodies = {0, 1};
  EXPECT_NE(errorFor(m).find("while takes one body"), std::string::npos);
  m = conditionalManifest();
  m.graphs[0].nodes[3].maxIterations = 0;
  EXPECT_NE(errorFor(m).find("max_iterations"), std::string::npos);
  m = conditionalManifest();
  m.graphs[0].nodes[3].predOffset = 4096;
  EXPECT_NE(errorFor(m).find("predicate"), std::string::npos);
  m = conditionalManifest();
  m.graphs[0].nodes[3].tripOffset = 4096;
  EXPECT_NE(errorFor(m).find("trip counter"), std::string::npos)
      << errorFor(m);
  m = conditionalManifest();
  m.graphs[0].nodes[3].loop.clear();
  EXPECT_NE(errorFor(m).find("a while needs its loop name"), std::string::npos)
      << errorFor(m);
  m = conditionalManifest();
  m.graphs[0].dimValues = {{"n", 999}};
  EXPECT_NE(errorFor(m).find("dim 'n' = 999 is outside [1, 256]"),
            std::string::npos);
  m = conditionalManifest();
  m.graphs[0].dimValues = {{"q", 1}};
  EXPECT_NE(errorFor(m).find("unknown or repeated dim 'q'"),
            std::string::npos);
}

/// The sample plus a product y[8x16] = x[8x32] w^T + b (w [16x32]) in
/// cuBLASLt terms: m=16, n=8, k=32, A = w transposed.
Manifest productManifest() {
  Manifest m = sampleManifest();
  m.persistentSize = 4096;
  ProductDesc p;
  p.dtype = "f32";
  p.transA = true;
  p.m = 16, p.n = 8, p.k = 32;
  p.lda = 32, p.ldb = 32, p.ldc = 16;
  p.epilogue = ProductDesc::Epilogue::ReluBias;
  p.a = {Region::Persistent, 0, ""};
  p.b = {Region::Arena, 0, "x"};
  p.d = {Region::Arena, 1024, "y"};
  p.bias = {Region::Persistent, 2048, ""};
  p.workspace = {Region::Arena, 2048, ""};
  p.workspaceBytes = 1024;
  p.source = {"fc", "linear", "model.py:3:1"};
  m.products.push_back(p);
  NodeDesc node;
  node.kind = NodeDesc::Kind::Product;
  node.product = 0;
  m.graphs[0].nodes.push_back(node);
  m.graphs[0].edges.push_back({1, 3});
  return m;
}

TEST(ArtifactFormat, ProductsRoundTrip) {
  std::vector<uint8_t> bytes = serializeArtifact(productManifest(), sampleBlobs());
  Artifact a;
  std::string err;
  ASSERT_TRUE(parseArtifact(bytes.data(), bytes.size(), a, err)) << err;
  ASSERT_EQ(a.manifest.products.size(), 1u);
  const ProductDesc &p = a.manifest.products[0];
  EXPECT_EQ(p.epilogue, ProductDesc::Epilogue::ReluBias);
  EXPECT_TRUE(p.transA);
  EXPECT_EQ(p.b.binding, "x");
  EXPECT_EQ(p.bias.offset, 2048u);
  EXPECT_EQ(serializeArtifact(a.manifest, sampleBlobs()), bytes);
  std::string d = dumpManifest(a);
  EXPECT_NE(d.find("n3 product #0 fc f32 m16 n8 k32 TN epilogue relu_bias"),
            std::string::npos)
      << d;
}

TEST(ArtifactFormat, RejectsBadProducts) {
  Manifest m = productManifest();
  m.products[0].lda = 8; // fewer than the 32 stored rows of A
  EXPECT_NE(errorFor(m).find("leading dimension 8 is less than the 32 rows"),
            std::string::npos)
      << errorFor(m);
  m = productManifest();
  m.products[0].k = 200; // A would reach past the persistent region
  m.products[0].lda = 200;
  EXPECT_NE(errorFor(m).find("exceeds persistent size"), std::string::npos)
      << errorFor(m);
  m = productManifest();
  m.products[0].d.offset = 1800; // D leaves the bound output y
  EXPECT_NE(errorFor(m).find("does not contain the referenced bytes"),
            std::string::npos)
      << errorFor(m);
  m = productManifest();
  m.products[0].dtype = "i32";
  EXPECT_NE(errorFor(m).find("is not f32, f16 or bf16"), std::string::npos);
  m = productManifest();
  m.products[0].dtype = "bf16";
  m.products[0].allowTf32 = true;
  EXPECT_NE(errorFor(m).find("allow_tf32 applies to f32"), std::string::npos);
  m = productManifest();
  m.graphs[0].nodes[3].product = 1;
  EXPECT_NE(errorFor(m).find("product index 1 out of range"),
            std::string::npos);
  m = productManifest();
  m.products[0].batch = 65537; // (batch - 1) * stride wraps 64 bits
  m.products[0].strideA = int64_t(1) << 48;
  EXPECT_NE(errorFor(m).find("extent overflows 64 bits"), std::string::npos)
      << errorFor(m);
  m = productManifest();
  m.products[0].workspace.region = Region::Persistent;
  EXPECT_NE(errorFor(m).find("workspace must be arena scratch"),
            std::string::npos);
}

TEST(ArtifactFormat, FindsTheGraphForDims) {
  Manifest m = conditionalManifest();
  GraphDesc other = sampleManifest().graphs[0];
  other.name = "n=64";
  other.dimValues = {{"n", 64}};
  m.graphs.push_back(other);
  size_t index = 9;
  std::string err;
  EXPECT_TRUE(findGraphForDims(m, {64}, index, err));
  EXPECT_EQ(index, 1u);
  EXPECT_TRUE(findGraphForDims(m, {128}, index, err));
  EXPECT_EQ(index, 0u);
  EXPECT_FALSE(findGraphForDims(m, {100}, index, err));
  EXPECT_EQ(err, "no graph is compiled for n=100 (the artifact has: forward, "
                 "n=64)");
}

TEST(ArtifactFormat, RejectsBadJsonFields) {
  std::vector<uint8_t> good = serializeArtifact(sampleManifest(), sampleBlobs());
  std::string json(good.begin() + kHeaderSize,
                   good.begin() + kHeaderSize + good[8]
                       + (size_t(good[9]) << 8));
  auto withJson = [&](std::string j) {
    // Keep the size: pad with spaces (JSON whitespace) or fail the test.
    EXPECT_LE(j.size(), json.size());
    j.resize(json.size(), ' ');
    auto b = good;
    std::memcpy(b.data() + kHeaderSize, j.data(), j.size());
    reseal(b);
    return parseError(b);
  };
  auto replace = [&](const std::string &from, const std::string &to) {
    std::string j = json;
    size_t p = j.find(from);
    EXPECT_NE(p, std::string::npos) << from;
    return withJson(j.replace(p, from.size(), to));
  };
  EXPECT_NE(replace("\"grid\"", "\"grix\"").find("missing field 'grid'"),
            std::string::npos);
  EXPECT_NE(replace("\"kind\": \"memset\"", "\"kind\": \"condit\"")
                .find("unsupported node kind 'condit'"),
            std::string::npos);
  EXPECT_NE(replace("\"arena_size\": 4096", "\"arena_size\": \"40\"")
                .find("arena_size: expected a non-negative integer"),
            std::string::npos);
  EXPECT_NE(replace("{", "[").find("malformed JSON"), std::string::npos);
  EXPECT_NE(withJson("[]").find("expected a JSON object"), std::string::npos);
}

TEST(ArtifactFormat, FuzzNeverCrashes) {
  std::vector<uint8_t> good = serializeArtifact(sampleManifest(), sampleBlobs());
  std::mt19937 rng(1234);
  size_t accepted = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto b = good;
    int mode = iter % 3;
    if (mode == 0) {
      b.resize(rng() % b.size());
    } else {
      int flips = 1 + rng() % 4;
      for (int f = 0; f < flips; ++f) {
        size_t lo = mode == 2 ? kHeaderSize : 0;
        size_t span = mode == 2 ? 600 : b.size();
        b[lo + rng() % span] = uint8_t(rng());
      }
      if (mode == 2)
        reseal(b); // Reach the JSON and validation paths.
    }
    Artifact a;
    std::string err;
    if (parseArtifact(b.data(), b.size(), a, err))
      ++accepted; // Only harmless edits (e.g. inside strings) may pass.
    else
      EXPECT_FALSE(err.empty());
  }
  EXPECT_LT(accepted, 3000u);
}

} // namespace
