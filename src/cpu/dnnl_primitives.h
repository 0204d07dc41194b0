#pragma once
// What ember's oneDNN callers (conv_dnnl.cpp, dnnl_matmul.cpp) share: one CPU engine, a
// bounded, thread-safe cache of created primitives, and the buffers of a call. Include only
// from .cpp files built with EMBER_HAVE_DNNL: dnnl.hpp is heavy.
//
// Why a cache of our own on top of oneDNN's primitive cache: a lookup there still builds a
// primitive descriptor (the dispatch over oneDNN's implementation list), as long as a whole
// 64^3 bfloat16 product on AMX. With this cache a bfloat16 mm of 64^3 takes 2.8 us, 5.4 without
// (128^3: 6.6 against 8.4 us; 32 x 128x64x128 bmm: 44 against 62 us). It also keeps what ember
// derives from a descriptor (reorders, scratchpad size) alongside the primitive.
//
// Every key carries the OpenMP thread count at creation (creation_threads()): oneDNN fixes a
// primitive's split of the work across threads when it creates it, and runs it with a team of
// that many threads, so a primitive made at top level (2 threads) must not be run inside a
// chunk of ember's pool (1 thread), nor the reverse.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "ember/ops.h"

namespace ember::cpu::dnnl_primitives {

inline dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// Whether oneDNN runs bfloat16 natively on this CPU (AVX512-BF16 or AMX instructions). Elsewhere
// it emulates them or falls back to reference kernels, and ember's float32 path is the better one.
inline bool native_bf16() {
  static const bool native = [] {
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
  }();
  return native;
}

// The thread count oneDNN gives a primitive created on this thread now (its OpenMP build asks
// omp_get_max_threads(); inside a chunk of ember's pool that is 1).
inline int64_t creation_threads() { return omp_get_max_threads(); }

// Entries by key, created on first use; a null entry records that oneDNN declined the key.
// Past `capacity` keys the cache starts over: a program that cycles through more shapes than
// that pays creation again instead of holding memory without bound.
template <class Entry> class PrimitiveCache {
 public:
  using Key = std::vector<int64_t>;
  explicit PrimitiveCache(size_t capacity) : capacity_(capacity) {}

  // make() runs outside the lock (creation JIT-compiles, milliseconds for a convolution): two
  // threads asking for a new key at once may both create it, and the first stored is kept.
  template <class Make> std::shared_ptr<const Entry> get(const Key& key, const Make& make) {
    {
      std::lock_guard lock(mu_);
      if (auto it = entries_.find(key); it != entries_.end()) return it->second;
    }
    std::shared_ptr<const Entry> made = make();
    std::lock_guard lock(mu_);
    if (entries_.size() >= capacity_) entries_.clear();
    return entries_.emplace(key, std::move(made)).first->second;
  }

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::map<Key, std::shared_ptr<const Entry>> entries_;
};

// Memory a primitive call needs only while it runs (its scratchpad, blocked copies of its
// operands), as 64-byte aligned blocks of one allocation. Up to kThreadBufferMax bytes in all
// they come from a buffer of the calling thread's, kept across calls: fresh ones cost page
// faults and allocator work on every call (an 8^3 bfloat16 mm took 2.7 us with a fresh
// scratchpad, 2.3 with the thread's; the CNN's 32 -> 64 convolution ran forward and backward
// 10% faster). Larger ones come from ember's allocator, which keeps blocks from 1 MiB for reuse and
// hands them back on empty_cpu_cache(), so no thread holds more than kThreadBufferMax for good.
// The blocks live as long as this object; one call at a time runs on a thread (oneDNN's team
// threads work in the blocks of the call that started them).
class CallBuffers {
 public:
  static constexpr size_t kThreadBufferMax = size_t(16) << 20;

  CallBuffers(std::initializer_list<size_t> sizes) {
    size_t total = 0;
    for (size_t s : sizes) total += rounded(s);
    char* base = nullptr;
    if (total <= kThreadBufferMax) {
      base = thread_buffer(total);
    } else {
      hold_ = empty({int64_t(total)}, {.dtype = kUInt8, .device = Device(DeviceType::CPU)});
      base = static_cast<char*>(hold_.data_ptr());
    }
    for (size_t s : sizes) {
      blocks_.push_back(base);
      base += rounded(s);
    }
  }
  char* operator[](size_t i) const { return blocks_[i]; }

 private:
  static constexpr size_t kAlign = 64;
  static size_t rounded(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

  static char* thread_buffer(size_t bytes) {
    struct Buffer {
      char* data = nullptr;
      size_t size = 0;
      ~Buffer() { std::free(data); }
    };
    thread_local Buffer buffer;
    if (buffer.size < bytes) {
      std::free(buffer.data);
      buffer.size = 0;
      buffer.data = static_cast<char*>(std::aligned_alloc(kAlign, std::max(bytes, kAlign)));
      if (!buffer.data) throw std::bad_alloc();
      buffer.size = bytes;
    }
    return buffer.data;
  }

  std::vector<char*> blocks_;
  Tensor hold_;  // the blocks' memory when it is not the thread's buffer
};

}  // namespace ember::cpu::dnnl_primitives
