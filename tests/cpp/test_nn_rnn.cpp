// nn::RNN / LSTM / GRU: outputs against an independent float64 per-step reference written here
// (explicit gate equations on the module's own parameters), gradcheck, PyTorch's parameter names,
// counts and init, dropout, errors, and a tiny LSTM whose weights and outputs come from torch 1.13.
#include <cmath>
#include <map>

#include "ember/nn.h"
#include "gradcheck.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {

enum class Kind { Tanh, Relu, Lstm, Gru };

struct RefResult {
  std::vector<double> out;  // (L, N, D*H)
  std::vector<double> h, c;  // (D*layers, N, H)
};

double sigm(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// x: (L, N, in); h0/c0: (D*layers, N, H) or undefined (zeros).
RefResult reference(Kind kind, nn::Module& m, int64_t layers, bool bidir, int64_t H, const Tensor& x, const Tensor& h0 = {},
              const Tensor& c0 = {}) {
  const int64_t L = x.size(0), N = x.size(1), D = bidir ? 2 : 1;
  const int64_t G = kind == Kind::Lstm ? 4 * H : kind == Kind::Gru ? 3 * H : H;
  std::vector<double> in = x.to(kFloat64).contiguous().tolist<double>();
  int64_t in_size = x.size(2);
  std::vector<double> hinit = h0.defined() ? h0.to(kFloat64).contiguous().tolist<double>()
                                           : std::vector<double>(size_t(D * layers * N * H), 0.0);
  std::vector<double> cinit = c0.defined() ? c0.to(kFloat64).contiguous().tolist<double>()
                                           : std::vector<double>(size_t(D * layers * N * H), 0.0);
  std::map<std::string, std::vector<double>> P;
  for (auto& [name, p] : m.named_parameters()) P[name] = p.detach().to(kFloat64).contiguous().tolist<double>();
  RefResult r;
  r.h.assign(size_t(D * layers * N * H), 0.0);
  r.c.assign(size_t(D * layers * N * H), 0.0);
  for (int64_t l = 0; l < layers; ++l) {
    std::vector<double> out(size_t(L * N * D * H), 0.0);
    for (int64_t d = 0; d < D; ++d) {
      std::string sfx = "_l" + std::to_string(l) + (d ? "_reverse" : "");
      const auto& wih = P.at("weight_ih" + sfx);
      const auto& whh = P.at("weight_hh" + sfx);
      std::vector<double> bih(size_t(G), 0.0), bhh(size_t(G), 0.0);
      if (P.count("bias_ih" + sfx)) bih = P.at("bias_ih" + sfx), bhh = P.at("bias_hh" + sfx);
      const int64_t sidx = l * D + d;
      for (int64_t n = 0; n < N; ++n) {
        std::vector<double> h(static_cast<size_t>(H)), c(static_cast<size_t>(H));
        for (int64_t j = 0; j < H; ++j) h[j] = hinit[(sidx * N + n) * H + j], c[j] = cinit[(sidx * N + n) * H + j];
        for (int64_t s = 0; s < L; ++s) {
          int64_t t = d ? L - 1 - s : s;
          std::vector<double> gi(static_cast<size_t>(G)), gh(static_cast<size_t>(G));
          for (int64_t g = 0; g < G; ++g) {
            double a = bih[g], b = bhh[g];
            for (int64_t k = 0; k < in_size; ++k) a += wih[g * in_size + k] * in[(t * N + n) * in_size + k];
            for (int64_t k = 0; k < H; ++k) b += whh[g * H + k] * h[k];
            gi[g] = a, gh[g] = b;
          }
          std::vector<double> hn(static_cast<size_t>(H));
          for (int64_t j = 0; j < H; ++j) {
            switch (kind) {
              case Kind::Tanh: hn[j] = std::tanh(gi[j] + gh[j]); break;
              case Kind::Relu: hn[j] = std::max(0.0, gi[j] + gh[j]); break;
              case Kind::Lstm: {
                double i = sigm(gi[j] + gh[j]), f = sigm(gi[H + j] + gh[H + j]);
                double gg = std::tanh(gi[2 * H + j] + gh[2 * H + j]), o = sigm(gi[3 * H + j] + gh[3 * H + j]);
                c[j] = f * c[j] + i * gg;
                hn[j] = o * std::tanh(c[j]);
                break;
              }
              case Kind::Gru: {
                double rr = sigm(gi[j] + gh[j]), z = sigm(gi[H + j] + gh[H + j]);
                double nn_ = std::tanh(gi[2 * H + j] + rr * gh[2 * H + j]);
                hn[j] = (1 - z) * nn_ + z * h[j];
                break;
              }
            }
          }
          h = hn;
          for (int64_t j = 0; j < H; ++j) out[(t * N + n) * D * H + d * H + j] = h[j];
        }
        for (int64_t j = 0; j < H; ++j) r.h[(sidx * N + n) * H + j] = h[j], r.c[(sidx * N + n) * H + j] = c[j];
      }
    }
    in = out;
    in_size = D * H;
  }
  r.out = in;
  return r;
}

::testing::AssertionResult close(const Tensor& got, const std::vector<double>& want, double tol = 1e-5) {
  auto g = got.to(kFloat64).contiguous().tolist<double>();
  if (g.size() != want.size())
    return ::testing::AssertionFailure() << "size " << g.size() << " vs " << want.size();
  for (size_t i = 0; i < g.size(); ++i)
    if (std::abs(g[i] - want[i]) > tol + tol * std::abs(want[i]))
      return ::testing::AssertionFailure() << "element " << i << ": " << g[i] << " vs " << want[i];
  return ::testing::AssertionSuccess();
}

std::vector<std::string> keys(const nn::Module& m) {
  std::vector<std::string> k;
  for (auto& [name, v] : m.state_dict()) k.push_back(name);
  return k;
}

}  // namespace

