//===- GpuTestUtil.cpp - Build test artifacts with NVRTC -----------------===//
//
// NVRTC compilation and the hand-written manifest of the chain test model.
//
//===----------------------------------------------------------------------===//
#include "GpuTestUtil.h"

#include "cgc/cgc_runtime.h"

#include <nvrtc.h>

#include <csignal>
#include <cstring>
#include <execinfo.h>
#include <unistd.h>

using namespace cgc::format;

namespace {
/// A crash in a GPU test (under compute-sanitizer, which reports only that
/// the process died) prints the host stack: binary(+offset) frames that
/// `addr2line -f -e BINARY OFFSET` resolves.
void printStackAndDie(int sig) {
  void *frames[64];
  int n = backtrace(frames, 64);
  const char header[] = "gpu test: fatal signal; host stack:\n";
  (void)!write(2, header, sizeof header - 1);
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}
const bool stackOnCrash = [] {
  signal(SIGSEGV, printStackAndDie);
  signal(SIGABRT, printStackAndDie);
  signal(SIGBUS, printStackAndDie);
  return true;
}();
} // namespace

namespace cgctest {
namespace {

const char *kSource = R"(
extern "C" __global__ void add_one(const float *in, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + 1.0f;
}
extern "C" __global__ void scale(const float *in, float *out, float a,
                                 long long n, unsigned long long tag) {
  long long i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && tag == 7ull) out[i] = in[i] * a;
}
extern "C" __global__ void add_w(const float *in, float *out, const float *w,
                                 int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + w[0];
}
)";

constexpr uint64_t kBuf = 4096; // One padded buffer of kMaxN floats.

ParamDesc ptr(uint64_t offset, const std::string &binding = "",
              Region r = Region::Arena) {
  ParamDesc p;
  p.region = r;
  p.offset = offset;
  p.binding = binding;
  return p;
}

ParamDesc scalar(ParamDesc::Kind k, int64_t v, const std::string &dim = "") {
  ParamDesc p;
  p.kind = k;
  p.intValue = v;
  p.uintValue = uint64_t(v);
  p.dim = dim;
  return p;
}

KernelDesc kernel(const std::string &name, std::vector<ParamDesc> params) {
  KernelDesc k;
  k.name = name;
  k.grid[0] = (kMaxN + 255) / 256;
  k.block[0] = 256;
  k.params = std::move(params);
  k.sources.push_back({"%" + name, name, "test.py:1:1"});
  return k;
}

TensorDesc tensor(const std::string &name, const std::string &kind,
                  uint64_t offset) {
  return {name, kind, "f32", {kMaxN}, {"n"}, Region::Arena, offset, kBuf,
          "", 0, "", "", {}};
}

} // namespace

bool hasDevice(std::string &reason) {
  int count = 0;
  if (cgc_device_count(&count) == CGC_OK && count > 0)
    return true;
  reason = cgc_last_error();
  return false;
}

bool compileNvrtc(const std::string &source, const std::string &arch,
                  std::vector<uint8_t> &out, std::string &error) {
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, source.c_str(), "test.cu", 0, nullptr,
                         nullptr) != NVRTC_SUCCESS)
    return (error = "nvrtcCreateProgram failed"), false;
  std::string opt = "-arch=" + arch;
  const char *opts[] = {opt.c_str(), "--std=c++17"};
  nvrtcResult r = nvrtcCompileProgram(prog, 2, opts);
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    error.assign(n, '\0');
    nvrtcGetProgramLog(prog, &error[0]);
    nvrtcDestroyProgram(&prog);
    return false;
  }
  size_t n = 0;
  bool cubin = arch.rfind("sm_", 0) == 0;
  if (cubin) {
    nvrtcGetCUBINSize(prog, &n);
    out.resize(n);
    nvrtcGetCUBIN(prog, reinterpret_cast<char *>(out.data()));
  } else {
    nvrtcGetPTXSize(prog, &n);
    out.resize(n);
    nvrtcGetPTX(prog, reinterpret_cast<char *>(out.data()));
  }
  nvrtcDestroyProgram(&prog);
  return true;
}

