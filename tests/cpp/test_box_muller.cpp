// The float32 normal_ block transform (src/cpu/box_muller16.h): the portable path must give the
// AVX2 path's bits (both reproduce torch's Cephes polynomials and fused multiply-adds), so a
// machine without AVX2/FMA still gets torch's values; and the block maps uniforms to normals.
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/box_muller16.h"
#include "ember/core/generator.h"

namespace bm = ember::cpu::box_muller;

TEST(BoxMuller, PortableMatchesVectorised) {
#if defined(__AVX2__) && defined(__FMA__)
  ember::Mt19937 e(123);
  int64_t compared = 0;
  for (int block = 0; block < 20000; ++block) {
    float a[16], b[16];
    for (int i = 0; i < 16; ++i) a[i] = b[i] = float(e() & ((1u << 24) - 1)) * 0x1.0p-24f;
    if (block == 0) { a[0] = b[0] = 0.0f; a[8] = b[8] = 0.0f; a[1] = b[1] = 1.0f - 0x1.0p-24f; }
    const float mean = block % 3 == 0 ? 0.0f : 0.25f, sd = block % 2 == 0 ? 1.0f : 1.7f;
    bm::fill16_avx2(a, mean, sd);
    bm::fill16_portable(b, mean, sd);
    for (int i = 0; i < 16; ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(a[i]), std::bit_cast<uint32_t>(b[i])) << "block " << block << " slot " << i;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 20000 * 16);
#else
  GTEST_SKIP() << "built without AVX2/FMA: only the portable path exists";
#endif
}

TEST(BoxMuller, BlockGivesNormals) {
  ember::Mt19937 e(7);
  std::vector<double> v;
  for (int block = 0; block < 4000; ++block) {
    float d[16];
    for (float& x : d) x = float(e() & ((1u << 24) - 1)) * 0x1.0p-24f;
    bm::fill16(d, 0.0f, 1.0f);
    for (float x : d) v.push_back(x);
  }
  double m = 0, s2 = 0;
  for (double x : v) m += x;
  m /= double(v.size());
  for (double x : v) s2 += (x - m) * (x - m);
  s2 /= double(v.size() - 1);
  EXPECT_NEAR(m, 0.0, 0.02);  // 64000 values: standard error 0.004
  EXPECT_NEAR(s2, 1.0, 0.03);
  // u1 = 0 gives radius 0 (log 1 = 0): value j and j + 8 are exactly mean
  float d[16] = {};
  bm::fill16(d, 0.5f, 2.0f);
  EXPECT_EQ(d[0], 0.5f);
  EXPECT_EQ(d[8], 0.5f);
}
