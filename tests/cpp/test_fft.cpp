// ember::fft and complex tensors from C++: the transforms checked by their defining identities
// (a direct O(n^2) DFT, inverse round trips, Parseval, the half spectrum of a real signal),
// float64 gradchecks of every primitive through real parametrisations (view_as_real /
// view_as_complex), and the complex basics (casts, views, arithmetic, sum, printing).
// (Values against PyTorch itself: tests/python/test_fft15.py, test_complex.py.)
#include <cmath>
#include <complex>
#include <random>

#include "ember/fft.h"
#include "gradcheck.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {

Tensor rnd(IntArrayRef shape, uint64_t seed) {
  std::mt19937_64 g(seed * 7919 + 3);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<double> v(size_t(shape_numel(shape)));
  for (auto& x : v) x = n(g);
  return tensor(v, {.dtype = kFloat64}).view(shape);
}
Tensor crnd(IntArrayRef shape, uint64_t seed) {
  Shape s = shape.vec();
  s.push_back(2);
  return view_as_complex(rnd(s, seed));
}

// sum_j x_j exp(-+2 pi i jk / n) along the last dim, computed term by term.
std::vector<complex128> direct_dft(const std::vector<complex128>& x, bool inverse) {
  const size_t n = x.size();
  std::vector<complex128> out(n);
  for (size_t k = 0; k < n; ++k)
    for (size_t j = 0; j < n; ++j)
      out[k] += x[j] * std::polar(1.0, (inverse ? 2 : -2) * M_PI * double(j * k % n) / double(n));
  return out;
}

double max_diff(const Tensor& a, const Tensor& b) {
  return view_as_real(a.to(kComplex128) - b.to(kComplex128)).abs().amax().item<double>();
}

TEST(Fft, MatchesDirectDftForMixedRadixAndPrimeSizes) {
  // 67, 134 and 257 have a prime factor above 64: Bluestein's algorithm, not the mixed radix
  for (int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 30, 31, 67, 134, 257}) {
    Tensor z = crnd({n}, uint64_t(n));
    auto values = z.tolist<complex128>();
    auto d = direct_dft(values, false);
    Tensor got = fft::fft(z);
    auto g = got.tolist<complex128>();
    for (int64_t k = 0; k < n; ++k) EXPECT_NEAR(std::abs(g[k] - d[k]), 0.0, 1e-10) << "n=" << n << " k=" << k;
    auto di = direct_dft(values, true);
    auto gi = fft::ifft(z, std::nullopt, -1, "forward").tolist<complex128>();  // unscaled inverse
    for (int64_t k = 0; k < n; ++k) EXPECT_NEAR(std::abs(gi[k] - di[k]), 0.0, 1e-10) << "n=" << n;
  }
}

TEST(Fft, RealTransformsAreTheHalfSpectrumAndInvert) {
  for (int64_t n : {1, 2, 5, 8, 11, 16, 67, 134, 139}) {
    Tensor x = rnd({3, n}, uint64_t(n) + 100);
    Tensor full = fft::fft(x);
    Tensor half = fft::rfft(x);
    ASSERT_EQ(half.size(-1), n / 2 + 1);
    EXPECT_LT(max_diff(half, full.slice(-1, 0, n / 2 + 1)), 1e-12) << n;
    if (n > 1) EXPECT_LT(max_diff(fft::irfft(half, n), x), 1e-12) << n;
    EXPECT_LT(max_diff(fft::ifft(full), x), 1e-12) << n;
  }
}

TEST(Fft, ParsevalAndNormModes) {
  Tensor z = crnd({4, 6, 5}, 3);
  double energy = (z.abs() * z.abs()).sum().item<double>();
  Tensor o = fft::fftn(z, std::nullopt, std::nullopt, "ortho");
  EXPECT_NEAR((o.abs() * o.abs()).sum().item<double>(), energy, 1e-9);
  EXPECT_LT(max_diff(fft::fftn(z, std::nullopt, std::nullopt, "forward") * 120.0, fft::fftn(z)), 1e-10);
  EXPECT_LT(max_diff(fft::ifftn(fft::fftn(z)), z), 1e-12);
  EXPECT_LT(max_diff(fft::irfftn(fft::rfftn(z.real()), std::vector<int64_t>{4, 6, 5}), z.real()), 1e-12);
  // 2-D transform = 1-D transforms along each dim
  EXPECT_LT(max_diff(fft::fft2(z), fft::fft(fft::fft(z, std::nullopt, -1), std::nullopt, -2)), 1e-10);
}

