// linear, conv1d, conv2d and pad against naive float64 references computed here.
#include "ember/nn/functional.h"
#include "gradcheck.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

namespace {

// Direct nested-loop conv2d in double; padding per side: top, bottom, left, right.
Ref ref_conv2d(const Tensor& x4, const Tensor& w, const std::optional<Tensor>& b, Shape s, Shape pad4, Shape d,
               int64_t G) {
  Ref X = ref_of(x4.to(kFloat64)), Wr = ref_of(w.to(kFloat64));
  std::vector<double> B = b ? b->to(kFloat64).tolist<double>() : std::vector<double>();
  int64_t N = X.shape[0], C = X.shape[1], H = X.shape[2], Wd = X.shape[3];
  int64_t O = Wr.shape[0], Cg = Wr.shape[1], KH = Wr.shape[2], KW = Wr.shape[3];
  int64_t OH = (H + pad4[0] + pad4[1] - d[0] * (KH - 1) - 1) / s[0] + 1;
  int64_t OW = (Wd + pad4[2] + pad4[3] - d[1] * (KW - 1) - 1) / s[1] + 1;
  Ref out{{N, O, OH, OW}, std::vector<double>(size_t(N * O * OH * OW))};
  int64_t Og = O / G;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = B.empty() ? 0.0 : B[o];
          int64_t gi = o / Og;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t ih = oh * s[0] - pad4[0] + kh * d[0], iw = ow * s[1] - pad4[2] + kw * d[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= Wd) continue;
                acc += X.v[((n * C + gi * Cg + c) * H + ih) * Wd + iw] * Wr.v[((o * Cg + c) * KH + kh) * KW + kw];
              }
          out.v[((n * O + o) * OH + oh) * OW + ow] = acc;
        }
  (void)C;
  return out;
}

struct Cfg {
  int64_t N, C, H, W, O, KH, KW;
  Shape stride, padding, dilation;
  int64_t groups;
  bool bias;
};

std::vector<Cfg> configs() {
  return {
      {2, 3, 7, 6, 4, 3, 3, {1, 1}, {0, 0}, {1, 1}, 1, true},
      {1, 2, 8, 9, 3, 3, 2, {2, 1}, {1, 0}, {1, 1}, 1, false},
      {3, 4, 9, 9, 6, 3, 3, {2, 3}, {1, 2}, {2, 1}, 2, true},
      {2, 4, 5, 5, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 4, true},   // depthwise 1x1
      {2, 6, 6, 7, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, false},  // pointwise GEMM path
      {1, 1, 28, 28, 8, 5, 5, {1, 1}, {2, 2}, {1, 1}, 1, true},
      {2, 2, 6, 6, 2, 2, 3, {3, 2}, {1, 1}, {2, 2}, 1, true},
  };
}

}  // namespace

EMBER_DEVICE_TEST(NNConv, Conv2dMatchesReference) {
  for (DType dt : {kFloat32, kFloat64}) {
    int i = 0;
    for (const Cfg& c : configs()) {
      SCOPED_TRACE(::testing::Message() << "config " << i++ << " dtype " << dtype_name(dt));
      Tensor x = seeded_randn({c.N, c.C, c.H, c.W}, 1, dt), w = seeded_randn({c.O, c.C / c.groups, c.KH, c.KW}, 2, dt);
      std::optional<Tensor> b;
      if (c.bias) b = seeded_randn({c.O}, 3, dt);
      Tensor y = F::conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
      Ref r = ref_conv2d(x, w, b, c.stride, {c.padding[0], c.padding[0], c.padding[1], c.padding[1]}, c.dilation,
                         c.groups);
      EXPECT_TRUE(close_to(y, r, dt == kFloat32 ? kFloat32 : kFloat64)) ;
      EXPECT_EQ(y.dtype(), dt);
      // unbatched
      Tensor y0 = F::conv2d(x.select(0, 0), w, b, c.stride, c.padding, c.dilation, c.groups);
      EXPECT_TRUE(close_to(y0, ref_of(y.select(0, 0)), dt));
    }
  }
}

