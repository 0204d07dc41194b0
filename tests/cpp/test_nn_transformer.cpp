// MultiheadAttention, TransformerEncoderLayer, TransformerEncoder: values against an independent
// float64 reference (loops over the module's own weights), gradients by finite differences,
// PyTorch's state_dict names and parameter counts, and the seeds' attention models.
#include <cmath>
#include <functional>
#include <limits>

#include "ember/nn.h"
#include "gradcheck.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

// Reference multi-head attention on (L, N, E) / (S, N, E) inputs, by loops in double.
// mask(n, h, i, j) is added to the scores. Returns out (L, N, E) and per-head weights (N, H, L, S).
struct RefMHA {
  Ref out, weights;
};
RefMHA reference_mha(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, nn::MultiheadAttention& m,
                     const std::function<double(int64_t, int64_t, int64_t, int64_t)>& mask) {
  const int64_t L = q_in.size(0), N = q_in.size(1), E = q_in.size(2), S = k_in.size(0), H = m.num_heads,
                D = E / H;
  auto q = q_in.tolist<double>(), k = k_in.tolist<double>(), v = v_in.tolist<double>();
  auto W = m.in_proj_weight.tolist<double>();
  std::vector<double> B(3 * E, 0.0);
  if (m.in_proj_bias.defined()) B = m.in_proj_bias.tolist<double>();
  auto Wo = m.out_proj.weight.tolist<double>();
  std::vector<double> Bo(E, 0.0);
  if (m.out_proj.bias.defined()) Bo = m.out_proj.bias.tolist<double>();
  auto project = [&](const std::vector<double>& x, int64_t T, int64_t block) {
    std::vector<double> y(T * N * E);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t o = 0; o < E; ++o) {
          double s = B[block * E + o];
          for (int64_t i = 0; i < E; ++i) s += W[(block * E + o) * E + i] * x[(t * N + n) * E + i];
          y[(t * N + n) * E + o] = s;
        }
    return y;
  };
  auto Q = project(q, L, 0), K = project(k, S, 1), V = project(v, S, 2);
  std::vector<double> w(N * H * L * S), ctx(L * N * E, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> sc(S);
        double mx = -kInf;
        for (int64_t j = 0; j < S; ++j) {
          double s = 0;
          for (int64_t d = 0; d < D; ++d) s += Q[(i * N + n) * E + h * D + d] * K[(j * N + n) * E + h * D + d];
          sc[j] = s / std::sqrt(double(D)) + mask(n, h, i, j);
          mx = std::max(mx, sc[j]);
        }
        double z = 0;
        for (int64_t j = 0; j < S; ++j) z += (sc[j] = std::exp(sc[j] - mx));
        for (int64_t j = 0; j < S; ++j) {
          double p = sc[j] / z;
          w[((n * H + h) * L + i) * S + j] = p;
          for (int64_t d = 0; d < D; ++d) ctx[(i * N + n) * E + h * D + d] += p * V[(j * N + n) * E + h * D + d];
        }
      }
  std::vector<double> out(L * N * E);
  for (int64_t r = 0; r < L * N; ++r)
    for (int64_t o = 0; o < E; ++o) {
      double s = Bo[o];
      for (int64_t i = 0; i < E; ++i) s += Wo[o * E + i] * ctx[r * E + i];
      out[r * E + o] = s;
    }
  return {Ref{Shape{L, N, E}, out}, Ref{Shape{N, H, L, S}, w}};
}

Ref average_heads(const Ref& w) {
  const int64_t N = w.shape[0], H = w.shape[1], L = w.shape[2], S = w.shape[3];
  std::vector<double> a(N * L * S, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t r = 0; r < L * S; ++r) a[n * L * S + r] += w.v[(n * H + h) * L * S + r] / double(H);
  return Ref{Shape{N, L, S}, a};
}

auto no_mask = [](int64_t, int64_t, int64_t, int64_t) { return 0.0; };

struct MHAFixture {
  int64_t L = 3, S = 4, N = 2, E = 6, H = 2;
  nn::MultiheadAttention m{6, 2};
  Tensor q, k, v;
  MHAFixture() {
    manual_seed(3);
    m.to(kFloat64);
    // Non-zero biases so that every term of the formula matters.
    NoGradGuard ng;
    m.in_proj_bias.copy_(randn({3 * E}, {.dtype = kFloat64}));
    m.out_proj.bias.copy_(randn({E}, {.dtype = kFloat64}));
    q = randn({L, N, E}, {.dtype = kFloat64});
    k = randn({S, N, E}, {.dtype = kFloat64});
    v = randn({S, N, E}, {.dtype = kFloat64});
  }
};

}  // namespace

EMBER_DEVICE_TEST(MultiheadAttention, InitAndParameterNames) {
  manual_seed(0);
  nn::MultiheadAttention m(8, 2);
  auto sd = m.state_dict();
  std::vector<std::string> keys;
  for (auto& [k, v] : sd) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(m.in_proj_weight.sizes(), (Shape{24, 8}));
  EXPECT_EQ(m.num_parameters(), 288);  // torch 1.13
  EXPECT_EQ(m.in_proj_bias.abs().max().item<double>(), 0.0);
  EXPECT_EQ(m.out_proj.bias.abs().max().item<double>(), 0.0);
  double bound = std::sqrt(6.0 / (24 + 8));  // xavier_uniform on (3E, E)
  EXPECT_LE(m.in_proj_weight.abs().max().item<double>(), bound + 1e-6);
  EXPECT_GT(m.in_proj_weight.abs().max().item<double>(), 0.5 * bound);
  EXPECT_EQ(m.repr(),
            "MultiheadAttention(\n"
            "  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)\n"
            ")");
  EXPECT_THROW(nn::MultiheadAttention(6, 4), std::exception);
  nn::MultiheadAttention nb(8, 2, 0.0, /*bias=*/false);
  EXPECT_EQ(nb.num_parameters(), 24 * 8 + 64);
}

