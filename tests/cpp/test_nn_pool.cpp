// max_pool2d, avg_pool2d and adaptive_avg_pool2d against naive float64 references.
#include <limits>

#include "ember/nn/functional.h"
#include "gradcheck.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

namespace {

int64_t out_size(int64_t in, int64_t k, int64_t p, int64_t s, int64_t d, bool ceil_mode) {
  double v = double(in + 2 * p - d * (k - 1) - 1) / double(s);
  int64_t o = int64_t(ceil_mode ? std::ceil(v) : std::floor(v)) + 1;
  if (ceil_mode && (o - 1) * s >= in + p) --o;
  return o;
}

struct PoolRef {
  Ref out, idx;
};

// Max pool over (N, C, H, W) in double: padding never wins (-inf), first maximum, NaN propagates
// (as PyTorch's CPU kernel, a later NaN in the window replaces an earlier one).
PoolRef ref_max_pool(const Tensor& x, Shape k, Shape s, Shape p, Shape d, bool ceil_mode) {
  Ref X = ref_of(x.to(kFloat64));
  int64_t N = X.shape[0], C = X.shape[1], H = X.shape[2], W = X.shape[3];
  int64_t OH = out_size(H, k[0], p[0], s[0], d[0], ceil_mode), OW = out_size(W, k[1], p[1], s[1], d[1], ceil_mode);
  PoolRef r{{{N, C, OH, OW}, {}}, {{N, C, OH, OW}, {}}};
  for (int64_t pl = 0; pl < N * C; ++pl)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double best = -std::numeric_limits<double>::infinity();
        int64_t bi = -1;
        for (int64_t a = 0; a < k[0]; ++a)
          for (int64_t b = 0; b < k[1]; ++b) {
            int64_t ih = oh * s[0] - p[0] + a * d[0], iw = ow * s[1] - p[1] + b * d[1];
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            double v = X.v[pl * H * W + ih * W + iw];
            if (bi < 0 || v > best || std::isnan(v)) {
              best = v;
              bi = ih * W + iw;
            }
          }
        r.out.v.push_back(best);
        r.idx.v.push_back(double(bi));
      }
  return r;
}

Ref ref_avg_pool(const Tensor& x, Shape k, Shape s, Shape p, bool ceil_mode, bool cip) {
  Ref X = ref_of(x.to(kFloat64));
  int64_t N = X.shape[0], C = X.shape[1], H = X.shape[2], W = X.shape[3];
  int64_t OH = out_size(H, k[0], p[0], s[0], 1, ceil_mode), OW = out_size(W, k[1], p[1], s[1], 1, ceil_mode);
  Ref r{{N, C, OH, OW}, {}};
  for (int64_t pl = 0; pl < N * C; ++pl)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double acc = 0;
        int64_t inside = 0, padded = 0;
        for (int64_t a = 0; a < k[0]; ++a)
          for (int64_t b = 0; b < k[1]; ++b) {
            int64_t ih = oh * s[0] - p[0] + a, iw = ow * s[1] - p[1] + b;
            // positions past the padded input (ceil_mode windows) never count
            if (ih >= H + p[0] || iw >= W + p[1]) continue;
            ++padded;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            ++inside;
            acc += X.v[pl * H * W + ih * W + iw];
          }
        r.v.push_back(inside == 0 ? 0.0 : acc / double(cip ? padded : inside));
      }
  return r;
}

Ref ref_adaptive(const Tensor& x, int64_t OH, int64_t OW) {
  Ref X = ref_of(x.to(kFloat64));
  int64_t N = X.shape[0], C = X.shape[1], H = X.shape[2], W = X.shape[3];
  Ref r{{N, C, OH, OW}, {}};
  for (int64_t pl = 0; pl < N * C; ++pl)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t h0 = int64_t(std::floor(double(oh * H) / OH)), h1 = int64_t(std::ceil(double((oh + 1) * H) / OH));
        int64_t w0 = int64_t(std::floor(double(ow * W) / OW)), w1 = int64_t(std::ceil(double((ow + 1) * W) / OW));
        double acc = 0;
        for (int64_t i = h0; i < h1; ++i)
          for (int64_t j = w0; j < w1; ++j) acc += X.v[pl * H * W + i * W + j];
        r.v.push_back(acc / double((h1 - h0) * (w1 - w0)));
      }
  return r;
}

struct MaxCfg {
  Shape k, s, p, d;
  bool ceil_mode;
};

}  // namespace