EMBER_DEVICE_TEST(RNN, TanhTwoLayersBidirectionalWithH0MatchesReference) {
  nn::RNN rnn({.input_size = 3, .hidden_size = 4, .num_layers = 2, .bidirectional = true});
  Tensor x = randn({5, 2, 3}), h0 = randn({4, 2, 4});
  auto [out, h_n] = rnn(x, h0);
  EXPECT_EQ(out.sizes(), (Shape{5, 2, 8}));
  EXPECT_EQ(h_n.sizes(), (Shape{4, 2, 4}));
  RefResult r = reference(Kind::Tanh, rnn, 2, true, 4, x, h0);
  EXPECT_TRUE(close(out, r.out));
  EXPECT_TRUE(close(h_n, r.h));
  // The one-tensor Module forward returns the output only (usable in containers).
  EXPECT_TRUE(close(static_cast<nn::Module&>(rnn)(x), reference(Kind::Tanh, rnn, 2, true, 4, x).out));
}

EMBER_DEVICE_TEST(RNN, ReluWithoutBiasMatchesReference) {
  nn::RNN rnn({.input_size = 3, .hidden_size = 5, .nonlinearity = "relu", .bias = false});
  EXPECT_EQ(rnn.parameters().size(), 2u);
  Tensor x = randn({4, 3, 3});
  auto [out, h_n] = rnn(x);
  RefResult r = reference(Kind::Relu, rnn, 1, false, 5, x);
  EXPECT_TRUE(close(out, r.out));
  EXPECT_TRUE(close(h_n, r.h));
  EXPECT_GE(out.min().item<double>(), 0.0);
}

EMBER_DEVICE_TEST(LSTM, TwoLayersBidirectionalMatchesReference) {
  nn::LSTM lstm({.input_size = 3, .hidden_size = 4, .num_layers = 2, .bidirectional = true});
  Tensor x = randn({6, 2, 3}), h0 = randn({4, 2, 4}), c0 = randn({4, 2, 4});
  auto [out, h_n, c_n] = lstm(x, h0, c0);
  EXPECT_EQ(out.sizes(), (Shape{6, 2, 8}));
  EXPECT_EQ(c_n.sizes(), (Shape{4, 2, 4}));
  RefResult r = reference(Kind::Lstm, lstm, 2, true, 4, x, h0, c0);
  EXPECT_TRUE(close(out, r.out));
  EXPECT_TRUE(close(h_n, r.h));
  EXPECT_TRUE(close(c_n, r.c));
  auto z = lstm(x);  // zero initial state
  RefResult rz = reference(Kind::Lstm, lstm, 2, true, 4, x);
  EXPECT_TRUE(close(z.output, rz.out));
  EXPECT_TRUE(close(z.c_n, rz.c));
  EXPECT_FALSE(close(z.output, r.out));  // the given state mattered
}

EMBER_DEVICE_TEST(GRU, TwoLayersBidirectionalMatchesReference) {
  nn::GRU gru({.input_size = 2, .hidden_size = 3, .num_layers = 2, .bidirectional = true});
  Tensor x = randn({4, 3, 2}), h0 = randn({4, 3, 3});
  auto [out, h_n] = gru(x, h0);
  RefResult r = reference(Kind::Gru, gru, 2, true, 3, x, h0);
  EXPECT_TRUE(close(out, r.out));
  EXPECT_TRUE(close(h_n, r.h));
  auto z = gru(x);
  EXPECT_TRUE(close(z.output, reference(Kind::Gru, gru, 2, true, 3, x).out));
}

