//===- Philox.h - The Philox4x32-10 stream of docs/ir.md --------*- C++ -*-===//
//
// The one definition of cgc's random numbers, shared by the interpreter and
// the parameter initializers; the CUDA kernels emitted by codegen implement
// the same function and must match it bit for bit.
//
// Element i of a stream keyed by (seed, offset) reads word (i % 4) of
// philox4x32_10(counter = {lo(i/4), hi(i/4), lo(offset), hi(offset)},
//               key = {lo(seed), hi(seed)}).
// A uniform float in [0, 1) is (word >> 8) * 2^-24.
//
//===----------------------------------------------------------------------===//
#ifndef CGC_IR_PHILOX_H
#define CGC_IR_PHILOX_H

#include <array>
#include <cstdint>

namespace cgc {

using PhiloxBlock = std::array<uint32_t, 4>;

inline PhiloxBlock philox4x32_10(PhiloxBlock counter, uint32_t key0,
                                 uint32_t key1) {
  constexpr uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  constexpr uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(M0) * counter[0];
    uint64_t p1 = uint64_t(M1) * counter[2];
    counter = {uint32_t(p1 >> 32) ^ counter[1] ^ key0, uint32_t(p1),
               uint32_t(p0 >> 32) ^ counter[3] ^ key1, uint32_t(p0)};
    key0 += W0;
    key1 += W1;
  }
  return counter;
}

/// Words 4 * \p block to 4 * \p block + 3 of the stream keyed by
/// (\p seed, \p offset).
inline PhiloxBlock philoxBlock(uint64_t seed, uint64_t offset, uint64_t block) {
  return philox4x32_10({uint32_t(block), uint32_t(block >> 32),
                        uint32_t(offset), uint32_t(offset >> 32)},
                       uint32_t(seed), uint32_t(seed >> 32));
}

/// Word \p index of the stream keyed by (\p seed, \p offset).
inline uint32_t philoxWord(uint64_t seed, uint64_t offset, uint64_t index) {
  return philoxBlock(seed, offset, index / 4)[index % 4];
}

/// \p word as a uniform float in [0, 1) with 24 random bits, exact in f32.
inline float uniformOf(uint32_t word) {
  return float(word >> 8) * (1.0f / 16777216.0f);
}

/// Uniform float of word \p index of the stream.
inline float philoxUniform(uint64_t seed, uint64_t offset, uint64_t index) {
  return uniformOf(philoxWord(seed, offset, index));
}

} // namespace cgc

#endif
