// nn::functional activations, dropout, embedding, one_hot and scaled_dot_product_attention:
// values against naive float64 references, gradients, seeded dropout statistics, errors.
#include <cmath>
#include <limits>

#include "ember/nn/functional.h"
#include "gradcheck.h"

namespace F = ember::nn::functional;
using namespace ember;
using namespace ember::testing;

namespace {

Tensor rnd(IntArrayRef shape, DType dt, uint64_t seed, double lo = -3.0, double hi = 3.0) {
  Generator g(seed);
  Tensor t = host_uniform(shape, lo, hi, g);
  return t.to(dt);
}
Tensor gin(IntArrayRef shape, uint64_t seed, double lo = -3.0, double hi = 3.0) {
  return rnd(shape, kFloat64, seed, lo, hi).requires_grad_();
}

struct Act {
  const char* name;
  std::function<Tensor(const Tensor&)> f;
  std::function<double(double)> ref;
  bool smooth;
};

std::vector<Act> activations() {
  const double pi = 3.14159265358979323846;
  return {
      {"relu", [](const Tensor& x) { return F::relu(x); }, [](double v) { return v > 0 ? v : 0.0; }, false},
      {"relu6", [](const Tensor& x) { return F::relu6(x); }, [](double v) { return std::min(std::max(v, 0.0), 6.0); },
       false},
      {"leaky_relu", [](const Tensor& x) { return F::leaky_relu(x, 0.2); }, [](double v) { return v > 0 ? v : 0.2 * v; },
       false},
      {"gelu", [](const Tensor& x) { return F::gelu(x); },
       [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, true},
      {"gelu_tanh", [](const Tensor& x) { return F::gelu(x, "tanh"); },
       [pi](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / pi) * (v + 0.044715 * v * v * v))); }, true},
      {"silu", [](const Tensor& x) { return F::silu(x); }, [](double v) { return v / (1 + std::exp(-v)); }, true},
      {"elu", [](const Tensor& x) { return F::elu(x, 1.5); }, [](double v) { return v > 0 ? v : 1.5 * std::expm1(v); },
       false},
      {"softplus", [](const Tensor& x) { return F::softplus(x); }, [](double v) { return std::log1p(std::exp(v)); },
       true},
      {"softplus_beta", [](const Tensor& x) { return F::softplus(x, 2.0, 4.0); },
       [](double v) { return 2 * v > 4 ? v : std::log1p(std::exp(2 * v)) / 2; }, false},
      {"sigmoid", [](const Tensor& x) { return F::sigmoid(x); }, [](double v) { return 1 / (1 + std::exp(-v)); }, true},
      {"tanh", [](const Tensor& x) { return F::tanh(x); }, [](double v) { return std::tanh(v); }, true},
  };
}

}  // namespace

EMBER_DEVICE_TEST(NNActivation, ForwardMatchesReference) {
  for (const auto& a : activations()) {
    for (DType dt : {kFloat32, kFloat64}) {
      for (bool transposed : {false, true}) {
        Tensor x = transposed ? rnd({5, 4}, dt, 1, -8, 8).t() : rnd({4, 5}, dt, 1, -8, 8);
        Tensor y = a.f(x);
        EXPECT_EQ(y.dtype(), dt) << a.name;
        // float32 activations use vectorised approximations: a few ulp
        auto [rtol, atol] = tolerances(dt);
        Ref ref = ref_unary(ref_of(x), a.ref);
        auto got = y.tolist<double>();
        ASSERT_EQ(got.size(), ref.v.size());
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_NEAR(got[i], ref.v[i], 4 * (atol + rtol * std::abs(ref.v[i])))
              << a.name << " " << dtype_name(dt) << " x=" << ref_of(x).v[i];
      }
    }
  }
}

EMBER_DEVICE_TEST(NNActivation, Gradients) {
  for (const auto& a : activations()) {
    Tensor x = gin({3, 4}, 2);
    auto f = [&](const variable_list& in) { return a.f(in[0]); };
    EXPECT_TRUE(gradcheck(f, {x})) << a.name;
    if (a.smooth) EXPECT_TRUE(gradgradcheck(f, {x})) << a.name;
  }
  Tensor x = gin({3, 4}, 3);
  auto sm = [](const variable_list& in) { return F::softmax(in[0], 1); };
  auto lsm = [](const variable_list& in) { return F::log_softmax(in[0], 0); };
  EXPECT_TRUE(gradcheck(sm, {x}));
  EXPECT_TRUE(gradgradcheck(sm, {x}));
  EXPECT_TRUE(gradcheck(lsm, {x}));
  EXPECT_TRUE(gradgradcheck(lsm, {x}));
}