TEST(Fft, ResizingAndErrors) {
  Tensor x = rnd({10}, 4);
  EXPECT_LT(max_diff(fft::fft(x, 4), fft::fft(x.slice(0, 0, 4))), 1e-12);
  Tensor padded = cat({x, zeros({6}, {.dtype = kFloat64})});
  EXPECT_LT(max_diff(fft::rfft(x, 16), fft::rfft(padded)), 1e-12);
  EXPECT_EQ(fft::irfft(fft::rfft(x), 7).size(0), 7);
  EXPECT_THROW_MSG(fft::fft(x, 0), Error, "Invalid number of data points (0) specified");
  EXPECT_THROW_MSG(fft::fft(x, std::nullopt, -1, "sideways"), Error, "Invalid normalization mode: \"sideways\"");
  EXPECT_THROW_MSG(fft::rfft(fft::fft(x)), Error, "rfft expects a real input tensor, but got ComplexDouble");
}

TEST(Fft, GradientsOfEveryPrimitive) {
  auto real_out = [](const Tensor& t) { return t.is_complex() ? view_as_real(t) : t; };
  Tensor x = rnd({3, 6}, 5).requires_grad_();
  Tensor xc = rnd({3, 5, 2}, 6).requires_grad_();
  EXPECT_TRUE(gradcheck([&](const variable_list& v) { return real_out(fft::rfft(v[0])); }, {x}));
  EXPECT_TRUE(gradcheck([&](const variable_list& v) { return real_out(fft::rfftn(v[0], std::vector<int64_t>{4, 7})); }, {x}));
  EXPECT_TRUE(gradcheck([&](const variable_list& v) { return real_out(fft::fft(view_as_complex(v[0]), 7, 0, "ortho")); }, {xc}));
  EXPECT_TRUE(gradcheck([&](const variable_list& v) { return fft::irfft(view_as_complex(v[0])); }, {xc}));
  EXPECT_TRUE(gradcheck([&](const variable_list& v) { return fft::irfft(view_as_complex(v[0]), 9); }, {xc}));
  EXPECT_TRUE(gradcheck([&](const variable_list& v) { return fft::hfft(view_as_complex(v[0]), std::nullopt, 0); }, {xc}));
  EXPECT_TRUE(gradcheck([&](const variable_list& v) { return real_out(fft::ihfft(v[0])); }, {x}));
}

TEST(Complex, CastsViewsArithmeticAndPrinting) {
  Tensor z = tensor(std::vector<double>{1, 2, 3, -4}, {.dtype = kFloat64}).view({2, 2});
  Tensor c = view_as_complex(z);
  EXPECT_EQ(c.dtype(), kComplex128);
  EXPECT_EQ(c.sizes(), Shape({2}));
  EXPECT_EQ(c.to(kFloat64).tolist<double>(), (std::vector<double>{1, 3}));
  EXPECT_EQ(c.imag().tolist<double>(), (std::vector<double>{2, -4}));
  auto prod = (c * c.conj()).tolist<complex128>();
  EXPECT_EQ(prod[0], complex128(5, 0));
  EXPECT_EQ(prod[1], complex128(25, 0));
  EXPECT_EQ(c.sum().item().to_complex(), complex128(4, -2));
  EXPECT_NEAR(c.abs().tolist<double>()[1], 5.0, 1e-15);
  EXPECT_EQ(promote_types(kComplex64, kFloat64), kComplex128);
  EXPECT_EQ((c.to(kComplex64) * 2.5).dtype(), kComplex64);
  EXPECT_EQ(c.str(), "tensor([1.+2.j, 3.-4.j], dtype=ember.complex128)");
  EXPECT_THROW_MSG(maximum(c, c), Error, "not implemented for 'ComplexDouble'");
}

TEST(Complex, GradientsThroughTheViews) {
  Tensor x = rnd({4, 2}, 7).requires_grad_();
  Tensor y = rnd({4, 2}, 8).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& v) {
    Tensor a = view_as_complex(v[0]), b = view_as_complex(v[1]);
    return view_as_real((a * b.conj() + a / b).exp()) + (a.abs() + b.angle()).unsqueeze(-1);
  }, {x, y}));
}

}  // namespace

