// The backend contract (core/backend.h): device count, the current device and DeviceGuard,
// streams and StreamGuard, synchronize, per-device generators, byte copies; the default device;
// and the device harness itself (device_test.h) on the CPU and the test device.
#include <thread>

#include "device_test.h"
#include "ember/core/backend.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

TEST(Backend, CpuIsTrivialAndAlwaysThere) {
  ASSERT_TRUE(has_device_backend(DeviceType::CPU));
  DeviceBackend& cpu = device_backend(DeviceType::CPU);
  EXPECT_EQ(cpu.device_count(), 1);
  EXPECT_EQ(cpu.current_device(), 0);
  EXPECT_EQ(cpu.current_stream(0), Stream{});
  EXPECT_TRUE(cpu.query_stream(Stream{}));
  EXPECT_EQ(&default_generator(Device("cpu")), &default_generator());
  synchronize(Device("cpu"));  // nothing queued: returns
  EXPECT_THROW_MSG(cpu.set_device(1), IndexError, "CPU device index must be 0, got 1");
  EXPECT_THROW_MSG(register_device_backend(DeviceType::CPU, nullptr), Error, "cannot be replaced");
  float src[3] = {1, 2, 3}, dst[3] = {};
  copy_bytes(dst, Device("cpu"), src, Device("cpu"), sizeof src);
  EXPECT_EQ(dst[2], 3.0f);
}

TEST(Backend, MissingBackendIsAClearError) {
  if (has_device_backend(DeviceType::CUDA)) GTEST_SKIP() << "this build has a CUDA backend";
  EXPECT_THROW_MSG(synchronize(Device("cuda:0")), Error,
                   "no backend is registered for device type 'cuda' (this build of ember has no CUDA support)");
  EXPECT_THROW_MSG(DeviceGuard g(Device("cuda:0")), Error, "no backend is registered for device type 'cuda'");
}

TEST(Backend, DeviceGuardSwitchesAndRestores) {
  Device d1 = test_device(1);
  DeviceBackend& b = device_backend(d1.type);
  ASSERT_EQ(b.current_device(), 0);
  {
    DeviceGuard g(d1);
    EXPECT_EQ(b.current_device(), 1);
    EXPECT_EQ(g.original_device(), test_device(0));
    EXPECT_EQ(resolve_device(Device(DeviceType::PrivateUse1)), d1);  // "testdevice" = the current one
    {
      DeviceGuard inner(test_device(0));
      EXPECT_EQ(b.current_device(), 0);
    }
    EXPECT_EQ(b.current_device(), 1);
    // A tensor made on "testdevice" without an index lands on the current device.
    EXPECT_EQ(zeros({2}, {.device = Device(DeviceType::PrivateUse1)}).device(), d1);
  }
  EXPECT_EQ(b.current_device(), 0);
  EXPECT_THROW_MSG(DeviceGuard g(Device(DeviceType::PrivateUse1, 5)), IndexError,
                   "Invalid device testdevice:5: there are 2 testdevice device(s)");
}

TEST(Backend, StreamGuardSetsTheCurrentStream) {
  Device d0 = test_device(0);
  DeviceBackend& b = device_backend(d0.type);
  Stream s = b.new_stream(1);
  EXPECT_EQ(s.device, test_device(1));
  EXPECT_NE(s.id, 0);
  {
    StreamGuard g(s);
    EXPECT_EQ(b.current_device(), 1);
    EXPECT_EQ(b.current_stream(1), s);
    EXPECT_EQ(b.current_stream(0).id, 0);
  }
  EXPECT_EQ(b.current_device(), 0);
  EXPECT_EQ(b.current_stream(1).id, 0);
}

TEST(Backend, EachDeviceHasItsOwnGeneratorAndManualSeedSeedsAll) {
  Device d = test_device(0);
  Generator& g = default_generator(d);
  EXPECT_NE(&g, &default_generator());
  EXPECT_NE(&g, &default_generator(test_device(1)));
  manual_seed(123);
  EXPECT_EQ(g.initial_seed(), 123u);
  EXPECT_EQ(default_generator(test_device(1)).initial_seed(), 123u);
  // A random op on the device draws from the device's generator, not the CPU's.
  std::string cpu_state = default_generator().get_state();
  std::string dev_state = g.get_state();
  Tensor r = rand({16}, {.device = d});
  EXPECT_EQ(r.device(), d);
  EXPECT_EQ(default_generator().get_state(), cpu_state);
  EXPECT_NE(g.get_state(), dev_state);
  // Same seed, same stream of numbers on either device.
  manual_seed(7);
  Tensor on_cpu = randn({32});
  manual_seed(7);
  Tensor on_dev = randn({32}, {.device = d});
  EXPECT_EQ(on_dev.tolist<float>(), on_cpu.tolist<float>());
}

