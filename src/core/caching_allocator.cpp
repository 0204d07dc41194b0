// The caching allocator: PyTorch 2.x's CUDACachingAllocator behaviour (default configuration)
// over any RawDeviceMemory.
//
// Why cache: a raw device allocation (cudaMalloc) is slow and synchronises the device, while a
// training step frees and reallocates the same sizes every iteration. So freed memory is kept in
// pools and handed out again; raw memory is asked for only when no cached block fits, and given
// back only by empty_cache() or when a raw allocation fails.
//
// Layout: a *segment* is one raw allocation. It is cut into *blocks* kept in address order by
// prev/next links; a block is allocated, free (cached in a pool), or freed but still waiting for
// events of streams that used it (record_stream). Free neighbours are merged back on free.
//
// Why per-stream pools: work on one stream runs in order, so a block freed on stream S can be
// reused at once by later work on S without any synchronisation, but not by another stream.
// Blocks used on other streams (record_stream) get an event recorded on each such stream when
// freed and return to the pool only once those events have completed.
//
// Why two pools: small requests (<= 1 MiB) are packed into 2 MiB segments, larger ones into
// 20 MiB segments (or their own segment from 10 MiB on), so that small, short-lived tensors do
// not fragment the segments that large tensors need.
#include "ember/core/caching_allocator.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <iterator>
#include <limits>
#include <memory>

