#pragma once
// 16-bit floating types stored as raw bits; arithmetic happens in float.
#include <cstdint>
#include <cstring>

namespace ember {

namespace detail {
inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
}  // namespace detail

// IEEE 754 binary16, round-to-nearest-even on conversion from float.
struct Half {
  uint16_t x = 0;
  Half() = default;
  Half(float f) : x(from_float(f)) {}
  operator float() const { return to_float(x); }
  static Half from_bits(uint16_t b) { Half h; h.x = b; return h; }

  static uint16_t from_float(float f) {
    uint32_t u = detail::f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return uint16_t(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflows to inf after rounding
    if (a < 0x38800000u) {  // subnormal half or zero: scale so the rounding happens in float
      float v = detail::bits_f32(a) + 0.5f;  // 0.5 = 2^-1: aligns half-subnormal ulp (2^-24) to float ulp
      return uint16_t(sign | (detail::f32_bits(v) - 0x3f000000u));
    }
    uint32_t mant_odd = (a >> 13) & 1u;
    a += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
    return uint16_t(sign | (a >> 13));
  }
  static float to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0) {
      float v = float(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
      return detail::bits_f32(detail::f32_bits(v) | sign);
    }
    if (exp == 31) return detail::bits_f32(sign | 0x7f800000u | (mant << 13));
    return detail::bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
  }
};

// bfloat16: the top half of a float32, round-to-nearest-even.
struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  BFloat16(float f) : x(from_float(f)) {}
  operator float() const { return detail::bits_f32(uint32_t(x) << 16); }
  static BFloat16 from_bits(uint16_t b) { BFloat16 h; h.x = b; return h; }
  static uint16_t from_float(float f) {
    uint32_t u = detail::f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
  }
};

}  // namespace ember
