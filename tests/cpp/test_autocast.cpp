// Autocast's accelerator column (src/amp/autocast_policy.h) on the test device, which stands in
// for CUDA on a machine without a GPU (torch's accelerators share that column), the region
// guard's state handling, and the C++ GradScaler against torch's recorded sequence.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "device_test.h"
#include "ember/amp.h"
#include "ember/ember.h"
#include "ember/nn/functional.h"
#include "ember/optim.h"
#include "ember/serialize/value.h"

namespace ember {
namespace {

namespace F = nn::functional;
using amp::AutocastGuard;

constexpr DeviceType kAccel = DeviceType::PrivateUse1;

Tensor on_test_device(IntArrayRef size, DType dtype = DType::Float32) {
  return (rand(size) + 0.5).to(testing::test_device(), dtype);
}

TEST(AutocastAccelerator, LowerPrecisionOps) {
  AutocastGuard autocast(kAccel);  // float16 by default, as torch's accelerators
  ASSERT_TRUE(amp::is_autocast_enabled(kAccel));
  Tensor a = on_test_device({3, 4}), b = on_test_device({4, 5});
  EXPECT_EQ(mm(a, b).dtype(), DType::Float16);
  EXPECT_EQ(matmul(a, b).dtype(), DType::Float16);
  EXPECT_EQ(F::linear(a, on_test_device({5, 4}), on_test_device({5})).dtype(), DType::Float16);
  EXPECT_EQ(F::conv2d(on_test_device({1, 2, 5, 5}), on_test_device({3, 2, 3, 3})).dtype(), DType::Float16);
  EXPECT_EQ(mv(a, on_test_device({4})).dtype(), DType::Float16);  // CUDA lists mv; the CPU does not
  // float64 and integer inputs are never cast.
  EXPECT_EQ(mm(a.to(DType::Float64), b.to(DType::Float64)).dtype(), DType::Float64);
}

TEST(AutocastAccelerator, Float32Ops) {
  AutocastGuard autocast(kAccel);
  Tensor h = on_test_device({3, 4}, DType::Float16);
  EXPECT_EQ(h.exp().dtype(), DType::Float32);
  EXPECT_EQ(h.log().dtype(), DType::Float32);
  EXPECT_EQ(pow(h, h).dtype(), DType::Float32);
  EXPECT_EQ(F::layer_norm(h, {4}).dtype(), DType::Float32);
  EXPECT_EQ(F::mse_loss(h, h).dtype(), DType::Float32);
  EXPECT_EQ(F::cross_entropy(h, tensor({0, 1, 2}).to(testing::test_device())).dtype(), DType::Float32);
  EXPECT_EQ(h.relu().dtype(), DType::Float16);  // not listed: runs in its input type
  EXPECT_EQ((h + h).dtype(), DType::Float16);
}

TEST(AutocastAccelerator, Float32SetOptDtypeOps) {
  AutocastGuard autocast(kAccel);
  Tensor h = on_test_device({3, 4}, DType::Float16);
  EXPECT_EQ(h.sum().dtype(), DType::Float32);
  EXPECT_EQ(h.softmax(1).dtype(), DType::Float32);
  EXPECT_EQ(h.cumsum(1).dtype(), DType::Float32);
  // A dtype the caller gives wins.
  EXPECT_EQ(sum(h, {}, false, DType::Float16).dtype(), DType::Float16);
  // The float32 sum of float16 values accumulates in float32 and is returned as float32.
  Tensor ref = h.to(DType::Float32).sum();
  EXPECT_NEAR(h.sum().item<double>(), ref.item<double>(), 1e-5);
}

TEST(AutocastAccelerator, PromoteAndBanned) {
  AutocastGuard autocast(kAccel);
  Tensor h = on_test_device({3}, DType::Float16), f = on_test_device({3});
  EXPECT_EQ(addcmul(h, h, h).dtype(), DType::Float16);
  EXPECT_EQ(addcmul(h, f, h).dtype(), DType::Float32);
  EXPECT_EQ(dot(h, f).dtype(), DType::Float32);  // dot itself would reject the mix
  Tensor bf = on_test_device({3}, DType::BFloat16);
  try {
    (void)dot(h, bf);
    FAIL() << "a bfloat16 input in a float16 region must be refused by promote";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unexpected floating dtype"), std::string::npos) << e.what();
  }
  Tensor p = on_test_device({2, 3}).clamp(0.1, 0.9);
  try {
    (void)F::binary_cross_entropy(p, p);
    FAIL() << "binary_cross_entropy is banned under accelerator autocast";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("are unsafe to autocast"), std::string::npos) << e.what();
  }
}

TEST(AutocastAccelerator, OtherDevicesAndGuardState) {
  Tensor a = rand({2, 3}), b = rand({3, 2});
  {
    AutocastGuard autocast(kAccel);
    EXPECT_EQ(mm(a, b).dtype(), DType::Float32);  // CPU tensors: the CPU has no region here
    {
      AutocastGuard off(kAccel, std::nullopt, /*enabled=*/false);
      EXPECT_FALSE(amp::is_autocast_enabled(kAccel));
      EXPECT_EQ(mm(on_test_device({2, 3}), on_test_device({3, 2})).dtype(), DType::Float32);
    }
    EXPECT_TRUE(amp::is_autocast_enabled(kAccel));
    AutocastGuard cpu(DeviceType::CPU);
    EXPECT_EQ(mm(a, b).dtype(), DType::BFloat16);
  }
  EXPECT_FALSE(amp::is_autocast_enabled(kAccel));
  EXPECT_FALSE(amp::is_autocast_enabled(DeviceType::CPU));
  EXPECT_EQ(mm(a, b).dtype(), DType::Float32);
}

TEST(AutocastAccelerator, GradientsReachFloat32Parameters) {
  Tensor w = on_test_device({5, 4}).requires_grad_(), x = on_test_device({3, 4});
  Tensor out;
  {
    AutocastGuard autocast(kAccel);
    out = F::linear(x, w);
    ASSERT_EQ(out.dtype(), DType::Float16);
  }
  out.to(DType::Float32).sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), DType::Float32);
  EXPECT_EQ(w.grad().device(), testing::test_device());
  // d sum(x w^T) / dw = column sums of x, broadcast over the rows of w.
  Tensor expect = x.sum({0}, true).expand({5, 4}).to(Device(DeviceType::CPU));
  EXPECT_TRUE(allclose(w.grad().to(Device(DeviceType::CPU)), expect, 1e-2, 1e-2));
}