EMBER_DEVICE_TEST(RNNBase, BatchFirstBothWays) {
  nn::LSTM a({.input_size = 3, .hidden_size = 4, .num_layers = 2});
  nn::LSTM b({.input_size = 3, .hidden_size = 4, .num_layers = 2, .batch_first = true});
  b.load_state_dict(a.state_dict());
  Tensor x = randn({5, 2, 3}), h0 = randn({2, 2, 4}), c0 = randn({2, 2, 4});
  Tensor xb = x.transpose(0, 1).contiguous();  // (N, L, H_in)
  auto ra = a(x, h0, c0);
  auto rb = b(xb, h0, c0);
  EXPECT_EQ(rb.output.sizes(), (Shape{2, 5, 4}));
  EXPECT_EQ(rb.h_n.sizes(), (Shape{2, 2, 4}));  // state stays (layers, N, H)
  RefResult r = reference(Kind::Lstm, a, 2, false, 4, x, h0, c0);
  EXPECT_TRUE(close(ra.output, r.out));
  EXPECT_TRUE(close(rb.output.transpose(0, 1), r.out));
  EXPECT_TRUE(close(rb.h_n, r.h));
  EXPECT_TRUE(close(rb.c_n, r.c));

  nn::GRU g({.input_size = 3, .hidden_size = 2, .batch_first = true, .bidirectional = true});
  auto rg = g(xb);
  EXPECT_TRUE(close(rg.output.transpose(0, 1), reference(Kind::Gru, g, 1, true, 2, x).out));
}

EMBER_DEVICE_TEST(RNNBase, UnbatchedInput) {
  nn::GRU gru({.input_size = 3, .hidden_size = 4, .bidirectional = true});
  Tensor x = randn({5, 3}), h0 = randn({2, 4});
  auto [out, h_n] = gru(x, h0);
  EXPECT_EQ(out.sizes(), (Shape{5, 8}));
  EXPECT_EQ(h_n.sizes(), (Shape{2, 4}));
  RefResult r = reference(Kind::Gru, gru, 1, true, 4, x.unsqueeze(1), h0.unsqueeze(1));
  EXPECT_TRUE(close(out, r.out));
  EXPECT_TRUE(close(h_n, r.h));

  nn::LSTM lstm({.input_size = 3, .hidden_size = 2, .num_layers = 2, .batch_first = true});
  Tensor c0 = randn({2, 2}), hl = randn({2, 2});
  auto rl = lstm(x, hl, c0);  // unbatched with batch_first: still (L, H_in)
  EXPECT_EQ(rl.output.sizes(), (Shape{5, 2}));
  EXPECT_EQ(rl.c_n.sizes(), (Shape{2, 2}));
  RefResult rr = reference(Kind::Lstm, lstm, 2, false, 2, x.unsqueeze(1), hl.unsqueeze(1), c0.unsqueeze(1));
  EXPECT_TRUE(close(rl.output, rr.out));
  EXPECT_TRUE(close(rl.c_n, rr.c));

  nn::RNN rnn(3, 2);
  auto ru = rnn(x);
  EXPECT_TRUE(close(ru.output, reference(Kind::Tanh, rnn, 1, false, 2, x.unsqueeze(1)).out));
}

EMBER_DEVICE_TEST(RNNBase, GradcheckInputAndInitialState) {
  Tensor x = randn({3, 2, 2}, {.dtype = kFloat64}).requires_grad_(true);
  Tensor h0 = randn({2, 2, 3}, {.dtype = kFloat64}).requires_grad_(true);
  Tensor c0 = randn({2, 2, 3}, {.dtype = kFloat64}).requires_grad_(true);
  nn::RNN rnn({.input_size = 2, .hidden_size = 3, .bidirectional = true});
  rnn.to(kFloat64);
  EXPECT_TRUE(gradcheck([&](const variable_list& v) {
    auto r = rnn(v[0], v[1]);
    return cat({r.output.flatten(), r.h_n.flatten()});
  }, {x, h0}));
  nn::RNN relu({.input_size = 2, .hidden_size = 3, .num_layers = 2, .nonlinearity = "relu"});
  relu.to(kFloat64);
  EXPECT_TRUE(gradcheck([&](const variable_list& v) { return relu(v[0], v[1]).output; }, {x, h0}));
  nn::GRU gru({.input_size = 2, .hidden_size = 3, .num_layers = 2});
  gru.to(kFloat64);
  EXPECT_TRUE(gradcheck([&](const variable_list& v) {
    auto r = gru(v[0], v[1]);
    return cat({r.output.flatten(), r.h_n.flatten()});
  }, {x, h0}));
  nn::LSTM lstm({.input_size = 2, .hidden_size = 3, .batch_first = true, .bidirectional = true});
  lstm.to(kFloat64);
  Tensor xb = randn({2, 3, 2}, {.dtype = kFloat64}).requires_grad_(true);  // (N, L, H_in)
  EXPECT_TRUE(gradcheck([&](const variable_list& v) {
    auto r = lstm(v[0], v[1], v[2]);
    return cat({r.output.flatten(), r.h_n.flatten(), r.c_n.flatten()});
  }, {xb, h0, c0}));
}

