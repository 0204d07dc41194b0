#pragma once
// PyTorch's vectorised Box-Muller step for float32 normal_ (randn): 16 uniforms in [0, 1)
// become 16 normals, value j (j < 8) from the pair (u[j], u[j + 8]): radius sqrt(-2 log(1 - u[j])),
// angle 2 pi u[j + 8], cosine into slot j and sine into slot j + 8, then std * value + mean.
// torch evaluates log and sincos with the Cephes single-precision polynomials (as ported to AVX
// by Pommier's sse_mathfun), and its compiler fused each product that feeds only an addition into
// a multiply-add. To give torch's bits, this file evaluates the same polynomials with the same
// roundings: every fusion is an explicit fma and every other operation rounds on its own
// (the file is built with -ffp-contract=off, see CMakeLists.txt). The constants are the Cephes
// coefficients (public facts), rounded from double to float as torch's tables are.
#include <bit>
#include <cmath>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace ember::cpu::box_muller {

namespace k {
constexpr float kSqrtHalf = float(0.707106781186547524);
constexpr float kLogP[9] = {float(7.0376836292E-2),  float(-1.1514610310E-1), float(1.1676998740E-1),
                            float(-1.2420140846E-1), float(1.4249322787E-1),  float(-1.6668057665E-1),
                            float(2.0000714765E-1),  float(-2.4999993993E-1), float(3.3333331174E-1)};
constexpr float kLogQ1 = float(-2.12194440e-4), kLogQ2 = float(0.693359375);
constexpr float kFourOverPi = float(1.27323954473516);
constexpr float kMinusDP1 = float(-0.78515625), kMinusDP2 = float(-2.4187564849853515625e-4),
                kMinusDP3 = float(-3.77489497744594108e-8);
constexpr float kSinP0 = float(-1.9515295891E-4), kSinP1 = float(8.3321608736E-3), kSinP2 = float(-1.6666654611E-1);
constexpr float kCosP0 = float(2.443315711809948E-005), kCosP1 = float(-1.388731625493765E-003),
                kCosP2 = float(4.166664568298827E-002);
constexpr float kTwoPi = float(2.0 * 3.14159265358979323846);
}  // namespace k

// ---- one lane (the portable path; the AVX2 path below computes the same bits 8 at a time)
inline float log_lane(float x0) {
  const bool le_zero = x0 <= 0.0f;                             // becomes NaN, as torch's
  float x = std::fmax(x0, std::bit_cast<float>(0x00800000));  // flush subnormals to the smallest normal
  int32_t e_int = int32_t(std::bit_cast<uint32_t>(x) >> 23) - 0x7f;
  x = std::bit_cast<float>((std::bit_cast<uint32_t>(x) & ~0x7f800000u) | std::bit_cast<uint32_t>(0.5f));
  float e = float(e_int);
  e = e + 1.0f;
  const bool small = x < k::kSqrtHalf;
  const float tmp = small ? x : 0.0f;
  x = x - 1.0f;
  e = e - (small ? 1.0f : 0.0f);
  x = x + tmp;
  const float z = x * x;
  float y = k::kLogP[0];
  for (int i = 1; i < 9; ++i) y = std::fma(y, x, k::kLogP[i]);
  y = y * x;
  y = std::fma(y, z, e * k::kLogQ1);
  y = std::fma(-z, 0.5f, y);
  x = x + y;
  x = std::fma(e, k::kLogQ2, x);
  if (le_zero) x = std::bit_cast<float>(std::bit_cast<uint32_t>(x) | 0xffffffffu);
  return x;
}

