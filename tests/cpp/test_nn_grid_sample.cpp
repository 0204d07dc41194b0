// F::grid_sample (the grid_sampler_2d op and its backward): a grid on the pixel centres reads the
// input back exactly, hand-computed bilinear values with each padding mode, float64 gradchecks
// of the input and grid gradients, the half types through float32, and PyTorch's errors.
// (Values and gradients against PyTorch itself: tests/python/test_nn_more15.py.)
#include "ember/nn/functional.h"
#include "gradcheck.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

namespace {
// The grid of every pixel centre of an H x W image (align_corners = true: -1 and 1 are the corner
// pixels' centres), batch n.
Tensor centre_grid(int64_t n, int64_t H, int64_t W) {
  std::vector<double> v;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < H; ++i)
      for (int64_t j = 0; j < W; ++j) v.push_back(W > 1 ? -1.0 + 2.0 * j / (W - 1) : 0.0), v.push_back(-1.0 + 2.0 * i / (H - 1));
  return tensor(v, {.dtype = kFloat64}).view({n, H, W, 2});
}
}  // namespace

TEST(GridSample, PixelCentresReadTheInputBack) {
  Tensor x = seeded_randn({2, 3, 5, 7}, 1);
  for (const char* mode : {"bilinear", "nearest"})
    for (const char* pad : {"zeros", "border", "reflection"})
      EXPECT_TRUE(allclose(F::grid_sample(x, centre_grid(2, 5, 7), mode, pad, true), x, 1e-12, 1e-12)) << mode << pad;
}

TEST(GridSample, BilinearValuesAtAndPastTheBorder) {
  // one 2 x 2 image [[1, 2], [3, 4]]; align_corners = false puts the pixel centres at -0.5 and 0.5
  Tensor x = tensor(std::vector<double>{1, 2, 3, 4}, {.dtype = kFloat64}).view({1, 1, 2, 2});
  auto at = [&](double gx, double gy, const char* pad) {
    Tensor g = tensor(std::vector<double>{gx, gy}, {.dtype = kFloat64}).view({1, 1, 1, 2});
    return F::grid_sample(x, g, "bilinear", pad, false).item<double>();
  };
  EXPECT_NEAR(at(0.0, 0.0, "zeros"), 2.5, 1e-12);    // the middle: the mean of all four
  EXPECT_NEAR(at(-0.5, -0.5, "zeros"), 1.0, 1e-12);  // the first pixel's centre
  EXPECT_NEAR(at(-1.0, -0.5, "zeros"), 0.5, 1e-12);  // half a pixel left of it: half reads zero
  EXPECT_NEAR(at(-1.0, -0.5, "border"), 1.0, 1e-12); // border: clamped onto the centre
  EXPECT_NEAR(at(-1.0, -0.5, "reflection"), 1.0, 1e-12);
  EXPECT_NEAR(at(1.5, 0.5, "zeros"), 0.0, 1e-12);    // far outside
  EXPECT_NEAR(at(1.5, 0.5, "border"), 4.0, 1e-12);
  // reflection about the edge at x = 1 (align_corners = false): 1.25 mirrors to 0.75, between
  // the centre at 0.5 (value 4) and the edge (still 4 under the clip): 4
  EXPECT_NEAR(at(1.25, 0.5, "reflection"), 4.0, 1e-12);
  EXPECT_NEAR(at(0.25, 1.5, "reflection"), 3.75, 1e-12);  // y mirrors to 0.5: between 3 and 4 at x = 0.25
}

TEST(GridSample, GradientsOfInputAndGrid) {
  for (const char* pad : {"zeros", "border", "reflection"})
    for (bool align : {false, true}) {
      Tensor x = seeded_randn({2, 2, 4, 5}, 3).requires_grad_();
      // away from pixel edges, where the bilinear map is not differentiable
      Tensor g = (seeded_randn({2, 3, 4, 2}, 4).clamp(-1.9, 1.9) * 0.6 + 0.013).requires_grad_();
      EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::grid_sample(v[0], v[1], "bilinear", pad, align); },
                            {x, g}))
          << pad << " align_corners=" << align;
      EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::grid_sample(v[0], g.detach(), "nearest", pad, align); },
                            {x}))
          << "nearest " << pad;
    }
}

TEST(GridSample, HalfTypesComputeInFloat32) {
  Tensor x = seeded_randn({1, 2, 6, 6}, 5, kFloat32), g = (seeded_randn({1, 3, 3, 2}, 6, kFloat32) * 0.7);
  Tensor want = F::grid_sample(x, g);
  for (DType dt : {kBFloat16, kFloat16}) {
    Tensor got = F::grid_sample(x.to(dt), g.to(dt));
    EXPECT_EQ(got.dtype(), dt);
    EXPECT_TRUE(allclose(got.to(kFloat32), want, 3e-2, 3e-2)) << dtype_name(dt);
  }
}

TEST(GridSample, ErrorsNameTheProblem) {
  Tensor x = zeros({1, 1, 3, 3}), g = zeros({1, 2, 2, 2});
  EXPECT_THROW_MSG(F::grid_sample(x, g, "area"), Error, "expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'area'");
  EXPECT_THROW_MSG(F::grid_sample(x, g, "bilinear", "wrap"), Error,
                   "expected padding_mode to be 'zeros', 'border', or 'reflection', but got: 'wrap'");
  EXPECT_THROW_MSG(F::grid_sample(x, g, "bicubic"), Error, "mode='bicubic' is not implemented in C++");
  EXPECT_THROW_MSG(F::grid_sample(zeros({1, 3, 3}), g), Error, "expected 4D input and grid");
  EXPECT_THROW_MSG(F::grid_sample(x, zeros({2, 2, 2, 2})), Error, "expected grid and input to have same batch size");
  EXPECT_THROW_MSG(F::grid_sample(x, g.to(kFloat64)), Error, "to have the same floating dtype");
}
