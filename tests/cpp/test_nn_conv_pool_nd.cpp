// conv3d, conv_transpose1d/2d/3d, 1-d/3-d and adaptive max pooling and fold/unfold against naive
// float64 references computed here, gradients by finite differences (float64), and the C++
// modules (shapes, output_size, repr).
#include "ember/nn/conv.h"
#include "ember/nn/functional.h"
#include "gradcheck.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

namespace {

// Scatter form of a transposed convolution over (D, H, W) (unit depth for 2-d): every input
// pixel adds weight * value into the outputs its taps reach. x (N, Cin, D, H, W),
// w (Cin, Cout/G, KD, KH, KW), s/p/op/d three entries each.
Ref ref_conv_transpose3d(const Tensor& x, const Tensor& w, Shape s, Shape p, Shape op, Shape d, int64_t G) {
  Ref X = ref_of(x.to(kFloat64)), Wr = ref_of(w.to(kFloat64));
  const int64_t N = X.shape[0], Cin = X.shape[1], D = X.shape[2], H = X.shape[3], W = X.shape[4];
  const int64_t Cog = Wr.shape[1], KD = Wr.shape[2], KH = Wr.shape[3], KW = Wr.shape[4], Cout = Cog * G,
                Cig = Cin / G;
  const int64_t K[3] = {KD, KH, KW}, I[3] = {D, H, W};
  int64_t O[3];
  for (int i = 0; i < 3; ++i) O[i] = (I[i] - 1) * s[i] - 2 * p[i] + d[i] * (K[i] - 1) + op[i] + 1;
  Ref out{{N, Cout, O[0], O[1], O[2]}, std::vector<double>(size_t(N * Cout * O[0] * O[1] * O[2]))};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < Cin; ++ci)
      for (int64_t co = 0; co < Cog; ++co)
        for (int64_t id = 0; id < D; ++id)
          for (int64_t ih = 0; ih < H; ++ih)
            for (int64_t iw = 0; iw < W; ++iw)
              for (int64_t kd = 0; kd < KD; ++kd)
                for (int64_t kh = 0; kh < KH; ++kh)
                  for (int64_t kw = 0; kw < KW; ++kw) {
                    const int64_t od = id * s[0] - p[0] + kd * d[0], oh = ih * s[1] - p[1] + kh * d[1],
                                  ow = iw * s[2] - p[2] + kw * d[2];
                    if (od < 0 || od >= O[0] || oh < 0 || oh >= O[1] || ow < 0 || ow >= O[2]) continue;
                    const int64_t c = (ci / Cig) * Cog + co;
                    out.v[size_t((((n * Cout + c) * O[0] + od) * O[1] + oh) * O[2] + ow)] +=
                        X.v[size_t((((n * Cin + ci) * D + id) * H + ih) * W + iw)] *
                        Wr.v[size_t((((ci * Cog + co) * KD + kd) * KH + kh) * KW + kw)];
                  }
  return out;
}

