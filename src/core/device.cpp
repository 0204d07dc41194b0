#include "ember/core/device.h"

#include <charconv>
#include <mutex>

#include "ember/core/errors.h"
#include "ember/options.h"

namespace ember {

namespace {
std::string& privateuse1_name() {
  static std::string name = "privateuseone";
  return name;
}
}  // namespace

void rename_privateuse1_backend(const std::string& name) { privateuse1_name() = name; }

const char* device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::CUDA: return "cuda";
    case DeviceType::PrivateUse1: return privateuse1_name().c_str();
    case DeviceType::Meta: return "meta";
  }
  return "unknown";
}

Device::Device(std::string_view spec) {
  auto colon = spec.find(':');
  std::string_view type_part = spec.substr(0, colon);
  if (type_part == "cpu") type = DeviceType::CPU;
  else if (type_part == "cuda") type = DeviceType::CUDA;
  else if (type_part == "meta") type = DeviceType::Meta;
  else if (type_part == privateuse1_name()) type = DeviceType::PrivateUse1;
  else
    throw Error(detail::cat("Expected one of cpu, cuda, meta, ", privateuse1_name(),
                            " device type at start of device string: ", spec));
  if (colon != std::string_view::npos) {
    std::string_view idx = spec.substr(colon + 1);
    int v = -1;
    auto [p, ec] = std::from_chars(idx.data(), idx.data() + idx.size(), v);
    EMBER_CHECK(!idx.empty() && ec == std::errc() && p == idx.data() + idx.size() && v >= 0 && v < 32768,
                "Invalid device string: '", spec, "'");
    EMBER_CHECK(type != DeviceType::CPU || v == 0, "CPU device index must be 0, got ", v);
    index = int16_t(v);
  }
}

std::string Device::str() const {
  std::string s = device_type_name(type);
  if (index >= 0) s += ":" + std::to_string(index);
  return s;
}

namespace {
thread_local Device thread_default_device{DeviceType::CPU};
}
Device default_device() { return thread_default_device; }
void set_default_device(Device device) { thread_default_device = device; }

DType TensorOptions::dtype_or_default() const { return dtype ? *dtype : default_dtype(); }

}  // namespace ember