EMBER_DEVICE_TEST(NNActivation, LargeInputsStayFinite) {
  Tensor x = tensor({-200.0, -30.0, 0.5, 30.0, 200.0}, {.dtype = kFloat64}).requires_grad_();
  Tensor sp = F::softplus(x), el = F::elu(x);
  EXPECT_TRUE(close_to(sp, Ref{{5}, {std::log1p(std::exp(-200.0)), std::log1p(std::exp(-30.0)),
                                      std::log1p(std::exp(0.5)), 30.0, 200.0}}));
  auto g = autograd::grad({(sp + el).sum()}, {x})[0].tolist<double>();
  for (double v : g) EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(g[4], 2.0, 1e-12);  // softplus' = 1 (linear region), elu' = 1
}

EMBER_DEVICE_TEST(NNActivation, SoftmaxValuesAndDtype) {
  Tensor x = rnd({3, 4}, kFloat32, 4);
  Ref r = ref_of(x);
  Ref sm = r, lsm = r;
  for (int i = 0; i < 3; ++i) {
    double mx = -1e300, s = 0;
    for (int j = 0; j < 4; ++j) mx = std::max(mx, r.v[i * 4 + j]);
    for (int j = 0; j < 4; ++j) s += std::exp(r.v[i * 4 + j] - mx);
    for (int j = 0; j < 4; ++j) {
      sm.v[i * 4 + j] = std::exp(r.v[i * 4 + j] - mx) / s;
      lsm.v[i * 4 + j] = r.v[i * 4 + j] - mx - std::log(s);
    }
  }
  EXPECT_TRUE(close_to(F::softmax(x, -1), sm));
  EXPECT_TRUE(close_to(F::log_softmax(x, 1), lsm));
  Tensor y = F::softmax(x, 1, kFloat64);
  EXPECT_EQ(y.dtype(), kFloat64);
  EXPECT_TRUE(close_to(y, sm, kFloat32));
}

// ---------------------------------------------------------------- dropout
EMBER_DEVICE_TEST(NNActivation, DropoutStatistics) {
  Tensor x = ones({200, 500});
  Generator g(device(), 123);
  const double p = 0.3;
  Tensor y = F::dropout(x, p, true, &g);
  auto v = y.tolist<double>();
  int64_t zeros_n = 0;
  for (double e : v) {
    if (e == 0.0) ++zeros_n;
    else EXPECT_NEAR(e, 1.0 / (1.0 - p), 1e-6);
  }
  double frac = double(zeros_n) / double(v.size());
  EXPECT_NEAR(frac, p, 0.01);  // 100000 draws: std of the fraction ~0.0015
  // same seed, same mask; another seed, another mask
  Generator g1(device(), 123), g2(device(), 124);
  EXPECT_TRUE(equal(F::dropout(x, p, true, &g1), y));
  EXPECT_FALSE(equal(F::dropout(x, p, true, &g2), y));
}

EMBER_DEVICE_TEST(NNActivation, DropoutEdgeCasesAndGrad) {
  Tensor x = rnd({4, 6}, kFloat32, 5);
  EXPECT_TRUE(equal(F::dropout(x, 0.5, false), x));
  EXPECT_TRUE(equal(F::dropout(x, 0.0, true), x));
  EXPECT_TRUE(equal(F::dropout(x, 1.0, true), zeros({4, 6})));
  EXPECT_THROW_MSG(F::dropout(x, 1.5), ValueError, "dropout probability has to be between 0 and 1, but got 1.5");
  EXPECT_THROW_MSG(F::dropout(x, -0.1), ValueError, "dropout probability has to be between 0 and 1, but got -0.1");
  EXPECT_THROW_MSG(F::dropout2d(x, 1.5), ValueError, "dropout probability has to be between 0 and 1, but got 1.5");
  // gradient: the same mask, scaled
  Tensor xg = rnd({10, 10}, kFloat64, 6).requires_grad_();
  Generator g(device(), 7);
  Tensor y = F::dropout(xg, 0.4, true, &g);
  Tensor gx = autograd::grad({y.sum()}, {xg})[0];
  auto yv = y.tolist<double>(), xv = xg.tolist<double>(), gv = gx.tolist<double>();
  for (size_t i = 0; i < yv.size(); ++i) {
    if (yv[i] == 0.0) EXPECT_EQ(gv[i], 0.0);
    else {
      EXPECT_NEAR(gv[i], 1.0 / 0.6, 1e-12);
      EXPECT_NEAR(yv[i], xv[i] / 0.6, 1e-12);
    }
  }
}