EMBER_DEVICE_TEST(MultiheadAttention, NoMaskMatchesReference) {
  MHAFixture f;
  auto ref = reference_mha(f.q, f.k, f.v, f.m, no_mask);
  auto [out, w] = f.m.forward(f.q, f.k, f.v);
  EXPECT_TRUE(close_to(out, ref.out));
  EXPECT_TRUE(close_to(w, average_heads(ref.weights)));
  auto [out2, w2] = f.m.forward(f.q, f.k, f.v, std::nullopt, true, std::nullopt, /*average=*/false);
  EXPECT_TRUE(close_to(out2, ref.out));
  EXPECT_TRUE(close_to(w2, ref.weights));
  auto [out3, w3] = f.m.forward(f.q, f.k, f.v, std::nullopt, /*need_weights=*/false);
  EXPECT_TRUE(close_to(out3, ref.out));
  EXPECT_FALSE(w3.defined());
  // float32 module on the same weights agrees within float32 tolerance
  f.m.to(kFloat32);
  auto [o32, w32] = f.m.forward(f.q.to(kFloat32), f.k.to(kFloat32), f.v.to(kFloat32));
  EXPECT_EQ(o32.dtype(), kFloat32);
  EXPECT_TRUE(o32.to(kFloat64).allclose(out, 1e-4, 1e-5));
}

EMBER_DEVICE_TEST(MultiheadAttention, AttnMaskKinds) {
  MHAFixture f;
  const int64_t L = f.L, S = f.S, N = f.N, H = f.H;
  // bool (L, S): true = NOT allowed. Keep at least one allowed key per row.
  Tensor bmask = tensor({{false, true, false, true}, {true, false, false, false}, {false, false, true, true}});
  auto bl = bmask.tolist<bool>();
  auto ref = reference_mha(f.q, f.k, f.v, f.m, [&](int64_t, int64_t, int64_t i, int64_t j) {
    return bl[i * S + j] ? -kInf : 0.0;
  });
  auto [o, w] = f.m.forward(f.q, f.k, f.v, std::nullopt, true, bmask, false);
  EXPECT_TRUE(close_to(o, ref.out));
  EXPECT_TRUE(close_to(w, ref.weights));
  EXPECT_EQ(w.masked_fill(bmask.logical_not(), 0.0).abs().max().item<double>(), 0.0);  // masked -> weight 0

  // float (L, S): added
  Tensor fmask = randn({L, S}, {.dtype = kFloat64});
  auto fl = fmask.tolist<double>();
  ref = reference_mha(f.q, f.k, f.v, f.m, [&](int64_t, int64_t, int64_t i, int64_t j) { return fl[i * S + j]; });
  std::tie(o, w) = f.m.forward(f.q, f.k, f.v, std::nullopt, true, fmask, false);
  EXPECT_TRUE(close_to(o, ref.out));
  EXPECT_TRUE(close_to(w, ref.weights));

  // 3-D (N*H, L, S), bool and float: a different mask for every batch and head
  Tensor f3 = randn({N * H, L, S}, {.dtype = kFloat64});
  Tensor b3 = randn({N * H, L, S}) > 0.3;
  b3.select(2, 0).fill_(false);  // key 0 always allowed
  auto f3l = f3.tolist<double>();
  auto b3l = b3.tolist<bool>();
  ref = reference_mha(f.q, f.k, f.v, f.m, [&](int64_t n, int64_t h, int64_t i, int64_t j) {
    return f3l[((n * H + h) * L + i) * S + j];
  });
  std::tie(o, w) = f.m.forward(f.q, f.k, f.v, std::nullopt, true, f3, false);
  EXPECT_TRUE(close_to(o, ref.out));
  EXPECT_TRUE(close_to(w, ref.weights));
  ref = reference_mha(f.q, f.k, f.v, f.m, [&](int64_t n, int64_t h, int64_t i, int64_t j) {
    return b3l[((n * H + h) * L + i) * S + j] ? -kInf : 0.0;
  });
  std::tie(o, w) = f.m.forward(f.q, f.k, f.v, std::nullopt, true, b3, true);
  EXPECT_TRUE(close_to(o, ref.out));
  EXPECT_TRUE(close_to(w, average_heads(ref.weights)));

  EXPECT_THROW(f.m.forward(f.q, f.k, f.v, std::nullopt, true, tensor({{false, true}})), std::exception);
}

EMBER_DEVICE_TEST(MultiheadAttention, KeyPaddingMaskAndCombined) {
  MHAFixture f;
  const int64_t S = f.S;
  Tensor kpm = tensor({{false, false, true, false}, {false, true, true, true}});  // (N, S) true = ignore
  auto kl = kpm.tolist<bool>();
  auto ref = reference_mha(f.q, f.k, f.v, f.m, [&](int64_t n, int64_t, int64_t, int64_t j) {
    return kl[n * S + j] ? -kInf : 0.0;
  });
  auto [o, w] = f.m.forward(f.q, f.k, f.v, kpm, true, std::nullopt, false);
  EXPECT_TRUE(close_to(o, ref.out));
  EXPECT_TRUE(close_to(w, ref.weights));
  // float key_padding_mask is added
  Tensor fk = randn({f.N, S}, {.dtype = kFloat64});
  auto fkl = fk.tolist<double>();
  ref = reference_mha(f.q, f.k, f.v, f.m, [&](int64_t n, int64_t, int64_t, int64_t j) { return fkl[n * S + j]; });
  std::tie(o, w) = f.m.forward(f.q, f.k, f.v, fk, true, std::nullopt, false);
  EXPECT_TRUE(close_to(o, ref.out));
  EXPECT_TRUE(close_to(w, ref.weights));
  // both: float attn_mask + bool padding
  Tensor am = randn({f.L, S}, {.dtype = kFloat64});
  auto al = am.tolist<double>();
  ref = reference_mha(f.q, f.k, f.v, f.m, [&](int64_t n, int64_t, int64_t i, int64_t j) {
    return al[i * S + j] + (kl[n * S + j] ? -kInf : 0.0);
  });
  std::tie(o, w) = f.m.forward(f.q, f.k, f.v, kpm, true, am, true);
  EXPECT_TRUE(close_to(o, ref.out));
  EXPECT_TRUE(close_to(w, average_heads(ref.weights)));
  EXPECT_THROW(f.m.forward(f.q, f.k, f.v, tensor({{false, true}})), std::exception);
}

