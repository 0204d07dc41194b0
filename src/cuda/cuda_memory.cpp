// The CUDA allocators: device memory through the caching allocator, pinned host memory through
// a small cache of its own (cuda_memory.h).
#include "cuda/cuda_memory.h"

#include <atomic>
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
    // A graph's pool grows during its capture, and a global-mode capture forbids cudaMalloc on
    // every thread: this thread is relaxed for the call (torch's allocator does the same).
    const bool capturing = captures_underway();
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    if (capturing) EMBER_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    cudaError_t err = cudaMalloc(&p, nbytes);
    if (capturing) EMBER_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
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
    // A query during a graph capture would break it (global mode): the block waits, as torch's
    // allocator leaves its events alone while a capture is under way.
    if (captures_underway()) return false;
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

// ---- CUDA graphs' private pools: while a stream is being captured, what is allocated with it
// current comes from the capture's pool, a caching allocator of its own over the same device
// memory, so the addresses the graph recorded stay its own across replays (torch's private
// mempools). A pool lives while a graph holds it or a tensor from it is alive.
struct GraphPool {
  int64_t id;
  int device;
  std::unique_ptr<CachingAllocator> alloc;
  int64_t live = 0;  // blocks handed out, not yet freed (under pools_mu)
  int owners = 0;    // graphs holding it
};
struct Capture {
  int device;
  int64_t stream;
  int64_t pool;
};
std::mutex pools_mu;
std::map<int64_t, GraphPool*>& pools() {
  static auto* m = new std::map<int64_t, GraphPool*>;
  return *m;
}
std::vector<Capture>& captures() {
  static auto* v = new std::vector<Capture>;
  return *v;
}
std::vector<GraphPool*>& dead_pools() {  // given back once no capture is under way (cudaFree would break it)
  static auto* v = new std::vector<GraphPool*>;
  return *v;
}
std::atomic<int> n_captures{0};
std::atomic<int64_t> next_pool_id{1};

// Under pools_mu: the pool goes once nothing holds it.
void drop_if_unused_locked(GraphPool* gp) {
  if (gp->live > 0 || gp->owners > 0) return;
  pools().erase(gp->id);
  dead_pools().push_back(gp);
}
void free_dead_pools_locked() {
  if (n_captures.load() > 0) return;
  for (GraphPool* gp : dead_pools()) delete gp;  // its allocator gives its free segments back
  dead_pools().clear();
}

// The pool a capture on (device, stream) allocates from, with one more live block; null when
// the stream is not being captured.
GraphPool* capture_pool_take(int device, int64_t stream) {
  std::lock_guard g(pools_mu);
  for (const Capture& c : captures())
    if (c.device == device && c.stream == stream) {
      GraphPool* gp = pools().at(c.pool);
      ++gp->live;
      return gp;
    }
  return nullptr;
}

void free_pool_block(void* ptr, void* ctx) {
  auto* gp = static_cast<GraphPool*>(ctx);
  gp->alloc->free(ptr);
  std::lock_guard g(pools_mu);
  --gp->live;
  drop_if_unused_locked(gp);
  free_dead_pools_locked();
}

// The Allocator the Storage of a CUDA tensor comes from: memory on the device named (its
// current device when unnamed), on that device's current stream (from a graph's pool while
// that stream is being captured).
class CudaAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device device) override {
    int index = device.has_index() ? device.index : current_gpu();
    if (nbytes == 0) return {};
    if (n_captures.load(std::memory_order_acquire) > 0) {
      const int64_t stream = current_stream_of(index).id;
      if (GraphPool* gp = capture_pool_take(index, stream)) {
        void* p = nullptr;
        try {
          p = gp->alloc->malloc(nbytes, stream);
        } catch (...) {
          free_pool_block(nullptr, gp);  // (free(nullptr) is a no-op) undoes the live count
          throw;
        }
        return {p, free_pool_block, gp};
      }
    }
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

bool captures_underway() { return n_captures.load(std::memory_order_acquire) > 0; }

int64_t new_graph_pool_id() { return next_pool_id.fetch_add(1); }

void retain_graph_pool(int64_t pool, int device) {
  device_allocator(device);  // the device's raw memory source exists
  std::lock_guard g(pools_mu);
  auto it = pools().find(pool);
  if (it == pools().end()) {
    auto* gp = new GraphPool{pool, device, std::make_unique<CachingAllocator>(*slot(device).raw, "CUDA", device)};
    it = pools().emplace(pool, gp).first;
  }
  EMBER_CHECK(it->second->device == device, "CUDAGraph: memory pool ", pool, " belongs to cuda:", it->second->device,
              ", not to cuda:", device, " (graphs share a pool only on one device)");
  ++it->second->owners;
}

void release_graph_pool(int64_t pool) {
  std::lock_guard g(pools_mu);
  auto it = pools().find(pool);
  if (it == pools().end()) return;
  --it->second->owners;
  drop_if_unused_locked(it->second);
  free_dead_pools_locked();
}

void begin_pool_capture(int device, int64_t stream, int64_t pool) {
  std::lock_guard g(pools_mu);
  for (const Capture& c : captures())
    EMBER_CHECK(!(c.device == device && c.stream == stream), "CUDAGraph.capture_begin: stream ", stream, " of cuda:",
                device, " is already being captured");
  captures().push_back({device, stream, pool});
  n_captures.fetch_add(1, std::memory_order_release);
}

void end_pool_capture(int device, int64_t stream) {
  std::lock_guard g(pools_mu);
  auto& v = captures();
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].device == device && v[i].stream == stream) {
      v.erase(v.begin() + int64_t(i));
      n_captures.fetch_sub(1, std::memory_order_release);
      break;
    }
  free_dead_pools_locked();
}

int64_t graph_pool_bytes(int64_t pool) {
  std::lock_guard g(pools_mu);
  auto it = pools().find(pool);
  return it == pools().end() ? 0 : it->second->alloc->stats().reserved_bytes[kStatAll].current;
}

DataPtr allocate_pinned(size_t nbytes) { return PinnedCache::instance().allocate(nbytes); }
bool is_pinned_ptr(const void* p) { return p && PinnedCache::instance().contains(p); }
void record_pinned_use(const void* p, Stream stream) { PinnedCache::instance().record(p, stream); }

}  // namespace ember::cuda