// Direct 3-d convolution: x (N, C, D, H, W), w (O, C/G, KD, KH, KW).
Ref ref_conv3d(const Tensor& x, const Tensor& w, Shape s, Shape p, Shape d, int64_t G) {
  Ref X = ref_of(x.to(kFloat64)), Wr = ref_of(w.to(kFloat64));
  const int64_t N = X.shape[0], C = X.shape[1], I[3] = {X.shape[2], X.shape[3], X.shape[4]};
  const int64_t Oc = Wr.shape[0], Cg = Wr.shape[1], K[3] = {Wr.shape[2], Wr.shape[3], Wr.shape[4]}, Og = Oc / G;
  int64_t O[3];
  for (int i = 0; i < 3; ++i) O[i] = (I[i] + 2 * p[i] - d[i] * (K[i] - 1) - 1) / s[i] + 1;
  Ref out{{N, Oc, O[0], O[1], O[2]}, std::vector<double>(size_t(N * Oc * O[0] * O[1] * O[2]))};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < Oc; ++o)
      for (int64_t a = 0; a < O[0]; ++a)
        for (int64_t b = 0; b < O[1]; ++b)
          for (int64_t c3 = 0; c3 < O[2]; ++c3) {
            double acc = 0;
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t kd = 0; kd < K[0]; ++kd)
                for (int64_t kh = 0; kh < K[1]; ++kh)
                  for (int64_t kw = 0; kw < K[2]; ++kw) {
                    const int64_t id = a * s[0] - p[0] + kd * d[0], ih = b * s[1] - p[1] + kh * d[1],
                                  iw = c3 * s[2] - p[2] + kw * d[2];
                    if (id < 0 || id >= I[0] || ih < 0 || ih >= I[1] || iw < 0 || iw >= I[2]) continue;
                    acc += X.v[size_t((((n * C + (o / Og) * Cg + c) * I[0] + id) * I[1] + ih) * I[2] + iw)] *
                           Wr.v[size_t((((o * Cg + c) * K[0] + kd) * K[1] + kh) * K[2] + kw)];
                  }
            out.v[size_t((((n * Oc + o) * O[0] + a) * O[1] + b) * O[2] + c3)] = acc;
          }
  return out;
}

Ref with_shape(Ref r, Shape shape) {
  r.shape = std::move(shape);
  return r;
}

}  // namespace

EMBER_DEVICE_TEST(NNConvNd, ConvTransposeMatchesReference) {
  for (DType dt : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dt));
    // 2-d, groups, stride, padding, output_padding, dilation; 8 channels reach oneDNN in float32
    for (int64_t Cin : {4, 8}) {
      Tensor x = seeded_randn({2, Cin, 5, 4}, 1, dt), w = seeded_randn({Cin, 3, 3, 2}, 2, dt), b = seeded_randn({6}, 3, dt);
      Tensor y = F::conv_transpose2d(x, w, b, {2, 1}, {1, 0}, {1, 0}, 2, {1, 2});
      Ref r = ref_conv_transpose3d(x.unsqueeze(2), w.unsqueeze(2), {1, 2, 1}, {0, 1, 0}, {0, 1, 0}, {1, 1, 2}, 2);
      Ref rb = r;
      const int64_t plane = r.shape[3] * r.shape[4];
      std::vector<double> bv = b.to(kFloat64).tolist<double>();
      for (size_t i = 0; i < rb.v.size(); ++i) rb.v[i] += bv[size_t((int64_t(i) / plane) % 6)];
      EXPECT_TRUE(close_to(y, with_shape(rb, {2, 6, r.shape[3], r.shape[4]}), dt));
    }
    // 1-d: output_padding below the dilation but not the stride
    Tensor x1 = seeded_randn({2, 3, 6}, 4, dt), w1 = seeded_randn({3, 2, 3}, 5, dt);
    Tensor y1 = F::conv_transpose1d(x1, w1, std::nullopt, {1}, {0}, {1}, 1, {2});
    Ref r1 = ref_conv_transpose3d(x1.unsqueeze(2).unsqueeze(2), w1.unsqueeze(2).unsqueeze(2), {1, 1, 1}, {0, 0, 0},
                                  {0, 0, 1}, {1, 1, 2}, 1);
    EXPECT_TRUE(close_to(y1, with_shape(r1, {2, 2, r1.shape[4]}), dt));
    // 3-d, unbatched
    Tensor x3 = seeded_randn({4, 3, 2, 3}, 6, dt), w3 = seeded_randn({4, 1, 2, 3, 2}, 7, dt);
    Tensor y3 = F::conv_transpose3d(x3, w3, std::nullopt, {2, 1, 2}, {1, 1, 0}, {1, 0, 1}, 2, {1});
    Ref r3 = ref_conv_transpose3d(x3.unsqueeze(0), w3, {2, 1, 2}, {1, 1, 0}, {1, 0, 1}, {1, 1, 1}, 2);
    EXPECT_TRUE(close_to(y3, with_shape(r3, {r3.shape[1], r3.shape[2], r3.shape[3], r3.shape[4]}), dt));
  }
}

