// The registry of device kernel builders (device_codegen.h): one slot per device type, filled
// by a backend at load time.
#include "compile/device_codegen.h"

#include <array>
#include <atomic>

namespace ember::compiler {
namespace {
std::array<std::atomic<DeviceKernelBuilder>, kNumDeviceTypes>& builders() {
  static std::array<std::atomic<DeviceKernelBuilder>, kNumDeviceTypes> table{};
  return table;
}
}  // namespace

void register_device_codegen(DeviceType type, DeviceKernelBuilder builder) { builders()[size_t(type)] = builder; }

DeviceKernelBuilder device_codegen(DeviceType type) {
  if (type == DeviceType::CPU) return nullptr;
  return builders()[size_t(type)].load();
}

}  // namespace ember::compiler
