//===- Nvrtc.h - Compiling the generated program with NVRTC -----*- C++ -*-===//
#ifndef CGC_CODEGEN_NVRTC_H
#define CGC_CODEGEN_NVRTC_H

#include <cstdint>
#include <string>
#include <vector>

namespace cgc {

struct DeviceCode {
  std::vector<uint8_t> cubin; ///< For the real arch (sm_XX).
  std::string ptx;            ///< For compute_XX, the JIT fallback.
  std::string log;            ///< The compiler log on failure.
};

/// Compiles \p source twice in parallel: a cubin for \p arch ("sm_90") and
/// PTX for the matching virtual arch. False with \p code.log on failure.
bool compileWithNvrtc(const std::string &source, const std::string &arch,
                      DeviceCode &code);

/// "nvrtc 13.0".
std::string nvrtcVersionString();

} // namespace cgc

#endif