EMBER_DEVICE_TEST(NNPool, MaxPoolMatchesReference) {
  std::vector<MaxCfg> cfgs = {
      {{2, 2}, {2, 2}, {0, 0}, {1, 1}, false}, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
      {{3, 2}, {1, 2}, {1, 0}, {2, 1}, false}, {{2, 3}, {3, 2}, {1, 1}, {1, 2}, true},
      {{3, 3}, {3, 3}, {0, 0}, {1, 1}, true},
  };
  for (DType dt : {kFloat32, kFloat64}) {
    int i = 0;
    for (const MaxCfg& c : cfgs) {
      SCOPED_TRACE(::testing::Message() << "config " << i++ << " " << dtype_name(dt));
      Tensor x = seeded_randn({2, 3, 7, 8}, 1, dt);
      auto [y, idx] = F::max_pool2d_with_indices(x, c.k, c.s, c.p, c.d, c.ceil_mode);
      PoolRef r = ref_max_pool(x, c.k, c.s, c.p, c.d, c.ceil_mode);
      EXPECT_TRUE(close_to(y, r.out));
      EXPECT_EQ(idx.dtype(), kInt64);
      EXPECT_TRUE(close_to(idx, r.idx, kFloat64));
      EXPECT_TRUE(close_to(F::max_pool2d(x, c.k, c.s, c.p, c.d, c.ceil_mode), r.out));
      // unbatched and non-contiguous input
      auto [y0, i0] = F::max_pool2d_with_indices(x.select(0, 1), c.k, c.s, c.p, c.d, c.ceil_mode);
      EXPECT_TRUE(close_to(y0, ref_of(y.select(0, 1))));
      EXPECT_TRUE(close_to(i0, ref_of(idx.select(0, 1)), kFloat64));
      Tensor xt = x.transpose(2, 3);
      EXPECT_TRUE(close_to(F::max_pool2d(xt, c.k, c.s, c.p, c.d, c.ceil_mode),
                           ref_max_pool(xt, c.k, c.s, c.p, c.d, c.ceil_mode).out));
    }
  }
  // ceil_mode shapes: 5 with k=2 s=2 -> 2 (floor) / 3 (ceil)
  Tensor x = seeded_randn({1, 1, 5, 5}, 2);
  EXPECT_EQ(F::max_pool2d(x, {2}).sizes(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(F::max_pool2d(x, {2}, {}, {0}, {1}, true).sizes(), (Shape{1, 1, 3, 3}));
}

EMBER_DEVICE_TEST(NNPool, MaxPoolNanAndIndices) {
  Tensor x = tensor({1.0, 5.0, 3.0, 5.0, 2.0, NAN, 0.0, 4.0, 9.0}).view({1, 1, 3, 3});
  auto [y, idx] = F::max_pool2d_with_indices(x, {2}, {1});
  auto v = y.tolist<double>();
  EXPECT_EQ(v[0], 5.0);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], 5.0);  // the first maximum wins a tie
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_EQ(idx.tolist<int64_t>(), (std::vector<int64_t>{1, 5, 3, 5}));
}

// MaxPool2d(2): float32 on the vector rows (16 outputs a step, masked at the end of a row),
// float64 on its own scalar kernel: widths below, at and across 16 outputs, odd sizes (the last row/column is dropped), ties,
// NaN and -inf against the reference.
EMBER_DEVICE_TEST(NNPool, MaxPool2x2FastPathMatchesReference) {
  for (DType dt : {kFloat32, kFloat64})
    for (int64_t w : {2, 5, 14, 28, 32, 33, 40, 70}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " width " << w);
      Tensor x = seeded_randn({2, 3, 6, w}, uint64_t(w), dt).round();  // rounding makes ties common
      auto flat = x.view({-1});
      flat.index_put_({tensor(std::vector<int64_t>{3, 17, 40})}, tensor(std::vector<double>{NAN, NAN, NAN}).to(dt));
      flat.index_put_({tensor(std::vector<int64_t>{0, 1, 5})},
                      tensor(std::vector<double>{-INFINITY, -INFINITY, -INFINITY}).to(dt));
      auto [y, idx] = F::max_pool2d_with_indices(x, {2, 2}, {2, 2});
      PoolRef r = ref_max_pool(x, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false);
      EXPECT_TRUE(close_to(y, r.out));
      EXPECT_TRUE(close_to(idx, r.idx, kFloat64));
    }
}

