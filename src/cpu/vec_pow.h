#pragma once
// pow(x, y) for float32, branch-free so GCC vectorises it in cpu_kernel's dense loops (libm's
// powf keeps a loop scalar: 2.3 ms per 1M elements on this CPU against torch's 1.3). The core
// runs in double: log2|x| to ~1e-12, t = y * log2|x|, 2^t to ~1e-11, one rounding to float, so
// results are within one float ulp of the exact value (correctly rounded nearly always). The
// special cases are C99's (Annex F), as std::pow: pow(x, 0) = pow(1, y) = 1 even for NaN, a
// negative base needs an integer exponent (else NaN) and keeps its sign for odd ones, signed
// zeros and infinities as pow's table.
#include <bit>
#include <cstdint>

#include "cpu/vec_math.h"

namespace ember::cpu {

namespace vm {
EMBER_VEC_INLINE double as_double(int64_t i) { return std::bit_cast<double>(i); }
EMBER_VEC_INLINE int64_t as_long(double d) { return std::bit_cast<int64_t>(d); }
}  // namespace vm

// log2(a) for a finite double a > 0 made from a float (so normal as a double): a = m * 2^e with
// m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172.
EMBER_VEC_INLINE double log2_pos_f64(double a) {
  const int64_t bits = vm::as_long(a);
  int64_t e = ((bits >> 52) & 0x7ff) - 1023;
  double m = vm::as_double((bits & 0x000fffffffffffffLL) | 0x3ff0000000000000LL);  // [1, 2)
  const int64_t big = -int64_t(m > 1.4142135623730951);  // then m / 2, e + 1
  m = m * vm::as_double(0x3ff0000000000000LL - (big & (int64_t(1) << 52)));
  e -= big;
  const double s = (m - 1.0) / (m + 1.0);
  const double z = s * s;
  // 2 atanh(s) / ln 2 = s * (c1 + c3 z + c5 z^2 + ...), c_k = 2 / (k ln 2); the first omitted
  // term, z^7 / 15 < 1.3e-12 relative, keeps t = y log2|x| within 2e-10 for every |t| < 150.
  double p = 2.0 / (13 * 0.6931471805599453);
  p = fmadd(p, z, 2.0 / (11 * 0.6931471805599453));
  p = fmadd(p, z, 2.0 / (9 * 0.6931471805599453));
  p = fmadd(p, z, 2.0 / (7 * 0.6931471805599453));
  p = fmadd(p, z, 2.0 / (5 * 0.6931471805599453));
  p = fmadd(p, z, 2.0 / (3 * 0.6931471805599453));
  p = fmadd(p, z, 2.0 / 0.6931471805599453);
  return fmadd(p, s, double(e));
}

// 2^t for t in [-200, 200] (clamped by the caller): t = n + f, |f| <= 1/2, 2^f by its Taylor
// series in r = f ln 2, |r| <= 0.347 (degree 9: the remainder is below 2e-11 relative, far under
// the 3e-8 that one float rounding allows), 2^n through the exponent bits.
EMBER_VEC_INLINE double exp2_f64(double t) {
  const double n = (t + 6755399441055744.0) - 6755399441055744.0;  // round to nearest, |t| < 2^51
  const double r = (t - n) * 0.6931471805599453;
  double p = 1.0 / 362880.0;
  p = fmadd(p, r, 1.0 / 40320.0);
  p = fmadd(p, r, 1.0 / 5040.0);
  p = fmadd(p, r, 1.0 / 720.0);
  p = fmadd(p, r, 1.0 / 120.0);
  p = fmadd(p, r, 1.0 / 24.0);
  p = fmadd(p, r, 1.0 / 6.0);
  p = fmadd(p, r, 0.5);
  p = fmadd(p, r, 1.0);
  p = fmadd(p, r, 1.0);
  return p * vm::as_double((int64_t(n) + 1023) << 52);
}

EMBER_VEC_INLINE float pow_f32(float x, float y) {
  const int32_t ix = vm::as_int(x), iy = vm::as_int(y);
  const int32_t ax = ix & 0x7fffffff, ay = iy & 0x7fffffff;
  // y's kind: an integer (inf counts as an even one), and odd (only below 2^24 can it be).
  const float ty = round_even_f32(y);
  const int32_t y_int = -int32_t(ty == y);
  const int32_t y_small = -int32_t(ay < 0x4b800000);
  const int32_t y_odd = y_int & y_small & -int32_t((int32_t(vm::as_float(vm::as_int(ty) & y_small)) & 1) != 0);
  // |x|^y in double; log2 of 0 is -inf and of inf is +inf, so zeros and infinities follow.
  // Selects are blends of integer masks: GCC turns double selects back into branches here and
  // then does not vectorise the loop (see log_core_f32).
  const int64_t x_zero = -int64_t(ax == 0), x_inf = -int64_t(ax == 0x7f800000);
  const int64_t x_finite = -int64_t((ax != 0) & (ax < 0x7f800000));
  const int64_t a_bits = vm::as_long(double(vm::as_float(ax)));
  const double l = vm::as_double((vm::as_long(log2_pos_f64(vm::as_double((a_bits & x_finite) |
                                                                          (0x3ff0000000000000LL & ~x_finite)))) &
                                  x_finite) |
                                 (x_zero & int64_t(0xfff0000000000000ULL)) | (x_inf & 0x7ff0000000000000LL));
  const double t0 = double(y) * l;
  // Beyond float's range either way (clamped); a NaN (x or y NaN) computes 2^0 and is patched below.
  const int64_t low = -int64_t(t0 < -200.0), high = -int64_t(t0 > 200.0), bad = -int64_t(t0 != t0);
  const double t = vm::as_double((vm::as_long(t0) & ~(low | high | bad)) | (low & vm::as_long(-200.0)) |
                                 (high & vm::as_long(200.0)));
  const float r = float(exp2_f64(t));
  // Sign: a negative base (-0 included) with an odd integer exponent.
  const int32_t neg = -int32_t(ix < 0);
  int32_t bits = vm::as_int(r) | (neg & y_odd & int32_t(0x80000000));
  // NaN: either operand NaN, or a finite negative base with a finite non-integer exponent.
  const int32_t nan = -int32_t((ax > 0x7f800000) | (ay > 0x7f800000)) | (neg & -int32_t(ax != 0) &
                                                                         -int32_t(ax != 0x7f800000) & ~y_int);
  bits = (bits & ~nan) | (nan & 0x7fc00000);
  // One: y == +-0, x == 1, or |x| == 1 with an infinite y (-1 too: inf is even).
  const int32_t one = -int32_t((ay == 0) | (ix == 0x3f800000) | ((ax == 0x3f800000) & (ay == 0x7f800000)));
  bits = (bits & ~one) | (one & 0x3f800000);
  return vm::as_float(bits);
}

}  // namespace ember::cpu