EMBER_DEVICE_TEST(RNNBase, ParameterGradientsFlow) {
  nn::LSTM lstm({.input_size = 3, .hidden_size = 4, .num_layers = 2, .bidirectional = true});
  lstm(randn({4, 2, 3})).output.sum().backward();
  for (auto& [name, p] : lstm.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_EQ(p.grad().sizes(), p.sizes()) << name;
    EXPECT_GT(p.grad().abs().sum().item<double>(), 0.0) << name;
  }
}

EMBER_DEVICE_TEST(RNNBase, StateDictKeysCountsAndReprAsPyTorch) {
  // From torch 1.13: list(m.state_dict().keys()), sum(p.numel() for p in m.parameters()), repr(m).
  nn::LSTM lstm({.input_size = 3, .hidden_size = 5, .num_layers = 2, .bidirectional = true});
  EXPECT_EQ(keys(lstm), (std::vector<std::string>{
                            "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l0_reverse",
                            "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse", "weight_ih_l1",
                            "weight_hh_l1", "bias_ih_l1", "bias_hh_l1", "weight_ih_l1_reverse",
                            "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse"}));
  EXPECT_EQ(lstm.num_parameters(), 1080);
  EXPECT_EQ(lstm.repr(), "LSTM(3, 5, num_layers=2, bidirectional=True)");
  EXPECT_EQ(lstm.weight_ih(1, true).sizes(), (Shape{20, 10}));
  EXPECT_EQ(lstm.get_parameter("weight_hh_l1_reverse").sizes(), (Shape{20, 5}));

  nn::GRU gru(3, 4, 2);
  EXPECT_EQ(keys(gru), (std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                                 "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1"}));
  EXPECT_EQ(gru.num_parameters(), 228);
  EXPECT_EQ(gru.repr(), "GRU(3, 4, num_layers=2)");

  nn::RNN rnn({.input_size = 3, .hidden_size = 4, .bias = false, .bidirectional = true});
  EXPECT_EQ(keys(rnn), (std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "weight_ih_l0_reverse",
                                                 "weight_hh_l0_reverse"}));
  EXPECT_EQ(rnn.num_parameters(), 56);
  EXPECT_EQ(rnn.repr(), "RNN(3, 4, bias=False, bidirectional=True)");
  EXPECT_FALSE(rnn.bias_ih(0).defined());
}

EMBER_DEVICE_TEST(RNNBase, InitIsUniformOverOneOverSqrtHidden) {
  nn::LSTM lstm(10, 16);
  const double bound = 1.0 / std::sqrt(16.0);
  for (auto& [name, p] : lstm.named_parameters()) {
    EXPECT_LE(p.abs().max().item<double>(), bound + 1e-7) << name;
    EXPECT_GT(p.abs().max().item<double>(), 0.8 * bound) << name;  // spread over the whole range
    EXPECT_TRUE(p.requires_grad()) << name;
  }
  nn::GRU a(4, 4), b(4, 4);
  EXPECT_FALSE(a.weight_ih(0).equal(b.weight_ih(0)));
}

EMBER_DEVICE_TEST(RNNBase, DropoutOnlyBetweenLayersAndOnlyInTraining) {
  nn::LSTM drop({.input_size = 3, .hidden_size = 8, .num_layers = 2, .dropout = 0.5});
  nn::LSTM plain({.input_size = 3, .hidden_size = 8, .num_layers = 2});
  plain.load_state_dict(drop.state_dict());
  Tensor x = randn({4, 2, 3});
  drop.eval();
  EXPECT_TRUE(drop(x).output.equal(plain(x).output));
  drop.train();
  Tensor t1 = drop(x).output, t2 = drop(x).output;
  EXPECT_FALSE(t1.allclose(plain(x).output));
  EXPECT_FALSE(t1.equal(t2));
  // One layer: nothing between layers, so dropout has no effect even in training.
  nn::GRU one({.input_size = 3, .hidden_size = 4, .dropout = 0.5});
  EXPECT_TRUE(one(x).output.equal(one(x).output));
}

