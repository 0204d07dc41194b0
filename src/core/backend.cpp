// The device-backend registry, the CPU's trivial backend, and the generic entry points
// (synchronize, default_generator, copy_bytes, DeviceGuard, StreamGuard) built on it.
#include "ember/core/backend.h"

#include <array>
#include <atomic>
#include <cstring>

#include "ember/core/caching_allocator.h"
#include "ember/core/errors.h"
#include "ember/core/generator.h"

namespace ember {
namespace {

// Host memory: one device, every call complete when it returns, one stream.
class CpuBackend : public DeviceBackend {
 public:
  DeviceType type() const override { return DeviceType::CPU; }
  int device_count() const override { return 1; }
  int current_device() const override { return 0; }
  void set_device(int index) override {
    EMBER_CHECK_INDEX(index == 0, "CPU device index must be 0, got ", index);
  }
  void synchronize(int) override {}
  Stream current_stream(int) const override { return {}; }
  void set_current_stream(Stream stream) override {
    EMBER_CHECK(stream == Stream{}, "the CPU has one stream (id 0), got id ", stream.id);
  }
  Stream new_stream(int, int) override { return {}; }
  void synchronize_stream(Stream) override {}
  bool query_stream(Stream) const override { return true; }
  Generator& default_generator(int) override { return ::ember::default_generator(); }
  void copy_bytes(void* dst, Device, const void* src, Device, size_t nbytes, Stream) override {
    if (dst != src && nbytes) std::memcpy(dst, src, nbytes);
  }
};

// The meta device: one device and one stream as the host's, no memory to copy (its kernels
// never reach copy_bytes: a copy into meta has nothing to move, one out of it raises).
class MetaBackend final : public CpuBackend {
 public:
  DeviceType type() const override { return DeviceType::Meta; }
  void set_device(int index) override { EMBER_CHECK_INDEX(index == 0, "meta device index must be 0, got ", index); }
  void copy_bytes(void*, Device, const void*, Device, size_t, Stream) override {
    throw NotImplementedError("Cannot copy out of meta tensor; no data!");
  }
};

std::array<std::atomic<DeviceBackend*>, kNumDeviceTypes>& registry() {
  static CpuBackend cpu;
  static MetaBackend meta;
  static std::array<std::atomic<DeviceBackend*>, kNumDeviceTypes> backends{};
  static const bool registered = (backends[int(DeviceType::CPU)].store(&cpu), backends[int(DeviceType::Meta)].store(&meta), true);
  (void)registered;
  return backends;
}

}  // namespace

// ---- the optional parts of the contract: a device type without them says so by name
namespace {
[[noreturn]] void lacks(const DeviceBackend& b, const char* what) {
  throw Error(detail::cat(what, " is not supported on device type '", device_type_name(b.type()), "'"));
}
}  // namespace
DeviceProperties DeviceBackend::properties(int) { lacks(*this, "get_device_properties"); }
void DeviceBackend::mem_get_info(int, size_t*, size_t*) { lacks(*this, "mem_get_info"); }
void* DeviceBackend::create_event(int, bool, bool) { lacks(*this, "Event"); }
void DeviceBackend::destroy_event(void*) {}
void DeviceBackend::record_event(void*, Stream) { lacks(*this, "Event.record"); }
void DeviceBackend::wait_event(void*, Stream) { lacks(*this, "Event.wait"); }
bool DeviceBackend::query_event(void*) { lacks(*this, "Event.query"); }
void DeviceBackend::synchronize_event(void*) { lacks(*this, "Event.synchronize"); }
double DeviceBackend::event_elapsed_ms(void*, void*) { lacks(*this, "Event.elapsed_time"); }
int DeviceBackend::stream_priority(Stream) const { return 0; }
DeviceMemoryStats DeviceBackend::memory_stats(int) { return {}; }
void DeviceBackend::reset_peak_memory_stats(int) {}
void DeviceBackend::reset_accumulated_memory_stats(int) {}
void DeviceBackend::empty_cache() {}
void DeviceBackend::record_stream(void*, Stream) {}
CachingAllocator& DeviceBackend::caching_allocator(int) { lacks(*this, "the caching allocator (memory history and snapshots)"); }
DataPtr DeviceBackend::allocate_pinned(size_t) { lacks(*this, "pin_memory"); }
bool DeviceBackend::is_pinned(const void*) const { return false; }
std::unique_ptr<DeviceGraph> DeviceBackend::new_graph() { lacks(*this, "graphs (CUDAGraph)"); }
int64_t DeviceBackend::graph_pool_handle(int) { lacks(*this, "graph memory pools"); }
bool DeviceBackend::is_capturing(Stream) const { return false; }

bool has_device_backend(DeviceType type) { return registry()[int(type)].load() != nullptr; }

DeviceBackend& device_backend(DeviceType type) {
  DeviceBackend* b = registry()[int(type)].load();
  EMBER_CHECK(b != nullptr, "no backend is registered for device type '", device_type_name(type),
              "'", type == DeviceType::CUDA ? " (this build of ember has no CUDA support)" : "");
  return *b;
}

void register_device_backend(DeviceType type, DeviceBackend* backend) {
  EMBER_CHECK(type != DeviceType::CPU, "register_device_backend: the CPU backend cannot be replaced");
  EMBER_CHECK(!backend || backend->type() == type, "register_device_backend: a backend for '",
              device_type_name(backend ? backend->type() : type), "' registered as '", device_type_name(type), "'");
  registry()[int(type)].store(backend);
}

Device resolve_device(Device device) {
  if (device.has_index()) return device;
  return Device(device.type, int16_t(device_backend(device.type).current_device()));
}

void synchronize(Device device) {
  Device d = resolve_device(device);
  device_backend(d.type).synchronize(d.index);
}

Generator& default_generator(Device device) {
  if (device.is_cpu()) return default_generator();
  Device d = resolve_device(device);
  DeviceBackend& b = device_backend(d.type);
  EMBER_CHECK_INDEX(d.index < b.device_count(), "default_generator: device index ", d.index,
                    " is out of range for ", b.device_count(), " ", device_type_name(d.type), " device(s)");
  return b.default_generator(d.index);
}

void manual_seed(uint64_t seed) {
  default_generator().manual_seed(seed);
  for (int t = 1; t < kNumDeviceTypes; ++t) {
    DeviceBackend* b = registry()[t].load();
    if (!b || t == int(DeviceType::Meta)) continue;  // meta has no generator of its own
    for (int i = 0; i < b->device_count(); ++i) b->default_generator(i).manual_seed(seed);
  }
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) {
  // The accelerator's side does the copy: it knows both its own memory and the host's.
  Device owner = dst_device.is_cpu() ? src_device : dst_device;
  DeviceBackend& b = device_backend(owner.type);
  Device resolved = resolve_device(owner);
  b.copy_bytes(dst, dst_device, src, src_device, nbytes, b.current_stream(resolved.index));
}

DeviceGuard::DeviceGuard(Device device) {
  if (device.is_cpu() || !device.has_index()) return;
  DeviceBackend& b = device_backend(device.type);
  EMBER_CHECK_INDEX(device.index < b.device_count(), "Invalid device ", device.str(), ": there are ",
                    b.device_count(), " ", device_type_name(device.type), " device(s)");
  original_ = Device(device.type, int16_t(b.current_device()));
  if (original_.index != device.index) b.set_device(device.index);
  active_ = true;
}

DeviceGuard::~DeviceGuard() {
  if (active_) device_backend(original_.type).set_device(original_.index);
}

StreamGuard::StreamGuard(Stream stream)
    : device_guard_(stream.device),
      original_(device_backend(stream.device.type).current_stream(resolve_device(stream.device).index)) {
  device_backend(stream.device.type).set_current_stream(stream);
}

StreamGuard::~StreamGuard() { device_backend(original_.device.type).set_current_stream(original_); }

}  // namespace ember
