// nn::Module: registration by declaration, traversal, state_dict, modes, containers, printing.
#include "ember/nn.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

namespace {

// The seeds' TwoLayerMLP: 784 -> 256 -> 10 (203,530 parameters).
struct TwoLayerMLP : nn::Module {
  EMBER_MODULE(nn::Linear, fc1, 784, 256);
  EMBER_MODULE(nn::Linear, fc2, 256, 10);
  Tensor forward(const Tensor& x) override { return fc2(F::relu(fc1(x.flatten(1)))); }
  std::string name() const override { return "TwoLayerMLP"; }
};

struct WithBuffers : nn::Module {
  EMBER_PARAMETER(scale, ones({3}));
  EMBER_BUFFER(steps, zeros({}, {.dtype = kInt64}));
  EMBER_MODULE(nn::Linear, proj, 3, 3, /*bias=*/false);
  WithBuffers() { register_buffer("scratch", zeros({3}), /*persistent=*/false); }
  std::string name() const override { return "WithBuffers"; }
};

}  // namespace

EMBER_DEVICE_TEST(Module, MembersRegisterThemselves) {
  TwoLayerMLP m;
  auto named = m.named_parameters();
  ASSERT_EQ(named.size(), 4u);
  EXPECT_EQ(named[0].first, "fc1.weight");
  EXPECT_EQ(named[1].first, "fc1.bias");
  EXPECT_EQ(named[2].first, "fc2.weight");
  EXPECT_EQ(named[3].first, "fc2.bias");
  EXPECT_EQ(m.num_parameters(), 203530);
  EXPECT_EQ(named[0].second.sizes(), (Shape{256, 784}));
  EXPECT_TRUE(named[0].second.requires_grad());
  auto children = m.named_children();
  ASSERT_EQ(children.size(), 2u);
  EXPECT_EQ(children[0].first, "fc1");
  auto mods = m.named_modules();
  ASSERT_EQ(mods.size(), 3u);
  EXPECT_EQ(mods[0].first, "");
  EXPECT_EQ(mods[2].first, "fc2");
  Tensor y = m(randn({4, 1, 28, 28}));
  EXPECT_EQ(y.sizes(), (Shape{4, 10}));
}

EMBER_DEVICE_TEST(Module, LinearMatchesItsFormulaAndInit) {
  nn::Linear lin(5, 3);
  Tensor x = randn({2, 4, 5});
  Tensor y = lin(x);
  EXPECT_EQ(y.sizes(), (Shape{2, 4, 3}));
  Tensor ref = x.matmul(lin.weight.t()) + lin.bias;
  EXPECT_TRUE(y.allclose(ref, 1e-5, 1e-6));
  double bound = 1.0 / std::sqrt(5.0);
  EXPECT_LE(lin.weight.abs().max().item<double>(), bound + 1e-6);
  EXPECT_LE(lin.bias.abs().max().item<double>(), bound + 1e-6);
  EXPECT_EQ(lin.repr(), "Linear(in_features=5, out_features=3, bias=True)");
  EXPECT_FALSE(nn::Linear(2, 2, false).bias.defined());
  y.sum().backward();
  EXPECT_EQ(lin.weight.grad().sizes(), (Shape{3, 5}));
  EXPECT_TRUE(lin.bias.grad().allclose(full({3}, 8.0)));
}

EMBER_DEVICE_TEST(Module, StateDictKeysAndRoundTrip) {
  WithBuffers m;
  auto sd = m.state_dict();
  std::vector<std::string> keys;
  for (auto& [k, v] : sd) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"scale", "steps", "proj.weight"}));  // non-persistent omitted
  EXPECT_EQ(m.buffers().size(), 2u);

  TwoLayerMLP a, b;
  Tensor x = randn({2, 784});
  EXPECT_FALSE(a(x).equal(b(x)));
  auto r = b.load_state_dict(a.state_dict());
  EXPECT_TRUE(r.missing_keys.empty());
  EXPECT_TRUE(a(x).equal(b(x)));

  nn::StateDict partial = a.state_dict();
  partial.pop_back();
  partial.emplace_back("extra.weight", zeros({1}));
  EXPECT_THROW_MSG(b.load_state_dict(partial), Error,
                   "Missing key(s) in state_dict: \"fc2.bias\". ");
  auto loose = b.load_state_dict(partial, /*strict=*/false);
  EXPECT_EQ(loose.missing_keys, (std::vector<std::string>{"fc2.bias"}));
  EXPECT_EQ(loose.unexpected_keys, (std::vector<std::string>{"extra.weight"}));
  nn::StateDict wrong = a.state_dict();
  wrong[0].second = zeros({2, 2});
  EXPECT_THROW_MSG(b.load_state_dict(wrong), Error,
                   "size mismatch for fc1.weight: copying a param with shape [2, 2] from checkpoint, the shape in "
                   "current model is [256, 784].");
}

