//===- Nvrtc.cpp - Compiling the generated program with NVRTC ----------------===//
//
// One program holds every kernel of a model (NVRTC compile time is mostly
// per program). Options: the target arch, -default-device, C++17 and the
// CUDA include directory for cuda_fp16.h / cuda_bf16.h. The cubin and the
// PTX compiles run on two threads.
//
//===----------------------------------------------------------------------===//
#include "codegen/Nvrtc.h"

#include <nvrtc.h>
#include <thread>

using namespace cgc;

#ifndef CGC_CUDA_INCLUDE_DIR
#define CGC_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

namespace {
struct Job {
  std::string arch;
  bool wantCubin;
  std::vector<uint8_t> cubin;
  std::string ptx, log;
  bool ok = false;
};
} // namespace

static void compileOne(const std::string &source, Job &job) {
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, source.c_str(), "cgc_kernels.cu", 0, nullptr,
                         nullptr) != NVRTC_SUCCESS) {
    job.log = "nvrtcCreateProgram failed";
    return;
  }
  std::string archOption = "--gpu-architecture=" + job.arch;
  std::string include = std::string("-I") + CGC_CUDA_INCLUDE_DIR;
  const char *options[] = {archOption.c_str(), "-default-device",
                           "--std=c++17", include.c_str()};
  nvrtcResult result = nvrtcCompileProgram(prog, 4, options);
  size_t logSize = 0;
  nvrtcGetProgramLogSize(prog, &logSize);
  job.log.resize(logSize);
  if (logSize)
    nvrtcGetProgramLog(prog, &job.log[0]);
  while (!job.log.empty() && (job.log.back() == '\0' || job.log.back() == '\n'))
    job.log.pop_back();
  if (result == NVRTC_SUCCESS) {
    size_t size = 0;
    if (job.wantCubin) {
      nvrtcGetCUBINSize(prog, &size);
      job.cubin.resize(size);
      nvrtcGetCUBIN(prog, reinterpret_cast<char *>(job.cubin.data()));
      job.ok = size != 0;
    } else {
      nvrtcGetPTXSize(prog, &size);
      job.ptx.resize(size);
      nvrtcGetPTX(prog, &job.ptx[0]);
      while (!job.ptx.empty() && job.ptx.back() == '\0')
        job.ptx.pop_back();
      job.ok = size != 0;
    }
  } else if (job.log.empty()) {
    job.log = nvrtcGetErrorString(result);
  }
  nvrtcDestroyProgram(&prog);
}

bool cgc::compileWithNvrtc(const std::string &source, const std::string &arch,
                           DeviceCode &code) {
  Job cubin{arch, true, {}, {}, {}};
  Job ptx{"compute_" + arch.substr(arch.find('_') + 1), false, {}, {}, {}};
  std::thread worker([&] { compileOne(source, ptx); });
  compileOne(source, cubin);
  worker.join();
  if (!cubin.ok || !ptx.ok) {
    code.log = !cubin.ok ? cubin.log : ptx.log;
    return false;
  }
  code.cubin = std::move(cubin.cubin);
  code.ptx = std::move(ptx.ptx);
  return true;
}

std::string cgc::nvrtcVersionString() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return "nvrtc " + std::to_string(major) + "." + std::to_string(minor);
}