TEST(Backend, CopyBytesToFromAndWithinTheDevice) {
  Device d = test_device(0);
  Tensor a = empty({4}, {.device = d});
  Tensor b = empty({4}, {.device = d});
  float host[4] = {1, 2, 3, 4}, back[4] = {};
  copy_bytes(a.data_ptr(), d, host, Device("cpu"), sizeof host);
  copy_bytes(b.data_ptr(), d, a.data_ptr(), d, sizeof host);
  copy_bytes(back, Device("cpu"), b.data_ptr(), d, sizeof back);
  EXPECT_EQ(std::vector<float>(back, back + 4), (std::vector<float>{1, 2, 3, 4}));
}

TEST(DefaultDevice, FactoriesFollowItExplicitDevicesWin) {
  Device d = test_device(0);
  EXPECT_EQ(default_device(), Device("cpu"));
  int64_t allocs = test_device_allocations();
  {
    DefaultDeviceGuard g(d);
    EXPECT_EQ(zeros({2, 3}).device(), d);
    EXPECT_EQ(randn({2}).device(), d);
    EXPECT_EQ(arange(5).device(), d);
    EXPECT_EQ(tensor({{1.0, 2.0}, {3.0, 4.0}}).device(), d);
    EXPECT_EQ(tensor({1.0, 2.0}).tolist<float>(), (std::vector<float>{1, 2}));
    EXPECT_EQ(ones({2}, {.device = Device("cpu")}).device(), Device("cpu"));
    // Memory the caller owns is host memory unless the caller says otherwise.
    float host[2] = {5, 6};
    EXPECT_EQ(from_blob(host, {2}).device(), Device("cpu"));
    // Per thread, as torch's: another thread still makes CPU tensors.
    Device other;
    std::thread([&] { other = zeros({1}).device(); }).join();
    EXPECT_EQ(other, Device("cpu"));
  }
  EXPECT_GT(test_device_allocations(), allocs);  // the device's allocator served the factories
  EXPECT_EQ(zeros({1}).device(), Device("cpu"));
}

// The harness itself: the body runs once per device, with that device as the default.
EMBER_DEVICE_TEST(DeviceHarness, BodyRunsOnEveryDevice) {
  Tensor a = tensor({1.0, 2.0, 3.0});
  Tensor b = full({3}, 0.5);
  EXPECT_EQ(a.device(), device());
  Tensor c = a * b + 1;  // a wrapped number joins on the device
  EXPECT_EQ(c.device(), device());
  EXPECT_EQ(c.tolist<float>(), (std::vector<float>{1.5f, 2.0f, 2.5f}));
  Tensor s = c.sum();
  EXPECT_EQ(s.device(), device());
  EXPECT_FLOAT_EQ(s.item<float>(), 6.0f);
  // In-place ops return the caller's tensor and bump its version.
  uint32_t v = a.impl()->version();
  Tensor& r = a.add_(1);
  EXPECT_EQ(&r, &a);
  EXPECT_GT(a.impl()->version(), v);
  EXPECT_EQ(a.tolist<float>(), (std::vector<float>{2, 3, 4}));
  // Round trip through the host.
  EXPECT_EQ(a.cpu().device(), Device("cpu"));
  EXPECT_EQ(a.cpu().to(device()).tolist<float>(), a.tolist<float>());
}

EMBER_DEVICE_TEST(DeviceHarness, AutogradRunsOnTheDevice) {
  Tensor x = tensor({1.0, -2.0, 3.0}).requires_grad_();
  Tensor y = (x * x).sum();
  y.backward();
  EXPECT_EQ(x.grad().device(), device());
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{2, -4, 6}));
}

// Moving a tensor that requires grad between devices is differentiable both ways (it once
// recursed forever: Tensor::to(device) copied through copy_'s autograd kernel, which called to()).
TEST(Backend, CrossDeviceCopiesAreDifferentiable) {
  Device d = test_device(0);
  Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor on_dev = x.to(d);
  EXPECT_EQ(on_dev.device(), d);
  EXPECT_TRUE(on_dev.requires_grad());
  (on_dev * on_dev).sum().backward();
  EXPECT_EQ(x.grad().device(), Device("cpu"));
  EXPECT_EQ(x.grad().tolist<float>(), (std::vector<float>{2, 4, 6}));
  // copy_ into a device tensor from a CPU tensor that requires grad.
  Tensor y = tensor({1.0, -1.0}).requires_grad_();
  Tensor buf = zeros({2}, {.device = d});
  buf.copy_(y);
  (buf * 3).sum().backward();
  EXPECT_EQ(y.grad().tolist<float>(), (std::vector<float>{3, 3}));
}