EMBER_DEVICE_TEST(MultiheadAttention, IsCausalSelfAttention) {
  MHAFixture f;
  Tensor x = f.q;  // L = S = 3
  auto ref = reference_mha(x, x, x, f.m, [](int64_t, int64_t, int64_t i, int64_t j) { return j > i ? -kInf : 0.0; });
  auto [o, w] = f.m.forward(x, x, x, std::nullopt, true, std::nullopt, false, /*is_causal=*/true);
  EXPECT_TRUE(close_to(o, ref.out));
  EXPECT_TRUE(close_to(w, ref.weights));
  // same as an explicit bool upper-triangular mask
  Tensor causal = ones({3, 3}, {.dtype = kBool}).triu(1);
  auto [o2, w2] = f.m.forward(x, x, x, std::nullopt, true, causal, false);
  EXPECT_TRUE(o.allclose(o2, 1e-12, 1e-12));
}

EMBER_DEVICE_TEST(MultiheadAttention, BatchFirstAndUnbatched) {
  MHAFixture f;
  auto ref = reference_mha(f.q, f.k, f.v, f.m, no_mask);
  auto [o_seq, w_seq] = f.m.forward(f.q, f.k, f.v);
  f.m.batch_first = true;
  auto [o_bf, w_bf] = f.m.forward(f.q.transpose(0, 1), f.k.transpose(0, 1).contiguous(), f.v.transpose(0, 1));
  EXPECT_EQ(o_bf.sizes(), (Shape{f.N, f.L, f.E}));
  EXPECT_TRUE(close_to(o_bf.transpose(0, 1), ref.out));
  EXPECT_TRUE(close_to(w_bf, average_heads(ref.weights)));
  // unbatched (L, E): the batch-1 result without its batch dim, whatever batch_first says
  Tensor q0 = f.q.select(1, 0), k0 = f.k.select(1, 0), v0 = f.v.select(1, 0);
  auto ref0 = reference_mha(q0.unsqueeze(1), k0.unsqueeze(1), v0.unsqueeze(1), f.m, no_mask);
  for (bool bf : {true, false}) {
    f.m.batch_first = bf;
    Tensor kpm0 = tensor({false, true, false, false});
    auto [o0, w0] = f.m.forward(q0, k0, v0);
    EXPECT_EQ(o0.sizes(), (Shape{f.L, f.E}));
    EXPECT_EQ(w0.sizes(), (Shape{f.L, f.S}));
    EXPECT_TRUE(close_to(o0, Ref{Shape{f.L, f.E}, ref0.out.v}));
    EXPECT_TRUE(close_to(w0, Ref{Shape{f.L, f.S}, average_heads(ref0.weights).v}));
    auto [o1, w1] = f.m.forward(q0, k0, v0, kpm0);
    EXPECT_EQ(w1.select(1, 1).abs().max().item<double>(), 0.0);
  }
}

EMBER_DEVICE_TEST(MultiheadAttention, DropoutOnlyInTraining) {
  manual_seed(1);
  nn::MultiheadAttention m(8, 2, /*dropout=*/0.5);
  Tensor x = randn({5, 3, 8});
  m.eval();
  auto [oe, we] = m.forward(x, x, x);
  auto [oe2, we2] = m.forward(x, x, x);
  EXPECT_TRUE(oe.equal(oe2));
  EXPECT_TRUE(we.sum({-1}).allclose(ones({3, 5}), 1e-5, 1e-5));  // rows of softmax sum to 1
  m.train();
  auto [ot, wt] = m.forward(x, x, x, std::nullopt, true, std::nullopt, false);
  EXPECT_FALSE(ot.allclose(oe, 1e-4, 1e-4));
  double zero_frac = (wt == 0.0).to(kFloat64).mean().item<double>();
  EXPECT_GT(zero_frac, 0.3);
  EXPECT_LT(zero_frac, 0.7);
  // survivors are scaled by 1 / (1 - p)
  m.eval();
  Tensor we3 = std::get<1>(m.forward(x, x, x, std::nullopt, true, std::nullopt, false));
  Tensor kept = wt != 0.0;
  EXPECT_TRUE(wt.masked_fill(kept.logical_not(), 0.0).allclose(we3.masked_fill(kept.logical_not(), 0.0) * 2.0, 1e-5, 1e-6));
}

EMBER_DEVICE_TEST(MultiheadAttention, Gradcheck) {
  manual_seed(2);
  nn::MultiheadAttention m(4, 2);
  m.to(kFloat64);
  {
    NoGradGuard ng;
    m.in_proj_bias.copy_(randn({12}, {.dtype = kFloat64}) * 0.5);
    m.out_proj.bias.copy_(randn({4}, {.dtype = kFloat64}) * 0.5);
  }
  ASSERT_TRUE(m.in_proj_weight.requires_grad());
  ASSERT_EQ(m.in_proj_weight.dtype(), kFloat64);
  auto in = [](Shape s) { return randn(s, {.dtype = kFloat64}).requires_grad_(); };
  Tensor q = in({2, 1, 4}), k = in({3, 1, 4}), v = in({3, 1, 4});
  Tensor mask = tensor({{false, true, false}, {false, false, false}});
  Tensor kpm = tensor({{false, false, true}});
  EXPECT_TRUE(gradcheck(
      [&](const variable_list& x) {
        auto [o, w] = m.forward(x[0], x[1], x[2], kpm, true, mask);
        return o.sum({-1}) + w.sum({-1, -2}).unsqueeze(-1) * 0.0 + w.select(2, 0).sum({-1}).unsqueeze(0) * 3.0;
      },
      {q, k, v, m.in_proj_weight, m.in_proj_bias, m.out_proj.weight, m.out_proj.bias}));
  EXPECT_TRUE(gradcheck(
      [&](const variable_list& x) { return std::get<0>(m.forward(x[0], x[0], x[0], std::nullopt, false, std::nullopt, true, true)); },
      {q, m.in_proj_weight}));
}

