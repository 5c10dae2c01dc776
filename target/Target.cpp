//===- Target.cpp - The per-architecture table -------------------------------===//
#include "target/Target.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

using namespace cgc;

unsigned cgc::computeCapabilityOf(const std::string &arch) {
  return unsigned(std::strtoul(arch.c_str() + 3, nullptr, 10));
}

unsigned cgc::multiprocessorsOf(const std::string &arch) {
  // (compute capability, multiprocessors of its largest part): V100, T4,
  // A100, A40, L40S, H100/H200, B200, RTX PRO 6000.
  static const std::pair<unsigned, unsigned> table[] = {
      {70, 80}, {75, 40}, {80, 108}, {86, 84},
      {89, 142}, {90, 132}, {100, 148}, {120, 188}};
  unsigned cc = computeCapabilityOf(arch);
  unsigned count = table[0].second;
  for (const auto &[capability, sms] : table)
    if (capability <= cc)
      count = sms;
  return count;
}

Target cgc::targetFor(const std::string &arch, ProductPolicy products,
                      AttentionPolicy attention,
                      ConvolutionPolicy convolution) {
  return {arch, multiprocessorsOf(arch), products, attention, convolution};
}

uint32_t cgc::residentGrid(int64_t blocks, unsigned threadsPerBlock,
                           unsigned multiprocessors) {
  int64_t resident = int64_t(multiprocessors) * (kThreadsPerMultiprocessor /
                                                 std::max(threadsPerBlock, 1u));
  return uint32_t(std::clamp<int64_t>(blocks, 1, std::max<int64_t>(resident, 1)));
}
