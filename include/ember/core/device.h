#pragma once
// Where a tensor lives: "cpu", "cuda:0", ... spelled as PyTorch spells them.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace ember {

// PrivateUse1 is the slot an out-of-tree backend registers into (as in PyTorch). Meta tensors
// have sizes, strides and a dtype but no memory (src/meta/): a model built on "meta" costs no
// memory until to_empty() or load_state_dict(assign=True) gives it real tensors. Meta is the
// last device type, so the dispatcher picks it over every other device an op's arguments name.
enum class DeviceType : int8_t { CPU = 0, CUDA = 1, PrivateUse1 = 2, Meta = 3 };
inline constexpr int kNumDeviceTypes = 4;
inline constexpr DeviceType kCPU = DeviceType::CPU, kCUDA = DeviceType::CUDA, kMeta = DeviceType::Meta;

const char* device_type_name(DeviceType t);

struct Device {
  DeviceType type = DeviceType::CPU;
  int16_t index = -1;  // -1: "the current one"

  constexpr Device() = default;
  constexpr Device(DeviceType t, int16_t i = -1) : type(t), index(i) {}
  // Parses "cpu", "cuda", "cuda:1"; throws on anything else.
  Device(std::string_view spec);
  Device(const char* spec) : Device(std::string_view(spec)) {}
  Device(const std::string& spec) : Device(std::string_view(spec)) {}

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool is_meta() const { return type == DeviceType::Meta; }
  bool has_index() const { return index >= 0; }
  std::string str() const;
  bool operator==(const Device&) const = default;
};

// torch.set_default_device: where factories (empty, zeros, randn, tensor, arange, ...) put a
// tensor when their options name no device. Per thread, as torch's (a DataLoader worker thread
// keeps making CPU tensors). Starts as the CPU.
Device default_device();
void set_default_device(Device device);
// Sets the default device for the guard's lifetime, then restores the previous one.
class DefaultDeviceGuard {
 public:
  explicit DefaultDeviceGuard(Device device) : saved_(default_device()) { set_default_device(device); }
  ~DefaultDeviceGuard() { set_default_device(saved_); }
  DefaultDeviceGuard(const DefaultDeviceGuard&) = delete;
  DefaultDeviceGuard& operator=(const DefaultDeviceGuard&) = delete;

 private:
  Device saved_;
};

// Registers a name for PrivateUse1 ("privateuseone" by default), as torch's
// rename_privateuse1_backend does.
void rename_privateuse1_backend(const std::string& name);

}  // namespace ember