namespace {

// The encoder layer written out from its submodules' tensors and nn::functional.
Tensor reference_layer(nn::TransformerEncoderLayer& l, const Tensor& src, const std::optional<Tensor>& mask,
                       const std::optional<Tensor>& kpm) {
  auto ln = [&](nn::LayerNorm& n, const Tensor& x) { return F::layer_norm(x, {l.d_model}, n.weight, n.bias, l.layer_norm_eps); };
  auto sa = [&](const Tensor& x) { return std::get<0>(l.self_attn.forward(x, x, x, kpm, false, mask)); };
  auto ff = [&](const Tensor& x) {
    Tensor h = F::linear(x, l.linear1.weight, l.linear1.bias);
    h = l.activation == "gelu" ? F::gelu(h) : F::relu(h);
    return F::linear(h, l.linear2.weight, l.linear2.bias);
  };
  Tensor x = src;
  if (l.norm_first) {
    x = x + sa(ln(l.norm1, x));
    return x + ff(ln(l.norm2, x));
  }
  x = ln(l.norm1, x + sa(x));
  return ln(l.norm2, x + ff(x));
}

}  // namespace

EMBER_DEVICE_TEST(TransformerEncoderLayer, PostNormAndPreNormMatchReference) {
  for (bool norm_first : {false, true})
    for (std::string act : {"relu", "gelu"}) {
      manual_seed(4);
      nn::TransformerEncoderLayer l(8, 2, 16, 0.1, act, 1e-5, false, norm_first);
      l.to(kFloat64);
      {
        NoGradGuard ng;  // non-trivial LayerNorm affine parameters
        l.norm1.weight.copy_(randn({8}, {.dtype = kFloat64}));
        l.norm2.bias.copy_(randn({8}, {.dtype = kFloat64}));
      }
      l.eval();
      Tensor src = randn({5, 3, 8}, {.dtype = kFloat64});
      Tensor mask = ones({5, 5}, {.dtype = kBool}).triu(1);
      Tensor kpm = tensor({{false, false, false, false, true}, {false, false, false, false, false},
                           {false, true, false, true, false}});
      Tensor y = l.forward(src, mask, kpm);
      Tensor r = reference_layer(l, src, mask, kpm);
      EXPECT_TRUE(y.allclose(r, 1e-10, 1e-10)) << "norm_first=" << norm_first << " act=" << act;
      EXPECT_TRUE(l.forward(src).allclose(reference_layer(l, src, std::nullopt, std::nullopt), 1e-10, 1e-10));
      // the two variants really differ
      Tensor other = [&] {
        l.norm_first = !norm_first;
        Tensor o = l.forward(src, mask, kpm);
        l.norm_first = norm_first;
        return o;
      }();
      EXPECT_FALSE(other.allclose(y, 1e-3, 1e-3));
    }
}

EMBER_DEVICE_TEST(TransformerEncoderLayer, BatchFirstAndCausal) {
  manual_seed(5);
  nn::TransformerEncoderLayer l(8, 2, 16, 0.0, "relu", 1e-5, /*batch_first=*/true);
  Tensor src = randn({2, 4, 8});
  Tensor y = l.forward(src, std::nullopt, std::nullopt, /*is_causal=*/true);
  EXPECT_EQ(y.sizes(), (Shape{2, 4, 8}));
  Tensor mask = ones({4, 4}, {.dtype = kBool}).triu(1);
  EXPECT_TRUE(y.allclose(l.forward(src, mask), 1e-5, 1e-6));
  // causality: changing the last position leaves the earlier ones alone
  Tensor src2 = src.clone();
  src2.select(1, 3).fill_(5.0);
  Tensor y2 = l.forward(src2, mask);
  EXPECT_TRUE(y2.narrow(1, 0, 3).allclose(y.narrow(1, 0, 3), 1e-5, 1e-6));
  EXPECT_FALSE(y2.select(1, 3).allclose(y.select(1, 3), 1e-3, 1e-3));
}

EMBER_DEVICE_TEST(TransformerEncoderLayer, TrainVsEval) {
  manual_seed(6);
  nn::TransformerEncoderLayer l(8, 2, 32);  // dropout 0.1
  Tensor src = randn({6, 4, 8});
  l.eval();
  Tensor e1 = l(src), e2 = l(src);
  EXPECT_TRUE(e1.equal(e2));
  l.train();
  Tensor t1 = l(src), t2 = l(src);
  EXPECT_FALSE(t1.allclose(e1, 1e-4, 1e-4));
  EXPECT_FALSE(t1.allclose(t2, 1e-4, 1e-4));
  nn::TransformerEncoderLayer l0(8, 2, 32, /*dropout=*/0.0);
  l0.load_state_dict(l.state_dict());
  EXPECT_TRUE(l0(src).allclose(e1, 1e-6, 1e-6));  // no dropout: training mode equals eval
  EXPECT_TRUE(l.self_attn.is_training());
  l.eval();
  EXPECT_FALSE(l.dropout1.is_training());
  EXPECT_THROW(nn::TransformerEncoderLayer(8, 2, 16, 0.1, "tanh"), std::exception);
}