EMBER_DEVICE_TEST(NNConvNd, Conv3dMatchesReference) {
  for (DType dt : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(dt));
    for (int64_t C : {2, 8}) {
      Tensor x = seeded_randn({2, C, 5, 6, 4}, 1, dt), w = seeded_randn({4, C / 2, 3, 2, 3}, 2, dt);
      Tensor y = F::conv3d(x, w, std::nullopt, {2, 1, 1}, std::vector<int64_t>{1, 0, 2}, {1, 2, 1}, 2);
      EXPECT_TRUE(close_to(y, ref_conv3d(x, w, {2, 1, 1}, {1, 0, 2}, {1, 2, 1}, 2), dt));
    }
    // "same" with an even kernel pads one extra on the right
    Tensor x = seeded_randn({1, 2, 4, 5, 4}, 3, dt), w = seeded_randn({3, 2, 2, 3, 2}, 4, dt);
    Tensor y = F::conv3d(x, w, std::nullopt, {1}, std::string("same"));
    EXPECT_EQ(y.sizes(), (Shape{1, 3, 4, 5, 4}));
    Tensor xp = F::pad(x, {0, 1, 1, 1, 0, 1});
    EXPECT_TRUE(close_to(y, ref_conv3d(xp, w, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1), dt));
  }
}

EMBER_DEVICE_TEST(NNConvNd, ConvGradients) {
  Tensor x = seeded_randn({1, 4, 3, 4}, 1).requires_grad_(), w = seeded_randn({4, 2, 2, 3}, 2).requires_grad_(),
         b = seeded_randn({4}, 3).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::conv_transpose2d(v[0], v[1], v[2], {2}, {1}, {1}, 2); },
                        {x, w, b}));
  EXPECT_TRUE(gradgradcheck(
      [](const variable_list& v) { return F::conv_transpose2d(v[0], v[1], std::nullopt, {1}, {0}, {1}, 1, {2}); },
      {seeded_randn({1, 2, 3, 3}, 4).requires_grad_(), seeded_randn({2, 2, 2, 2}, 5).requires_grad_()}));
  Tensor x3 = seeded_randn({1, 2, 3, 3, 4}, 6).requires_grad_(), w3 = seeded_randn({2, 2, 2, 2, 2}, 7).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::conv3d(v[0], v[1], std::nullopt, {1, 2, 1}, std::vector<int64_t>{1}); },
                        {x3, w3}));
  EXPECT_TRUE(gradcheck(
      [](const variable_list& v) { return F::conv_transpose3d(v[0], v[1], std::nullopt, {2, 1, 1}, {0}, {1, 0, 0}); },
      {x3, w3}));
}

EMBER_DEVICE_TEST(NNConvNd, ConvTransposeErrors) {
  Tensor x = seeded_randn({2, 4, 5, 5}, 1, kFloat32), w = seeded_randn({4, 3, 3, 3}, 2, kFloat32);
  EXPECT_THROW_MSG(F::conv_transpose2d(x, w, std::nullopt, {1}, {0}, {1}), Error,
                   "output padding must be smaller than either stride or dilation");
  EXPECT_THROW_MSG(F::conv_transpose2d(x, seeded_randn({3, 3, 3, 3}, 3, kFloat32)), Error,
                   "Given transposed=1, weight of size [3, 3, 3, 3], expected input[2, 4, 5, 5] to have 3 channels");
  EXPECT_THROW_MSG(F::conv_transpose2d(x, w, std::nullopt, {1}, {5}), Error, "Output size is too small");
}

