// The seeds' checkpoint: {'epoch', 'model_state_dict', 'optimizer_state_dict', 'loss'} saved to a
// .pt file mid-training; a fresh model, optimizer and scheduler loaded from it continue exactly
// as the uninterrupted run.
#include <cstdio>
#include <filesystem>

#include "ember/nn.h"
#include "ember/optim.h"
#include "ember/serialize/serialize.h"
#include "test_utils.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {

struct Net : nn::Module {
  EMBER_MODULE(nn::Linear, fc1, 6, 16);
  EMBER_MODULE(nn::Linear, fc2, 16, 3);
  Tensor forward(const Tensor& x) override { return fc2(F::relu(fc1(x))); }
};

struct TrainingRun {
  Net model;
  optim::AdamW opt{model.parameters(), {.lr = 1e-2, .weight_decay = 0.05}};
  optim::CosineAnnealingLR sched{opt, /*T_max=*/10};
};

double train_step(TrainingRun& r, const Tensor& x, const Tensor& y) {
  Tensor loss = F::cross_entropy(r.model(x), y);
  r.opt.zero_grad();
  loss.backward();
  r.opt.step();
  r.sched.step();
  return loss.item<double>();
}

}  // namespace

TEST(Checkpoint, ResumeFromFileEqualsUninterrupted) {
  manual_seed(3);
  Tensor x = randn({32, 6});
  Tensor y = randint(0, 3, {32});
  manual_seed(7);
  TrainingRun straight;
  for (int step = 0; step < 10; ++step) train_step(straight, x, y);

  manual_seed(7);
  TrainingRun first;
  double loss = 0;
  for (int step = 0; step < 4; ++step) loss = train_step(first, x, y);
  std::string path = (std::filesystem::temp_directory_path() / "ember_resume_test.pt").string();
  Value ckpt = Value::dict();
  ckpt["epoch"] = 4;
  ckpt["model_state_dict"] = to_value(first.model.state_dict());
  ckpt["optimizer_state_dict"] = first.opt.state_dict();
  ckpt["scheduler_state_dict"] = first.sched.state_dict();
  ckpt["loss"] = loss;
  save(ckpt, path);

  manual_seed(99);  // a different initialisation, overwritten by the checkpoint
  TrainingRun resumed;
  Value loaded = load(path);
  std::remove(path.c_str());
  resumed.model.load_state_dict(to_state_dict(loaded.at("model_state_dict")));
  resumed.opt.load_state_dict(loaded.at("optimizer_state_dict"));
  resumed.sched.load_state_dict(loaded.at("scheduler_state_dict"));
  EXPECT_EQ(loaded.at("epoch").to_int(), 4);
  EXPECT_EQ(loaded.at("loss").to_double(), loss);
  for (int step = loaded.at("epoch").to_int(); step < 10; ++step) train_step(resumed, x, y);

  auto a = straight.model.state_dict(), b = resumed.model.state_dict();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].second.equal(b[i].second)) << a[i].first;
  EXPECT_EQ(straight.opt.param_groups[0].lr(), resumed.opt.param_groups[0].lr());
}
