#pragma once
// A device-neutral caching allocator with the behaviour and statistics of PyTorch 2.x's
// CUDACachingAllocator (default configuration, no expandable segments). A device backend gives
// it raw memory and stream-ordering events through RawDeviceMemory; the allocator carves that
// memory into blocks, caches freed blocks per stream and reports torch.cuda.memory_stats()-style
// numbers. It names no device API, so it is tested on the CPU with a fake raw memory source.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ember/core/errors.h"

namespace ember {

// What a device gives the caching allocator: raw memory and stream-ordering events.
class RawDeviceMemory {
 public:
  virtual ~RawDeviceMemory() = default;
  // nullptr when the device is out of memory (never throws for OOM).
  virtual void* raw_alloc(size_t nbytes) = 0;
  virtual void raw_free(void* ptr) = 0;
  // Free and total device memory, for the out-of-memory message.
  virtual void mem_get_info(size_t* free_bytes, size_t* total_bytes) = 0;
  // record_stream support: an event recorded now on `stream` (stream ids are int64, 0 = default
  // stream); query_event: true when its work has finished; release_event frees the handle.
  virtual void* record_event(int64_t stream) = 0;
  virtual bool query_event(void* event) = 0;
  virtual void release_event(void* event) = 0;
  // Wait for all work on the device (before cached memory is given back).
  virtual void synchronize_device() = 0;
};

// torch.OutOfMemoryError (torch.cuda.OutOfMemoryError).
struct OutOfMemoryError : Error { using Error::Error; };

struct MemoryStat { int64_t current = 0, peak = 0, allocated = 0, freed = 0; };

// Index of the per-pool statistic arrays, as torch's StatType.
enum StatType : int { kStatAll = 0, kStatSmallPool = 1, kStatLargePool = 2 };

struct DeviceMemoryStats {
  MemoryStat allocation[3], segment[3], active[3], inactive_split[3];
  MemoryStat allocated_bytes[3], reserved_bytes[3], active_bytes[3], inactive_split_bytes[3],
      requested_bytes[3];
  int64_t num_alloc_retries = 0, num_ooms = 0, num_sync_all_streams = 0, num_device_alloc = 0,
          num_device_free = 0;
  MemoryStat oversize_allocations, oversize_segments;
  // Blocks of this size or more are not split; -1 when unlimited (torch casts SIZE_MAX to int64).
  int64_t max_split_size = -1;
};

// torch.cuda.memory_stats(): the flat dict with torch's keys ("allocated_bytes.all.current",
// "allocation.small_pool.peak", "num_alloc_retries", ...), sorted by key as torch's OrderedDict.
std::vector<std::pair<std::string, int64_t>> memory_stats_dict(const DeviceMemoryStats& s);

// torch.cuda.memory_summary(device, abbreviated): torch 2.x's 75-column table. backend_name is
// the title's device word ("CUDA"); abbreviated=false adds the per-pool rows.
std::string memory_summary(const DeviceMemoryStats& s, int device_index, bool abbreviated,
                           const char* backend_name = "CUDA");

// Sizes as the allocator's messages print them (c10's format_size): "1024 bytes", "1.50 KiB",
// "20.00 MiB", "79.10 GiB".
std::string format_memory_size(uint64_t bytes);

// One segment (one raw allocation) of CachingAllocator::snapshot(), as torch's memory_snapshot().
struct SegmentInfo {
  int64_t stream;
  size_t address;
  size_t total_size;
  size_t allocated_size;
  size_t active_size;
  bool is_large;
  std::vector<std::pair<size_t, bool>> blocks;  // (size, allocated), in address order
};

class CachingAllocator {
 public:
  // backend_name names the device in messages ("CUDA" -> "CUDA out of memory ... GPU 0 ...").
  CachingAllocator(RawDeviceMemory& raw, std::string backend_name, int device_index);
  // Gives back every free, unsplit segment. Memory still allocated stays with the device.
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* malloc(size_t nbytes, int64_t stream);  // 0 bytes -> nullptr, no stats change
  void free(void* ptr);                         // nullptr: no-op
  // Marks ptr (a pointer malloc returned) as used on `stream`: its memory is not reused until the
  // work queued on that stream when ptr is freed has finished.
  void record_stream(void* ptr, int64_t stream);
  void empty_cache();  // waits for the device, then releases every free, unsplit segment
  DeviceMemoryStats stats() const;
  void reset_peak_stats();
  void reset_accumulated_stats();
  std::vector<SegmentInfo> snapshot() const;
  // PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb in bytes: must be more than 20 MiB; SIZE_MAX
  // restores the default (no limit).
  void set_max_split_size(size_t bytes);

 private:
  struct Block;
  struct BySize {
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, BySize>;
  struct Event { void* handle; Block* block; };

  Pool& pool_for(bool small) { return small ? small_blocks_ : large_blocks_; }
  void process_events();
  void synchronize_and_free_events();
  Block* get_free_block(bool small, int64_t stream, size_t size);
  Block* alloc_block(bool small, int64_t stream, size_t alloc_size, bool is_retry);
  bool release_available_cached_blocks(bool small, int64_t stream, size_t size);
  void release_cached_blocks();
  void release_block(Block* block);
  bool should_split(const Block* block, size_t size) const;
  void* alloc_found_block(Block* block, size_t size, size_t requested, int64_t stream);
  void free_block(Block* block);
  size_t try_merge_blocks(Block* dst, Block* src, Pool& pool);
  [[noreturn]] void throw_out_of_memory(size_t alloc_size);
  void add_stat(MemoryStat (&stat)[3], bool small, int64_t delta);

  RawDeviceMemory& raw_;
  std::string backend_name_;
  int device_index_;
  size_t max_split_size_;
  mutable std::recursive_mutex mutex_;
  DeviceMemoryStats stats_;
  Pool small_blocks_, large_blocks_;                // cached free blocks
  std::unordered_map<void*, Block*> allocated_;     // handed-out blocks by pointer
  std::unordered_set<Block*> active_blocks_;        // allocated or waiting for events
  std::map<int64_t, std::deque<Event>> events_;    // per stream, oldest first
  std::unordered_set<void*> oversize_segments_;     // segment bases counted as oversize
};

}  // namespace ember
