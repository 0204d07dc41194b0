#include "ember/core/storage.h"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#include "ember/core/errors.h"

namespace ember {

namespace {
// Host memory. Small blocks: 64-byte aligned (one cache line, one AVX-512 vector) from malloc.
// Large blocks (>= 1 MiB) are what training loops allocate and free every step; fresh ones cost a
// page fault per 4 KiB, which dominates a memory-bound op such as a 16M-element add. So large
// blocks are 2 MiB aligned with transparent huge pages requested, and freed ones are cached by
// size for reuse, up to a cap (EMBER_CPU_CACHE_MB, default 1024; 0 disables the cache).
class CPUAllocator final : public Allocator {
 public:
  static constexpr size_t kLarge = size_t(1) << 20;
  static constexpr size_t kHuge = size_t(2) << 20;

  CPUAllocator() {
    if (const char* env = std::getenv("EMBER_CPU_CACHE_MB")) cap_ = size_t(std::strtoull(env, nullptr, 10)) << 20;
  }

  DataPtr allocate(size_t nbytes, Device) override {
    if (nbytes == 0) return {};
    if (nbytes < kLarge) {
      void* p = std::aligned_alloc(64, (nbytes + 63) & ~size_t(63));
      if (!p) throw Error(detail::cat("CPU allocator: out of memory allocating ", nbytes, " bytes"));
      return {p, [](void* ptr, void*) { std::free(ptr); }, nullptr};
    }
    size_t rounded = (nbytes + kHuge - 1) & ~(kHuge - 1);
    void* p = take_cached(rounded);
    if (!p) {
      p = std::aligned_alloc(kHuge, rounded);
      if (!p) {
        empty_cache();  // give cached blocks back and try once more
        p = std::aligned_alloc(kHuge, rounded);
      }
      if (!p) throw Error(detail::cat("CPU allocator: out of memory allocating ", nbytes, " bytes"));
      madvise(p, rounded, MADV_HUGEPAGE);
    }
    return {p, [](void* ptr, void* ctx) { instance().release(ptr, reinterpret_cast<size_t>(ctx)); },
            reinterpret_cast<void*>(rounded)};
  }

  // Never destroyed: tensors held by other static objects may be freed after main returns.
  static CPUAllocator& instance() {
    static CPUAllocator* a = new CPUAllocator;
    return *a;
  }

  void empty_cache() {
    std::lock_guard g(mu_);
    for (auto& [size, p] : cache_) std::free(p);
    cache_.clear();
    cached_bytes_ = 0;
  }
  size_t cached_bytes() {
    std::lock_guard g(mu_);
    return cached_bytes_;
  }

 private:
  void* take_cached(size_t rounded) {
    std::lock_guard g(mu_);
    auto it = cache_.find(rounded);
    if (it == cache_.end()) return nullptr;
    void* p = it->second;
    cache_.erase(it);
    cached_bytes_ -= rounded;
    return p;
  }
  void release(void* p, size_t rounded) {
    {
      std::lock_guard g(mu_);
      if (cached_bytes_ + rounded <= cap_) {
        cache_.emplace(rounded, p);
        cached_bytes_ += rounded;
        return;
      }
    }
    std::free(p);
  }

  std::mutex mu_;
  std::multimap<size_t, void*> cache_;
  size_t cached_bytes_ = 0;
  size_t cap_ = size_t(1024) << 20;
};

Allocator*& allocator_slot(DeviceType t) {
  static CPUAllocator& cpu = CPUAllocator::instance();
  static Allocator* slots[kNumDeviceTypes] = {&cpu, nullptr, nullptr, nullptr};
  return slots[int(t)];
}
}  // namespace

void empty_cpu_cache() { CPUAllocator::instance().empty_cache(); }
size_t cpu_cached_bytes() { return CPUAllocator::instance().cached_bytes(); }

std::atomic<MemoryReporter> g_memory_reporter{nullptr};

Allocator* get_allocator(DeviceType type) { return allocator_slot(type); }
void set_allocator(DeviceType type, Allocator* a) { allocator_slot(type) = a; }

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) { allocate_data(); }

void Storage::allocate_data() {
  EMBER_CHECK(!data_.ptr, "Storage::allocate_data: the storage already holds memory");
  if (device_.is_meta()) {  // sizes without memory: reading its data raises (TensorImpl::data)
    released_ = true;
    return;
  }
  Allocator* a = get_allocator(device_.type);
  EMBER_CHECK(a, "no allocator registered for device ", device_.str(),
              " (was ember built with this backend?)");
  data_ = a->allocate(nbytes_, device_);
  released_ = false;
  if (MemoryReporter report = memory_reporter(); report && data_.ptr) {
    report(data_.ptr, int64_t(nbytes_), device_);
    reported_ = true;
  }
}

void Storage::release_data() {
  if (released_) return;
  if (data_.deleter) data_.deleter(data_.ptr, data_.ctx);
  // Only frees of allocations the reporter saw, as torch's profiled CPU allocator reports them.
  if (reported_)
    if (MemoryReporter report = memory_reporter()) report(data_.ptr, -int64_t(nbytes_), device_);
  data_ = {};
  reported_ = false;
  released_ = true;
}

Storage::Storage(void* data, size_t nbytes, Device device, void (*deleter)(void*, void*), void* ctx)
    : data_{data, deleter, ctx}, nbytes_(nbytes), device_(device) {}

Storage::~Storage() { release_data(); }

}  // namespace ember