EMBER_DEVICE_TEST(NNActivation, Dropout2dZeroesWholeChannels) {
  Tensor x = ones({8, 64, 3, 3}, {.dtype = kFloat64});
  Generator g(device(), 9);
  Tensor y = F::dropout2d(x, 0.5, true, &g);
  auto v = y.tolist<double>();
  int64_t dropped = 0;
  for (int64_t ch = 0; ch < 8 * 64; ++ch) {
    double first = v[ch * 9];
    for (int k = 1; k < 9; ++k) ASSERT_EQ(v[ch * 9 + k], first) << "channel " << ch;
    if (first == 0.0) ++dropped;
    else EXPECT_NEAR(first, 2.0, 1e-12);
  }
  EXPECT_GT(dropped, 512 * 0.4);
  EXPECT_LT(dropped, 512 * 0.6);
  EXPECT_TRUE(equal(F::dropout2d(x, 0.5, false), x));
  Generator g1(device(), 9);
  EXPECT_TRUE(equal(F::dropout2d(x, 0.5, true, &g1), y));
}

// ---------------------------------------------------------------- embedding, one_hot
EMBER_DEVICE_TEST(NNActivation, EmbeddingAndOneHot) {
  Tensor w = rnd({5, 3}, kFloat64, 10).requires_grad_();
  Tensor idx = tensor({{0, 4}, {2, 0}});
  Tensor y = F::embedding(idx, w);
  EXPECT_EQ(y.sizes(), (Shape{2, 2, 3}));
  auto wv = w.tolist<double>(), yv = y.tolist<double>();
  std::vector<int> rows{0, 4, 2, 0};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(yv[i * 3 + j], wv[rows[i] * 3 + j]);
  // gradient accumulates repeated rows; padding_idx row gets none
  Tensor gw = autograd::grad({F::embedding(idx, w, 0).sum()}, {w})[0];
  auto gv = gw.tolist<double>();
  std::vector<double> expect_rows{0, 0, 1, 0, 1};
  for (int r = 0; r < 5; ++r)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(gv[r * 3 + j], expect_rows[r]) << r;
  Tensor gw2 = autograd::grad({F::embedding(idx, w, -1).sum()}, {w})[0];  // -1 = row 4
  EXPECT_EQ(gw2.tolist<double>()[4 * 3], 0.0);
  EXPECT_EQ(gw2.tolist<double>()[0], 2.0);
  EXPECT_THROW_MSG(F::embedding(idx, w, 7), ValueError, "Padding_idx must be within num_embeddings");

  Tensor oh = F::one_hot(tensor({2, 0, 1}), 4);
  EXPECT_EQ(oh.dtype(), kInt64);
  EXPECT_EQ(oh.tolist<int64_t>(), (std::vector<int64_t>{0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(F::one_hot(tensor({2, 0})).sizes(), (Shape{2, 3}));
}

// ---------------------------------------------------------------- attention
namespace {
enum class MaskKind { None, Bool, Float, Causal };

// Naive float64 attention over (B, L, E) x (B, S, E) x (B, S, Ev); masks (L, S) broadcast over B.
Ref ref_attention(const Tensor& q, const Tensor& k, const Tensor& v, MaskKind kind, const Tensor& mask,
                  double scale) {
  Ref rq = ref_of(q), rk = ref_of(k), rv = ref_of(v);
  int64_t nd = q.dim();
  int64_t L = q.sizes()[nd - 2], E = q.sizes()[nd - 1], S = k.sizes()[nd - 2], Ev = v.sizes()[nd - 1];
  int64_t B = q.numel() / (L * E);
  std::vector<double> rm = mask.defined() ? mask.to(kFloat64).tolist<double>() : std::vector<double>{};
  Shape out_shape(q.sizes().begin(), q.sizes().end());
  out_shape.back() = Ev;
  Ref out{out_shape, std::vector<double>(B * L * Ev, 0.0)};
  const double ninf = -std::numeric_limits<double>::infinity();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> s(S);
      double mx = ninf;
      for (int64_t j = 0; j < S; ++j) {
        double d = 0;
        for (int64_t e = 0; e < E; ++e) d += rq.v[(b * L + i) * E + e] * rk.v[(b * S + j) * E + e];
        d *= scale;
        if (kind == MaskKind::Bool && rm[i * S + j] == 0.0) d = ninf;
        if (kind == MaskKind::Float) d += rm[i * S + j];
        if (kind == MaskKind::Causal && j > i) d = ninf;
        s[j] = d;
        mx = std::max(mx, d);
      }
      double z = 0;
      for (auto& x : s) z += (x = std::exp(x - mx));
      for (int64_t j = 0; j < S; ++j)
        for (int64_t e = 0; e < Ev; ++e) out.v[(b * L + i) * Ev + e] += s[j] / z * rv.v[(b * S + j) * Ev + e];
    }
  return out;
}
}  // namespace

EMBER_DEVICE_TEST(NNActivation, AttentionMatchesReference) {
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor q = rnd({2, 3, 4, 5}, dt, 20), k = rnd({2, 3, 6, 5}, dt, 21), v = rnd({2, 3, 6, 7}, dt, 22);
    Tensor bmask = rnd({4, 6}, kFloat64, 23).gt(-1.5);
    for (int j = 0; j < 6; ++j) bmask.select(0, 0).select(0, j).fill_(j == 2);  // row 0 keeps one key
    Tensor fmask = rnd({4, 6}, dt, 24);
    const double scale = 1.0 / std::sqrt(5.0);
    EXPECT_TRUE(close_to(F::scaled_dot_product_attention(q, k, v), ref_attention(q, k, v, MaskKind::None, {}, scale),
                         dt));
    EXPECT_TRUE(close_to(F::scaled_dot_product_attention(q, k, v, bmask),
                         ref_attention(q, k, v, MaskKind::Bool, bmask, scale), dt));
    EXPECT_TRUE(close_to(F::scaled_dot_product_attention(q, k, v, fmask),
                         ref_attention(q, k, v, MaskKind::Float, fmask, scale), dt));
    EXPECT_TRUE(close_to(F::scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, false, 0.3),
                         ref_attention(q, k, v, MaskKind::None, {}, 0.3), dt));
    Tensor qs = rnd({2, 6, 5}, dt, 25);  // L == S for causal; 3-D batch
    Tensor ks = rnd({2, 6, 5}, dt, 26), vs = rnd({2, 6, 3}, dt, 27);
    EXPECT_TRUE(close_to(F::scaled_dot_product_attention(qs, ks, vs, std::nullopt, 0.0, true),
                         ref_attention(qs, ks, vs, MaskKind::Causal, {}, scale), dt));
    // non-contiguous q
    Tensor qt = rnd({2, 3, 5, 4}, dt, 28).transpose(-2, -1);
    EXPECT_TRUE(close_to(F::scaled_dot_product_attention(qt, k, v),
                         ref_attention(qt, k, v, MaskKind::None, {}, scale), dt));
  }
}

