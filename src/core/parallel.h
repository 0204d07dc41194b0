#pragma once
// Intra-op parallelism: parallel_for splits a range into at most one chunk per thread and runs
// the chunks on ember's thread pool (core/thread_pool.h: the caller never waits for a thread
// that has not started, so a busy machine degrades a loop to one thread, not to a stall).
// Work below the grain size runs inline: a thread hand-off costs more than a small loop.
#include <algorithm>
#include <cstdint>

#include "core/thread_pool.h"

namespace ember {

inline constexpr int64_t kGrainSize = 32768;

// Calls fn(chunk, nchunks) for every chunk index in [0, nchunks) on the pool (each index once).
template <class F> void parallel_chunks(int64_t nchunks, const F& fn) {
  struct Ctx {
    const F* fn;
    int64_t n;
  } ctx{&fn, nchunks};
  detail::run_chunks(
      nchunks, [](void* c, int64_t i) { (*static_cast<Ctx*>(c)->fn)(i, static_cast<Ctx*>(c)->n); }, &ctx);
}

// Calls fn(begin, end) on disjoint chunks covering [begin, end). The chunks depend only on
// the range, the grain and the thread count, never on which thread runs which.
template <class F> void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& fn) {
  int64_t n = end - begin;
  if (n <= 0) return;
  int nthreads = detail::max_parallel_threads();
  if (n <= grain || nthreads == 1) {
    fn(begin, end);
    return;
  }
  int64_t chunks = std::min<int64_t>(nthreads, (n + grain - 1) / grain);
  int64_t per = (n + chunks - 1) / chunks;
  parallel_chunks(chunks, [&](int64_t i, int64_t) {
    int64_t b = begin + i * per, e = std::min(end, b + per);
    if (b < e) fn(b, e);
  });
}

}  // namespace ember
