#pragma once
// One test body, every device: EMBER_DEVICE_TEST(Suite, Name) { ... } runs its body once per
// device in test_devices() (the CPU, the test device of test_device.cpp, and CUDA when a GPU is
// there), with that device as the default device (ember::set_default_device), so factories in
// the body (tensor, randn, zeros, make_input, ...) make tensors there and the ops under test run
// on its kernels. Results are read back with tolist()/item(), which copy to the host. The
// running device is `device()`. Candle's test_device! and ggml's test-backend-ops are the models.
//
//   EMBER_DEVICE_TEST(Unary, Exp) {
//     Tensor x = randn({3, 4});            // on device()
//     EXPECT_TRUE(close_to(x.exp(), ref_unary(ref_of(x), [](double v) { return std::exp(v); })));
//   }
//
// ctest lists each run as Suite/Suite_Name.on/<device> (e.g. Unary/Unary_Exp.on/testdevice_0).
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember {
// gtest prints a device parameter as its name ("testdevice:0"), not as bytes.
inline void PrintTo(const Device& d, std::ostream* os) { *os << d.str(); }
}  // namespace ember

namespace ember::testing {

// The test device (PrivateUse1, named "testdevice"), registered on first use.
Device test_device(int index = 0);
// How many storages the test device's allocator has handed out (to check that a backend's
// allocations go through its allocator).
int64_t test_device_allocations();
// Every device an op test runs on.
std::vector<Device> test_devices();

class DeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override { default_device_.emplace(GetParam()); }
  void TearDown() override { default_device_.reset(); }
  Device device() const { return GetParam(); }

 private:
  std::optional<DefaultDeviceGuard> default_device_;
};

struct DeviceParamName {
  std::string operator()(const ::testing::TestParamInfo<Device>& info) const {
    std::string s = info.param.str();
    for (char& ch : s) if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return s;
  }
};

// torch names a kernel after its backend in dtype errors ("bitwise_or_cpu" on the CPU,
// "bitwise_or_cuda" on CUDA): the quoted name a test on `d` expects. The test device runs the
// CPU kernels, so it has the CPU's names.
inline std::string kernel_name(Device d, const char* cpu, const char* cuda) {
  return std::string("\"") + (d.is_cuda() ? cuda : cpu) + "\"";
}

// Skips the running case on CUDA with the reason (a feature the CUDA backend does not have yet,
// or one torch's CUDA backend does not have either): visible in the test output, never silent.
#define EMBER_SKIP_ON_CUDA(reason) \
  do {                             \
    if (device().is_cuda()) GTEST_SKIP() << (reason); \
  } while (0)

// Runs one case's body. On CUDA, a body that reaches an op with no CUDA kernel yet (the nn
// kernels are CUDA part 2's, the linalg decompositions have none) is reported as skipped with
// that op's name, not as a failure of the op under test; every other error fails as usual.
void run_device_case(Device device, const std::function<void()>& body);

}  // namespace ember::testing

#define EMBER_DEVICE_TEST(suite, name)                                                          \
  class suite##_##name : public ::ember::testing::DeviceTest {                                   \
   protected:                                                                                    \
    void body();                                                                                 \
  };                                                                                             \
  INSTANTIATE_TEST_SUITE_P(suite, suite##_##name, ::testing::ValuesIn(::ember::testing::test_devices()), \
                           ::ember::testing::DeviceParamName{});                                \
  TEST_P(suite##_##name, on) { ::ember::testing::run_device_case(GetParam(), [this] { body(); }); } \
  void suite##_##name::body()