EMBER_DEVICE_TEST(TransformerEncoderLayer, StateDictMatchesPyTorch) {
  nn::TransformerEncoderLayer l(8, 2);
  std::vector<std::string> keys;
  for (auto& [k, v] : l.state_dict()) keys.push_back(k);
  // list(torch.nn.TransformerEncoderLayer(8, 2).state_dict().keys()), torch 1.13
  EXPECT_EQ(keys, (std::vector<std::string>{"self_attn.in_proj_weight", "self_attn.in_proj_bias",
                                            "self_attn.out_proj.weight", "self_attn.out_proj.bias", "linear1.weight",
                                            "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight",
                                            "norm1.bias", "norm2.weight", "norm2.bias"}));
  std::vector<std::string> children;
  for (auto& [n, m] : l.named_children()) children.push_back(n);
  EXPECT_EQ(children, (std::vector<std::string>{"self_attn", "linear1", "dropout", "linear2", "norm1", "norm2",
                                                "dropout1", "dropout2"}));
  EXPECT_EQ(nn::TransformerEncoderLayer(512, 8).num_parameters(), 3152384);  // torch 1.13
}

EMBER_DEVICE_TEST(TransformerEncoder, StackKeysCountsAndForward) {
  manual_seed(7);
  nn::TransformerEncoderLayer proto(8, 2, 16);
  nn::TransformerEncoder enc(proto, 2, nn::make<nn::LayerNorm>(8));
  auto sd = enc.state_dict();
  ASSERT_EQ(sd.size(), 26u);
  EXPECT_EQ(sd[0].first, "layers.0.self_attn.in_proj_weight");
  EXPECT_EQ(sd[12].first, "layers.1.self_attn.in_proj_weight");
  EXPECT_EQ(sd[23].first, "layers.1.norm2.bias");
  EXPECT_EQ(sd[24].first, "norm.weight");
  EXPECT_EQ(sd[25].first, "norm.bias");
  EXPECT_EQ(enc.num_parameters(), 1216);  // torch 1.13
  // deepcopy semantics: every layer starts as a copy of the prototype, with its own tensors
  EXPECT_TRUE(enc.layer(0).linear1.weight.equal(proto.linear1.weight));
  EXPECT_TRUE(enc.layer(1).linear1.weight.equal(proto.linear1.weight));
  EXPECT_FALSE(enc.layer(1).linear1.weight.is_alias_of(enc.layer(0).linear1.weight));
  // factory: independent layers
  nn::TransformerEncoder enc2([] { return std::make_shared<nn::TransformerEncoderLayer>(8, 2, 16); }, 3);
  EXPECT_EQ(enc2.state_dict().size(), 36u);
  EXPECT_FALSE(enc2.layer(0).linear1.weight.equal(enc2.layer(1).linear1.weight));

  enc.eval();
  Tensor src = randn({4, 2, 8});
  Tensor mask = ones({4, 4}, {.dtype = kBool}).triu(1);
  Tensor kpm = tensor({{false, false, true, false}, {false, false, false, false}});
  Tensor x = src;
  for (int i = 0; i < 2; ++i) x = enc.layer(i).forward(x, mask, kpm);
  x = (*enc.norm)(x);
  EXPECT_TRUE(enc.forward(src, mask, kpm).allclose(x, 1e-6, 1e-6));
  // backward reaches every parameter
  enc.train();
  enc.forward(src, mask, kpm).pow(2).sum().backward();
  for (auto& [n, p] : enc.named_parameters()) EXPECT_TRUE(p.grad().defined()) << n;
}

// ------------------------------------------------------------------ the seeds' models