EMBER_DEVICE_TEST(NNConv, Conv2dReducedFloatAndEmptyBatch) {
  Tensor x = seeded_randn({2, 3, 6, 5}, 14), w = seeded_randn({4, 3, 3, 3}, 15), b = seeded_randn({4}, 16);
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor y = F::conv2d(x.to(dt), w.to(dt), b.to(dt), {1, 1}, std::vector<int64_t>{1, 1});
    EXPECT_EQ(y.dtype(), dt);
    Ref r = ref_conv2d(x.to(dt), w.to(dt), b.to(dt), {1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
    EXPECT_TRUE(allclose(y.to(kFloat64), tensor(r.v).view(r.shape), 5e-2, 5e-2));
  }
  Tensor e = seeded_randn({0, 3, 6, 5}, 17).requires_grad_();
  Tensor wg = w.clone().requires_grad_();
  Tensor y = F::conv2d(e, wg, b);
  EXPECT_EQ(y.sizes(), (Shape{0, 4, 4, 3}));
  y.sum().backward();
  EXPECT_EQ(e.grad().sizes(), e.sizes());
  EXPECT_EQ(wg.grad().abs().sum().item().to_double(), 0.0);
}

// float32 with >= 8 input channels (any groups) runs on oneDNN's primitives where the build
// has oneDNN (ember's own kernel otherwise): forward, input and weight gradients against the
// float64 path (ember's im2col kernel) over strides, padding, dilation, bias, odd sizes and a
// non-contiguous input; a second call of each shape reuses the cached primitive.
EMBER_DEVICE_TEST(NNConv, Conv2dFloat32WideChannelsMatchFloat64) {
  struct Case { Shape x, w; Shape stride, padding, dilation; bool bias; int64_t groups = 1; };
  std::vector<Case> cases = {
      {{4, 8, 9, 9}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, true},
      {{3, 16, 11, 7}, {8, 16, 3, 2}, {2, 1}, {0, 1}, {1, 1}, false},
      {{2, 12, 13, 13}, {5, 12, 3, 3}, {1, 2}, {2, 2}, {2, 1}, true},
      {{2, 8, 6, 6}, {4, 8, 1, 1}, {1, 1}, {0, 0}, {1, 1}, true},
      {{2, 8, 9, 9}, {8, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, true, 8},     // depthwise
      {{2, 16, 7, 7}, {8, 4, 3, 3}, {2, 2}, {1, 1}, {1, 1}, false, 4},   // grouped
      {{2, 8, 6, 6}, {16, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, true, 8},    // channel multiplier 2
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(::testing::Message() << "case " << i);
    Tensor x64 = seeded_randn(c.x, 40 + i).requires_grad_(), w64 = seeded_randn(c.w, 50 + i).requires_grad_();
    Tensor b64 = c.bias ? seeded_randn({c.w[0]}, 60 + i).requires_grad_() : Tensor();
    auto bias = [&](const Tensor& b) { return b.defined() ? std::optional<Tensor>(b) : std::nullopt; };
    Tensor y64 = F::conv2d(x64, w64, bias(b64), c.stride, c.padding, c.dilation, c.groups);
    Tensor g = seeded_randn(y64.sizes(), 70 + i);
    y64.backward(g);
    for (int rep = 0; rep < 2; ++rep) {
      Tensor x32 = x64.detach().to(kFloat32).requires_grad_(), w32 = w64.detach().to(kFloat32).requires_grad_();
      Tensor b32 = c.bias ? b64.detach().to(kFloat32) : Tensor();
      Tensor y32 = F::conv2d(x32, w32, bias(b32), c.stride, c.padding, c.dilation, c.groups);
      y32.backward(g.to(kFloat32));
      EXPECT_TRUE(allclose(y32.detach().to(kFloat64), y64.detach(), 1e-4, 1e-4));
      EXPECT_TRUE(allclose(x32.grad().to(kFloat64), x64.grad(), 1e-4, 1e-4));
      EXPECT_TRUE(allclose(w32.grad().to(kFloat64), w64.grad(), 1e-4, 1e-4));
    }
  }
  // channels-last input (a permuted, non-contiguous view)
  Tensor xcl = seeded_randn({2, 6, 5, 8}, 80).permute({0, 3, 1, 2}), w = seeded_randn({4, 8, 3, 3}, 81);
  EXPECT_TRUE(allclose(F::conv2d(xcl.to(kFloat32), w.to(kFloat32), std::nullopt, {1, 1}, std::vector<int64_t>{1, 1}).to(kFloat64),
                       F::conv2d(xcl, w, std::nullopt, {1, 1}, std::vector<int64_t>{1, 1}), 1e-4, 1e-4));
}

EMBER_DEVICE_TEST(NNConv, Conv2dNonContiguousInput) {
  Tensor base = seeded_randn({2, 5, 6, 3}, 4);           // (N, H, W, C)
  Tensor x = base.permute({0, 3, 1, 2});         // (N, C, H, W), channels-last strides
  Tensor x2 = seeded_randn({2, 3, 5, 12}, 5).slice(3, 0, std::nullopt, 2);
  Tensor w = seeded_randn({4, 3, 3, 3}, 6).transpose(2, 3);
  ASSERT_FALSE(x.is_contiguous());
  ASSERT_FALSE(w.is_contiguous());
  for (const Tensor& in : {x, x2}) {
    Tensor y = F::conv2d(in, w, std::nullopt, {1, 1}, std::vector<int64_t>{1, 1});
    EXPECT_TRUE(close_to(y, ref_conv2d(in, w, std::nullopt, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1)));
  }
}

EMBER_DEVICE_TEST(NNConv, Conv2dSameAndValid) {
  // even kernels with dilation: PyTorch pads total = d*(k-1), left = total/2, the extra on the right
  Tensor x = seeded_randn({2, 2, 7, 8}, 7);
  for (Shape k : {Shape{4, 2}, Shape{3, 3}, Shape{2, 5}})
    for (Shape d : {Shape{1, 1}, Shape{1, 2}, Shape{3, 1}}) {
      Tensor w = seeded_randn({3, 2, k[0], k[1]}, 8);
      Tensor y = F::conv2d(x, w, std::nullopt, {1, 1}, std::string("same"), d);
      int64_t th = d[0] * (k[0] - 1), tw = d[1] * (k[1] - 1);
      Ref r = ref_conv2d(x, w, std::nullopt, {1, 1}, {th / 2, th - th / 2, tw / 2, tw - tw / 2}, d, 1);
      EXPECT_EQ(y.sizes(), (Shape{2, 3, 7, 8}));
      EXPECT_TRUE(close_to(y, r));
    }
  Tensor w = seeded_randn({3, 2, 3, 2}, 9);
  EXPECT_TRUE(close_to(F::conv2d(x, w, std::nullopt, {2, 1}, std::string("valid")),
                       ref_conv2d(x, w, std::nullopt, {2, 1}, {0, 0, 0, 0}, {1, 1}, 1)));
}

EMBER_DEVICE_TEST(NNConv, Conv1dMatchesReference) {
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor x = seeded_randn({2, 4, 11}, 10, dt), w = seeded_randn({6, 2, 3}, 11, dt), b = seeded_randn({6}, 12, dt);
    Tensor y = F::conv1d(x, w, b, 2, std::vector<int64_t>{1}, 2, 2);
    Ref r = ref_conv2d(x.unsqueeze(2), w.unsqueeze(2), b, {1, 2}, {0, 0, 1, 1}, {1, 2}, 2);
    r.shape = {2, 6, r.shape[3]};
    EXPECT_TRUE(close_to(y, r));
    Tensor y0 = F::conv1d(x.select(0, 1), w, b, 2, std::vector<int64_t>{1}, 2, 2);
    EXPECT_TRUE(close_to(y0, ref_of(y.select(0, 1))));
    Tensor ys = F::conv1d(x, seeded_randn({3, 4, 4}, 13, dt), std::nullopt, 1, std::string("same"));
    EXPECT_EQ(ys.sizes(), (Shape{2, 3, 11}));
  }
}

EMBER_DEVICE_TEST(NNConv, Conv2dGradcheck) {
  struct G { Shape s, p, d; int64_t groups; };
  for (G c : {G{{1, 1}, {0, 0}, {1, 1}, 1}, G{{2, 1}, {1, 2}, {1, 2}, 2}, G{{1, 2}, {1, 1}, {2, 1}, 1}}) {
    Tensor x = seeded_randn({2, 4, 5, 6}, 20).requires_grad_();
    Tensor w = seeded_randn({2, 4 / c.groups, 3, 2}, 21).requires_grad_();
    Tensor b = seeded_randn({2}, 22).requires_grad_();
    EXPECT_TRUE(gradcheck(
        [&](const variable_list& v) { return F::conv2d(v[0], v[1], v[2], c.s, c.p, c.d, c.groups); }, {x, w, b}));
  }
  // pointwise path, unbatched, same with an even kernel
  Tensor x = seeded_randn({3, 4, 4}, 23).requires_grad_(), w = seeded_randn({2, 3, 1, 1}, 24).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::conv2d(v[0], v[1]); }, {x, w}));
  Tensor w2 = seeded_randn({2, 3, 2, 2}, 25).requires_grad_();
  EXPECT_TRUE(gradcheck(
      [](const variable_list& v) { return F::conv2d(v[0], v[1], std::nullopt, {1, 1}, std::string("same")); },
      {x, w2}));
  Tensor x1 = seeded_randn({2, 2, 7}, 26).requires_grad_(), w1 = seeded_randn({4, 1, 3}, 27).requires_grad_();
  EXPECT_TRUE(gradcheck(
      [](const variable_list& v) { return F::conv1d(v[0], v[1], std::nullopt, 2, std::vector<int64_t>{1}, 1, 2); },
      {x1, w1}));
}