namespace ember {

namespace {

constexpr size_t kMinBlockSize = 512;        // every block size is a multiple of 512 bytes
constexpr size_t kSmallSize = 1048576;       // requests up to 1 MiB use the small pool
constexpr size_t kSmallBuffer = 2097152;     // small requests share 2 MiB segments
constexpr size_t kLargeBuffer = 20971520;    // large requests under 10 MiB share 20 MiB segments
constexpr size_t kMinLargeAlloc = 10485760;  // from 10 MiB a request gets a segment of its own,
constexpr size_t kRoundLarge = 2097152;      // rounded up to a multiple of 2 MiB
constexpr size_t kNoLimit = std::numeric_limits<size_t>::max();
// Larger requests would overflow the rounding below; no device has that much memory anyway.
constexpr size_t kMaxRequest = kNoLimit / 4;

size_t round_size(size_t nbytes) {
  if (nbytes < kMinBlockSize) return kMinBlockSize;
  return (nbytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

// The raw allocation made when no cached block fits a request of `size` (already rounded).
size_t segment_size(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

void increase(MemoryStat& s, int64_t n) {
  s.current += n;
  s.peak = std::max(s.peak, s.current);
  s.allocated += n;
}

void decrease(MemoryStat& s, int64_t n) {
  s.current -= n;
  s.freed += n;
}

void reset_peak(MemoryStat& s) { s.peak = s.current; }

void reset_accumulated(MemoryStat& s) {
  s.allocated = 0;
  s.freed = 0;
}

// Trace timestamps as torch's: wall-clock microseconds since the Unix epoch, so snapshots taken
// in different processes line up.
int64_t unix_time_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Blocks and pools

struct CachingAllocator::Block {
  int64_t stream = 0;         // the stream it was allocated on; it is reused only there
  size_t size = 0;            // bytes, a multiple of kMinBlockSize
  size_t requested_size = 0;  // what malloc was asked for (requested_bytes)
  char* ptr = nullptr;
  bool small = false;         // which pool: small (<= 1 MiB requests) or large
  bool allocated = false;
  bool oversize = false;      // counted in oversize_allocations while allocated
  Block* prev = nullptr;      // neighbours in the same segment, in address order
  Block* next = nullptr;
  int event_count = 0;        // events still pending before the block can be reused
  std::vector<int64_t> stream_uses;  // other streams it was used on (record_stream), no repeats
  StackFrames frames;         // the stack of the allocation holding it (record_history)

  bool is_split() const { return prev != nullptr || next != nullptr; }
};

// Pool order (stream, size, address): lower_bound on (stream, size, nullptr) is the best fit,
// the smallest free block of the stream that is large enough, the lowest address among equals.
bool CachingAllocator::BySize::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  if (a->size != b->size) return a->size < b->size;
  return std::less<const char*>()(a->ptr, b->ptr);
}

// Every per-pool statistic moves in two slots: the aggregate and the block's pool.
void CachingAllocator::add_stat(MemoryStat (&stat)[3], bool small, int64_t delta) {
  if (delta == 0) return;
  MemoryStat& pool = stat[small ? kStatSmallPool : kStatLargePool];
  if (delta > 0) {
    increase(stat[kStatAll], delta);
    increase(pool, delta);
  } else {
    decrease(stat[kStatAll], -delta);
    decrease(pool, -delta);
  }
}

// ---------------------------------------------------------------------------------------------
// Construction

CachingAllocator::CachingAllocator(RawDeviceMemory& raw, std::string backend_name,
                                   int device_index)
    : raw_(raw), backend_name_(std::move(backend_name)), device_index_(device_index),
      max_split_size_(kNoLimit) {
  stats_.max_split_size = -1;
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  // A destructor must not throw: if the device is already gone (process exit), keep its memory.
  try {
    release_cached_blocks(nullptr);
  } catch (...) {
  }
  // Segments with live allocations stay with the device (their users may outlive us); only the
  // bookkeeping goes. Every block is in exactly one of the pools or the active set.
  std::vector<Block*> blocks(active_blocks_.begin(), active_blocks_.end());
  blocks.insert(blocks.end(), small_blocks_.begin(), small_blocks_.end());
  blocks.insert(blocks.end(), large_blocks_.begin(), large_blocks_.end());
  for (Block* b : blocks) delete b;
}

void CachingAllocator::set_max_split_size(size_t bytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  // torch refuses max_split_size_mb <= 20: a smaller limit would make the 20 MiB segments of
  // mid-sized requests oversize, so they could never be split and shared.
  EMBER_CHECK_VALUE(bytes == kNoLimit || bytes > kLargeBuffer,
                    "CachingAllocator option max_split_size too small, must be > ", kLargeBuffer,
                    " bytes (20 MiB), got ", bytes);
  max_split_size_ = bytes;
  stats_.max_split_size = static_cast<int64_t>(bytes);  // SIZE_MAX reads -1, as in torch
}

// ---------------------------------------------------------------------------------------------
// malloc

void* CachingAllocator::malloc(size_t nbytes, int64_t stream) {
  if (nbytes == 0) return nullptr;  // torch hands out no memory and counts nothing
  // Outside the lock: the context function may take other locks (Python's).
  const StackFrames frames = gather_frames(RecordContext::State);
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  // Blocks whose cross-stream uses have finished go back to the pools before the search.
  process_events();
  if (nbytes > kMaxRequest) throw_out_of_memory(nbytes, stream, frames);

  const size_t size = round_size(nbytes);
  const bool small = size <= kSmallSize;
  const size_t alloc_size = segment_size(size);

  Block* block = get_free_block(small, stream, size);
  if (!block) block = alloc_block(small, stream, alloc_size, /*is_retry=*/false, frames);
  // The device is full: first give back just enough oversize cached blocks of this pool and
  // stream (only when max_split_size is set), then every unsplit cached segment, retrying after
  // each. Cached memory of other streams counts against the device too, hence the full release.
  if (!block && release_available_cached_blocks(small, stream, size, frames)) {
    block = alloc_block(small, stream, alloc_size, /*is_retry=*/false, frames);
  }
  if (!block) {
    release_cached_blocks(frames);
    block = alloc_block(small, stream, alloc_size, /*is_retry=*/true, frames);
  }
  if (!block) throw_out_of_memory(alloc_size, stream, frames);
  return alloc_found_block(block, size, nbytes, stream, frames);
}

CachingAllocator::Block* CachingAllocator::get_free_block(bool small, int64_t stream,
                                                          size_t size) {
  Pool& pool = pool_for(small);
  Block key;
  key.stream = stream;
  key.size = size;
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* block = *it;
  // With max_split_size set, oversize blocks are kept for oversize requests (a small request
  // would waste most of one, since it cannot be split), and an oversize request takes a cached
  // block only if at most 20 MiB of it would be wasted.
  if (size < max_split_size_ && block->size >= max_split_size_) return nullptr;
  if (size >= max_split_size_ && block->size >= size + kLargeBuffer) return nullptr;
  pool.erase(it);
  return block;
}

// A new segment from the device, or nullptr when the device is out of memory.
CachingAllocator::Block* CachingAllocator::alloc_block(bool small, int64_t stream, size_t alloc_size,
                                                       bool is_retry, const StackFrames& frames) {
  if (is_retry) ++stats_.num_alloc_retries;
  void* ptr = raw_.raw_alloc(alloc_size);
  if (!ptr) return nullptr;
  std::unique_ptr<Block> block;
  try {
    block = std::make_unique<Block>();
  } catch (...) {
    raw_.raw_free(ptr);
    throw;
  }
  block->stream = stream;
  block->size = alloc_size;
  block->ptr = static_cast<char*>(ptr);
  block->small = small;
  ++stats_.num_device_alloc;
  add_stat(stats_.segment, small, 1);
  add_stat(stats_.reserved_bytes, small, static_cast<int64_t>(alloc_size));
  // Remember which segments were counted, so the count stays right if the limit changes.
  if (alloc_size >= max_split_size_) {
    increase(stats_.oversize_segments, 1);
    oversize_segments_.insert(ptr);
  }
  record_trace(TraceAction::SegmentAlloc, reinterpret_cast<size_t>(ptr), alloc_size, stream, frames);
  if (frames) segment_frames_[block->ptr] = frames;
  return block.release();
}

bool CachingAllocator::should_split(const Block* block, size_t size) const {
  const size_t remaining = block->size - size;
  // Small pool: any usable remainder. Large pool: only a remainder that could serve another
  // large request (> 1 MiB), and never an oversize block (that is what max_split_size is for).
  if (block->small) return remaining >= kMinBlockSize;
  return size < max_split_size_ && remaining > kSmallSize;
}

// Takes `block` (out of the pools, or a new segment) for a request of `size` bytes, splitting
// off the remainder as a free block of the same pool when worth it.
void* CachingAllocator::alloc_found_block(Block* block, size_t size, size_t requested,
                                          int64_t stream, const StackFrames& frames) {
  const bool small = block->small;
  const bool already_split = block->is_split();
  if (should_split(block, size)) {
    // The request takes the front; the remainder keeps the Block and goes back to the pool.
    Block* remaining = block;
    block = new Block();
    block->stream = stream;
    block->size = size;
    block->ptr = remaining->ptr;
    block->small = small;
    block->prev = remaining->prev;
    if (block->prev) block->prev->next = block;
    block->next = remaining;
    remaining->prev = block;
    remaining->ptr += size;
    remaining->size -= size;
    pool_for(small).insert(remaining);
    // inactive_split counts free blocks of split segments: memory empty_cache cannot give back.
    if (already_split) {
      add_stat(stats_.inactive_split_bytes, small, -static_cast<int64_t>(size));
    } else {
      add_stat(stats_.inactive_split_bytes, small, static_cast<int64_t>(remaining->size));
      add_stat(stats_.inactive_split, small, 1);
    }
  } else if (already_split) {
    add_stat(stats_.inactive_split_bytes, small, -static_cast<int64_t>(block->size));
    add_stat(stats_.inactive_split, small, -1);
  }

  block->allocated = true;
  block->requested_size = requested;
  block->frames = frames;
  record_trace(TraceAction::Alloc, reinterpret_cast<size_t>(block->ptr), requested, stream, frames);
  allocated_.emplace(block->ptr, block);
  active_blocks_.insert(block);
  const auto bytes = static_cast<int64_t>(block->size);
  add_stat(stats_.allocation, small, 1);
  add_stat(stats_.allocated_bytes, small, bytes);
  add_stat(stats_.active, small, 1);
  add_stat(stats_.active_bytes, small, bytes);
  add_stat(stats_.requested_bytes, small, static_cast<int64_t>(requested));
  block->oversize = block->size >= max_split_size_;
  if (block->oversize) increase(stats_.oversize_allocations, 1);
  return block->ptr;
}

// ---------------------------------------------------------------------------------------------
// free and record_stream

void CachingAllocator::free(void* ptr) {
  if (!ptr) return;
  const StackFrames frames = gather_frames(RecordContext::All);  // outside the lock, as malloc
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto it = allocated_.find(ptr);
  EMBER_CHECK(it != allocated_.end(), "invalid device pointer: ", ptr);
  Block* block = it->second;
  allocated_.erase(it);
  block->allocated = false;
  // Without a stack of its own (context below "all"), the free names the allocation's.
  record_trace(TraceAction::FreeRequested, reinterpret_cast<size_t>(block->ptr), block->requested_size,
               block->stream, frames ? frames : block->frames);
  // "allocated" drops now; "active" (and requested_bytes) only when the block is reusable.
  add_stat(stats_.allocation, block->small, -1);
  add_stat(stats_.allocated_bytes, block->small, -static_cast<int64_t>(block->size));
  if (block->oversize) {
    decrease(stats_.oversize_allocations, 1);
    block->oversize = false;
  }
  if (block->stream_uses.empty()) {
    free_block(block, frames);
    return;
  }
  // Work already queued on the other streams may still read or write the block: mark the end of
  // that work with an event per stream; process_events returns the block once all have fired.
  for (int64_t s : block->stream_uses) {
    void* event = raw_.record_event(s);
    events_[s].push_back(Event{event, block});
    ++block->event_count;
  }
  block->stream_uses.clear();
}

void CachingAllocator::record_stream(void* ptr, int64_t stream) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto it = allocated_.find(ptr);
  EMBER_CHECK(it != allocated_.end(), "record_stream: invalid device pointer: ", ptr);
  Block* block = it->second;
  // Uses on the allocation stream are ordered with its reuse already.
  if (stream == block->stream) return;
  auto& uses = block->stream_uses;
  if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
}

// Returns a block that is no longer used anywhere to its pool, merged with free neighbours.
// `frames`: the stack of the free() that completes here, null when events completed it.
void CachingAllocator::free_block(Block* block, const StackFrames& frames) {
  // Recorded before merging, which may move block->ptr to a free neighbour's address.
  record_trace(TraceAction::FreeCompleted, reinterpret_cast<size_t>(block->ptr), block->requested_size,
               block->stream, frames ? frames : block->frames);
  block->frames.reset();  // a free block belongs to no allocation
  Pool& pool = pool_for(block->small);
  const auto original_size = static_cast<int64_t>(block->size);
  const auto requested = static_cast<int64_t>(block->requested_size);
  int64_t split_blocks = 0, split_bytes = 0;
  // A free neighbour was an inactive split block; it disappears into this one.
  for (Block* neighbour : {block->prev, block->next}) {
    const size_t subsumed = try_merge_blocks(block, neighbour, pool);
    if (subsumed > 0) {
      split_blocks -= 1;
      split_bytes -= static_cast<int64_t>(subsumed);
    }
  }
  active_blocks_.erase(block);
  pool.insert(block);
  // Still part of a split segment: it cannot be released by empty_cache.
  if (block->is_split()) {
    split_blocks += 1;
    split_bytes += static_cast<int64_t>(block->size);
  }
  add_stat(stats_.inactive_split, block->small, split_blocks);
  add_stat(stats_.inactive_split_bytes, block->small, split_bytes);
  add_stat(stats_.active, block->small, -1);
  add_stat(stats_.active_bytes, block->small, -original_size);
  add_stat(stats_.requested_bytes, block->small, -requested);
}

// Merges `src` (a neighbour of `dst`) into `dst` when it is free; returns the bytes gained.
size_t CachingAllocator::try_merge_blocks(Block* dst, Block* src, Pool& pool) {
  if (!src || src->allocated || src->event_count > 0 || !src->stream_uses.empty()) return 0;
  if (dst->prev == src) {
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev) dst->prev->next = dst;
  } else {
    dst->next = src->next;
    if (dst->next) dst->next->prev = dst;
  }
  const size_t subsumed = src->size;
  dst->size += subsumed;
  pool.erase(src);  // src's key is unchanged, so it is still found
  delete src;
  return subsumed;
}

// ---------------------------------------------------------------------------------------------
// Events

// Non-blocking: returns the blocks whose events have all completed. Streams are checked
// separately, oldest event first, so a busy stream does not hold back the blocks of others.
void CachingAllocator::process_events() {
  for (auto it = events_.begin(); it != events_.end();) {
    auto& queue = it->second;
    while (!queue.empty()) {
      const Event e = queue.front();
      if (!raw_.query_event(e.handle)) break;
      raw_.release_event(e.handle);
      queue.pop_front();
      if (--e.block->event_count == 0) free_block(e.block, nullptr);
    }
    it = queue.empty() ? events_.erase(it) : std::next(it);
  }
}

// Blocking: waits for the device, after which every pending event has completed.
void CachingAllocator::synchronize_and_free_events() {
  ++stats_.num_sync_all_streams;
  raw_.synchronize_device();
  auto pending = std::move(events_);
  events_.clear();
  for (auto& [stream, queue] : pending) {
    for (const Event& e : queue) {
      raw_.release_event(e.handle);
      if (--e.block->event_count == 0) free_block(e.block, nullptr);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Giving memory back

// `frames`: the stack of the call that gave the segment back (null: the segment's own).
void CachingAllocator::release_block(Block* block, const StackFrames& frames) {
  auto seg = segment_frames_.find(block->ptr);
  StackFrames segment = seg == segment_frames_.end() ? nullptr : seg->second;
  if (seg != segment_frames_.end()) segment_frames_.erase(seg);
  record_trace(TraceAction::SegmentFree, reinterpret_cast<size_t>(block->ptr), block->size, block->stream,
               frames ? frames : segment);
  raw_.raw_free(block->ptr);
  ++stats_.num_device_free;
  add_stat(stats_.segment, block->small, -1);
  add_stat(stats_.reserved_bytes, block->small, -static_cast<int64_t>(block->size));
  if (oversize_segments_.erase(block->ptr) > 0) decrease(stats_.oversize_segments, 1);
  pool_for(block->small).erase(block);
  delete block;
}

// With max_split_size set: frees the smallest cached oversize block of the request's pool and
// stream that is at least as large as the request, or else the largest ones until their total
// covers it. Returns whether enough was freed for a retry to make sense.
bool CachingAllocator::release_available_cached_blocks(bool small, int64_t stream, size_t size,
                                                       const StackFrames& frames) {
  if (max_split_size_ == kNoLimit) return false;
  Pool& pool = pool_for(small);
  Block key;
  key.stream = stream;
  key.size = std::max(size, max_split_size_);
  std::vector<Block*> victims;
  size_t released = 0;
  auto it = pool.lower_bound(&key);
  if (it != pool.end() && (*it)->stream == stream) {
    // Oversize blocks are never split, but a segment still cut in pieces must not be freed.
    if ((*it)->is_split()) return false;
    victims.push_back(*it);
    released = key.size;
  } else {
    while (it != pool.begin()) {
      --it;
      Block* b = *it;
      if (released >= key.size || b->stream != stream || b->size < max_split_size_) break;
      if (b->is_split()) continue;
      victims.push_back(b);
      released += b->size;
    }
  }
  if (victims.empty()) return false;
  raw_.synchronize_device();  // cached blocks may still be in use by queued work on `stream`
  for (Block* b : victims) release_block(b, frames);
  return released >= key.size;
}

// Frees every cached segment that is not split (all its memory is one free block).
void CachingAllocator::release_cached_blocks(const StackFrames& frames) {
  synchronize_and_free_events();
  for (Pool* pool : {&large_blocks_, &small_blocks_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* block = *it++;  // advance first: release_block erases it
      if (!block->is_split()) release_block(block, frames);
    }
  }
}

void CachingAllocator::empty_cache() {
  const StackFrames frames = gather_frames(RecordContext::All);
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  release_cached_blocks(frames);
}

// torch 2.x's message, without its expandable_segments advice (ember has no such option) and
// its link to PyTorch's documentation.
void CachingAllocator::throw_out_of_memory(size_t alloc_size, int64_t stream, const StackFrames& frames) {
  ++stats_.num_ooms;
  size_t device_free = 0, device_total = 0;
  raw_.mem_get_info(&device_free, &device_total);
  record_trace(TraceAction::Oom, device_free, alloc_size, stream, frames);
  const int64_t allocated = stats_.allocated_bytes[kStatAll].current;
  const int64_t reserved = stats_.reserved_bytes[kStatAll].current;
  const std::string device = backend_name_ == "CUDA"
                                 ? detail::cat("GPU ", device_index_)
                                 : detail::cat(backend_name_, ':', device_index_);
  throw OutOfMemoryError(detail::cat(
      backend_name_, " out of memory. Tried to allocate ", format_memory_size(alloc_size), ". ",
      device, " has a total capacity of ", format_memory_size(device_total), " of which ",
      format_memory_size(device_free), " is free. Of the allocated memory ",
      format_memory_size(static_cast<uint64_t>(allocated)), " is allocated by ember, and ",
      format_memory_size(static_cast<uint64_t>(reserved - allocated)),
      " is reserved by ember but unallocated."));
}

// ---------------------------------------------------------------------------------------------
// Statistics and snapshots

DeviceMemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  for (int i = 0; i < 3; ++i) {
    for (MemoryStat* a : {stats_.allocation, stats_.segment, stats_.active, stats_.inactive_split,
                          stats_.allocated_bytes, stats_.reserved_bytes, stats_.active_bytes,
                          stats_.inactive_split_bytes, stats_.requested_bytes}) {
      reset_peak(a[i]);
    }
  }
  reset_peak(stats_.oversize_allocations);
  reset_peak(stats_.oversize_segments);
}

void CachingAllocator::reset_accumulated_stats() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  for (int i = 0; i < 3; ++i) {
    for (MemoryStat* a : {stats_.allocation, stats_.segment, stats_.active, stats_.inactive_split,
                          stats_.allocated_bytes, stats_.reserved_bytes, stats_.active_bytes,
                          stats_.inactive_split_bytes, stats_.requested_bytes}) {
      reset_accumulated(a[i]);
    }
  }
  stats_.num_alloc_retries = 0;
  stats_.num_ooms = 0;
  stats_.num_sync_all_streams = 0;
  stats_.num_device_alloc = 0;
  stats_.num_device_free = 0;
  reset_accumulated(stats_.oversize_allocations);
  reset_accumulated(stats_.oversize_segments);
}

// Every block is in a pool or active; a segment is walked from its first block.
std::vector<const CachingAllocator::Block*> CachingAllocator::segment_heads() const {
  std::vector<const Block*> heads;
  for (const Pool* pool : {&small_blocks_, &large_blocks_}) {
    for (const Block* b : *pool) {
      if (!b->prev) heads.push_back(b);
    }
  }
  for (const Block* b : active_blocks_) {
    if (!b->prev) heads.push_back(b);
  }
  return heads;
}

std::vector<SegmentInfo> CachingAllocator::snapshot() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const std::vector<const Block*> heads = segment_heads();
  std::vector<SegmentInfo> segments;
  segments.reserve(heads.size());
  for (const Block* head : heads) {
    SegmentInfo info{head->stream, reinterpret_cast<size_t>(head->ptr), 0, 0, 0, !head->small, {}};
    for (const Block* b = head; b; b = b->next) {
      info.blocks.emplace_back(b->size, b->allocated);
      info.total_size += b->size;
      if (b->allocated) info.allocated_size += b->size;
      // torch's "active": allocated, or freed but waiting for other streams
      if (b->allocated || b->event_count > 0) info.active_size += b->size;
    }
    segments.push_back(std::move(info));
  }
  std::sort(segments.begin(), segments.end(),
            [](const SegmentInfo& a, const SegmentInfo& b) { return a.address < b.address; });
  return segments;
}

// ---------------------------------------------------------------------------------------------
// History (torch.cuda.memory._record_memory_history) and detailed snapshots (_snapshot)

const char* trace_action_name(TraceAction action) {
  switch (action) {
    case TraceAction::Alloc: return "alloc";
    case TraceAction::FreeRequested: return "free_requested";
    case TraceAction::FreeCompleted: return "free_completed";
    case TraceAction::SegmentAlloc: return "segment_alloc";
    case TraceAction::SegmentFree: return "segment_free";
    case TraceAction::Oom: return "oom";
    case TraceAction::Snapshot: return "snapshot";
  }
  return "unknown";
}

const char* block_state_name(BlockState state) {
  switch (state) {
    case BlockState::ActiveAllocated: return "active_allocated";
    case BlockState::ActivePendingFree: return "active_pending_free";
    case BlockState::Inactive: return "inactive";
  }
  return "unknown";
}

void CachingAllocator::record_history(bool enabled, size_t max_entries, StackContextFn context,
                                      RecordContext when, bool clear_history) {
  if (!context) when = RecordContext::Never;  // nothing to ask for stacks: record actions only
  if (!enabled) when = RecordContext::Never;
  std::shared_ptr<const StackContextFn> fn;
  if (when != RecordContext::Never) fn = std::make_shared<const StackContextFn>(std::move(context));
  {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    // A smaller ring keeps the newest entries; disabling drops them all, as torch does.
    std::vector<MemoryTraceEntry> kept;
    if (enabled && !clear_history) kept = trace_oldest_first();
    const size_t max = std::max<size_t>(1, max_entries);
    if (kept.size() > max) kept.erase(kept.begin(), kept.end() - static_cast<std::ptrdiff_t>(max));
    trace_ = std::move(kept);
    trace_max_ = max;
    trace_next_ = 0;
    recording_ = enabled;
    record_when_ = when;
  }
  std::lock_guard<std::mutex> lock(context_mu_);
  context_fn_ = std::move(fn);
  gather_level_.store(static_cast<uint8_t>(when), std::memory_order_relaxed);
}

StackFrames CachingAllocator::gather_frames(RecordContext needed) const {
  const auto level = static_cast<uint8_t>(needed);
  if (gather_level_.load(std::memory_order_relaxed) < level) return nullptr;
  std::shared_ptr<const StackContextFn> fn;
  {
    std::lock_guard<std::mutex> lock(context_mu_);
    if (gather_level_.load(std::memory_order_relaxed) < level) return nullptr;
    fn = context_fn_;
  }
  if (!fn) return nullptr;
  return std::make_shared<const std::vector<std::string>>((*fn)());
}

// torch's ring: fill up to trace_max_ entries, then overwrite the oldest.
void CachingAllocator::record_trace(TraceAction action, size_t addr, size_t size, int64_t stream,
                                    const StackFrames& frames) {
  if (!recording_) return;
  MemoryTraceEntry entry{action, addr, size, stream, unix_time_us(),
                         record_when_ >= RecordContext::Alloc ? frames : nullptr};
  if (trace_.size() < trace_max_) {
    trace_.push_back(std::move(entry));
    return;
  }
  trace_[trace_next_] = std::move(entry);
  trace_next_ = (trace_next_ + 1) % trace_max_;
}

std::vector<MemoryTraceEntry> CachingAllocator::trace_oldest_first() const {
  // Until the ring is full trace_next_ is 0 and the entries are already in order.
  const auto split = trace_.begin() + static_cast<std::ptrdiff_t>(trace_next_);
  std::vector<MemoryTraceEntry> out(split, trace_.end());
  out.insert(out.end(), trace_.begin(), split);
  return out;
}

AllocatorSnapshot CachingAllocator::memory_snapshot() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  AllocatorSnapshot out{device_index_, {}, trace_oldest_first()};
  size_t total_active = 0;
  for (const Block* head : segment_heads()) {
    auto frames = segment_frames_.find(head->ptr);
    SegmentSnapshot seg{device_index_, reinterpret_cast<size_t>(head->ptr), 0, 0, 0, 0, head->stream,
                        !head->small, frames == segment_frames_.end() ? nullptr : frames->second, {}};
    for (const Block* b = head; b; b = b->next) {
      // torch's "active": allocated, or freed but waiting for the streams that used it.
      const BlockState state = b->allocated         ? BlockState::ActiveAllocated
                               : b->event_count > 0 ? BlockState::ActivePendingFree
                                                    : BlockState::Inactive;
      const bool active = state != BlockState::Inactive;
      // An inactive block's requested_size is left over from an earlier allocation: report 0.
      const size_t requested = active ? b->requested_size : 0;
      seg.blocks.push_back(BlockSnapshot{reinterpret_cast<size_t>(b->ptr), b->size, requested, state, b->frames});
      seg.total_size += b->size;
      if (b->allocated) seg.allocated_size += b->size;
      if (active) {
        seg.active_size += b->size;
        seg.requested_size += requested;
      }
    }
    total_active += seg.active_size;
    out.segments.push_back(std::move(seg));
  }
  std::sort(out.segments.begin(), out.segments.end(),
            [](const SegmentSnapshot& a, const SegmentSnapshot& b) { return a.address < b.address; });
  // After copying the trace, as torch: the entry marks this snapshot in the next one.
  record_trace(TraceAction::Snapshot, 0, total_active, 0, nullptr);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reports (torch.cuda.memory_stats / memory_summary)

std::string format_memory_size(uint64_t bytes) {
  char buf[64];
  if (bytes <= 1024) {
    std::snprintf(buf, sizeof buf, "%" PRIu64 " bytes", bytes);
  } else if (bytes <= 1048576) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", static_cast<double>(bytes) / 1024.0);
  } else if (bytes <= 1073741824ULL) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / 1048576.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / 1073741824.0);
  }
  return buf;
}