namespace {

// The seeds' MultiHeadSelfAttention (separate bias-free projections, attention_mask == 0 masked).
struct MultiHeadSelfAttention : nn::Module {
  MultiHeadSelfAttention(int64_t hidden_dim, int64_t num_heads)
      : num_heads(num_heads), head_dim(hidden_dim / num_heads) {
    EMBER_CHECK(hidden_dim % num_heads == 0, "hidden_dim must be divisible by num_heads");
    register_module("q_proj", nn::make<nn::Linear>(hidden_dim, hidden_dim, false));
    register_module("k_proj", nn::make<nn::Linear>(hidden_dim, hidden_dim, false));
    register_module("v_proj", nn::make<nn::Linear>(hidden_dim, hidden_dim, false));
    register_module("o_proj", nn::make<nn::Linear>(hidden_dim, hidden_dim, false));
  }
  Module& sub(const std::string& n) { return *get_submodule(n); }
  Tensor forward(const Tensor& x, const std::optional<Tensor>& attention_mask) {
    int64_t B = x.size(0), T = x.size(1);
    auto heads = [&](const std::string& n) { return sub(n)(x).view({B, T, num_heads, head_dim}).transpose(1, 2); };
    Tensor q = heads("q_proj"), k = heads("k_proj"), v = heads("v_proj");
    Tensor w = q.matmul(k.transpose(-2, -1)) / std::sqrt(double(head_dim));
    if (attention_mask) w = w.masked_fill(*attention_mask == 0, -kInf);
    w = F::softmax(w, -1);
    Tensor o = w.matmul(v).transpose(1, 2).contiguous().view({B, T, -1});
    return sub("o_proj")(o);
  }
  Tensor forward(const Tensor& x) override { return forward(x, std::nullopt); }
  int64_t num_heads, head_dim;
};

// LoRA: a frozen Linear plus a trainable low-rank update.
struct LoRALinear : nn::Module {
  LoRALinear(std::shared_ptr<nn::Linear> orig, int64_t r = 8, double alpha = 16) : original(std::move(orig)) {
    register_module("original", original);
    original->weight.requires_grad_(false);
    if (original->bias.defined()) original->bias.requires_grad_(false);
    lora_A = register_parameter("lora_A", randn({original->in_features, r}) * 0.01);
    lora_B = register_parameter("lora_B", zeros({r, original->out_features}));
    scaling = alpha / double(r);
  }
  Tensor forward(const Tensor& x) override { return (*original)(x) + x.matmul(lora_A).matmul(lora_B) * scaling; }
  std::shared_ptr<nn::Linear> original;
  Tensor lora_A, lora_B;
  double scaling;
};

// The seeds' pre-LN GPT-2 block, on nn::MultiheadAttention (batch_first).
struct GPT2Block : nn::Module {
  GPT2Block(int64_t hidden, int64_t heads, int64_t ffn_dim, double dropout = 0.1)
      : ln1(hidden), attn(hidden, heads, dropout, true, true), ln2(hidden),
        ffn(nn::make<nn::Linear>(hidden, ffn_dim), nn::make<nn::GELU>(), nn::make<nn::Dropout>(dropout),
            nn::make<nn::Linear>(ffn_dim, hidden), nn::make<nn::Dropout>(dropout)) {
    register_module("ln1", &ln1);
    register_module("attn", &attn);
    register_module("ln2", &ln2);
    register_module("ffn", &ffn);
  }
  Tensor forward(const Tensor& input, const std::optional<Tensor>& attention_mask) {
    Tensor x = ln1(input);
    x = input + std::get<0>(attn.forward(x, x, x, std::nullopt, false, attention_mask));
    return x + ffn(ln2(x));
  }
  Tensor forward(const Tensor& x) override { return forward(x, std::nullopt); }
  nn::LayerNorm ln1;
  nn::MultiheadAttention attn;
  nn::LayerNorm ln2;
  nn::Sequential ffn;
};

struct GPT2Model : nn::Module {
  GPT2Model(int64_t vocab, int64_t hidden, int64_t layers, int64_t heads, int64_t ffn_dim, int64_t max_seq)
      : token_embedding(vocab, hidden), position_embedding(max_seq, hidden), ln_f(hidden),
        lm_head(hidden, vocab, false) {
    register_module("token_embedding", &token_embedding);
    register_module("position_embedding", &position_embedding);
    for (int64_t i = 0; i < layers; ++i) blocks.push_back(nn::make<GPT2Block>(hidden, heads, ffn_dim));
    register_module("blocks", &blocks);
    register_module("ln_f", &ln_f);
    register_module("lm_head", &lm_head);
    lm_head.weight = token_embedding.weight;  // weight tying
    causal_mask = ones({max_seq, max_seq}).triu(1).to(kBool);
    register_buffer("causal_mask", &causal_mask);
  }
  Tensor forward(const Tensor& ids) override {
    int64_t T = ids.size(1);
    Tensor x = token_embedding(ids) + position_embedding(arange(T, {.dtype = kInt64}));
    Tensor mask = causal_mask.narrow(0, 0, T).narrow(1, 0, T);
    for (size_t i = 0; i < blocks.size(); ++i) x = blocks.at<GPT2Block>(int64_t(i)).forward(x, mask);
    return lm_head(ln_f(x));
  }
  nn::Embedding token_embedding, position_embedding;
  nn::ModuleList blocks;
  nn::LayerNorm ln_f;
  nn::Linear lm_head;
  Tensor causal_mask;
};

}  // namespace

EMBER_DEVICE_TEST(SeedModels, MultiHeadSelfAttentionEqualsMultiheadAttention) {
  manual_seed(8);
  MultiHeadSelfAttention seed(8, 2);
  nn::MultiheadAttention mha(8, 2, 0.0, /*bias=*/false, /*batch_first=*/true);
  EXPECT_EQ(seed.num_parameters(), mha.num_parameters());
  {
    NoGradGuard ng;
    mha.in_proj_weight.copy_(cat({seed.get_parameter("q_proj.weight"), seed.get_parameter("k_proj.weight"),
                                  seed.get_parameter("v_proj.weight")}, 0));
    mha.out_proj.weight.copy_(seed.get_parameter("o_proj.weight"));
  }
  Tensor x = randn({2, 5, 8});
  Tensor am = ones({5, 5}).tril();  // seed convention: 0 = masked
  Tensor y = seed.forward(x, am);
  auto [z, w] = mha.forward(x, x, x, std::nullopt, true, am == 0.0);  // PyTorch convention: true = masked
  EXPECT_TRUE(y.allclose(z, 1e-5, 1e-5));
  EXPECT_TRUE(seed(x).allclose(std::get<0>(mha.forward(x, x, x)), 1e-5, 1e-5));
  seed.forward(x, am).sum().backward();
  EXPECT_TRUE(seed.get_parameter("q_proj.weight").grad().defined());
}

EMBER_DEVICE_TEST(SeedModels, GPT2TiedEmbeddingTrainsAndRoundTrips) {
  manual_seed(9);
  GPT2Model m(11, 8, 2, 2, 16, 6);
  EXPECT_TRUE(m.lm_head.weight.is_same(m.token_embedding.weight));
  EXPECT_EQ(m.num_parameters(), 1352);  // torch 1.13: the tied matrix counted once
  std::vector<std::string> keys;
  for (auto& [k, v] : m.state_dict()) keys.push_back(k);
  ASSERT_EQ(keys.size(), 30u);
  EXPECT_EQ(keys[0], "causal_mask");
  EXPECT_EQ(keys[5], "blocks.0.attn.in_proj_weight");
  EXPECT_EQ(keys[11], "blocks.0.ffn.0.weight");
  EXPECT_EQ(keys[13], "blocks.0.ffn.3.weight");
  EXPECT_EQ(keys[29], "lm_head.weight");

  Tensor ids = randint(0, 11, {2, 6});
  Tensor logits = m(ids);
  EXPECT_EQ(logits.sizes(), (Shape{2, 6, 11}));
  Tensor targets = randint(0, 11, {2, 6});
  Tensor loss = F::cross_entropy(logits.reshape({-1, 11}), targets.reshape({-1}));
  loss.backward();
  for (auto& [n, p] : m.named_parameters()) EXPECT_TRUE(p.grad().defined()) << n;

  m.eval();
  // causality: the logits at t < 5 do not depend on token 5
  Tensor ids2 = ids.clone();
  auto last = ids.select(1, 5).tolist<int64_t>();
  ids2.select(1, 5).copy_(tensor({(last[0] + 1) % 11, (last[1] + 1) % 11}, {.dtype = kInt64}));
  Tensor a = m(ids), b = m(ids2);
  EXPECT_TRUE(a.narrow(1, 0, 5).allclose(b.narrow(1, 0, 5), 1e-5, 1e-6));
  EXPECT_FALSE(a.narrow(1, 5, 1).allclose(b.narrow(1, 5, 1), 1e-4, 1e-4));

  GPT2Model copy(11, 8, 2, 2, 16, 6);
  auto res = copy.load_state_dict(m.state_dict());
  EXPECT_TRUE(res.missing_keys.empty());
  EXPECT_TRUE(res.unexpected_keys.empty());
  copy.eval();
  EXPECT_TRUE(copy.lm_head.weight.is_same(copy.token_embedding.weight));
  EXPECT_TRUE(copy(ids).equal(a));
}

