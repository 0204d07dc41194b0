// LoRA on C++ module trees (ember/nn/lora.h): adapters injected by name into Linear layers that
// parents call through typed members, frozen bases, merge/unmerge, adapter-only files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "ember/ember.h"
#include "ember/nn.h"
#include "ember/optim.h"
#include "ember/serialize/serialize.h"

using namespace ember;

namespace {

struct Block : nn::Module {
  Block() {
    register_module("proj", &proj);
    register_module("gate", &gate);
  }
  Tensor forward(const Tensor& x) override { return proj.forward(x).relu() * gate.forward(x).sigmoid(); }
  nn::Linear proj{16, 16}, gate{16, 16};
};

struct Net : nn::Module {
  Net() {
    register_module("fc1", &fc1);
    register_module("block", &block);
    register_module("head", &head);
  }
  Tensor forward(const Tensor& x) override { return head.forward(block.forward(fc1.forward(x).tanh())); }
  nn::Linear fc1{8, 16};
  Block block;
  nn::Linear head{16, 3};
};

std::string temp_file(const char* stem) {
  return (std::filesystem::temp_directory_path() / (std::string(stem) + std::to_string(::getpid()) + ".safetensors"))
      .string();
}

}  // namespace

TEST(LoRA, InjectsByNameTrainsAdaptersOnlyAndMerges) {
  manual_seed(1);
  Net net;
  Tensor x = randn({32, 8}), y = randn({32, 3});
  const Tensor base = net.forward(x).detach();
  EXPECT_EQ(nn::inject_lora(net, {"fc1", "block.proj"}, {.r = 4, .alpha = 8}), 2);
  EXPECT_TRUE(net.forward(x).allclose(base, 0, 0));  // B = 0: exactly the base model
  std::vector<Tensor> trainable;
  std::vector<std::string> names;
  for (auto& [name, p] : net.named_parameters())
    if (p.requires_grad()) trainable.push_back(p), names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.lora_A.weight", "fc1.lora_B.weight", "block.proj.lora_A.weight",
                                             "block.proj.lora_B.weight"}));
  EXPECT_EQ(net.fc1.lora_A->weight.sizes(), (Shape{4, 8}));
  EXPECT_EQ(net.fc1.lora_B->weight.sizes(), (Shape{16, 4}));
  const Tensor frozen = net.fc1.weight.detach().clone();
  optim::Adam opt(trainable, {.lr = 1e-2});
  double first = 0, last = 0;
  for (int i = 0; i < 30; ++i) {
    opt.zero_grad();
    Tensor loss = nn::functional::mse_loss(net.forward(x), y);
    loss.backward();
    opt.step();
    (i == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, first * 0.9);
  EXPECT_TRUE(net.fc1.weight.equal(frozen));
  EXPECT_FALSE(net.block.gate.has_lora());
  const Tensor adapted = net.forward(x).detach();
  EXPECT_FALSE(adapted.allclose(base, 1e-4, 1e-4));
  nn::merge_lora(net);
  EXPECT_TRUE(net.fc1.lora_merged);
  EXPECT_FALSE(net.fc1.weight.equal(frozen));
  EXPECT_TRUE(net.forward(x).allclose(adapted, 1e-5, 1e-5));
  nn::merge_lora(net, false);
  EXPECT_TRUE(net.forward(x).allclose(adapted, 1e-5, 1e-5));
  EXPECT_TRUE(net.fc1.weight.allclose(frozen, 1e-6, 1e-6));
}

TEST(LoRA, AdaptersAloneRoundTripThroughSafetensors) {
  manual_seed(2);
  Net net;
  nn::inject_lora(net, {"fc1", "head"}, {.r = 2, .alpha = 4});
  {
    NoGradGuard no_grad;
    for (auto& [_, p] : nn::lora_state_dict(net)) p.normal_();
  }
  Tensor x = randn({5, 8});
  const Tensor want = net.forward(x).detach();
  const std::string path = temp_file("ember_nn_lora_");
  nn::save_lora(net, path);
  const auto file = safetensors::load(path);
  EXPECT_EQ(file.size(), 4u);  // only the adapters
  manual_seed(2);
  Net other;  // the same base weights
  nn::inject_lora(other, {"fc1", "head"}, {.r = 2, .alpha = 4});
  nn::load_lora(other, path);
  EXPECT_TRUE(other.forward(x).allclose(want, 1e-6, 1e-6));
  Net wrong_rank;
  nn::inject_lora(wrong_rank, {"fc1", "head"}, {.r = 3, .alpha = 4});
  EXPECT_THROW(nn::load_lora(wrong_rank, path), ValueError);
  Net none;
  EXPECT_THROW(nn::load_lora(none, path), ValueError);
  EXPECT_THROW(nn::save_lora(none, path), ValueError);
  std::filesystem::remove(path);
}

TEST(LoRA, ErrorsAndDropout) {
  Net net;
  EXPECT_THROW(nn::inject_lora(net, {"q_proj"}), ValueError);
  EXPECT_THROW(nn::inject_lora(net, {"fc1"}, {.r = 0}), ValueError);
  nn::inject_lora(net, {"fc1"}, {.r = 2, .alpha = 2, .dropout = 0.5});
  EXPECT_THROW(nn::inject_lora(net, {"fc1"}), ValueError);  // already has one
  EXPECT_THROW(nn::inject_lora(net, {"lora_A"}), ValueError);  // adapters get no adapters
  {
    NoGradGuard no_grad;
    net.fc1.lora_B->weight.normal_();
  }
  Tensor x = randn({4, 8});
  net.eval();
  EXPECT_TRUE(net.forward(x).equal(net.forward(x)));  // no dropout in eval
  net.train();
  manual_seed(3);
  const Tensor a = net.forward(x);
  manual_seed(4);
  EXPECT_FALSE(a.equal(net.forward(x)));  // dropout on the adapter's input in training
}

TEST(LoRA, WorksOnTheBuiltInTransformerLayer) {
  manual_seed(5);
  nn::TransformerEncoderLayer layer(16, 2, 32, 0.0);
  layer.eval();
  Tensor x = randn({6, 2, 16});
  const Tensor base = layer.forward(x).detach();
  EXPECT_EQ(nn::inject_lora(layer, {"linear1", "linear2", "out_proj"}, {.r = 2, .alpha = 4}), 3);
  EXPECT_TRUE(layer.forward(x).allclose(base, 0, 0));
  {
    NoGradGuard no_grad;
    for (auto& [_, p] : nn::lora_state_dict(layer)) p.normal_(0, 0.1);
  }
  const Tensor adapted = layer.forward(x).detach();
  EXPECT_FALSE(adapted.allclose(base, 1e-4, 1e-4));  // every adapter takes part, out_proj's too
  nn::merge_lora(layer);
  EXPECT_TRUE(layer.forward(x).allclose(adapted, 1e-5, 1e-5));
  nn::merge_lora(layer, false);
  layer.forward(x).sum().backward();
  for (auto& [name, p] : nn::lora_state_dict(layer)) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_GT(p.grad().abs().sum().item<double>(), 0) << name;
  }
}