// float32 windows of inside rows away from the edges take a vector path (stride 1 or 2, any
// kernel and dilation, 16 outputs per step): configurations across it, with ties, NaN and -inf,
// rows wide enough for full and masked steps, padding and ceil_mode edges.
EMBER_DEVICE_TEST(NNPool, MaxPoolVectorRowsMatchReference) {
  std::vector<MaxCfg> cfgs = {
      {{3, 3}, {2, 2}, {1, 1}, {1, 1}, false}, {{3, 3}, {1, 1}, {1, 1}, {1, 1}, false},
      {{2, 2}, {1, 1}, {0, 0}, {1, 1}, false}, {{3, 2}, {2, 1}, {1, 0}, {2, 2}, true},
      {{5, 5}, {2, 2}, {2, 2}, {1, 1}, true},  {{1, 3}, {1, 2}, {0, 1}, {1, 3}, false},
  };
  for (int64_t w : {9, 37, 70}) {
    Tensor x = seeded_randn({2, 3, 11, w}, uint64_t(100 + w), kFloat32).round();
    auto flat = x.view({-1});
    flat.index_put_({tensor(std::vector<int64_t>{5, 40, 41, 300})},
                    tensor(std::vector<double>{NAN, NAN, NAN, NAN}).to(kFloat32));
    flat.index_put_({tensor(std::vector<int64_t>{0, 1, 77})},
                    tensor(std::vector<double>{-INFINITY, -INFINITY, -INFINITY}).to(kFloat32));
    int i = 0;
    for (const MaxCfg& c : cfgs) {
      SCOPED_TRACE(::testing::Message() << "width " << w << " config " << i++);
      auto [y, idx] = F::max_pool2d_with_indices(x, c.k, c.s, c.p, c.d, c.ceil_mode);
      PoolRef r = ref_max_pool(x, c.k, c.s, c.p, c.d, c.ceil_mode);
      EXPECT_TRUE(close_to(y, r.out));
      EXPECT_TRUE(close_to(idx, r.idx, kFloat64));
    }
  }
}

EMBER_DEVICE_TEST(NNPool, AvgPoolMatchesReference) {
  struct C { Shape k, s, p; bool ceil_mode, cip; };
  std::vector<C> cfgs = {{{2, 2}, {2, 2}, {0, 0}, false, true}, {{3, 3}, {2, 2}, {1, 1}, true, true},
                         {{3, 3}, {2, 2}, {1, 1}, true, false}, {{3, 2}, {2, 3}, {1, 1}, false, false},
                         {{2, 4}, {3, 3}, {1, 2}, true, true}};
  for (DType dt : {kFloat32, kFloat64}) {
    int i = 0;
    for (const C& c : cfgs) {
      SCOPED_TRACE(::testing::Message() << "config " << i++ << " " << dtype_name(dt));
      Tensor x = seeded_randn({2, 3, 7, 8}, 3, dt);
      Tensor y = F::avg_pool2d(x, c.k, c.s, c.p, c.ceil_mode, c.cip);
      EXPECT_TRUE(close_to(y, ref_avg_pool(x, c.k, c.s, c.p, c.ceil_mode, c.cip)));
      EXPECT_TRUE(close_to(F::avg_pool2d(x.select(0, 0), c.k, c.s, c.p, c.ceil_mode, c.cip), ref_of(y.select(0, 0))));
      Tensor xt = x.transpose(2, 3);
      EXPECT_TRUE(close_to(F::avg_pool2d(xt, c.k, c.s, c.p, c.ceil_mode, c.cip),
                           ref_avg_pool(xt, c.k, c.s, c.p, c.ceil_mode, c.cip)));
    }
  }
}

EMBER_DEVICE_TEST(NNPool, AdaptiveAvgPoolMatchesReference) {
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor x = seeded_randn({2, 3, 7, 10}, 4, dt);
    for (Shape os : {Shape{1, 1}, Shape{3, 4}, Shape{7, 10}, Shape{5, 3}, Shape{9, 12}}) {
      Tensor y = F::adaptive_avg_pool2d(x, os);
      EXPECT_TRUE(close_to(y, ref_adaptive(x, os[0], os[1])));
      EXPECT_TRUE(close_to(F::adaptive_avg_pool2d(x.select(0, 1), os), ref_of(y.select(0, 1))));
    }
    EXPECT_EQ(F::adaptive_avg_pool2d(x, {2}).sizes(), (Shape{2, 3, 2, 2}));
    // wide windows (summed with vector lanes) and whole planes larger than one lane block
    Tensor xw = seeded_randn({2, 3, 9, 70}, 5, dt);
    for (Shape os : {Shape{1, 1}, Shape{2, 3}, Shape{4, 1}})
      EXPECT_TRUE(close_to(F::adaptive_avg_pool2d(xw, os), ref_adaptive(xw, os[0], os[1])));
  }
}