EMBER_DEVICE_TEST(RNNBase, ErrorsAsPyTorch) {
  nn::RNN rnn(4, 5);
  EXPECT_THROW_MSG(rnn(randn({2, 3, 3})), Error, "input.size(-1) must be equal to input_size. Expected 4, got 3");
  EXPECT_THROW_MSG(rnn(randn({2, 2, 4}), randn({1, 3, 5})), Error, "Expected hidden size (1, 2, 5), got [1, 3, 5]");
  EXPECT_THROW_MSG(rnn(randn({2, 2, 4}), randn({3, 5})), Error,
                   "For batched 3-D input, hx should also be 3-D but got 2-D tensor");
  EXPECT_THROW_MSG(rnn(randn({2, 4}), randn({1, 1, 5})), Error,
                   "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor");
  EXPECT_THROW_MSG(rnn(randn({2, 2, 4, 1})), ValueError, "RNN: Expected input to be 2-D or 3-D but received 4-D tensor");
  EXPECT_THROW_MSG(rnn(randn({0, 2, 4})), Error, "Expected sequence length to be larger than 0 in RNN");
  nn::GRU gru(4, 5);
  EXPECT_THROW_MSG(gru(randn({4})), ValueError, "GRU: Expected input to be 2-D or 3-D but received 1-D tensor");
  nn::LSTM lstm(4, 5);
  EXPECT_THROW_MSG(lstm(randn({2, 2, 4}), randn({1, 3, 5}), randn({1, 2, 5})), Error,
                   "Expected hidden[0] size (1, 2, 5), got [1, 3, 5]");
  EXPECT_THROW_MSG(lstm(randn({2, 2, 4}), randn({1, 2, 5}), randn({1, 3, 5})), Error,
                   "Expected hidden[1] size (1, 2, 5), got [1, 3, 5]");
  EXPECT_THROW_MSG(lstm(randn({2, 2, 4}), randn({2, 5}), randn({1, 3, 5})), Error,
                   "For batched 3-D input, hx and cx should also be 3-D but got (2-D, 3-D) tensors");
  EXPECT_THROW_MSG(lstm(randn({2, 4}), randn({1, 2, 5}), randn({1, 3, 5})), Error,
                   "For unbatched 2-D input, hx and cx should also be 2-D but got (3-D, 3-D) tensors");
  EXPECT_THROW_MSG(nn::RNN({.input_size = 4, .hidden_size = 5, .nonlinearity = "sig"}), ValueError,
                   "Unknown nonlinearity 'sig'");
  EXPECT_THROW_MSG(nn::RNN({.input_size = 4, .hidden_size = 5, .dropout = 1.5}), ValueError,
                   "dropout should be a number in range [0, 1]");
  EXPECT_THROW_MSG(nn::LSTM(4, 0), ValueError, "hidden_size must be greater than zero");
}

