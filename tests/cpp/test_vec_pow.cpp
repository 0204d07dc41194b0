// cpu::pow_f32, the vectorised float pow of the CPU kernels: within one float ulp of the exact
// value (the double pow, rounded) over wide random inputs, and C99's special cases exactly as
// std::pow gives them. Also through the op: pow of tensors against std::pow per element.
#include <cmath>
#include <cstring>
#include <random>

#include "cpu/vec_pow.h"
#include "test_utils.h"

using namespace ember;

namespace {
int64_t ulp_distance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = int32_t(0x80000000) - ia;
  if (ib < 0) ib = int32_t(0x80000000) - ib;
  return std::llabs(int64_t(ia) - int64_t(ib));
}
}  // namespace

TEST(VecPow, WithinOneUlpOfTheExactValue) {
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  std::uniform_int_distribution<uint32_t> bits;
  int64_t worst = 0;
  for (int i = 0; i < 400000; ++i) {
    float x, y;
    switch (i % 4) {
      case 0: x = std::ldexp(u(g), int(bits(g) % 60) - 30); y = (u(g) - 1.0f) * 80; break;  // moderate
      case 1: x = -std::ldexp(u(g), int(bits(g) % 20) - 10); y = std::round((u(g) - 1.0f) * 40); break;  // negative base
      case 2: x = u(g); y = std::ldexp(u(g), int(bits(g) % 40)); break;  // x near 1, large y
      default: { uint32_t bx = bits(g), by = bits(g); std::memcpy(&x, &bx, 4); std::memcpy(&y, &by, 4); }  // any bits
    }
    const float want = float(std::pow(double(x), double(y)));
    const float got = cpu::pow_f32(x, y);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << x << " ^ " << y;
      continue;
    }
    worst = std::max(worst, ulp_distance(got, want));
    ASSERT_LE(ulp_distance(got, want), 1) << x << " ^ " << y << ": " << got << " vs " << want;
  }
  EXPECT_LE(worst, 1);
}

TEST(VecPow, SpecialCasesAsStdPow) {
  const float inf = INFINITY, nan = NAN;
  const float v[] = {0.f, -0.f, 1.f, -1.f, 2.f, -2.f, 0.5f, -0.5f, 3.f, -3.f, inf, -inf, nan, 1e-45f, -1e-45f,
                     16777216.f, 16777215.f, -16777215.f, 1e38f, -1e38f, 2.5f, -2.5f, 127.f, 128.f, -149.f, -150.f};
  for (float x : v)
    for (float y : v) {
      const float want = std::pow(x, y), got = cpu::pow_f32(x, y);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << x << " ^ " << y;
      } else {
        EXPECT_LE(ulp_distance(got, want), 1) << x << " ^ " << y << ": " << got << " vs " << want;
        EXPECT_EQ(std::signbit(got), std::signbit(want)) << x << " ^ " << y;
      }
    }
}

TEST(VecPow, TheOpUsesIt) {
  Tensor x = rand({1000}) * 4 - 2, y = rand({1000}) * 6 - 3;
  y = where(lt(rand({1000}), 0.3), round(y), y);  // integer exponents for some negative bases
  Tensor z = pow(x, y), s = pow(x.abs(), 2.5);
  auto xv = x.tolist<float>(), yv = y.tolist<float>(), zv = z.tolist<float>(), sv = s.tolist<float>();
  for (size_t i = 0; i < xv.size(); ++i) {
    const float want = float(std::pow(double(xv[i]), double(yv[i])));
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(zv[i]));
    else EXPECT_LE(ulp_distance(zv[i], want), 1) << xv[i] << " ^ " << yv[i];
    EXPECT_LE(ulp_distance(sv[i], float(std::pow(std::fabs(double(xv[i])), 2.5))), 1);
  }
}