inline void sincos_lane(float x0, float& s_out, float& c_out) {
  uint32_t sign_sin = std::bit_cast<uint32_t>(x0) & 0x80000000u;
  float x = std::bit_cast<float>(std::bit_cast<uint32_t>(x0) & 0x7fffffffu);
  float y = x * k::kFourOverPi;
  int32_t j = int32_t(y);  // truncation, as cvttps (the angles here are small and finite)
  j = (j + 1) & ~1;
  y = float(j);
  const uint32_t swap_sin = uint32_t(j & 4) << 29;
  const bool poly_is_cos = (j & 2) == 0;  // torch's poly_mask: all ones where (j & 2) == 0
  x = std::fma(y, k::kMinusDP1, x);
  x = std::fma(y, k::kMinusDP2, x);
  x = std::fma(y, k::kMinusDP3, x);
  const uint32_t sign_cos = uint32_t(~(j - 2) & 4) << 29;
  sign_sin ^= swap_sin;
  const float z = x * x;
  float yc = std::fma(k::kCosP0, z, k::kCosP1);
  yc = std::fma(yc, z, k::kCosP2);
  yc = yc * z;
  yc = std::fma(yc, z, -(z * 0.5f));
  yc = yc + 1.0f;
  float ys = std::fma(k::kSinP0, z, k::kSinP1);
  ys = std::fma(ys, z, k::kSinP2);
  ys = ys * z;
  ys = std::fma(ys, x, x);
  const float ysin2 = poly_is_cos ? ys : 0.0f;
  const float ysin1 = poly_is_cos ? 0.0f : yc;
  const float ys_rest = ys - ysin2, yc_rest = yc - ysin1;
  const float s = ysin1 + ysin2, c = yc_rest + ys_rest;
  s_out = std::bit_cast<float>(std::bit_cast<uint32_t>(s) ^ sign_sin);
  c_out = std::bit_cast<float>(std::bit_cast<uint32_t>(c) ^ sign_cos);
}

inline void fill16_portable(float* d, float mean, float std) {
  for (int j = 0; j < 8; ++j) {
    const float u1 = 1.0f - d[j], u2 = d[j + 8];
    const float radius = std::sqrt(-2.0f * log_lane(u1));
    const float theta = k::kTwoPi * u2;
    float s, c;
    sincos_lane(theta, s, c);
    d[j] = std::fma(radius * c, std, mean);
    d[j + 8] = std::fma(radius * s, std, mean);
  }
}

#if defined(__AVX2__) && defined(__FMA__)
inline __m256 log8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 invalid = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LE_OS);
  x = _mm256_max_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x00800000)));
  __m256i e_int = _mm256_sub_epi32(_mm256_srli_epi32(_mm256_castps_si256(x), 23), _mm256_set1_epi32(0x7f));
  x = _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(~0x7f800000)));
  x = _mm256_or_ps(x, _mm256_set1_ps(0.5f));
  __m256 e = _mm256_add_ps(_mm256_cvtepi32_ps(e_int), one);
  const __m256 small = _mm256_cmp_ps(x, _mm256_set1_ps(k::kSqrtHalf), _CMP_LT_OS);
  const __m256 tmp = _mm256_and_ps(x, small);
  x = _mm256_sub_ps(x, one);
  e = _mm256_sub_ps(e, _mm256_and_ps(one, small));
  x = _mm256_add_ps(x, tmp);
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 y = _mm256_set1_ps(k::kLogP[0]);
  for (int i = 1; i < 9; ++i) y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(k::kLogP[i]));
  y = _mm256_mul_ps(y, x);
  y = _mm256_fmadd_ps(y, z, _mm256_mul_ps(e, _mm256_set1_ps(k::kLogQ1)));
  y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
  x = _mm256_add_ps(x, y);
  x = _mm256_fmadd_ps(e, _mm256_set1_ps(k::kLogQ2), x);
  return _mm256_or_ps(x, invalid);
}

