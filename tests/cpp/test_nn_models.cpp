// The seeds' models, built from ember's modules: structure, parameter counts, printing (compared
// with torch 1.13's output), training steps and state_dict round trips.
#include "ember/nn.h"
#include "train/models.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

namespace {

// The seeds' SimpleCNN for MNIST, as the training demo defines it.
using train_demo::SimpleCNN;

}  // namespace

TEST(Models, SimpleCNNStructureMatchesPyTorch) {
  SimpleCNN m;
  EXPECT_EQ(m.num_parameters(), 421834);  // sum(p.numel()) in torch 1.13
  auto sd = m.state_dict();
  std::vector<std::string> first;
  for (size_t i = 0; i < 8; ++i) first.push_back(sd[i].first);
  EXPECT_EQ(first, (std::vector<std::string>{"conv_layers.0.weight", "conv_layers.0.bias", "conv_layers.1.weight",
                                             "conv_layers.1.bias", "conv_layers.1.running_mean",
                                             "conv_layers.1.running_var", "conv_layers.1.num_batches_tracked",
                                             "conv_layers.4.weight"}));
  EXPECT_EQ(m.repr(),
            "SimpleCNN(\n"
            "  (conv_layers): Sequential(\n"
            "    (0): Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
            "    (1): BatchNorm2d(32, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
            "    (2): ReLU()\n"
            "    (3): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
            "    (4): Conv2d(32, 64, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
            "    (5): BatchNorm2d(64, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
            "    (6): ReLU()\n"
            "    (7): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
            "  )\n"
            "  (fc_layers): Sequential(\n"
            "    (0): Flatten(start_dim=1, end_dim=-1)\n"
            "    (1): Linear(in_features=3136, out_features=128, bias=True)\n"
            "    (2): ReLU()\n"
            "    (3): Dropout(p=0.5, inplace=False)\n"
            "    (4): Linear(in_features=128, out_features=10, bias=True)\n"
            "  )\n"
            ")");
}

TEST(Models, SimpleCNNTrainsAndRoundTrips) {
  manual_seed(0);
  SimpleCNN m;
  Tensor x = randn({16, 1, 28, 28});
  Tensor y = randint(0, 10, {16});
  double first = 0, last = 0;
  for (int step = 0; step < 8; ++step) {  // plain SGD by hand: the optimizer issue comes later
    Tensor loss = F::cross_entropy(m(x), y);
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    m.zero_grad();
    loss.backward();
    NoGradGuard no_grad;
    for (auto& p : m.parameters()) {
      Tensor w = p;
      w.sub_(p.grad() * 0.02);  // 0.05 overshoots for some seeds (the loss rose for seed 0, 2)
    }
  }
  EXPECT_LT(last, first - 0.5);  // memorising 16 samples: the loss must go down (2.3 -> 1.2..1.6 for seeds 0-5)
  EXPECT_EQ(m.conv_layers.at<nn::BatchNorm2d>(1).num_batches_tracked.item<int64_t>(), 8);

  m.eval();
  SimpleCNN copy;
  copy.load_state_dict(m.state_dict());
  copy.eval();
  EXPECT_TRUE(m(x).equal(copy(x)));  // eval mode: running stats, no dropout -> identical
}