// torch 2.x's safe softmax: a row with every key masked attends to nothing (0), not NaN.
EMBER_DEVICE_TEST(NNActivation, AttentionFullyMaskedRowIsZeroAndErrors) {
  Tensor q = rnd({1, 2, 3}, kFloat32, 30), k = rnd({1, 4, 3}, kFloat32, 31), v = rnd({1, 4, 2}, kFloat32, 32);
  Tensor mask = tensor({{true, true, false, false}, {false, false, false, false}});
  auto out = F::scaled_dot_product_attention(q, k, v, mask).tolist<double>();
  EXPECT_FALSE(std::isnan(out[0]));
  EXPECT_EQ(out[2], 0.0);
  EXPECT_EQ(out[3], 0.0);
  Tensor fmask = tensor({{0.0f, -1.0f, -INFINITY, 2.0f}, {-INFINITY, -INFINITY, -INFINITY, -INFINITY}});
  auto fout = F::scaled_dot_product_attention(q, k, v, fmask).tolist<double>();
  EXPECT_FALSE(std::isnan(fout[0]));
  EXPECT_EQ(fout[2], 0.0);
  EXPECT_EQ(fout[3], 0.0);
  EXPECT_THROW_MSG(F::scaled_dot_product_attention(q, k, v, mask, 0.0, true), Error,
                   "Explicit attn_mask should not be set when is_causal=True");
}