EMBER_DEVICE_TEST(NNPoolNd, ThreeDPoolsOnUnitDepthMatchTwoD) {
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor x = seeded_randn({2, 3, 7, 6}, 1, dt);
    auto [m2, i2] = F::max_pool2d_with_indices(x, {3, 2}, {2, 1}, {1, 1}, {1, 2}, true);
    auto [m3, i3] = F::max_pool3d_with_indices(x.unsqueeze(2), {1, 3, 2}, {1, 2, 1}, {0, 1, 1}, {1, 1, 2}, true);
    EXPECT_TRUE(close_to(m3.squeeze(2), ref_of(m2), dt));
    EXPECT_EQ(i3.squeeze(2).tolist<int64_t>(), i2.tolist<int64_t>());
    Tensor a2 = F::avg_pool2d(x, {3, 2}, {2, 1}, {1, 1}, true, false);
    Tensor a3 = F::avg_pool3d(x.unsqueeze(2), {1, 3, 2}, {1, 2, 1}, {0, 1, 1}, true, false);
    EXPECT_TRUE(close_to(a3.squeeze(2), ref_of(a2), dt));
    Tensor d2 = F::adaptive_avg_pool2d(x, {4, 5});
    EXPECT_TRUE(close_to(F::adaptive_avg_pool3d(x.unsqueeze(2), {1, 4, 5}).squeeze(2), ref_of(d2), dt));
  }
}

EMBER_DEVICE_TEST(NNPoolNd, AdaptiveMaxMatchesReference) {
  Tensor x = seeded_randn({2, 3, 5, 7}, 1);
  auto [y, idx] = F::adaptive_max_pool2d_with_indices(x, {3, 4});
  Ref X = ref_of(x);
  std::vector<double> yv = y.tolist<double>();
  std::vector<int64_t> iv = idx.tolist<int64_t>();
  for (int64_t pl = 0; pl < 6; ++pl)
    for (int64_t oh = 0; oh < 3; ++oh)
      for (int64_t ow = 0; ow < 4; ++ow) {
        const int64_t h0 = oh * 5 / 3, h1 = ((oh + 1) * 5 + 2) / 3, w0 = ow * 7 / 4, w1 = ((ow + 1) * 7 + 3) / 4;
        double best = -1e300;
        int64_t bi = -1;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w)
            if (X.v[size_t(pl * 35 + h * 7 + w)] > best) {
              best = X.v[size_t(pl * 35 + h * 7 + w)];
              bi = h * 7 + w;
            }
        EXPECT_EQ(yv[size_t(pl * 12 + oh * 4 + ow)], best);
        EXPECT_EQ(iv[size_t(pl * 12 + oh * 4 + ow)], bi);
      }
}

EMBER_DEVICE_TEST(NNPoolNd, PoolGradients) {
  Tensor x = seeded_randn({1, 2, 4, 5, 4}, 1).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::avg_pool3d(v[0], {3}, {2}, {1}, true, false); }, {x}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::max_pool3d(v[0], {2}, {1}, {1}); }, {x}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::adaptive_max_pool3d(v[0], {3, 2, 3}); }, {x}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::adaptive_avg_pool3d(v[0], {3, 2, 3}); }, {x}));
  EXPECT_TRUE(gradgradcheck([](const variable_list& v) { return F::avg_pool3d(v[0], {2}, {1}); }, {x}));
  Tensor x1 = seeded_randn({2, 2, 9}, 2).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::max_pool1d(v[0], {3}, {2}, {1}, {2}); }, {x1}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::adaptive_max_pool1d(v[0], {4}); }, {x1}));
}

