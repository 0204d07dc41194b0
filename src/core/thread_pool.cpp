// The intra-op thread pool: see thread_pool.h for why it is not an OpenMP region.
#include "core/thread_pool.h"

#include "core/flush_denormal.h"

#include <omp.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <new>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define EMBER_CPU_RELAX() _mm_pause()
#else
#define EMBER_CPU_RELAX() ((void)0)
#endif

namespace ember::detail {
namespace {

thread_local bool tl_in_region = false;

// How long an idle worker, or the caller waiting for a worker's chunk, spins before sleeping.
// Long enough to catch the next parallel op of a loop of small ops (500 us: a GPT generate loop
// ran 13.5 ms per call, 15.9 ms with 50 us, 12.5 ms with OpenMP's spinning barrier), short
// enough that a worker with nothing to do leaves the core to whoever needs it.
constexpr auto kSpin = std::chrono::microseconds(500);

// Bumped by park_idle_workers(): a spinning idle worker that sees it change sleeps at once.
std::atomic<uint32_t> g_park{0};

template <class Ready> void spin_then(const Ready& ready, const auto& sleep, bool parkable = false) {
  auto until = std::chrono::steady_clock::now() + kSpin;
  const uint32_t park = g_park.load(std::memory_order_relaxed);
  for (int i = 0;; ++i) {
    if (ready()) return;
    EMBER_CPU_RELAX();
    if ((i & 63) == 63 && (std::chrono::steady_clock::now() > until ||
                           (parkable && g_park.load(std::memory_order_relaxed) != park)))
      break;
  }
  while (!ready()) sleep();
}

// Marks the current thread as inside a chunk (OpenMP thread count 1) for its lifetime.
class RegionScope {
 public:
  RegionScope() : saved_threads_(omp_get_max_threads()), saved_flag_(tl_in_region) {
    tl_in_region = true;
    if (saved_threads_ != 1) omp_set_num_threads(1);
  }
  ~RegionScope() {
    tl_in_region = saved_flag_;
    if (saved_threads_ != 1) omp_set_num_threads(saved_threads_);
  }
  RegionScope(const RegionScope&) = delete;
  RegionScope& operator=(const RegionScope&) = delete;

 private:
  int saved_threads_;
  bool saved_flag_;
};

// Runs every chunk on the calling thread, in order.
void run_alone(int64_t nchunks, ChunkFn fn, void* ctx) {
  RegionScope region;
  std::exception_ptr first;
  for (int64_t i = 0; i < nchunks; ++i) {
    try {
      fn(ctx, i);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

class Pool {
 public:
  static Pool& get() {
    static Pool* pool = [] {
      auto* p = new Pool();  // never destroyed: workers may still be asleep at exit
      pthread_atfork(nullptr, nullptr, [] { Pool::get().after_fork_in_child(); });
      return p;
    }();
    return *pool;
  }

  void run(int64_t nchunks, ChunkFn fn, void* ctx) {
    std::unique_lock<std::mutex> lock(submit_, std::try_to_lock);
    if (!lock.owns_lock()) {  // another thread's loop holds the pool: run this one alone
      run_alone(nchunks, fn, ctx);
      return;
    }
    ensure_workers(int(std::min<int64_t>(nchunks, omp_get_max_threads())) - 1);
    fn_.store(fn, std::memory_order_relaxed);
    ctx_.store(ctx, std::memory_order_relaxed);
    n_.store(nchunks, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    error_ = nullptr;
    const uint32_t gen = ++generation_;
    state_.store(uint64_t(gen) << 32, std::memory_order_release);
    wake_.store(gen, std::memory_order_release);
    wake_.notify_all();
    {
      RegionScope region;
      claim_and_run(gen);
    }
    spin_then([&] { return done_.load(std::memory_order_acquire) >= nchunks; },
              [&] {
                int64_t d = done_.load(std::memory_order_acquire);
                if (d < nchunks) done_.wait(d, std::memory_order_acquire);
              });
    if (error_) std::rethrow_exception(error_);
  }

 private:
  Pool() = default;

  // Claims and runs chunks of generation gen until none is left.
  void claim_and_run(uint32_t gen) {
    for (;;) {
      uint64_t s = state_.load(std::memory_order_acquire);
      if (uint32_t(s >> 32) != gen) return;  // that loop is over
      const int64_t i = int64_t(s & 0xffffffffu);
      if (i >= n_.load(std::memory_order_relaxed)) return;
      if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) continue;
      try {
        fn_.load(std::memory_order_relaxed)(ctx_.load(std::memory_order_relaxed), i);
      } catch (...) {
        std::lock_guard<std::mutex> g(error_mu_);
        if (!error_) error_ = std::current_exception();
      }
      if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_.load(std::memory_order_relaxed))
        done_.notify_one();
    }
  }

  void ensure_workers(int wanted) {
    for (; workers_ < wanted; ++workers_) std::thread([this] { worker_loop(); }).detach();
  }

  void worker_loop() {
    omp_set_num_threads(1);  // a chunk never opens an OpenMP team of its own
    tl_in_region = true;
    uint32_t seen = wake_.load(std::memory_order_acquire);
    for (;;) {
      spin_then([&] { return wake_.load(std::memory_order_acquire) != seen; },
                [&] { wake_.wait(seen, std::memory_order_acquire); }, /*parkable=*/true);
      seen = wake_.load(std::memory_order_acquire);
      follow_denormal_mode();  // the caller's set_flush_denormal, before any chunk runs here
      claim_and_run(seen);
    }
  }

  // fork() copies only the calling thread: the child starts with no workers, and the locks
  // may have been held by threads that do not exist there.
  void after_fork_in_child() {
    new (&submit_) std::mutex();
    new (&error_mu_) std::mutex();
    workers_ = 0;
    state_.store(0);
    wake_.store(generation_);
  }

  std::mutex submit_;                   // one loop at a time uses the workers
  int workers_ = 0;                     // guarded by submit_
  uint32_t generation_ = 0;             // guarded by submit_
  std::atomic<uint64_t> state_{0};      // (generation << 32) | next unclaimed chunk
  std::atomic<uint32_t> wake_{0};       // the generation workers are woken for
  std::atomic<int64_t> done_{0};        // chunks finished in this generation
  std::atomic<ChunkFn> fn_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  std::atomic<int64_t> n_{0};
  std::mutex error_mu_;
  std::exception_ptr error_;
};

}  // namespace

void run_chunks(int64_t nchunks, ChunkFn fn, void* ctx) {
  if (nchunks <= 0) return;
  if (nchunks == 1 || tl_in_region) {
    run_alone(nchunks, fn, ctx);
    return;
  }
  Pool::get().run(nchunks, fn, ctx);
}

void park_idle_workers() { g_park.fetch_add(1, std::memory_order_relaxed); }

bool in_parallel_region() { return tl_in_region; }

int max_parallel_threads() { return tl_in_region || omp_in_parallel() ? 1 : omp_get_max_threads(); }

}  // namespace ember::detail