EMBER_DEVICE_TEST(NNConv, Conv2dGradgradcheck) {
  Tensor x = seeded_randn({1, 2, 5, 4}, 30).requires_grad_(), w = seeded_randn({2, 1, 2, 3}, 31).requires_grad_();
  Tensor b = seeded_randn({2}, 32).requires_grad_();
  EXPECT_TRUE(gradgradcheck(
      [](const variable_list& v) { return F::conv2d(v[0], v[1], v[2], {2, 1}, std::vector<int64_t>{1, 1}, {1, 2}, 2); },
      {x, w, b}));
}

EMBER_DEVICE_TEST(NNConv, Conv2dFloat32GradMatchesFloat64) {
  Tensor x64 = seeded_randn({4, 3, 9, 9}, 40), w64 = seeded_randn({5, 3, 3, 3}, 41);
  Tensor x = x64.to(kFloat32).requires_grad_(), w = w64.to(kFloat32).requires_grad_();
  Tensor xd = x64.clone().requires_grad_(), wd = w64.clone().requires_grad_();
  F::conv2d(x, w, std::nullopt, {2, 2}, std::vector<int64_t>{1, 1}).square().sum().backward();
  F::conv2d(xd, wd, std::nullopt, {2, 2}, std::vector<int64_t>{1, 1}).square().sum().backward();
  EXPECT_TRUE(close_to(x.grad(), ref_of(xd.grad()), kFloat32));
  auto [rt, at] = tolerances(kFloat32);
  (void)rt; (void)at;
  EXPECT_TRUE(allclose(w.grad().to(kFloat64), wd.grad(), 1e-4, 1e-3));
}