bool buildChainArtifact(const ChainSpec &spec, std::vector<uint8_t> &out,
                        std::string &error) {
  Manifest m;
  m.compilerVersion = "cgc-test";
  m.targetArch = spec.cubinArch.empty() ? "sm_90" : spec.cubinArch;
  m.minDriverVersion = 12000;
  int nBufs = spec.numAdd + 4; // x, temps, scaled, y, y_copy.
  m.arenaSize = kBuf * uint64_t(nBufs);
  m.persistentSize = 512;
  m.dims.push_back({"n", 1, kMaxN, {kMaxN}});
  uint64_t yOff = kBuf * uint64_t(spec.numAdd + 2);
  uint64_t copyOff = yOff + kBuf;
  m.inputs.push_back(tensor("x", "user_input", 0));
  m.outputs.push_back(tensor("y", "output", yOff));
  m.outputs.push_back(tensor("y_copy", "output", copyOff));
  TensorDesc w{"w", "parameter", "f32", {1}, {}, Region::Persistent, 0, 4,
               "w_init", 0, "", "", {}};
  TensorDesc rng{"rng_state", "rng_state", "i64", {2}, {}, Region::Persistent, 256,
                 16, "", 0, "", "", {}};
  m.state = {w, rng};

  GraphDesc g;
  g.name = "forward";
  NodeDesc memset;
  memset.kind = NodeDesc::Kind::Memset;
  memset.dstOffset = yOff;
  memset.dstBinding = "y";
  memset.bytes = kMaxN * 4;
  g.nodes.push_back(memset);
  for (int i = 0; i < spec.numAdd; ++i) {
    m.kernels.push_back(kernel(
        "add_one", {ptr(kBuf * i, i == 0 ? "x" : ""), ptr(kBuf * (i + 1)),
                    scalar(ParamDesc::Kind::I32, kMaxN, "n")}));
  }
  ParamDesc a;
  a.kind = ParamDesc::Kind::F32;
  a.floatValue = 2.0f;
  m.kernels.push_back(kernel(
      "scale", {ptr(kBuf * spec.numAdd), ptr(kBuf * (spec.numAdd + 1)), a,
                scalar(ParamDesc::Kind::I64, kMaxN, "n"),
                scalar(ParamDesc::Kind::U64, 7)}));
  m.kernels.push_back(kernel(
      "add_w", {ptr(kBuf * (spec.numAdd + 1)), ptr(yOff, "y"),
                ptr(0, "", Region::Persistent),
                scalar(ParamDesc::Kind::I32, kMaxN, "n")}));
  for (uint32_t k = 0; k < m.kernels.size(); ++k) {
    NodeDesc n;
    n.kind = NodeDesc::Kind::Kernel;
    n.kernel = k;
    g.nodes.push_back(n);
  }
  NodeDesc copy;
  copy.kind = NodeDesc::Kind::Memcpy;
  copy.srcOffset = yOff;
  copy.srcBinding = "y";
  copy.dstOffset = copyOff;
  copy.dstBinding = "y_copy";
  copy.bytes = kMaxN * 4;
  g.nodes.push_back(copy);
  for (uint32_t i = 0; i + 1 < g.nodes.size(); ++i)
    g.edges.push_back({i, i + 1});
  m.graphs.push_back(g);

  BlobList blobs;
  std::vector<uint8_t> code;
  if (!spec.cubinArch.empty()) {
    if (!compileNvrtc(kSource, spec.cubinArch, code, error))
      return false;
    blobs.push_back({kCubinBlob, code});
  }
  if (spec.withPtx) {
    if (!compileNvrtc(kSource, "compute_90", code, error))
      return false;
    blobs.push_back({kPtxBlob, code});
  }
  std::vector<uint8_t> wInit(4);
  std::memcpy(wInit.data(), &kInitialW, 4);
  blobs.push_back({"w_init", wInit});
  out = serializeArtifact(m, blobs);
  Artifact check;
  return parseArtifact(out.data(), out.size(), check, error);
}

} // namespace cgctest
