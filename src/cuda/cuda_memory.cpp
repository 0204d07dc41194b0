// The CUDA allocators: device memory through the caching allocator, pinned host memory through
// a small cache of its own (cuda_memory.h).
#include "cuda/cuda_memory.h"

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/cuda_state.h"
#include "ember/core/errors.h"

namespace ember::cuda {
namespace {

// What the caching allocator asks of one GPU.
class CudaRawMemory final : public RawDeviceMemory {
 public:
  explicit CudaRawMemory(int device) : device_(device) {}
  void* raw_alloc(size_t nbytes) override {
    GpuGuard g(device_);
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, nbytes);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // clear the sticky-free error so the next call starts clean
      return nullptr;
    }
    EMBER_CUDA_CHECK(err);
    return p;
  }
  void raw_free(void* ptr) override {
    GpuGuard g(device_);
    EMBER_CUDA_CHECK(cudaFree(ptr));
  }
  void mem_get_info(size_t* free_bytes, size_t* total_bytes) override {
    GpuGuard g(device_);
    EMBER_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
  }
  void* record_event(int64_t stream) override {
    GpuGuard g(device_);
    cudaEvent_t e;
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    EMBER_CUDA_CHECK(cudaEventRecord(e, stream_handle(Stream{Device(DeviceType::CUDA, int16_t(device_)), stream})));
    return e;
  }
  bool query_event(void* event) override {
    return cuda_ready(cudaEventQuery(static_cast<cudaEvent_t>(event)), "cudaEventQuery");
  }
  void release_event(void* event) override { EMBER_CUDA_CHECK(cudaEventDestroy(static_cast<cudaEvent_t>(event))); }
  void synchronize_device() override {
    GpuGuard g(device_);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
  }

 private:
  int device_;
};

struct DeviceSlot {
  std::once_flag made;
  std::unique_ptr<CudaRawMemory> raw;
  std::unique_ptr<CachingAllocator> allocator;
};
DeviceSlot& slot(int device) {
  // Never destroyed: tensors held by static objects may be freed after main returns.
  static auto* slots = new DeviceSlot[kMaxGpus];
  return slots[device];
}

// The Allocator the Storage of a CUDA tensor comes from: memory on the device named (its
// current device when unnamed), on that device's current stream.
class CudaAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device device) override {
    int index = device.has_index() ? device.index : current_gpu();
    if (nbytes == 0) return {};
    void* p = device_allocator(index).malloc(nbytes, current_stream_of(index).id);
    return {p, [](void* ptr, void* ctx) { device_allocator(int(reinterpret_cast<intptr_t>(ctx))).free(ptr); },
            reinterpret_cast<void*>(intptr_t(index))};
  }
};

const bool registered = [] {
  static CudaAllocator allocator;
  set_allocator(DeviceType::CUDA, &allocator);
  return true;
}();

// ---- pinned host memory
struct PinnedBlock {
  size_t size;
  bool in_use = false;
  std::vector<cudaEvent_t> pending;  // copies that may still touch it
};

class PinnedCache {
 public:
  DataPtr allocate(size_t nbytes) {
    if (nbytes == 0) return {};
    size_t size = round_up(nbytes);
    std::lock_guard g(mu_);
    reclaim_locked();
    auto it = free_.lower_bound(size);
    void* p = nullptr;
    if (it != free_.end() && it->first == size) {
      p = it->second;
      free_.erase(it);
    } else {
      EMBER_CHECK(gpu_count() > 0, "pin_memory: no CUDA GPU is available to pin host memory for");
      cudaError_t err = cudaHostAlloc(&p, size, cudaHostAllocDefault);
      if (err != cudaSuccess) {
        (void)cudaGetLastError();
        release_free_locked();  // give cached blocks back and try once more
        EMBER_CUDA_CHECK(cudaHostAlloc(&p, size, cudaHostAllocDefault));
      }
      blocks_[p] = PinnedBlock{size, false, {}};
    }
    blocks_[p].in_use = true;
    return {p, [](void* ptr, void*) { instance().release(ptr); }, nullptr};
  }

  bool contains(const void* p) {
    std::lock_guard g(mu_);
    return find_locked(p) != nullptr;
  }

  void record(const void* p, Stream stream) {
    std::lock_guard g(mu_);
    PinnedBlock* b = find_locked(p);
    if (!b) return;  // not ours (registered elsewhere): nothing to keep alive
    GpuGuard guard(stream.device.index);
    cudaEvent_t e;
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    EMBER_CUDA_CHECK(cudaEventRecord(e, stream_handle(stream)));
    b->pending.push_back(e);
  }

  static PinnedCache& instance() {
    static auto* c = new PinnedCache;
    return *c;
  }

 private:
  // Powers of two, as torch's host allocator: few distinct sizes, so blocks are reused.
  static size_t round_up(size_t n) {
    size_t s = 4096;
    while (s < n) s <<= 1;
    return s;
  }
  PinnedBlock* find_locked(const void* p) {
    auto it = blocks_.upper_bound(const_cast<void*>(p));
    if (it == blocks_.begin()) return nullptr;
    --it;
    auto* base = static_cast<const char*>(it->first);
    return static_cast<const char*>(p) < base + it->second.size ? &it->second : nullptr;
  }
  void release(void* p) {
    std::lock_guard g(mu_);
    auto it = blocks_.find(p);
    if (it == blocks_.end()) return;
    it->second.in_use = false;
    if (it->second.pending.empty()) free_.emplace(it->second.size, p);
    else waiting_.push_back(p);
  }
  // Blocks whose copies have all finished become reusable.
  void reclaim_locked() {
    for (size_t i = 0; i < waiting_.size();) {
      PinnedBlock& b = blocks_[waiting_[i]];
      std::erase_if(b.pending, [](cudaEvent_t e) {
        if (!cuda_ready(cudaEventQuery(e), "cudaEventQuery")) return false;
        (void)cudaEventDestroy(e);
        return true;
      });
      if (b.pending.empty()) {
        free_.emplace(b.size, waiting_[i]);
        waiting_[i] = waiting_.back();
        waiting_.pop_back();
      } else {
        ++i;
      }
    }
  }
  void release_free_locked() {
    for (auto& [size, p] : free_) {
      (void)cudaFreeHost(p);
      blocks_.erase(p);
    }
    free_.clear();
  }

  std::mutex mu_;
  std::map<void*, PinnedBlock> blocks_;  // by address: find the block holding a pointer
  std::multimap<size_t, void*> free_;
  std::vector<void*> waiting_;
};

}  // namespace

CachingAllocator& device_allocator(int device) {
  EMBER_CHECK_INDEX(device >= 0 && device < gpu_count(), "CUDA error: invalid device ordinal ", device,
                    " (there are ", gpu_count(), " CUDA device(s))");
  DeviceSlot& s = slot(device);
  std::call_once(s.made, [&] {
    s.raw = std::make_unique<CudaRawMemory>(device);
    s.allocator = std::make_unique<CachingAllocator>(*s.raw, "CUDA", device);
  });
  return *s.allocator;
}

void empty_all_caches() {
  for (int i = 0; i < gpu_count(); ++i) device_allocator(i).empty_cache();
}

DataPtr allocate_pinned(size_t nbytes) { return PinnedCache::instance().allocate(nbytes); }
bool is_pinned_ptr(const void* p) { return p && PinnedCache::instance().contains(p); }
void record_pinned_use(const void* p, Stream stream) { PinnedCache::instance().record(p, stream); }

}  // namespace ember::cuda