inline void sincos8(__m256 x, __m256& s_out, __m256& c_out) {
  const __m256 sign_mask = _mm256_castsi256_ps(_mm256_set1_epi32(int32_t(0x80000000u)));
  __m256 sign_sin = _mm256_and_ps(x, sign_mask);
  x = _mm256_andnot_ps(sign_mask, x);
  __m256 y = _mm256_mul_ps(x, _mm256_set1_ps(k::kFourOverPi));
  __m256i j = _mm256_cvttps_epi32(y);
  j = _mm256_and_si256(_mm256_add_epi32(j, _mm256_set1_epi32(1)), _mm256_set1_epi32(~1));
  y = _mm256_cvtepi32_ps(j);
  const __m256 swap_sin = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(j, _mm256_set1_epi32(4)), 29));
  const __m256 poly_is_cos = _mm256_castsi256_ps(
      _mm256_cmpeq_epi32(_mm256_and_si256(j, _mm256_set1_epi32(2)), _mm256_setzero_si256()));
  x = _mm256_fmadd_ps(y, _mm256_set1_ps(k::kMinusDP1), x);
  x = _mm256_fmadd_ps(y, _mm256_set1_ps(k::kMinusDP2), x);
  x = _mm256_fmadd_ps(y, _mm256_set1_ps(k::kMinusDP3), x);
  const __m256i j2 = _mm256_sub_epi32(j, _mm256_set1_epi32(2));
  const __m256 sign_cos =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_andnot_si256(j2, _mm256_set1_epi32(4)), 29));
  sign_sin = _mm256_xor_ps(sign_sin, swap_sin);
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 yc = _mm256_fmadd_ps(_mm256_set1_ps(k::kCosP0), z, _mm256_set1_ps(k::kCosP1));
  yc = _mm256_fmadd_ps(yc, z, _mm256_set1_ps(k::kCosP2));
  yc = _mm256_mul_ps(yc, z);
  yc = _mm256_fmsub_ps(yc, z, _mm256_mul_ps(z, _mm256_set1_ps(0.5f)));
  yc = _mm256_add_ps(yc, _mm256_set1_ps(1.0f));
  __m256 ys = _mm256_fmadd_ps(_mm256_set1_ps(k::kSinP0), z, _mm256_set1_ps(k::kSinP1));
  ys = _mm256_fmadd_ps(ys, z, _mm256_set1_ps(k::kSinP2));
  ys = _mm256_mul_ps(ys, z);
  ys = _mm256_fmadd_ps(ys, x, x);
  const __m256 ysin2 = _mm256_and_ps(poly_is_cos, ys);
  const __m256 ysin1 = _mm256_andnot_ps(poly_is_cos, yc);
  const __m256 ys_rest = _mm256_sub_ps(ys, ysin2), yc_rest = _mm256_sub_ps(yc, ysin1);
  s_out = _mm256_xor_ps(_mm256_add_ps(ysin1, ysin2), sign_sin);
  c_out = _mm256_xor_ps(_mm256_add_ps(yc_rest, ys_rest), sign_cos);
}

inline void fill16_avx2(float* d, float mean, float std) {
  const __m256 u1 = _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_loadu_ps(d));
  const __m256 u2 = _mm256_loadu_ps(d + 8);
  const __m256 radius = _mm256_sqrt_ps(_mm256_mul_ps(_mm256_set1_ps(-2.0f), log8(u1)));
  const __m256 theta = _mm256_mul_ps(_mm256_set1_ps(k::kTwoPi), u2);
  __m256 s, c;
  sincos8(theta, s, c);
  const __m256 vmean = _mm256_set1_ps(mean), vstd = _mm256_set1_ps(std);
  _mm256_storeu_ps(d, _mm256_fmadd_ps(_mm256_mul_ps(radius, c), vstd, vmean));
  _mm256_storeu_ps(d + 8, _mm256_fmadd_ps(_mm256_mul_ps(radius, s), vstd, vmean));
}
#endif

// The block transform on d[0, 16) in place.
inline void fill16(float* d, float mean, float std) {
#if defined(__AVX2__) && defined(__FMA__)
  fill16_avx2(d, mean, std);
#else
  fill16_portable(d, mean, std);
#endif
}

}  // namespace ember::cpu::box_muller
