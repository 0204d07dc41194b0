#include "ember/core/storage.h"

#include <cstdlib>
#include <new>

#include "ember/core/errors.h"

namespace ember {

namespace {
// 64-byte aligned host memory: one cache line, the width of an AVX-512 vector.
class CPUAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device) override {
    if (nbytes == 0) return {};
    size_t rounded = (nbytes + 63) & ~size_t(63);
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw Error(detail::cat("CPU allocator: out of memory allocating ", nbytes, " bytes"));
    return {p, [](void* ptr, void*) { std::free(ptr); }, nullptr};
  }
};

Allocator*& allocator_slot(DeviceType t) {
  static CPUAllocator cpu;
  static Allocator* slots[kNumDeviceTypes] = {&cpu, nullptr, nullptr};
  return slots[int(t)];
}
}  // namespace

Allocator* get_allocator(DeviceType type) { return allocator_slot(type); }
void set_allocator(DeviceType type, Allocator* a) { allocator_slot(type) = a; }

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  Allocator* a = get_allocator(device.type);
  EMBER_CHECK(a, "no allocator registered for device ", device.str(),
              " (was ember built with this backend?)");
  data_ = a->allocate(nbytes, device);
}

Storage::Storage(void* data, size_t nbytes, Device device, void (*deleter)(void*, void*), void* ctx)
    : data_{data, deleter, ctx}, nbytes_(nbytes), device_(device) {}

Storage::~Storage() {
  if (data_.deleter) data_.deleter(data_.ptr, data_.ctx);
}

}  // namespace ember