EMBER_DEVICE_TEST(NNPool, Gradcheck) {
  Tensor x = seeded_randn({2, 2, 5, 6}, 5).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::max_pool2d(v[0], {3, 2}, {2, 1}, {1, 1}, {1, 2}, true); }, {x}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::avg_pool2d(v[0], {3}, {2}, {1}, true, false); }, {x}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::avg_pool2d(v[0], {2, 3}, {1, 2}, {1, 1}, false, true); }, {x}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::adaptive_avg_pool2d(v[0], {3, 4}); }, {x}));
  Tensor x3 = seeded_randn({2, 4, 4}, 6).requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return F::max_pool2d(v[0], {2}); }, {x3}));
}

EMBER_DEVICE_TEST(NNPool, Gradgradcheck) {
  Tensor x = seeded_randn({1, 2, 5, 4}, 7).requires_grad_();
  EXPECT_TRUE(gradgradcheck([](const variable_list& v) { return F::max_pool2d(v[0], {2}, {1}, {1}); }, {x}));
  EXPECT_TRUE(gradgradcheck([](const variable_list& v) { return F::avg_pool2d(v[0], {3}, {2}, {1}, true, false); }, {x}));
  EXPECT_TRUE(gradgradcheck([](const variable_list& v) { return F::adaptive_avg_pool2d(v[0], {3, 3}); }, {x}));
}

EMBER_DEVICE_TEST(NNPool, Errors) {
  Tensor x = seeded_randn({1, 1, 5, 5}, 8);
  EXPECT_THROW_MSG(F::max_pool2d(x, {3}, {}, {2}), Error,
                   "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1");
  EXPECT_THROW_MSG(F::max_pool2d(seeded_randn({2, 3}, 1), {2}), Error, "non-empty 3D or 4D (batch mode) tensor expected for input");
  EXPECT_THROW_MSG(F::max_pool2d(seeded_randn({1, 1, 1, 1}, 1), {2}), Error,
                   "Given input size: (1x1x1). Calculated output size: (1x0x0). Output size is too small");
  EXPECT_THROW_MSG(F::max_pool2d(x, {2}, {0}), Error, "stride should not be zero");
  EXPECT_THROW_MSG(F::max_pool2d(x, {2}, {}, {0}, {0}), Error,
                   "dilation should be greater than zero, but got dilationH: 0 dilationW: 0");
  EXPECT_THROW_MSG(F::max_pool2d(x, {2, 2, 2}), Error,
                   "max_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  EXPECT_THROW_MSG(F::avg_pool2d(x, {3}, {}, {2}), Error, "pad should be at most half of kernel size, but got pad=2 and kernel_size=3");
  EXPECT_THROW_MSG(F::avg_pool2d(seeded_randn({1, 1, 1, 1}, 1), {2}), Error,
                   "Given input size: (1x1x1). Calculated output size: (1x0x0). Output size is too small");
  EXPECT_THROW_MSG(F::avg_pool2d(x, {2}, {0}), Error, "stride should not be zero");
  EXPECT_THROW_MSG(F::adaptive_avg_pool2d(seeded_randn({2, 3}, 1), {2}), Error,
                   "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [2, 3]");
  EXPECT_THROW_MSG(F::adaptive_avg_pool2d(x, {2, 2, 2}), Error, "adaptive_avg_pool2d: output_size must be 2");
}

EMBER_DEVICE_TEST(NNPool, EmptyBatchAndDtypes) {
  Tensor e = seeded_randn({0, 2, 6, 6}, 9).requires_grad_();
  Tensor y = F::max_pool2d(e, {2});
  EXPECT_EQ(y.sizes(), (Shape{0, 2, 3, 3}));
  y.sum().backward();
  EXPECT_EQ(e.grad().sizes(), e.sizes());
  EXPECT_EQ(F::avg_pool2d(e.detach(), {2}).sizes(), (Shape{0, 2, 3, 3}));
  EXPECT_EQ(F::adaptive_avg_pool2d(e.detach(), {4, 5}).sizes(), (Shape{0, 2, 4, 5}));
  Tensor x = seeded_randn({1, 2, 6, 6}, 10);
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor r = x.to(dt).to(kFloat64);
    EXPECT_TRUE(allclose(F::max_pool2d(x.to(dt), {2}).to(kFloat64), F::max_pool2d(r, {2})));
    EXPECT_TRUE(allclose(F::avg_pool2d(x.to(dt), {2}).to(kFloat64), F::avg_pool2d(r, {2}), 2e-2, 1e-2));
  }
  EXPECT_THROW_MSG(F::max_pool2d(x.to(kInt64), {2}), Error, "\"max_pool2d\" not implemented for 'Long'");
  EXPECT_THROW_MSG(F::avg_pool2d(x.to(kInt64), {2}), Error, "\"avg_pool2d\" not implemented for 'Long'");
}