EMBER_DEVICE_TEST(NNConv, Conv2dErrors) {
  Tensor w = seeded_randn({8, 3, 3, 3}, 50);
  EXPECT_THROW_MSG(F::conv2d(seeded_randn({2, 3}, 1), w), Error,
                   "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [2, 3]");
  EXPECT_THROW_MSG(F::conv2d(seeded_randn({1, 4, 5, 5}, 1), w), Error,
                   "Given groups=1, weight of size [8, 3, 3, 3], expected input[1, 4, 5, 5] to have 3 channels, but got 4 channels instead");
  EXPECT_THROW_MSG(F::conv2d(seeded_randn({4, 5, 5}, 1), w), Error,
                   "expected input[1, 4, 5, 5] to have 3 channels, but got 4 channels instead");
  EXPECT_THROW_MSG(F::conv2d(seeded_randn({1, 4, 5, 5}, 1), seeded_randn({3, 2, 3, 3}, 2), std::nullopt, {1, 1},
                             std::vector<int64_t>{0, 0}, {1, 1}, 2),
                   Error, "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [[3, 2, 3, 3]] instead");
  EXPECT_THROW_MSG(F::conv2d(seeded_randn({1, 3, 5, 5}, 1), w, seeded_randn({4}, 3)), Error,
                   "Given weight of size [8, 3, 3, 3], expected bias to be 1-dimensional with 8 elements, but got bias of size [4] instead");
  EXPECT_THROW_MSG(F::conv2d(seeded_randn({1, 3, 2, 2}, 1), w), Error,
                   "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be greater than actual input size");
  Tensor x = seeded_randn({1, 3, 5, 5}, 1);
  EXPECT_THROW_MSG(F::conv2d(x, w, std::nullopt, {0, 1}), Error, "non-positive stride is not supported");
  EXPECT_THROW_MSG(F::conv2d(x, w, std::nullopt, {1, 1}, std::vector<int64_t>{-1}), Error,
                   "negative padding is not supported");
  EXPECT_THROW_MSG(F::conv2d(x, w, std::nullopt, {1, 1}, std::vector<int64_t>{0}, {0, 0}), Error,
                   "dilation should be greater than zero, but got [0, 0]");
  EXPECT_THROW_MSG(F::conv2d(x, w, std::nullopt, {1, 1}, std::vector<int64_t>{0}, {1, 1}, 0), Error,
                   "non-positive groups is not supported");
  EXPECT_THROW_MSG(F::conv2d(x, w, std::nullopt, {2, 2}, std::string("same")), Error,
                   "padding='same' is not supported for strided convolutions");
  EXPECT_THROW_MSG(F::conv2d(x, w, std::nullopt, {1, 1}, std::string("foo")), Error, "Invalid padding string: 'foo'");
  EXPECT_THROW_MSG(F::conv2d(x, w.to(kFloat32)), Error, "expected scalar type Double but found Float");
  EXPECT_THROW_MSG(F::conv2d(x, w, std::nullopt, {1, 1, 1}), Error,
                   "expected stride to be a single integer value or a list of 2 values to match the convolution dimensions, but got stride=[1, 1, 1]");
  EXPECT_THROW_MSG(F::conv1d(seeded_randn({2, 3, 4, 5}, 1), seeded_randn({2, 3, 3}, 2)), Error,
                   "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [2, 3, 4, 5]");
  EXPECT_THROW_MSG(F::conv2d(x, seeded_randn({8, 3, 3}, 2)), Error, "Expected 4-dimensional weight");
}

