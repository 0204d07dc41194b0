#pragma once
// Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw, "Parallel random
// numbers: as easy as 1, 2, 3" (SC 2011), as published with Random123: a 128-bit counter and a
// 64-bit key give 128 random bits through 10 rounds of
//   (c0, c1, c2, c3) -> (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0))
// with M0 = 0xD2511F53, M1 = 0xCD9E8D57, the key bumped by (0x9E3779B9, 0xBB67AE85) between
// rounds. Random123's known answers (kat_vectors) hold:
//   counter 0, key 0                 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8
//   counter ffffffff x4, key ffffffff x2 -> 408f276d 41c83b0e a20bc7c6 6d5451fd
//   counter 243f6a88 85a308d3 13198a2e 03707344, key a4093822 299f31d0
//                                    -> d16cfe09 94fdcceb 5001e420 24126ea1
// Host and device (plain integer arithmetic), so the host can check it too.
//
// ember's use (random_kernels.cu): key = (low, high) 32 bits of the generator's seed, counter =
// (low, high) 32 bits of the 64-bit counter index, 0, 0; converters below turn output words into
// uniforms.
#include <cstdint>

#if defined(__CUDACC__)
#define EMBER_PHILOX_FN __host__ __device__ __forceinline__
#else
#define EMBER_PHILOX_FN inline
#endif

namespace ember::cuda::philox {

inline constexpr uint32_t kM0 = 0xD2511F53u;
inline constexpr uint32_t kM1 = 0xCD9E8D57u;
inline constexpr uint32_t kW0 = 0x9E3779B9u;
inline constexpr uint32_t kW1 = 0xBB67AE85u;
inline constexpr int kRounds = 10;

struct Words {
  uint32_t w[4];
};

EMBER_PHILOX_FN Words round(const Words& c, uint32_t k0, uint32_t k1) {
  const uint64_t p0 = uint64_t(kM0) * c.w[0];
  const uint64_t p1 = uint64_t(kM1) * c.w[2];
  return Words{{uint32_t(p1 >> 32) ^ c.w[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ c.w[3] ^ k1, uint32_t(p0)}};
}

// The 10-round Philox4x32 of counter (c0, c1, c2, c3) under key (k0, k1).
EMBER_PHILOX_FN Words philox4x32_10(Words c, uint32_t k0, uint32_t k1) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int r = 0; r < kRounds; ++r) {
    if (r > 0) {
      k0 += kW0;
      k1 += kW1;
    }
    c = round(c, k0, k1);
  }
  return c;
}

// The 128 bits of counter index `counter` under a 64-bit seed.
EMBER_PHILOX_FN Words draw(uint64_t seed, uint64_t counter) {
  return philox4x32_10(Words{{uint32_t(counter), uint32_t(counter >> 32), 0u, 0u}}, uint32_t(seed), uint32_t(seed >> 32));
}

// Uniforms from output words.
// [0, 1) from the high 24 bits of one word: a multiple of 2^-24, exact in float.
EMBER_PHILOX_FN float uniform24(uint32_t w) { return float(w >> 8) * 0x1.0p-24f; }
// (0, 1] from the high 24 bits: (k + 1) 2^-24.
EMBER_PHILOX_FN float uniform24_open0(uint32_t w) { return float((w >> 8) + 1u) * 0x1.0p-24f; }
// 64 bits from two words (lo, hi).
EMBER_PHILOX_FN uint64_t bits64(uint32_t lo, uint32_t hi) { return (uint64_t(hi) << 32) | lo; }
// [0, 1) from the high 53 bits of 64: a multiple of 2^-53, exact in double.
EMBER_PHILOX_FN double uniform53(uint64_t b) { return double(b >> 11) * 0x1.0p-53; }
// (0, 1] from the high 53 bits: (k + 1) 2^-53.
EMBER_PHILOX_FN double uniform53_open0(uint64_t b) { return double((b >> 11) + 1u) * 0x1.0p-53; }

}  // namespace ember::cuda::philox