namespace {

constexpr const char* kPoolNames[3] = {"all", "small_pool", "large_pool"};

struct StatArrayRef {
  const char* key;
  const MemoryStat* stats;
};

// The nine per-pool statistics in memory_stats()' naming.
std::vector<StatArrayRef> stat_arrays(const DeviceMemoryStats& s) {
  return {{"allocation", s.allocation},
          {"segment", s.segment},
          {"active", s.active},
          {"inactive_split", s.inactive_split},
          {"allocated_bytes", s.allocated_bytes},
          {"reserved_bytes", s.reserved_bytes},
          {"active_bytes", s.active_bytes},
          {"inactive_split_bytes", s.inactive_split_bytes},
          {"requested_bytes", s.requested_bytes}};
}

void put_stat(std::vector<std::pair<std::string, int64_t>>& out, const std::string& prefix,
              const MemoryStat& m) {
  out.emplace_back(prefix + ".current", m.current);
  out.emplace_back(prefix + ".peak", m.peak);
  out.emplace_back(prefix + ".allocated", m.allocated);
  out.emplace_back(prefix + ".freed", m.freed);
}

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// memory_summary's _format_size: the unit is chosen by `pref` (the row's "all" value), so the
// pool rows of one column share the unit of their total.
std::string summary_size(int64_t sz, double pref) {
  static const char* const prefixes[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int p = 0;
  for (int i = 1; i < 6 && pref >= 768 * 1024; ++i) {
    p = i;
    sz = floor_div(sz, 1024);
    pref /= 1024;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%6" PRId64 " %s", sz, prefixes[p]);
  return buf;
}

// memory_summary's _format_count.
std::string summary_count(int64_t cnt, double pref) {
  static const char* const prefixes[] = {" ", "K", "M"};
  int p = 0;
  for (int i = 1; i < 3 && pref >= 750 * 1000; ++i) {
    p = i;
    cnt = floor_div(cnt, 1000);
    pref /= 1000;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%7" PRId64 " %s ", cnt, prefixes[p]);
  return buf;
}

std::string ljust(std::string s, int width) {
  if (static_cast<int>(s.size()) < width) s.append(static_cast<size_t>(width) - s.size(), ' ');
  return s;
}

std::string spaces(int n) { return std::string(static_cast<size_t>(std::max(n, 0)), ' '); }

}  // namespace

std::vector<std::pair<std::string, int64_t>> memory_stats_dict(const DeviceMemoryStats& s) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const StatArrayRef& a : stat_arrays(s)) {
    for (int i = 0; i < 3; ++i) put_stat(out, std::string(a.key) + "." + kPoolNames[i], a.stats[i]);
  }
  out.emplace_back("num_alloc_retries", s.num_alloc_retries);
  out.emplace_back("num_ooms", s.num_ooms);
  out.emplace_back("max_split_size", s.max_split_size);
  out.emplace_back("num_sync_all_streams", s.num_sync_all_streams);
  out.emplace_back("num_device_alloc", s.num_device_alloc);
  out.emplace_back("num_device_free", s.num_device_free);
  put_stat(out, "oversize_allocations", s.oversize_allocations);
  put_stat(out, "oversize_segments", s.oversize_segments);
  std::sort(out.begin(), out.end());  // torch sorts the flattened items
  return out;
}

// Line for line torch.cuda.memory_summary (torch/cuda/memory.py): 75 columns between the bars.
// A backend word other than "CUDA" takes its width from the padding, so the box stays aligned.
std::string memory_summary(const DeviceMemoryStats& s, int device_index, bool abbreviated,
                           const char* backend_name) {
  const std::string backend = backend_name ? backend_name : "CUDA";
  const int extra = static_cast<int>(backend.size()) - 4;
  const std::string retry_word = backend == "CUDA" ? "cudaMalloc" : "malloc";
  const int retry_extra = static_cast<int>(retry_word.size()) - 10;

  std::vector<std::string> lines;
  lines.push_back(std::string(75, '='));
  lines.push_back(" " + spaces(16) + " PyTorch " + backend + " memory summary, device ID " +
                  ljust(std::to_string(device_index), 17 - extra) + " ");
  lines.push_back(std::string(75, '-'));
  lines.push_back("  " + spaces(9 - extra) + " " + backend + " OOMs: " +
                  ljust(std::to_string(s.num_ooms), 12) + " | " +
                  spaces(6 - retry_extra) + " " + retry_word + " retries: " +
                  ljust(std::to_string(s.num_alloc_retries), 8) + "  ");
  lines.push_back(std::string(75, '='));
  lines.push_back("        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ");

  using Formatter = std::string (*)(int64_t, double);
  auto row = [&](const std::string& name, const MemoryStat& m, const MemoryStat& pref,
                 Formatter f) {
    lines.push_back(" " + ljust(name, 21) + " | " + f(m.current, double(pref.current)) + " | " +
                    f(m.peak, double(pref.peak)) + " | " +
                    f(m.allocated, double(pref.allocated)) + " | " +
                    f(m.freed, double(pref.freed)) + " ");
  };
  struct Metric { const MemoryStat* stats; const char* name; Formatter f; };
  const Metric metrics[] = {
      {s.allocated_bytes, "Allocated memory", summary_size},
      {s.active_bytes, "Active memory", summary_size},
      {s.requested_bytes, "Requested memory", summary_size},
      {s.reserved_bytes, "GPU reserved memory", summary_size},
      {s.inactive_split_bytes, "Non-releasable memory", summary_size},
      {s.allocation, "Allocations", summary_count},
      {s.active, "Active allocs", summary_count},
      {s.segment, "GPU reserved segments", summary_count},
      {s.inactive_split, "Non-releasable allocs", summary_count},
  };
  for (const Metric& m : metrics) {
    lines.push_back(std::string(75, '-'));
    row(m.name, m.stats[kStatAll], m.stats[kStatAll], m.f);
    if (!abbreviated) {
      row("      from large pool", m.stats[kStatLargePool], m.stats[kStatAll], m.f);
      row("      from small pool", m.stats[kStatSmallPool], m.stats[kStatAll], m.f);
    }
  }
  lines.push_back(std::string(75, '-'));
  row("Oversize allocations", s.oversize_allocations, s.oversize_allocations, summary_count);
  lines.push_back(std::string(75, '-'));
  row("Oversize GPU segments", s.oversize_segments, s.oversize_segments, summary_count);
  lines.push_back(std::string(75, '='));

  std::string out = "|";
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? "|\n|" : "") + lines[i];
  return out + "|\n";
}

}  // namespace ember