EMBER_DEVICE_TEST(LSTM, MatchesTorchOnLoadedWeights) {
  // torch.manual_seed(0); m = nn.LSTM(2, 3, bidirectional=True).double(), weights rounded to 4
  // decimals; x = round(randn(3, 2, 2) * 1e3) / 1e3; o, (h, c) = m(x).
  const std::vector<std::pair<std::string, std::vector<double>>> w = {
      {"weight_ih_l0", {-0.0043, 0.3097, -0.4752, -0.4249, -0.2224, 0.1548, -0.0114, 0.4578, -0.0512, 0.1528, -0.1745, -0.1135, -0.5516, -0.3824, -0.238, 0.0214, 0.2282, 0.3464, -0.3914, -0.2514, 0.2097, 0.4794, -0.1188, 0.432}},
      {"weight_hh_l0", {-0.0931, 0.0611, 0.5228, -0.5356, -0.3635, -0.1462, -0.2251, 0.4988, -0.3742, -0.2658, -0.4034, -0.5407, -0.337, 0.4963, 0.2576, 0.2798, 0.0304, -0.296, 0.0977, -0.5391, -0.4172, -0.2976, 0.3643, 0.3385, -0.2561, -0.0208, 0.3693, 0.574, 0.2291, 0.078, 0.3871, -0.3399, 0.1076, -0.4476, -0.4002, -0.2982}},
      {"bias_ih_l0", {0.2612, 0.2322, -0.342, 0.1744, 0.3169, -0.0729, 0.022, 0.1338, 0.3582, 0.5544, -0.4449, -0.2116}},
      {"bias_hh_l0", {0.2269, 0.4784, 0.5024, 0.5094, 0.1149, -0.5021, 0.0531, -0.3612, -0.5381, 0.513, 0.439, -0.5759}},
      {"weight_ih_l0_reverse", {0.1081, -0.0973, -0.095, -0.2643, 0.222, -0.342, 0.2117, 0.292, 0.4133, 0.2159, -0.5714, -0.3745, 0.2883, 0.1208, -0.4504, -0.3324, 0.5431, 0.389, -0.2517, -0.1453, -0.55, -0.0104, -0.4348, -0.4453}},
      {"weight_hh_l0_reverse", {-0.0318, 0.0867, -0.2364, 0.3426, -0.3513, 0.5239, 0.3957, -0.4869, -0.1437, 0.0261, 0.0842, 0.1369, 0.2266, 0.0346, -0.2817, 0.2732, -0.5538, -0.3422, -0.1445, -0.2812, -0.202, -0.4732, -0.1228, 0.1234, -0.3761, -0.0296, 0.4133, -0.0594, 0.016, -0.0498, 0.1168, 0.3671, 0.5469, 0.3666, 0.5481, -0.0418}},
      {"bias_ih_l0_reverse", {-0.5186, -0.2737, 0.3931, -0.0037, -0.287, -0.4424, -0.5403, -0.4873, -0.1171, 0.3166, 0.3121, -0.5568}},
      {"bias_hh_l0_reverse", {0.3601, -0.4518, -0.1221, -0.2341, -0.1112, -0.1134, -0.5181, -0.4985, -0.0903, 0.0075, -0.2623, 0.2175}},
  };
  nn::LSTM lstm({.input_size = 2, .hidden_size = 3, .bidirectional = true});
  lstm.to(kFloat64);
  nn::StateDict sd;
  for (auto& [k, v] : w) {
    Shape shape = lstm.get_parameter(k).sizes();
    sd.push_back({k, tensor(v, {.dtype = kFloat64}).reshape(shape)});
  }
  auto res = lstm.load_state_dict(sd);
  EXPECT_TRUE(res.missing_keys.empty());
  Tensor x = tensor(std::vector<double>{-0.976, 0.711, -0.758, -0.644, -0.646, -0.159, -1.779, 0.848, 0.246, -0.131,
                                        -0.179, -0.596},
                    {.dtype = kFloat64})
                 .reshape({3, 2, 2});
  auto [out, h, c] = lstm(x);
  const std::vector<double> want_out = {0.16956398344040463, 0.007548286603920989, -0.039258089695686456, -0.3184234486659009, -0.1433487521764866, -0.11891004188154108, 0.28355241907431256, -0.018464402737711057, -0.07711515652709547, -0.33748042831257874, -0.08279421215649951, -0.29062334847701327, 0.32816373838740276, -0.042150604341053735, -0.07986474236712689, -0.2963608687864409, -0.14227241722360875, -0.14002978076274525, 0.5170156951575223, 0.02214653309324752, -0.15050798081788377, -0.30983158282497214, -0.11342180113418678, -0.19364723125732544, 0.2382012536841222, -0.15565423816814253, -0.06489009054009014, -0.19610889151980074, -0.12060887771645488, -0.029624472611455944, 0.4846455736896552, -0.10674616010236193, -0.09459577215635004, -0.22688284420920857, -0.1179435068790794, -0.1448677499341202};
  const std::vector<double> want_h = {0.2382012536841222, -0.15565423816814253, -0.06489009054009014, 0.4846455736896552, -0.10674616010236193, -0.09459577215635004, -0.3184234486659009, -0.1433487521764866, -0.11891004188154108, -0.33748042831257874, -0.08279421215649951, -0.29062334847701327};
  const std::vector<double> want_c = {0.32237180734150667, -0.30327730959860144, -0.24233885584659293, 0.6696213623462719, -0.23535999635478472, -0.4413014579475292, -0.5677999105846607, -0.24258286737556306, -0.30787338208053616, -0.5713879918902611, -0.1457909945910293, -0.6200044749230413};
  EXPECT_TRUE(close(out, want_out, 1e-12));
  EXPECT_TRUE(close(h, want_h, 1e-12));
  EXPECT_TRUE(close(c, want_c, 1e-12));
}