EMBER_DEVICE_TEST(SeedModels, LoRAOnlyTrainsTheAdapter) {
  manual_seed(10);
  MultiHeadSelfAttention attn(8, 2);
  Tensor x = randn({2, 4, 8});
  Tensor before = attn(x);
  // replace q_proj with a LoRA wrapper around the same (frozen) Linear, as the seed does
  auto orig = std::make_shared<nn::Linear>(8, 8, false);
  orig->load_state_dict(attn.get_submodule("q_proj")->state_dict());
  attn.requires_grad_(false);
  attn.register_module("q_proj", std::make_shared<LoRALinear>(orig, 2, 4));
  EXPECT_EQ(attn.num_parameters(), 4 * 64 + 8 * 2 + 2 * 8);
  EXPECT_EQ(attn.num_parameters(/*only_trainable=*/true), 8 * 2 + 2 * 8);
  EXPECT_TRUE(attn(x).allclose(before, 1e-6, 1e-6));  // lora_B starts at zero
  std::vector<std::string> keys;
  for (auto& [k, v] : attn.state_dict()) keys.push_back(k);
  // torch order: a module's own parameters before its children's
  EXPECT_EQ(keys, (std::vector<std::string>{"q_proj.lora_A", "q_proj.lora_B", "q_proj.original.weight",
                                            "k_proj.weight", "v_proj.weight", "o_proj.weight"}));
  attn(x).pow(2).sum().backward();
  auto& lora = dynamic_cast<LoRALinear&>(*attn.get_submodule("q_proj"));
  EXPECT_TRUE(lora.lora_B.grad().defined());
  EXPECT_GT(lora.lora_B.grad().abs().max().item<double>(), 0.0);
  EXPECT_FALSE(lora.original->weight.grad().defined());
  EXPECT_FALSE(attn.get_parameter("k_proj.weight").grad().defined());
  {
    NoGradGuard ng;
    lora.lora_B.sub_(lora.lora_B.grad() * 10.0);
  }
  Tensor after = attn(x);
  EXPECT_GT((after - before).abs().max().item<double>(), 1e-7);
  MultiHeadSelfAttention copy(8, 2);
  copy.register_module("q_proj", std::make_shared<LoRALinear>(std::make_shared<nn::Linear>(8, 8, false), 2, 4));
  copy.load_state_dict(attn.state_dict());
  EXPECT_TRUE(copy(x).equal(after));
}

// ------------------------------------------------------------------ against torch 1.13 itself

namespace {
// Every tensor of the state_dict, in order i, set to 0.5 * sin(0.37 * arange(numel) + i): the
// same deterministic weights the torch script below the test gave its module.
void fill_deterministic(nn::Module& m) {
  NoGradGuard ng;
  int i = 0;
  for (auto& [n, p] : m.state_dict()) {
    Tensor t = p;
    t.copy_(((arange(p.numel(), {.dtype = kFloat64}) * 0.37 + double(i++)).sin() * 0.5).reshape(p.sizes()));
  }
}
Ref flat_ref(Shape s, std::vector<double> v) { return Ref{std::move(s), std::move(v)}; }
}  // namespace

// Values printed by /usr/bin/python3 with torch 1.13 for the same weights and inputs:
//   m = torch.nn.MultiheadAttention(4, 2).double(); fill(m); o, w = m(q, k, v, key_padding_mask=kpm, attn_mask=am)
//   l = torch.nn.TransformerEncoderLayer(4, 2, 6, activation="gelu", norm_first=True).double(); fill(l); l.eval()
//   l2 = torch.nn.TransformerEncoderLayer(4, 2, 6).double(); fill(l2); l2.eval()
EMBER_DEVICE_TEST(AgainstPyTorch, MultiheadAttentionAndEncoderLayerValues) {
  nn::MultiheadAttention m(4, 2);
  m.to(kFloat64);
  fill_deterministic(m);
  Tensor q = (arange(8, {.dtype = kFloat64}) * 0.3).cos().reshape({2, 1, 4});
  Tensor k = (arange(12, {.dtype = kFloat64}) * 0.7 + 1.0).sin().reshape({3, 1, 4});
  Tensor v = (arange(12, {.dtype = kFloat64}) * 0.11 - 2.0).cos().reshape({3, 1, 4});
  Tensor am = tensor({{false, true, false}, {false, false, false}});
  Tensor kpm = tensor({{false, false, true}});
  auto [o, w] = m.forward(q, k, v, kpm, true, am);
  EXPECT_TRUE(close_to(o, flat_ref(Shape{2, 1, 4}, {-0.4782558453539088, 0.5815832772034737, 0.3931488688953305,
                                                    -0.9844160155436883, -0.3897376682916434, 0.6730960518651926,
                                                    0.32122591570869374, -1.088971532208813})));
  EXPECT_TRUE(close_to(w, flat_ref(Shape{1, 2, 3}, {1.0, 0.0, 0.0, 0.518993623803327, 0.4810063761966729, 0.0})));

  Tensor x = (arange(12, {.dtype = kFloat64}) * 0.3).cos().reshape({3, 1, 4});
  nn::TransformerEncoderLayer l(4, 2, 6, 0.1, "gelu", 1e-5, false, /*norm_first=*/true);
  l.to(kFloat64);
  fill_deterministic(l);
  l.eval();
  EXPECT_TRUE(close_to(l.forward(x, ones({3, 3}, {.dtype = kBool}).triu(1)),
                       flat_ref(Shape{3, 1, 4},
                                {1.3426750197397275, 1.5412224940742567, 1.5098121487072649, 0.7327783835189882,
                                 0.6828410515459589, 0.6439656513420036, 0.48600973215386967, -0.40585396101919535,
                                 -0.41070369186085265, -0.32696385701819114, -0.29272297962969984,
                                 -0.8608218014851226})));
  nn::TransformerEncoderLayer l2(4, 2, 6);
  l2.to(kFloat64);
  fill_deterministic(l2);
  l2.eval();
  EXPECT_TRUE(close_to(l2(x), flat_ref(Shape{3, 1, 4},
                                       {-0.787165180076077, -0.8466592770609674, 0.0861668089310774,
                                        0.3052922450509339, -0.8077889243540235, -0.7997327754807046,
                                        -0.015291746763873394, 0.38962256121348554, -0.3293000027463026,
                                        -0.9683857831075889, -0.6879861142836138, 0.4132566497235869})));
}