EMBER_DEVICE_TEST(Module, TrainEvalZeroGradFreezeTie) {
  TwoLayerMLP m;
  EXPECT_TRUE(m.fc1.is_training());
  m.eval();
  EXPECT_FALSE(m.is_training());
  EXPECT_FALSE(m.fc2.is_training());
  m.train();
  EXPECT_TRUE(m.fc2.is_training());

  m(randn({2, 784})).sum().backward();
  EXPECT_TRUE(m.fc1.weight.grad().defined());
  m.zero_grad();
  EXPECT_FALSE(m.fc1.weight.grad().defined());
  m(randn({2, 784})).sum().backward();
  m.zero_grad(/*set_to_none=*/false);
  EXPECT_EQ(m.fc1.weight.grad().abs().sum().item<double>(), 0.0);

  m.fc1.requires_grad_(false);  // freeze
  EXPECT_EQ(m.num_parameters(/*only_trainable=*/true), 256 * 10 + 10);

  // Weight tying: one tensor, counted once.
  struct Tied : nn::Module {
    EMBER_MODULE(nn::Linear, enc, 4, 4, false);
    EMBER_MODULE(nn::Linear, dec, 4, 4, false);
    Tied() { dec.weight = enc.weight; }
  } tied;
  EXPECT_EQ(tied.parameters().size(), 1u);
  EXPECT_TRUE(tied.dec.weight.is_same(tied.enc.weight));
  EXPECT_EQ(tied.state_dict().size(), 2u);  // both keys, as PyTorch's state_dict keeps them
}

EMBER_DEVICE_TEST(Module, ToDtypeAndApply) {
  TwoLayerMLP m;
  m.to(kFloat64);
  EXPECT_EQ(m.fc1.weight.dtype(), kFloat64);
  EXPECT_TRUE(m.fc1.weight.requires_grad());
  EXPECT_TRUE(m.fc1.weight.is_leaf());
  int count = 0;
  m.apply([&](nn::Module&) { ++count; });
  EXPECT_EQ(count, 3);
}

EMBER_DEVICE_TEST(Containers, SequentialModuleListModuleDict) {
  nn::Sequential seq(nn::make<nn::Linear>(4, 8), nn::make<nn::ReLU>(), nn::make<nn::Linear>(8, 2));
  EXPECT_EQ(seq.size(), 3u);
  EXPECT_EQ(seq(randn({5, 4})).sizes(), (Shape{5, 2}));
  EXPECT_EQ(seq.at<nn::Linear>(-1).out_features, 2);
  EXPECT_THROW_MSG(seq[3], IndexError, "index 3 is out of range for Sequential of length 3");
  auto head = seq.slice(0, 2);
  EXPECT_EQ(head->size(), 2u);
  EXPECT_TRUE(head->at<nn::Linear>(0).weight.is_same(seq.at<nn::Linear>(0).weight));
  std::vector<std::string> keys;
  for (auto& [k, v] : seq.state_dict()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_EQ(seq.repr(),
            "Sequential(\n"
            "  (0): Linear(in_features=4, out_features=8, bias=True)\n"
            "  (1): ReLU()\n"
            "  (2): Linear(in_features=8, out_features=2, bias=True)\n"
            ")");

  nn::ModuleList layers;
  for (int i = 0; i < 3; ++i) layers.push_back(nn::make<nn::Linear>(2, 2));
  EXPECT_EQ(layers.size(), 3u);
  EXPECT_EQ(layers.named_parameters()[2].first, "1.weight");

  nn::ModuleDict heads;
  heads.insert("cls", nn::make<nn::Linear>(2, 3));
  EXPECT_TRUE(heads.contains("cls"));
  EXPECT_EQ(heads.keys(), (std::vector<std::string>{"cls"}));
  EXPECT_THROW_MSG(heads["box"], IndexError, "ModuleDict has no key 'box'");
}

EMBER_DEVICE_TEST(Module, NestedPrinting) {
  TwoLayerMLP m;
  EXPECT_EQ(m.repr(),
            "TwoLayerMLP(\n"
            "  (fc1): Linear(in_features=784, out_features=256, bias=True)\n"
            "  (fc2): Linear(in_features=256, out_features=10, bias=True)\n"
            ")");
  EXPECT_EQ(nn::Flatten().repr(), "Flatten(start_dim=1, end_dim=-1)");
  EXPECT_EQ(nn::Dropout(0.2).repr(), "Dropout(p=0.2, inplace=False)");
  EXPECT_EQ(nn::GELU("tanh").repr(), "GELU(approximate='tanh')");
  EXPECT_EQ(nn::LeakyReLU().repr(), "LeakyReLU(negative_slope=0.01)");
  EXPECT_THROW_MSG(nn::Dropout(1.5), ValueError, "dropout probability has to be between 0 and 1, but got 1.5");
}
