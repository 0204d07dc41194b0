#pragma once
// Per-device allocators. CPU memory is 64-byte aligned so vector loads never straddle cache
// lines. A backend (CUDA, or a test's fake device) registers its own.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "ember/core/device.h"

namespace ember {

struct DataPtr {
  void* ptr = nullptr;
  void (*deleter)(void* ptr, void* ctx) = nullptr;
  void* ctx = nullptr;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t nbytes, Device device) = 0;
};

Allocator* get_allocator(DeviceType type);
void set_allocator(DeviceType type, Allocator* allocator);

// Storage reports each allocation (bytes > 0) and the free of a reported allocation (bytes < 0)
// to the installed reporter: the profiler installs one while profile_memory is on. One relaxed
// load per allocation when none is installed.
using MemoryReporter = void (*)(const void* ptr, int64_t bytes, Device device);
extern std::atomic<MemoryReporter> g_memory_reporter;
inline MemoryReporter memory_reporter() { return g_memory_reporter.load(std::memory_order_relaxed); }

// The CPU allocator keeps freed blocks of 1 MiB and more for reuse (see storage.cpp).
// empty_cpu_cache() returns them to the system; cpu_cached_bytes() says how much is held.
void empty_cpu_cache();
size_t cpu_cached_bytes();

}  // namespace ember