// ------------------------------------------------------------------ F::multi_head_attention_forward

EMBER_DEVICE_TEST(MultiHeadAttentionForward, SeparateWeightsEqualThePackedOnes) {
  MHAFixture f;
  Tensor mask = tensor({{false, true, false, false}, {false, false, false, false}, {true, false, false, false}});
  auto [want, want_w] = f.m.forward(f.q, f.k, f.v, std::nullopt, true, mask, false);
  auto w = f.m.in_proj_weight.chunk(3, 0);
  auto [out, weights] = F::multi_head_attention_forward(
      f.q, f.k, f.v, f.E, f.H, std::nullopt, f.m.in_proj_bias, std::nullopt, std::nullopt, false, 0.0,
      f.m.out_proj.weight, f.m.out_proj.bias, false, std::nullopt, true, mask, /*use_separate_proj_weight=*/true, w[0],
      w[1], w[2], std::nullopt, std::nullopt, /*average_attn_weights=*/false);
  EXPECT_TRUE(out.allclose(want, 1e-12, 1e-12));
  EXPECT_TRUE(weights.allclose(want_w, 1e-12, 1e-12));
  EXPECT_THROW_MSG(F::multi_head_attention_forward(f.q, f.k, f.v, f.E, f.H, std::nullopt, std::nullopt, std::nullopt,
                                                   std::nullopt, false, 0.0, f.m.out_proj.weight, std::nullopt),
                   Error, "use_separate_proj_weight is False but in_proj_weight is None");
  EXPECT_THROW_MSG(F::multi_head_attention_forward(f.q, f.k, f.v, f.E, 4, f.m.in_proj_weight, std::nullopt,
                                                   std::nullopt, std::nullopt, false, 0.0, f.m.out_proj.weight,
                                                   std::nullopt),
                   ValueError, "embed_dim 6 not divisible by num_heads 4");
}

// Values printed by torch 1.13 (F.multi_head_attention_forward) for the same inputs: E = 4, two
// heads, kdim 3, vdim 2 (separate projection weights), bias_k/bias_v, add_zero_attn, a bool
// attn_mask and key_padding_mask; weight tensor i is 0.5 * sin(0.37 * arange(numel) + i).
EMBER_DEVICE_TEST(MultiHeadAttentionForward, ExtrasAgainstPyTorch) {
  const int64_t E = 4, L = 2, S = 3, N = 1;
  auto det = [](Shape s, int i) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return ((arange(n, {.dtype = kFloat64}) * 0.37 + double(i)).sin() * 0.5).reshape(s);
  };
  Tensor q = (arange(L * N * E, {.dtype = kFloat64}) * 0.3).cos().reshape({L, N, E});
  Tensor k = (arange(S * N * 3, {.dtype = kFloat64}) * 0.7 + 1.0).sin().reshape({S, N, 3});
  Tensor v = (arange(S * N * 2, {.dtype = kFloat64}) * 0.11 - 2.0).cos().reshape({S, N, 2});
  Tensor am = tensor({{false, true, false}, {false, false, false}});
  Tensor kpm = tensor({{false, false, true}});
  auto [o, w] = F::multi_head_attention_forward(
      q, k, v, E, 2, std::nullopt, det({3 * E}, 3), det({1, 1, E}, 6), det({1, 1, E}, 7), /*add_zero_attn=*/true,
      0.0, det({E, E}, 4), det({E}, 5), false, kpm, true, am, /*use_separate_proj_weight=*/true, det({E, E}, 0),
      det({E, 3}, 1), det({E, 2}, 2), std::nullopt, std::nullopt, /*average_attn_weights=*/false);
  EXPECT_TRUE(close_to(o, flat_ref(Shape{2, 1, 4}, {-0.933607784063426, -0.2756408148028776, 0.21748980696979803,
                                                    -0.11994163532991764, -0.831054127887145, -0.3185251799345609,
                                                    0.10715936069229631, -0.09706495178194086})));
  EXPECT_TRUE(close_to(w, flat_ref(Shape{1, 2, 2, 5},
                                   {0.49162151076644883, 0.0, 0.0, 0.24934945446018522, 0.259029034773366,
                                    0.20929727915914859, 0.3099546380400584, 0.0, 0.24253043796685303,
                                    0.23821764483394006, 0.8963184549451053, 0.0, 0.0, 0.036201033847425144,
                                    0.0674805112074696, 0.3405658480676558, 0.21093881069474466, 0.0,
                                    0.21412408307801753, 0.23437125815958204})));
}