EMBER_DEVICE_TEST(RecurrentFunctional, RunsTheModulesParameters) {
  // The functionals on a module's flat_weights() are its forward; they take the weights of any
  // caller (ember.nn's Python modules) and check their count and sizes.
  nn::LSTM lstm({.input_size = 3, .hidden_size = 4, .num_layers = 2, .bidirectional = true});
  EXPECT_EQ(lstm.flat_weights().size(), 16u);
  EXPECT_TRUE(lstm.flat_weights()[4].is_same(lstm.weight_ih(0, true)));
  Tensor x = randn({5, 2, 3}), h0 = randn({4, 2, 4}), c0 = randn({4, 2, 4});
  auto [out, h, c] = nn::functional::lstm(x, {h0, c0}, lstm.flat_weights(), true, 2, 0.0, false, true, false);
  RefResult r = reference(Kind::Lstm, lstm, 2, true, 4, x, h0, c0);
  EXPECT_TRUE(close(out, r.out));
  EXPECT_TRUE(close(h, r.h));
  EXPECT_TRUE(close(c, r.c));

  nn::RNN relu({.input_size = 3, .hidden_size = 4, .nonlinearity = "relu", .bias = false, .batch_first = true});
  auto [ro, rh] = nn::functional::rnn_relu(x.transpose(0, 1), std::nullopt, relu.flat_weights(), false, 1, 0.0, false,
                                           false, true);
  EXPECT_TRUE(close(ro.transpose(0, 1), reference(Kind::Relu, relu, 1, false, 4, x).out));
  nn::GRU gru(3, 4);
  auto [go, gh] = nn::functional::gru(x.select(1, 0), std::nullopt, gru.flat_weights(), true, 1, 0.0, false, false,
                                      false);
  EXPECT_TRUE(close(gh, reference(Kind::Gru, gru, 1, false, 4, x.narrow(1, 0, 1)).h));

  auto w = gru.flat_weights();
  EXPECT_THROW_MSG(nn::functional::gru(x, std::nullopt, w, true, 2, 0.0, false, false, false), Error,
                   "GRU: got an incorrect number of RNN parameters: expected 8 for num_layers=2, bidirectional=False, "
                   "has_biases=True, got 4");
  EXPECT_THROW_MSG(nn::functional::rnn_tanh(x, std::nullopt, w, true, 1, 0.0, false, false, false), Error,
                   "RNN: expected weight_ih_l0 of size [4, 3], got [12, 3]");
  EXPECT_THROW_MSG(nn::functional::lstm(x, {h0}, lstm.flat_weights(), true, 2, 0.0, false, true, false), Error,
                   "LSTM: hx must hold (h_0, c_0), got 1 tensors");
}

// ---- the fused LSTM cell step (_lstm_cell: src/ops/rnn_cell.cpp, src/cpu/rnn_kernels.cpp)
#include "device_test.h"
#include "ops/rnn_cell.h"

namespace {
// The step as the layer composed it before the fused op: the reference the fused kernel must equal.
std::tuple<Tensor, Tensor> composed_cell(const Tensor& gates, const Tensor& c) {
  auto a = chunk(gates, 4, 1);
  Tensor c_new = add(mul(sigmoid(a[1]), c), mul(sigmoid(a[0]), ember::tanh(a[2])));
  return {mul(sigmoid(a[3]), ember::tanh(c_new)), c_new};
}
}  // namespace

EMBER_DEVICE_TEST(LstmCell, FusedStepEqualsTheCompositionWithItsGradients) {
  manual_seed(3);
  for (int64_t H : {1, 7, 37}) {  // (37: vector bodies and tails)
    Tensor gates = (randn({5, 4 * H}) * 3.0).requires_grad_(true), c = randn({5, H}).requires_grad_(true);
    Tensor gh = randn({5, H}), gc = randn({5, H});
    auto [h, c_new] = lstm_cell_pointwise(gates, c);
    auto [h_ref, c_ref] = composed_cell(gates, c);
    if (device().is_cpu()) {  // the same formulas, built without contraction: the same bits
      EXPECT_TRUE(h.equal(h_ref));
      EXPECT_TRUE(c_new.equal(c_ref));
    } else {
      EXPECT_TRUE(allclose(h, h_ref, 1e-6, 1e-6));
      EXPECT_TRUE(allclose(c_new, c_ref, 1e-6, 1e-6));
    }
    EXPECT_EQ(h.grad_fn()->name(), "ThnnFusedLstmCellBackward0");
    auto g = autograd::grad({h, c_new}, {gates, c}, {gh, gc}, /*retain_graph=*/true);
    auto g_ref = autograd::grad({h_ref, c_ref}, {gates, c}, {gh, gc}, true);
    EXPECT_TRUE(allclose(g[0], g_ref[0], 1e-5, 1e-6));
    EXPECT_TRUE(allclose(g[1], g_ref[1], 1e-5, 1e-6));
    // only h' used: c's gradient flows through h' alone
    auto g_h = autograd::grad({h.sum()}, {gates, c});
    auto g_h_ref = autograd::grad({h_ref.sum()}, {gates, c});
    EXPECT_TRUE(allclose(g_h[0], g_h_ref[0], 1e-5, 1e-6));
    EXPECT_TRUE(allclose(g_h[1], g_h_ref[1], 1e-5, 1e-6));
  }
}

