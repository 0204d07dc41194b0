#pragma once
// A device-neutral caching allocator with the behaviour and statistics of PyTorch 2.x's
// CUDACachingAllocator (default configuration, no expandable segments). A device backend gives
// it raw memory and stream-ordering events through RawDeviceMemory; the allocator carves that
// memory into blocks, caches freed blocks per stream and reports torch.cuda.memory_stats()-style
// numbers. It names no device API, so it is tested on the CPU with a fake raw memory source.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
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

// ---- memory history (torch.cuda.memory._record_memory_history / _snapshot)

// A call stack as the context function returns it, innermost frame first ("file.py(12): func").
// Shared: one capture serves the block it allocated and the trace entries that name it.
using StackFrames = std::shared_ptr<const std::vector<std::string>>;
using StackContextFn = std::function<std::vector<std::string>()>;

// Which stacks are kept, torch's RecordContext: Never; State: the stack of each live
// allocation (snapshot blocks); Alloc: also on the trace entries; All: frees record the stack of
// the free itself (else they carry the allocation's).
enum class RecordContext : uint8_t { Never = 0, State = 1, Alloc = 2, All = 3 };

// One allocator action, torch's TraceEntry.
enum class TraceAction : uint8_t {
  Alloc,          // a block was handed out (size: the bytes requested)
  FreeRequested,  // free() was called (size: the bytes requested at allocation)
  FreeCompleted,  // the block is reusable (at once, or when its record_stream events fired)
  SegmentAlloc,   // raw memory was taken from the device (size: the segment)
  SegmentFree,    // raw memory was given back
  Oom,            // an allocation failed (addr: the device's free bytes then, size: the request)
  Snapshot,       // memory_snapshot() was taken (size: the active bytes then)
};
const char* trace_action_name(TraceAction action);  // "alloc", "free_requested", ...

struct MemoryTraceEntry {
  TraceAction action;
  size_t addr;      // Oom: the device's free bytes
  size_t size;
  int64_t stream;
  int64_t time_us;  // system clock, microseconds since the Unix epoch (torch's time_us)
  StackFrames frames;  // null: none recorded
};

enum class BlockState : uint8_t { ActiveAllocated, ActivePendingFree, Inactive };
const char* block_state_name(BlockState state);  // "active_allocated", "active_pending_free", "inactive"

struct BlockSnapshot {
  size_t address, size;
  size_t requested_size;  // what malloc was asked for; 0 for inactive blocks
  BlockState state;
  StackFrames frames;     // the stack of the allocation that holds it (null: not recorded)
};

struct SegmentSnapshot {
  int device;
  size_t address, total_size, allocated_size, active_size, requested_size;
  int64_t stream;
  bool is_large;
  StackFrames frames;  // the stack of the allocation that made the segment
  std::vector<BlockSnapshot> blocks;  // in address order
};

// One device's state and history: torch's _snapshot() "segments" and its "device_traces" entry.
struct AllocatorSnapshot {
  int device;
  std::vector<SegmentSnapshot> segments;  // by address
  std::vector<MemoryTraceEntry> trace;    // oldest first
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

  // Starts (or stops) recording the allocator's history, as torch's recordHistory: while enabled,
  // every action appends a trace entry to a ring of the newest max_entries (at least 1), and
  // `context` (called outside the allocator's lock, so it may take other locks such as Python's)
  // gives the stacks that `when` asks for. Disabling drops the trace; blocks allocated while
  // enabled keep their stacks until freed, as in torch. clear_history drops the trace on enable.
  void record_history(bool enabled, size_t max_entries, StackContextFn context,
                      RecordContext when = RecordContext::All, bool clear_history = false);
  // Segments with their blocks and stacks, plus the trace so far; appends a "snapshot" entry
  // to the trace (seen in the next snapshot), as torch does.
  AllocatorSnapshot memory_snapshot();

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
  Block* alloc_block(bool small, int64_t stream, size_t alloc_size, bool is_retry, const StackFrames& frames);
  bool release_available_cached_blocks(bool small, int64_t stream, size_t size, const StackFrames& frames);
  void release_cached_blocks(const StackFrames& frames);
  void release_block(Block* block, const StackFrames& frames);
  bool should_split(const Block* block, size_t size) const;
  void* alloc_found_block(Block* block, size_t size, size_t requested, int64_t stream, const StackFrames& frames);
  void free_block(Block* block, const StackFrames& frames);
  size_t try_merge_blocks(Block* dst, Block* src, Pool& pool);
  [[noreturn]] void throw_out_of_memory(size_t alloc_size, int64_t stream, const StackFrames& frames);
  void add_stat(MemoryStat (&stat)[3], bool small, int64_t delta);
  std::vector<const Block*> segment_heads() const;
  // History: the stack when `needed` is recorded (null otherwise); call it before taking mutex_.
  StackFrames gather_frames(RecordContext needed) const;
  void record_trace(TraceAction action, size_t addr, size_t size, int64_t stream, const StackFrames& frames);
  std::vector<MemoryTraceEntry> trace_oldest_first() const;

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

  // History (record_history). The ring is guarded by mutex_; the context function and the level
  // by context_mu_, so that stacks are gathered without holding mutex_ (the level is mirrored
  // in an atomic: when nothing is recorded, malloc and free pay one relaxed load).
  bool recording_ = false;
  RecordContext record_when_ = RecordContext::Never;
  std::vector<MemoryTraceEntry> trace_;
  size_t trace_max_ = 1, trace_next_ = 0;  // when full, trace_next_ is the oldest entry
  std::unordered_map<const char*, StackFrames> segment_frames_;  // by segment base address
  mutable std::mutex context_mu_;
  std::shared_ptr<const StackContextFn> context_fn_;
  std::atomic<uint8_t> gather_level_{0};  // RecordContext while recording, else Never
};

}  // namespace ember