EMBER_DEVICE_TEST(NNConv, LinearMatchesReference) {
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor x = seeded_randn({2, 3, 5}, 60, dt), w = seeded_randn({4, 5}, 61, dt), b = seeded_randn({4}, 62, dt);
    Ref X = ref_of(x), Wr = ref_of(w), B = ref_of(b);
    Ref r{{2, 3, 4}, std::vector<double>(24)};
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t o = 0; o < 4; ++o) {
        double acc = 0;
        for (int64_t k = 0; k < 5; ++k) acc += X.v[i * 5 + k] * Wr.v[o * 5 + k];
        r.v[i * 4 + o] = acc;
      }
    EXPECT_TRUE(close_to(F::linear(x, w), r));
    for (int64_t i = 0; i < 24; ++i) r.v[i] += B.v[i % 4];
    EXPECT_TRUE(close_to(F::linear(x, w, b), r));
    Ref r2{{3, 4}, std::vector<double>(r.v.begin(), r.v.begin() + 12)};
    EXPECT_TRUE(close_to(F::linear(x.select(0, 0), w, b), r2));
  }
  Tensor x = seeded_randn({3, 5}, 63).requires_grad_(), w = seeded_randn({2, 5}, 64).requires_grad_(), b = seeded_randn({2}, 65).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::linear(v[0], v[1], v[2]); }, {x, w, b}));
  // (..., in) input folds to rows with the bias in the GEMM: contiguous and transposed input
  Tensor x3 = seeded_randn({2, 5, 3}, 66).transpose(1, 2).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::linear(v[0], v[1], v[2]); }, {x3, w, b}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::linear(v[0].contiguous(), v[1], v[2]); }, {x3, w, b}));
}