TEST(LstmCell, GradcheckAndDoubleBackward) {
  manual_seed(4);
  Tensor gates = randn({3, 8}, {.dtype = kFloat64}).requires_grad_(true);
  Tensor c = randn({3, 2}, {.dtype = kFloat64}).requires_grad_(true);
  auto fn = [](const autograd::variable_list& x) {
    auto [h, cn] = lstm_cell_pointwise(x[0], x[1]);
    return h * 1.5 + cn * cn;
  };
  EXPECT_TRUE(gradcheck(fn, {gates, c}));
  EXPECT_TRUE(gradgradcheck(fn, {gates, c}));
}

TEST(LstmCell, ErrorsAndMixedDtypes) {
  EXPECT_THROW_MSG(lstm_cell_pointwise(randn({3, 8}), randn({3, 3})), Error,
                   "_lstm_cell: expected gates of shape (N, 4H) and c of shape (N, H), got [3, 8] and [3, 3]");
  // autocast's mixes (bfloat16 gates, float32 state) take the composition
  auto [h, cn] = lstm_cell_pointwise(randn({2, 8}).to(kBFloat16), randn({2, 2}));
  EXPECT_EQ(cn.dtype(), kFloat32);
  EXPECT_EQ(h.sizes(), Shape({2, 2}));
}

namespace {
Tensor composed_gru(const Tensor& xg, const Tensor& hg, const Tensor& h) {
  auto x = chunk(xg, 3, 1), hh = chunk(hg, 3, 1);
  Tensor r = sigmoid(add(x[0], hh[0])), z = sigmoid(add(x[1], hh[1]));
  Tensor n = ember::tanh(add(x[2], mul(r, hh[2])));
  return add(n, mul(z, sub(h, n)));
}
}  // namespace

EMBER_DEVICE_TEST(GruCell, FusedStepEqualsTheCompositionWithItsGradients) {
  manual_seed(5);
  for (int64_t H : {1, 7, 37}) {
    Tensor xg = (randn({4, 3 * H}) * 2.0).requires_grad_(true), hg = (randn({4, 3 * H}) * 2.0).requires_grad_(true);
    Tensor h = randn({4, H}).requires_grad_(true), g = randn({4, H});
    Tensor out = gru_cell_pointwise(xg, hg, h), ref = composed_gru(xg, hg, h);
    if (device().is_cpu()) EXPECT_TRUE(out.equal(ref));
    else EXPECT_TRUE(allclose(out, ref, 1e-6, 1e-6));
    EXPECT_EQ(out.grad_fn()->name(), "ThnnFusedGruCellBackward0");
    auto d = autograd::grad({out}, {xg, hg, h}, {g});
    auto d_ref = autograd::grad({ref}, {xg, hg, h}, {g});
    for (size_t k = 0; k < 3; ++k) EXPECT_TRUE(allclose(d[k], d_ref[k], 1e-5, 1e-6)) << k;
  }
}

TEST(GruCell, GradcheckDoubleBackwardAndErrors) {
  manual_seed(6);
  auto f64 = [](Shape s) { return randn(s, {.dtype = kFloat64}).requires_grad_(true); };
  Tensor xg = f64({3, 6}), hg = f64({3, 6}), h = f64({3, 2});
  auto fn = [](const autograd::variable_list& x) { return gru_cell_pointwise(x[0], x[1], x[2]).pow(2); };
  EXPECT_TRUE(gradcheck(fn, {xg, hg, h}));
  EXPECT_TRUE(gradgradcheck(fn, {xg, hg, h}));
  EXPECT_THROW_MSG(gru_cell_pointwise(randn({3, 6}), randn({3, 9}), randn({3, 2})), Error,
                   "_gru_cell: expected input and hidden gates of shape (N, 3H) and h of shape (N, H), got [3, 6], "
                   "[3, 9] and [3, 2]");
}