// The C++ GradScaler: the scenario of tests/python/test_amp.py, whose sequence equals torch 2.15's.
TEST(GradScaler, SequenceEqualsTorch) {
  Tensor p = ones({3}).requires_grad_();
  Tensor q = ones({2}, {.dtype = DType::Float64}).requires_grad_();
  optim::SGD opt({p, q}, {.lr = 0.1});
  amp::GradScaler scaler(Device(DeviceType::CPU), {.init_scale = 1024.0, .growth_interval = 3});
  struct Row { double scale; bool stepped; int64_t tracker; };
  const std::vector<Row> expected = {{1024, true, 1}, {1024, true, 2}, {512, false, 0}, {256, false, 0},
                                     {256, true, 1},  {256, true, 2},  {512, true, 0},  {256, false, 0},
                                     {256, true, 1},  {128, false, 0}, {128, true, 1},  {128, true, 2}};
  for (int i = 0; i < 12; ++i) {
    opt.zero_grad();
    Tensor loss = scaler.scale((p * arange(1.0, 4.0)).sum() + q.sum());
    loss.backward();
    if (i == 2 || i == 7) p.mutable_grad().select(0, 1).fill_(std::numeric_limits<double>::infinity());
    if (i == 3) p.mutable_grad().select(0, 1).fill_(std::nan(""));
    if (i == 9) q.mutable_grad().select(0, 0).fill_(-std::numeric_limits<double>::infinity());
    bool stepped = scaler.step(opt);
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), expected[i].scale) << "iteration " << i;
    EXPECT_EQ(stepped, expected[i].stepped) << "iteration " << i;
    EXPECT_EQ(scaler.growth_tracker(), expected[i].tracker) << "iteration " << i;
  }
  auto final_p = p.detach().tolist<double>();
  EXPECT_NEAR(final_p[0], 0.19999992847442627, 1e-6);
  EXPECT_NEAR(final_p[2], -1.399999976158142, 1e-6);
  Value sd = scaler.state_dict();
  EXPECT_EQ(sd.at("scale").to_double(), 128.0);
  EXPECT_EQ(sd.at("_growth_tracker").to_int(), 2);
  amp::GradScaler other(Device(DeviceType::CPU));
  other.load_state_dict(sd);
  EXPECT_EQ(other.get_scale(), 128.0);
  EXPECT_EQ(other.growth_tracker(), 2);
  EXPECT_EQ(other.get_growth_interval(), 3);
}

TEST(GradScaler, StageErrors) {
  Tensor p = ones({2}).requires_grad_();
  optim::SGD opt({p}, {.lr = 0.1});
  amp::GradScaler scaler(Device(DeviceType::CPU));
  EXPECT_THROW(scaler.step(opt), Error);  // before scale()
  scaler.scale(p.sum()).backward();
  scaler.unscale_(opt);
  EXPECT_NEAR(p.grad().tolist<double>()[0], 1.0, 0.0);
  EXPECT_THROW(scaler.unscale_(opt), Error);
  scaler.step(opt);
  EXPECT_THROW(scaler.step(opt), Error);
  scaler.update();
}

}  // namespace
}  // namespace ember
