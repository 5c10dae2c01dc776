//===- SampleArtifact.h - A small manifest for the format tests -----------===//
//
// What ArtifactFormatTest.cpp and WeightsBesideTest.cpp share: a sample
// manifest and blobs, and helpers that serialize one and return the error
// parsing it gives.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_TEST_UNIT_SAMPLEARTIFACT_H
#define CGC_TEST_UNIT_SAMPLEARTIFACT_H

#include "format/ArtifactFormat.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cgc::format::test {

inline Manifest sampleManifest() {
  Manifest m;
  m.compilerVersion = "cgc 0.1.0";
  m.arenaSize = 4096;
  m.persistentSize = 512;
  m.dims.push_back({"n", 1, 256, {64, 128, 256}});
  TensorDesc x{"x", "user_input", "f32", {256}, {"n"}, Region::Arena, 0, 1024,
               "", 0, "", "", {}};
  TensorDesc y{"y", "output", "f32", {256}, {"n"}, Region::Arena, 1024, 1024,
               "", 0, "", "", {}};
  TensorDesc w{"w", "parameter", "f32", {4}, {}, Region::Persistent, 0, 16,
               "weights", 0, "", "", {}};
  m.inputs.push_back(x);
  m.outputs.push_back(y);
  m.state.push_back(w);
  KernelDesc k;
  k.name = "add_one";
  k.grid[0] = 1;
  k.block[0] = 256;
  ParamDesc in, out, n, scale;
  in.region = Region::Arena, in.offset = 0, in.binding = "x";
  out.region = Region::Arena, out.offset = 1024, out.binding = "y";
  n.kind = ParamDesc::Kind::I32, n.intValue = 256, n.dim = "n";
  scale.kind = ParamDesc::Kind::F32, scale.floatValue = 0.5f;
  k.params = {in, out, n, scale};
  k.sources.push_back({"%3", "add", "model.py:12:3"});
  m.kernels.push_back(k);
  GraphDesc g;
  g.name = "forward";
  NodeDesc ms;
  ms.kind = NodeDesc::Kind::Memset;
  ms.dstOffset = 2048, ms.bytes = 64, ms.value = 0;
  NodeDesc kn;
  kn.kind = NodeDesc::Kind::Kernel, kn.kernel = 0;
  NodeDesc cp;
  cp.kind = NodeDesc::Kind::Memcpy;
  cp.srcOffset = 1024, cp.dstOffset = 2048, cp.bytes = 64;
  g.nodes = {ms, kn, cp};
  g.edges = {{0, 1}, {1, 2}};
  m.graphs.push_back(g);
  return m;
}

inline BlobList sampleBlobs() {
  std::vector<uint8_t> weights(16);
  for (size_t i = 0; i < weights.size(); ++i)
    weights[i] = uint8_t(i);
  return {{"cubin", std::vector<uint8_t>(300, 0xab)}, {"weights", weights}};
}

inline std::string parseError(const std::vector<uint8_t> &bytes) {
  Artifact a;
  std::string err;
  if (parseArtifact(bytes.data(), bytes.size(), a, err))
    return "";
  EXPECT_FALSE(err.empty());
  return err;
}

inline std::string errorFor(const Manifest &m) {
  return parseError(serializeArtifact(m, sampleBlobs()));
}

/// Recomputes the header checksum after an edit.
inline void reseal(std::vector<uint8_t> &b) {
  uint64_t h = artifactChecksum(b.data(), b.size());
  for (int i = 0; i < 8; ++i)
    b[24 + i] = uint8_t(h >> (8 * i));
}

} // namespace cgc::format::test

#endif // CGC_TEST_UNIT_SAMPLEARTIFACT_H