EMBER_DEVICE_TEST(NNFold, UnfoldMatchesReferenceAndFoldIsAdjoint) {
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor x = seeded_randn({2, 3, 5, 6}, 1, dt);
    Tensor cols = F::unfold(x, {2, 3}, {2, 1}, {1}, {1, 2});
    // the columns are conv3d's im2col: a conv with a one-hot weight per tap reproduces each row
    const int64_t L = cols.sizes()[2];
    Ref X = ref_of(x.to(kFloat64));
    const int64_t OH = (5 + 2 - 2 * 1 - 1) / 1 + 1, OW = (6 + 2 - 2 - 1) / 2 + 1;
    ASSERT_EQ(L, OH * OW);
    Ref r{{2, 18, L}, std::vector<double>(size_t(2 * 18 * L))};
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t kh = 0; kh < 2; ++kh)
          for (int64_t kw = 0; kw < 3; ++kw)
            for (int64_t oh = 0; oh < OH; ++oh)
              for (int64_t ow = 0; ow < OW; ++ow) {
                const int64_t ih = oh - 1 + kh * 2, iw = ow * 2 - 1 + kw;
                const double v = (ih < 0 || ih >= 5 || iw < 0 || iw >= 6) ? 0.0 : X.v[size_t(((n * 3 + c) * 5 + ih) * 6 + iw)];
                r.v[size_t((n * 18 + (c * 2 + kh) * 3 + kw) * L + oh * OW + ow)] = v;
              }
    EXPECT_TRUE(close_to(cols, r, dt));
    Tensor c = seeded_randn(cols.sizes(), 2, dt);
    Tensor back = F::fold(c, {5, 6}, {2, 3}, {2, 1}, {1}, {1, 2});
    EXPECT_NEAR((cols.to(kFloat64) * c.to(kFloat64)).sum().item<double>(),
                (x.to(kFloat64) * back.to(kFloat64)).sum().item<double>(), 1e-3);
  }
  Tensor x = seeded_randn({1, 2, 4, 5}, 3).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::unfold(v[0], {2}, {1}, {1}, {2}); }, {x}));
  Tensor c = seeded_randn({1, 8, 12}, 4).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::fold(v[0], {5, 6}, {2}, {1}, {0}, {1, 2}); }, {c}));
}

EMBER_DEVICE_TEST(NNConvNd, Modules) {
  nn::ConvTranspose2d up(4, 6, 3, {.stride = {2}, .padding = {1}, .output_padding = {1}, .groups = 2});
  EXPECT_EQ(up.weight.sizes(), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(up.extra_repr(), "4, 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), output_padding=(1, 1), groups=2");
  Tensor x = seeded_randn({2, 4, 5, 5}, 1, kFloat32);
  EXPECT_EQ(up.forward(x).sizes(), (Shape{2, 6, 10, 10}));
  EXPECT_EQ(up.forward(x, {9, 10}).sizes(), (Shape{2, 6, 9, 10}));
  EXPECT_THROW_MSG(up.forward(x, {20, 20}), ValueError, "requested an output size of (20, 20), but valid sizes range from [9, 9] to [10, 10]");
  nn::Conv3d c3(2, 4, 3, {.padding = std::vector<int64_t>{1, 1, 1}});
  EXPECT_EQ(c3.forward(seeded_randn({1, 2, 4, 5, 6}, 2, kFloat32)).sizes(), (Shape{1, 4, 4, 5, 6}));
  EXPECT_EQ(c3.extra_repr(), "2, 4, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=(1, 1, 1)");
  nn::MaxPool3d mp(2);
  EXPECT_EQ(mp.extra_repr(), "kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False");
  EXPECT_EQ(mp.forward(seeded_randn({1, 2, 4, 5, 6}, 3, kFloat32)).sizes(), (Shape{1, 2, 2, 2, 3}));
  nn::AdaptiveMaxPool2d amp(std::vector<int64_t>{3, 2});
  EXPECT_EQ(amp.name(), "AdaptiveMaxPool2d");
  EXPECT_EQ(std::get<1>(amp.forward_with_indices(x)).sizes(), (Shape{2, 4, 3, 2}));
  nn::Fold fold({5, 6}, {2}, {.stride = {1, 2}});
  EXPECT_EQ(fold.extra_repr(), "output_size=(5, 6), kernel_size=2, dilation=1, padding=0, stride=(1, 2)");
  EXPECT_EQ(fold.forward(seeded_randn({1, 8, 12}, 4, kFloat32)).sizes(), (Shape{1, 2, 5, 6}));
}
