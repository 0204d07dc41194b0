#pragma once
// A fake device for the caching allocator's tests (test_caching_allocator.cpp,
// test_memory_history.cpp): raw memory from malloc with a capacity, and stream events that the
// test completes.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <vector>

#include "ember/core/caching_allocator.h"

namespace ember::testing {

inline constexpr size_t kFakeMiB = 1024 * 1024;

// Raw memory from malloc, limited to `capacity` bytes. Counts raw calls. Events complete when the
// test says so (complete_stream) or when the device is synchronised.
class FakeRawMemory : public RawDeviceMemory {
 public:
  explicit FakeRawMemory(size_t capacity = 1024 * kFakeMiB) : capacity_(capacity) {}
  ~FakeRawMemory() override {
    for (auto& [p, n] : live_) std::free(p);
    for (auto& [e, ev] : events_) delete ev;
  }

  void* raw_alloc(size_t nbytes) override {
    ++alloc_calls;
    if (used_ + nbytes > capacity_) return nullptr;
    void* p = std::malloc(nbytes);
    live_[p] = nbytes;
    used_ += nbytes;
    alloc_sizes.push_back(nbytes);
    return p;
  }
  void raw_free(void* ptr) override {
    ++free_calls;
    auto it = live_.find(ptr);
    if (it == live_.end()) throw std::logic_error("raw_free of a pointer raw_alloc did not return");
    used_ -= it->second;
    std::free(ptr);
    live_.erase(it);
  }
  void mem_get_info(size_t* free_bytes, size_t* total_bytes) override {
    *free_bytes = capacity_ - used_;
    *total_bytes = capacity_;
  }
  void* record_event(int64_t stream) override {
    auto* ev = new FakeEvent{stream, ++seq_};
    events_[ev] = ev;
    ++events_recorded;
    recorded_streams.push_back(stream);
    return ev;
  }
  bool query_event(void* event) override {
    auto* ev = static_cast<FakeEvent*>(event);
    return ev->seq <= completed_[ev->stream];
  }
  void release_event(void* event) override {
    events_.erase(event);
    delete static_cast<FakeEvent*>(event);
  }
  void synchronize_device() override {
    ++syncs;
    for (auto& [e, ev] : events_) completed_[ev->stream] = seq_;
  }

  // Work queued on `stream` so far has finished.
  void complete_stream(int64_t stream) { completed_[stream] = seq_; }
  size_t used() const { return used_; }
  size_t outstanding_events() const { return events_.size(); }

  int alloc_calls = 0, free_calls = 0, syncs = 0, events_recorded = 0;
  std::vector<size_t> alloc_sizes;
  std::vector<int64_t> recorded_streams;

 private:
  struct FakeEvent { int64_t stream; uint64_t seq; };
  size_t capacity_, used_ = 0;
  uint64_t seq_ = 0;
  std::map<void*, size_t> live_;
  std::map<void*, FakeEvent*> events_;
  std::map<int64_t, uint64_t> completed_;
};

}  // namespace ember::testing