// The lane-group engine (src/cpu/fft_plan.h, fft_lanes.h) moves 16 float / 8 double lines at a
// time: full groups, a partial last group, lines that are contiguous runs (tile transposes) or
// side by side along a strided dim (inner 24: groups straddle the outer blocks), in both dtypes,
// over radix 4/2/3 stages, the generic prime butterfly and Bluestein. Every line is checked
// against the term-by-term DFT, both directions, and the real transforms against it too.
TEST(Fft, LaneGroupsMatchDirectDftAlongEveryLayout) {
  uint64_t seed = 100;
  for (DType dt : {kFloat32, kFloat64}) {
    const double tol = dt == kFloat32 ? 2e-4 : 1e-9;
    const DType ct = dt == kFloat32 ? kComplex64 : kComplex128;
    for (int64_t n : {16, 18, 35, 64, 67, 96}) {
      const std::vector<std::pair<Shape, int64_t>> layouts = {{{40, n}, 1}, {{n, 17}, 0}, {{2, n, 24}, 1}, {{3, n}, 1}};
      for (const auto& layout : layouts) {
        const Shape& shape = layout.first;
        const int64_t dim = layout.second;  // (not a structured binding: the lambda below captures it)
        Tensor z = crnd(shape, ++seed).to(ct);
        Tensor x = rnd(shape, ++seed).to(dt);
        // every line along dim, as rows of a [lines, n] float64 matrix
        auto lines_of = [&](const Tensor& t) { return t.movedim(dim, -1).reshape({-1, t.sizes()[dim]}).to(kComplex128); };
        for (bool inverse : {false, true}) {
          Tensor got = lines_of(inverse ? fft::ifft(z, std::nullopt, dim, "forward") : fft::fft(z, std::nullopt, dim));
          Tensor in = lines_of(z);
          for (int64_t l = 0; l < in.sizes()[0]; ++l) {
            auto want = direct_dft(in[l].tolist<complex128>(), inverse);
            auto g = got[l].tolist<complex128>();
            for (int64_t k = 0; k < n; ++k)
              ASSERT_NEAR(std::abs(g[k] - want[k]), 0.0, tol * n) << dtype_name(dt) << " n=" << n << " dim=" << dim
                                                                  << " line=" << l << " k=" << k << " inverse=" << inverse;
          }
        }
        // rfft is the half spectrum of the full DFT of (x, 0); irfft inverts it
        Tensor half = fft::rfft(x, std::nullopt, dim);
        Tensor full = lines_of(x);
        Tensor got = lines_of(half);
        for (int64_t l = 0; l < full.sizes()[0]; ++l) {
          auto want = direct_dft(full[l].tolist<complex128>(), false);
          auto g = got[l].tolist<complex128>();
          ASSERT_EQ(int64_t(g.size()), n / 2 + 1);
          for (int64_t k = 0; k <= n / 2; ++k)
            ASSERT_NEAR(std::abs(g[k] - want[k]), 0.0, tol * n) << dtype_name(dt) << " rfft n=" << n << " dim=" << dim;
        }
        EXPECT_LT(max_diff(fft::irfft(half, n, dim), x), tol) << dtype_name(dt) << " irfft n=" << n << " dim=" << dim;
      }
    }
  }
}

// One or two long lines run as a six-step transform (LongPlan: columns, twiddles, rows through
// lane groups). Each is checked against the same line transformed among 16 (the lane path,
// itself checked against the direct DFT above): 4096 = 64 x 64 splits into whole lane groups,
// 4100 = 50 x 82 leaves partial ones, 8198 = 2 x 4099 has no split and runs alone (Bluestein).
TEST(Fft, LongLinesMatchTheLanePath) {
  uint64_t seed = 500;
  for (DType dt : {kFloat32, kFloat64}) {
    const double tol = dt == kFloat32 ? 1e-3 : 1e-9;
    const DType ct = dt == kFloat32 ? kComplex64 : kComplex128;
    for (int64_t n : {4096, 4100, 8198}) {
      for (int64_t lines : {1, 2}) {
        Tensor z = crnd({lines, n}, ++seed).to(ct);
        Tensor x = rnd({lines, n}, ++seed).to(dt);
        Tensor many_z = z.repeat({16, 1}), many_x = x.repeat({16, 1});
        EXPECT_LT(max_diff(fft::fft(z), fft::fft(many_z).slice(0, 0, lines)), tol) << dtype_name(dt) << " fft " << n;
        EXPECT_LT(max_diff(fft::ifft(z), fft::ifft(many_z).slice(0, 0, lines)), tol / n) << dtype_name(dt) << " ifft " << n;
        Tensor half = fft::rfft(x);
        EXPECT_LT(max_diff(half, fft::rfft(many_x).slice(0, 0, lines)), tol) << dtype_name(dt) << " rfft " << n;
        EXPECT_LT(max_diff(fft::irfft(half, n), x), tol / 10) << dtype_name(dt) << " irfft " << n;
        EXPECT_LT(max_diff(fft::irfft(half, n), fft::irfft(half.repeat({16, 1}), n).slice(0, 0, lines)), tol / 10)
            << dtype_name(dt) << " irfft " << n;
      }
    }
  }
}
