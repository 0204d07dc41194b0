#pragma once
// Branch-free float32 math that GCC auto-vectorises inside cpu_kernel's dense loops
// (std::exp and friends are opaque libm calls and keep a loop scalar). Each function is
// written with selects instead of branches and with bit casts for the exponent tricks.
// Accuracy: a few float ulp over the whole range; overflow gives inf, underflow 0, NaN stays NaN.
// The float64 kernels use std:: (libm) instead.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__AVX512F__) || defined(__AVX__)
#endif

namespace ember::cpu {

// Every function here is forced inline: it only vectorises inside the caller's loop, and GCC's
// inliner, out of budget in a file that instantiates many kernels, would otherwise leave some as
// calls and their loops scalar (tanh, 10x slower, once did).
#define EMBER_VEC_INLINE [[gnu::always_inline]] inline

// a * b + c, rounded once where the CPU has FMA (the -march=native build), else twice. The
// polynomials below say where they fuse instead of leaving it to the compiler's contraction,
// which may fuse differently in different loops of one kernel (the elementwise kernels are
// compiled without it, so a result does not depend on the loop that computed it).
EMBER_VEC_INLINE float fmadd(float a, float b, float c) {
#if defined(__FMA__)
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;
#endif
}
EMBER_VEC_INLINE double fmadd(double a, double b, double c) {
#if defined(__FMA__)
  return __builtin_fma(a, b, c);
#else
  return a * b + c;
#endif
}

namespace vm {
EMBER_VEC_INLINE float as_float(int32_t i) { return std::bit_cast<float>(i); }
EMBER_VEC_INLINE int32_t as_int(float f) { return std::bit_cast<int32_t>(f); }
inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
}  // namespace vm

// Round to nearest integer, ties to even (the current rounding mode), as std::nearbyint, but
// vectorisable: adding and subtracting 2^23 leaves the rounded value for |x| < 2^23; larger
// floats are integers already. Keeps the sign of zero (round(-0.3) = -0.0) and NaN.
EMBER_VEC_INLINE float round_even_f32(float x) {
  float a = std::abs(x);
  float r = (a + 8388608.0f) - 8388608.0f;
  r = std::copysign(r, x);
  return a < 8388608.0f ? r : x;
}
EMBER_VEC_INLINE double round_even_f64(double x) {
  double a = std::abs(x);
  double r = (a + 4503599627370496.0) - 4503599627370496.0;
  r = std::copysign(r, x);
  return a < 4503599627370496.0 ? r : x;
}

// 2^n for integer-valued n in [-126*2, 127*2] applied as two exact factors, so results that
// are subnormal (or overflow) are rounded once, by the final multiply.
EMBER_VEC_INLINE float ldexp2_f32(float y, float n) {
  int32_t ni = int32_t(n);
  int32_t n1 = ni >> 1;
  int32_t n2 = ni - n1;
  return y * vm::as_float((n1 + 127) << 23) * vm::as_float((n2 + 127) << 23);
}

// exp(x) on [-ln2/2, ln2/2] minus the scaling: Cephes expf polynomial (~1 ulp).
EMBER_VEC_INLINE float expm_poly_f32(float r) {
  float p = 1.9875691500e-4f;
  p = fmadd(p, r, 1.3981999507e-3f);
  p = fmadd(p, r, 8.3334519073e-3f);
  p = fmadd(p, r, 4.1665795894e-2f);
  p = fmadd(p, r, 1.6666665459e-1f);
  p = fmadd(p, r, 5.0000001201e-1f);
  return fmadd(p * r, r, r) + 1.0f;
}

// exp(x): overflow -> inf (x > 88.72), underflow -> 0 through the subnormals, NaN -> NaN.
EMBER_VEC_INLINE float exp_f32(float x) {
  float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  // n = nearest integer to x/ln2 via the 1.5*2^23 trick (|n| <= 150): std::floor feeding an
  // int conversion becomes lfloor, which GCC does not vectorise.
  float n = fmadd(xc, 1.44269504088896341f, 12582912.0f) - 12582912.0f;
  // r = x - n*ln2 with ln2 split in two: n*C1 is exact for |n| < 2^15.
  float r = fmadd(-n, 0.693359375f, xc);
  r = fmadd(-n, -2.12194440e-4f, r);
  float y = ldexp2_f32(expm_poly_f32(r), n);
  // Below ln(2^-150) the exact result rounds to +0: return it as such, never a subnormal the
  // polynomial's last bit could leave (exp(-inf) in a masked softmax row must be a plain 0, and
  // a subnormal there makes every later multiply take the slow microcode path).
  return x != x ? x : (x < -103.972077f ? 0.0f : y);
}

// exp(x) where the caller only uses it as 1 / (1 + e) or x / (1 + e) (sigmoid, silu): exp_f32's
// two guards change nothing there -- a NaN propagates through the polynomial anyway, and a result
// below 2^-126 adds nothing to 1 -- and dropping them makes a sigmoid 23% faster, same bits.
EMBER_VEC_INLINE float exp_for_logistic_f32(float x) {
  float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  float n = fmadd(xc, 1.44269504088896341f, 12582912.0f) - 12582912.0f;
  float r = fmadd(-n, 0.693359375f, xc);
  r = fmadd(-n, -2.12194440e-4f, r);
  return ldexp2_f32(expm_poly_f32(r), n);
}

// 2^x, computed without the x*ln2 rounding error of exp(x*ln2).
EMBER_VEC_INLINE float exp2_f32(float x) {
  float xc = x < -151.0f ? -151.0f : (x > 129.0f ? 129.0f : x);
  float n = (xc + 12582912.0f) - 12582912.0f;
  float r = (xc - n) * 0.693147180559945309f;  // xc - n is exact
  float y = ldexp2_f32(expm_poly_f32(r), n);
  return x != x ? x : y;
}

// Natural log split as log(x) = e*ln2 + lm, the core of log/log2/log10 (Cephes logf).
// Returns lm (log of the mantissa, in [log(sqrt(.5)), log(sqrt(2)))) and sets e.
// Only meaningful for finite x > 0; callers patch 0, negative, inf and NaN.
EMBER_VEC_INLINE float log_core_f32(float x, float& e) {
  // Branch-free with integer masks: GCC turns float selects feeding arithmetic here back into
  // control flow, which it then cannot vectorise under -ftrapping-math.
  int32_t sub = -int32_t(x < 1.17549435e-38f);  // all ones for subnormals: scale by 2^23 first
  float xs = x * vm::as_float(0x3f800000 + (sub & (23 << 23)));
  int32_t bits = vm::as_int(xs);
  float m = vm::as_float((bits & 0x007fffff) | 0x3f000000);  // [0.5, 1)
  int32_t small = -int32_t(m < 0.707106781186547524f);     // then use 2m - 1 and e - 1
  float ef = float(((bits >> 23) & 0xff) - 126 - (sub & 23) + small);
  m = m * vm::as_float(0x3f800000 + (small & (1 << 23))) - 1.0f;  // exact
  float z = m * m;
  float y = 7.0376836292e-2f;
  y = fmadd(y, m, -1.1514610310e-1f);
  y = fmadd(y, m, 1.1676998740e-1f);
  y = fmadd(y, m, -1.2420140846e-1f);
  y = fmadd(y, m, 1.4249322787e-1f);
  y = fmadd(y, m, -1.6668057665e-1f);
  y = fmadd(y, m, 2.0000714765e-1f);
  y = fmadd(y, m, -2.4999993993e-1f);
  y = fmadd(y, m, 3.3333331174e-1f);
  y = y * m * z;
  y = fmadd(-0.5f, z, y);
  e = ef;
  return m + y;
}
// The value of log-like functions at the special inputs: 0 -> -inf, < 0 -> NaN, inf -> inf.
// Tested and blended on the bits: with plain selects GCC sinks the polynomial into the branch
// where it is live and then cannot if-convert (vectorise) the trapping float ops.
EMBER_VEC_INLINE float log_special_f32(float x, float v) {
  int32_t ix = vm::as_int(x);
  int32_t a = ix & 0x7fffffff;
  int32_t zero = -int32_t(a == 0);                                  // log(+-0) = -inf
  int32_t nan = -int32_t(((ix < 0) & (a != 0)) | (a > 0x7f800000));  // x < 0 or NaN
  int32_t inf = -int32_t(ix == 0x7f800000);                         // log(inf) = inf
  int32_t special = zero | nan | inf;
  int32_t value = (zero & int32_t(0xff800000)) | (nan & 0x7fc00000) | (inf & 0x7f800000);
  return vm::as_float((vm::as_int(v) & ~special) | value);
}
EMBER_VEC_INLINE float log_f32(float x) {
  float e;
  float lm = log_core_f32(x, e);
  // e*ln2 with ln2 split (Cephes): the small part first keeps the sum accurate.
  float v = fmadd(e, 0.693359375f, fmadd(e, -2.12194440e-4f, lm));
  return log_special_f32(x, v);
}
EMBER_VEC_INLINE float log2_f32(float x) {
  float e;
  float lm = log_core_f32(x, e);
  float v = fmadd(lm, 1.44269504088896341f, e);  // exact for powers of two
  return log_special_f32(x, v);
}
EMBER_VEC_INLINE float log10_f32(float x) {
  float e;
  float lm = log_core_f32(x, e);
  float v = fmadd(e, 3.01025390625e-1f, fmadd(lm, 0.434294481903251828f, e * 4.6050389811952137e-6f));
  return log_special_f32(x, v);
}
// log(1 + x) without cancellation: log(u) * x / (u - 1), u = 1 + x (Goldberg's trick).
EMBER_VEC_INLINE float log1p_f32(float x) {
  float u = 1.0f + x;
  float d = u - 1.0f;
  int32_t tiny = -int32_t(d == 0.0f);  // 1 + x rounds to 1: log1p(x) = x
  int32_t inf = -int32_t(x == vm::kInf);
  float dd = vm::as_float((vm::as_int(d) & ~tiny) | (0x3f800000 & tiny));  // avoid 0/0
  float v = log_f32(u) * (x / dd);
  int32_t keep_x = tiny | inf;  // integer blends: see log_special_f32
  return vm::as_float((vm::as_int(v) & ~keep_x) | (vm::as_int(x) & keep_x));
}
// exp(x) - 1 without cancellation: (u - 1) * x / log(u), u = exp(x) (Kahan's trick).
EMBER_VEC_INLINE float expm1_f32(float x) {
  float u = exp_f32(x);
  float d = u - 1.0f;
  float l = log_f32(u);
  float v = d * (x / (l == 0.0f ? 1.0f : l));
  v = d == 0.0f ? x : v;
  v = u == 0.0f ? -1.0f : v;
  v = d == -1.0f ? -1.0f : v;
  v = u == vm::kInf ? vm::kInf : v;
  return x != x ? x : v;
}

// tanh: odd polynomial for |x| < 0.625 (Cephes tanhf), 1 - 2/(exp(2|x|) + 1) above.
EMBER_VEC_INLINE float tanh_f32(float x) {
  float a = std::abs(x);
  float z = x * x;
  float p = -5.70498872745e-3f;
  p = fmadd(p, z, 2.06390887954e-2f);
  p = fmadd(p, z, -5.37397155531e-2f);
  p = fmadd(p, z, 1.33314422036e-1f);
  p = fmadd(p, z, -3.33332819422e-1f);
  float small = fmadd(p * z, x, x);
  float e = exp_f32(2.0f * a);
  float big = std::copysign(1.0f - 2.0f / (e + 1.0f), x);
  return a < 0.625f ? small : big;
}

// sin(2 pi u) and cos(2 pi u) for u in [0, 1] (the angle of Box-Muller): the quadrant from 4u,
// then Taylor polynomials on [-pi/4, pi/4] (truncation below 3e-8), blended on the bits so the
// loop vectorises.
EMBER_VEC_INLINE void sincos_2pi_f32(float u, float& s, float& c) {
  const float t = u * 4.0f;
  const float q = (t + 8388608.0f) - 8388608.0f;  // round to nearest: t is in [0, 4]
  const float th = (t - q) * 1.57079632679489662f;
  const float z = th * th;
  const float sp = th * (1.0f + z * (-1.66666667e-1f + z * (8.33333333e-3f + z * (-1.98412698e-4f + z * 2.75573192e-6f))));
  const float cp = 1.0f + z * (-0.5f + z * (4.16666667e-2f + z * (-1.38888889e-3f + z * 2.48015873e-5f)));
  // angle = q pi/2 + th: sin is (sp, cp, -sp, -cp) and cos (cp, -sp, -cp, sp) for q = 0..3
  const int32_t qi = int32_t(q) & 3;
  const int32_t odd = -(qi & 1);
  const int32_t sneg = -((qi >> 1) & 1), cneg = -(((qi + 1) >> 1) & 1);
  const int32_t sign = int32_t(0x80000000u);
  s = vm::as_float(((vm::as_int(sp) & ~odd) | (vm::as_int(cp) & odd)) ^ (sneg & sign));
  c = vm::as_float(((vm::as_int(cp) & ~odd) | (vm::as_int(sp) & odd)) ^ (cneg & sign));
}


// erf: odd rational approximation on [-4, 4] (Eigen's generic_fast_erf_float); |erf| rounds
// to 1 beyond. Relative error a few ulp.
EMBER_VEC_INLINE float erf_f32(float x) {
  float xc = x < -4.0f ? -4.0f : (x > 4.0f ? 4.0f : x);
  float x2 = xc * xc;
  float p = -2.72614225801306e-10f;
  p = fmadd(p, x2, 2.77068142495902e-08f);
  p = fmadd(p, x2, -2.10102402082508e-06f);
  p = fmadd(p, x2, -5.69250639462346e-05f);
  p = fmadd(p, x2, -7.34990630326855e-04f);
  p = fmadd(p, x2, -2.95459980854025e-03f);
  p = fmadd(p, x2, -1.60960333262415e-02f);
  float q = -1.45660718464996e-05f;
  q = fmadd(q, x2, -2.13374055278905e-04f);
  q = fmadd(q, x2, -1.68282697438203e-03f);
  q = fmadd(q, x2, -7.37332916720468e-03f);
  q = fmadd(q, x2, -1.42647390514189e-02f);
  // The odd factor x last: p * x first would go subnormal for |x| < 1e-36 and lose the
  // result's relative precision (found by test_elementwise_formulas against libm's erff).
  float v = (p / q) * xc;
  return x != x ? x : v;
}


}  // namespace ember::cpu