EMBER_DEVICE_TEST(NNActivation, AttentionGradients) {
  Tensor q = gin({2, 3, 4}, 40, -1, 1), k = gin({2, 5, 4}, 41, -1, 1), v = gin({2, 5, 3}, 42, -1, 1);
  Tensor bmask = tensor({{true, false, true, true, false},
                         {true, true, true, true, true},
                         {false, false, false, true, true}});
  Tensor fmask = rnd({3, 5}, kFloat64, 43).requires_grad_();
  auto none = [](const variable_list& in) { return F::scaled_dot_product_attention(in[0], in[1], in[2]); };
  auto withb = [bmask](const variable_list& in) { return F::scaled_dot_product_attention(in[0], in[1], in[2], bmask); };
  auto withf = [](const variable_list& in) { return F::scaled_dot_product_attention(in[0], in[1], in[2], in[3]); };
  EXPECT_TRUE(gradcheck(none, {q, k, v}));
  EXPECT_TRUE(gradgradcheck(none, {q, k, v}));
  EXPECT_TRUE(gradcheck(withb, {q, k, v}));
  EXPECT_TRUE(gradcheck(withf, {q, k, v, fmask}));
  Tensor qc = gin({2, 4, 3}, 44, -1, 1), kc = gin({2, 4, 3}, 45, -1, 1), vc = gin({2, 4, 2}, 46, -1, 1);
  auto causal = [](const variable_list& in) {
    return F::scaled_dot_product_attention(in[0], in[1], in[2], std::nullopt, 0.0, true);
  };
  EXPECT_TRUE(gradcheck(causal, {qc, kc, vc}));
}

EMBER_DEVICE_TEST(NNActivation, AttentionDropoutIsSeeded) {
  Tensor q = rnd({2, 8, 4}, kFloat32, 50), k = rnd({2, 8, 4}, kFloat32, 51), v = rnd({2, 8, 4}, kFloat32, 52);
  Generator g1(device(), 5), g2(device(), 5), g3(device(), 6);
  Tensor a = F::scaled_dot_product_attention(q, k, v, std::nullopt, 0.5, false, std::nullopt, &g1);
  Tensor b = F::scaled_dot_product_attention(q, k, v, std::nullopt, 0.5, false, std::nullopt, &g2);
  Tensor c = F::scaled_dot_product_attention(q, k, v, std::nullopt, 0.5, false, std::nullopt, &g3);
  EXPECT_TRUE(equal(a, b));
  EXPECT_FALSE(equal(a, c));
  EXPECT_FALSE(equal(a, F::scaled_dot_product_attention(q, k, v)));
}

// Half-precision attention with the head dims of real models: on CUDA this is the fused flash
// path (float16/bfloat16, head dim 64 or 128, causal or not, Tq != Tk, tails of partial tiles),
// elsewhere the math path. Forward and gradients against float64 attention of the same values.
EMBER_DEVICE_TEST(NNActivation, AttentionHalfHeadDims) {
  struct Case {
    int64_t tq, tk, d;
    bool causal;
  };
  auto max_err = [](const Tensor& a, const Tensor& b) { return (a.to(kFloat64) - b).abs().max().item<double>(); };
  for (DType dt : {kFloat16, kBFloat16})
    for (Case c : {Case{70, 70, 64, true}, Case{33, 130, 64, false}, Case{130, 65, 128, true}}) {
      Tensor q = rnd({2, 2, c.tq, c.d}, dt, 50, -1, 1).requires_grad_();
      Tensor k = rnd({2, 2, c.tk, c.d}, dt, 51, -1, 1).requires_grad_();
      Tensor v = rnd({2, 2, c.tk, c.d}, dt, 52, -1, 1).requires_grad_();
      Tensor g = rnd({2, 2, c.tq, c.d}, dt, 53, -1, 1);
      Tensor out = F::scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, c.causal);
      ASSERT_EQ(out.dtype(), dt);
      auto grads = autograd::grad({(out.to(kFloat32) * g.to(kFloat32)).sum()}, {q, k, v});
      Tensor q64 = q.detach().to(kFloat64).requires_grad_(), k64 = k.detach().to(kFloat64).requires_grad_();
      Tensor v64 = v.detach().to(kFloat64).requires_grad_();
      Tensor ref = F::scaled_dot_product_attention(q64, k64, v64, std::nullopt, 0.0, c.causal);
      auto ref_grads = autograd::grad({(ref * g.to(kFloat64)).sum()}, {q64, k64, v64});
      const double tol = dt == kBFloat16 ? 3e-2 : 5e-3;
      EXPECT_LE(max_err(out, ref), tol) << dtype_name(dt) << " " << c.tq << "x" << c.tk << "x" << c.d;
      for (int i = 0; i < 3; ++i) {
        const double scale = std::max(1.0, ref_grads[i].abs().max().item<double>());
        EXPECT_LE(max_err(grads[i], ref_grads[i]), tol * scale)
            << "gradient " << i << " " << dtype_name(dt) << " " << c.tq << "x" << c.tk << "x" << c.d;
      }
    }
}