// ---- pad
namespace {
// Reference pad over the last k dims; mode maps an out-of-range index back into [0, n).
Ref ref_pad(const Tensor& x, Shape pad, const std::string& mode, double value) {
  Ref X = ref_of(x.to(kFloat64));
  int64_t nd = int64_t(X.shape.size()), k = int64_t(pad.size()) / 2;
  Shape os = X.shape;
  for (int64_t i = 0; i < k; ++i) os[nd - 1 - i] += pad[2 * i] + pad[2 * i + 1];
  Ref out{os, std::vector<double>(size_t(shape_numel(os)))};
  for (int64_t f = 0; f < out.numel(); ++f) {
    auto idx = unravel(f, os);
    bool inside = true;
    int64_t src = 0;
    for (int64_t dd = 0; dd < nd; ++dd) {
      int64_t j = idx[dd], n = X.shape[dd];
      int64_t i = nd - 1 - dd;
      if (i < k) {
        j -= pad[2 * i];
        if (j < 0 || j >= n) {
          if (mode == "constant") inside = false;
          else if (mode == "reflect") j = j < 0 ? -j : 2 * (n - 1) - j;
          else if (mode == "replicate") j = j < 0 ? 0 : n - 1;
          else j = ((j % n) + n) % n;
        }
      }
      src = src * n + (inside ? j : 0);
    }
    out.v[f] = inside ? X.v[src] : value;
  }
  return out;
}
}  // namespace

EMBER_DEVICE_TEST(NNPad, ModesMatchReference) {
  Tensor x3 = seeded_randn({2, 3, 5}, 70), x4 = seeded_randn({2, 2, 4, 5}, 71), x5 = seeded_randn({1, 2, 3, 4, 5}, 72);
  for (std::string mode : {"constant", "reflect", "replicate", "circular"}) {
    SCOPED_TRACE(mode);
    EXPECT_TRUE(close_to(F::pad(x3, {2, 1}, mode, 1.5), ref_pad(x3, {2, 1}, mode, 1.5)));
    EXPECT_TRUE(close_to(F::pad(x4, {1, 3, 2, 0}, mode), ref_pad(x4, {1, 3, 2, 0}, mode, 0)));
    EXPECT_TRUE(close_to(F::pad(x5, {1, 1, 2, 1, 1, 2}, mode), ref_pad(x5, {1, 1, 2, 1, 1, 2}, mode, 0)));
    EXPECT_TRUE(close_to(F::pad(x4.transpose(2, 3), {1, 2, 0, 1}, mode), ref_pad(x4.transpose(2, 3), {1, 2, 0, 1}, mode, 0)));
    EXPECT_TRUE(close_to(F::pad(x4.to(kFloat32), {1, 2, 3, 1}, mode), ref_pad(x4, {1, 2, 3, 1}, mode, 0), kFloat32));
  }
  // constant pad: any number of dims, negative pads crop
  Tensor a = arange(3.0).view({1, 3});
  EXPECT_EQ(F::pad(a, {-1, 2}).tolist<double>(), (std::vector<double>{1, 2, 0, 0}));
  EXPECT_TRUE(close_to(F::pad(x3, {0, 0, 0, 0, 1, 1}, "constant", -2), ref_pad(x3, {0, 0, 0, 0, 1, 1}, "constant", -2)));
}

EMBER_DEVICE_TEST(NNPad, Gradcheck) {
  for (std::string mode : {"constant", "reflect", "replicate", "circular"}) {
    SCOPED_TRACE(mode);
    Tensor x = seeded_randn({1, 2, 3, 4}, 80).requires_grad_();
    EXPECT_TRUE(gradcheck([&](const variable_list& v) { return F::pad(v[0], {2, 1, 1, 2}, mode); }, {x}));
  }
}

EMBER_DEVICE_TEST(NNPad, Errors) {
  Tensor x = seeded_randn({1, 3, 3}, 90);
  EXPECT_THROW_MSG(F::pad(seeded_randn({3, 3}, 1), {1}), Error, "Padding length must be divisible by 2");
  EXPECT_THROW_MSG(F::pad(seeded_randn({3, 3}, 1), {1, 1, 1, 1, 1, 1}), Error, "Padding length too large");
  EXPECT_THROW_MSG(F::pad(x, {4, 4}, "circular"), Error, "Padding value causes wrapping around more than once.");
  EXPECT_THROW_MSG(F::pad(x, {3, 3}, "reflect"), Error,
                   "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (3, 3) at dimension 2 of input [1, 3, 3]");
  EXPECT_THROW_MSG(F::pad(seeded_randn({3}, 1), {1, 1}, "replicate"), NotImplementedError,
                   "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
  EXPECT_THROW_MSG(F::pad(x, {1, 1}, "foo"), NotImplementedError, "Unrecognised padding mode foo");
  EXPECT_THROW_MSG(F::pad(seeded_randn({1, 2, 3, 3}, 1), {1, 1}, "reflect"), NotImplementedError,
                   "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
}
