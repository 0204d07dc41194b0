#pragma once
// Intra-op parallelism over OpenMP (the same pool OpenBLAS uses, so they never fight).
// Work below the grain size runs inline: a thread hand-off costs more than a small loop.
#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace ember {

inline constexpr int64_t kGrainSize = 32768;

// Calls fn(begin, end) on disjoint chunks covering [begin, end).
template <class F> void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& fn) {
  int64_t n = end - begin;
  if (n <= 0) return;
  int nthreads = omp_get_max_threads();
  if (n <= grain || nthreads == 1 || omp_in_parallel()) {
    fn(begin, end);
    return;
  }
  int64_t chunks = std::min<int64_t>(nthreads, (n + grain - 1) / grain);
#pragma omp parallel num_threads(int(chunks))
  {
    int64_t tid = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t per = (n + nt - 1) / nt;
    int64_t b = begin + tid * per, e = std::min(end, b + per);
    if (b < e) fn(b, e);
  }
}

}  // namespace ember
