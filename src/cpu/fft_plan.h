// ember's own 1-D complex FFT: a Stockham autosort transform over split (re, im) arrays whose
// elements are SIMD vectors, one lane per line, so 16 float (8 double) lines move through each
// butterfly together and no instruction shuffles data inside a line. V = R runs one line alone.
//
// A length factors into radix 4, 2, 3 and 5 stages with hand-written butterflies and a generic
// O(p) butterfly for other primes up to kMaxDirectPrime; lengths with a larger prime factor use
// Bluestein's algorithm (the DFT as a convolution with a chirp, done by transforms of a smooth length).
// Transforms are unnormalised in both directions (the callers scale once when they store).
// A plan holds only read-only tables, so one plan serves every thread; scratch is the caller's.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace ember::cpu::fft {

// The SIMD vector of one register: 64 bytes where the build targets AVX-512 (this project's
// -march=native builds), 32 with AVX, 16 otherwise (the portable x86-64 build of scripts/gpu_stage.sh).
#if defined(__AVX512F__)
inline constexpr int kVectorBytes = 64;
#elif defined(__AVX__)
inline constexpr int kVectorBytes = 32;
#else
inline constexpr int kVectorBytes = 16;
#endif
template <class R> struct Lanes {
  typedef R type __attribute__((vector_size(kVectorBytes)));
};
template <class R> using Vec = typename Lanes<R>::type;
template <class R> inline constexpr int64_t kLanes = int64_t(sizeof(Vec<R>) / sizeof(R));

// Above this prime factor the generic butterfly's O(n p) loses to Bluestein's O(n log n).
inline constexpr int64_t kMaxDirectPrime = 64;
int64_t largest_prime_factor(int64_t n);

// Complex transforms of one length and direction over V-wide groups of lines.
template <class R, class V> class Plan {
 public:
  using Value = V;
  Plan(int64_t n, bool inverse);
  Plan(Plan&&) noexcept;
  ~Plan();
  int64_t size() const { return n_; }
  // Elements of V the scratch passed to transform must hold.
  int64_t work_size() const;
  // Transforms re/im (n elements each) in place.
  void transform(V* re, V* im, V* work) const;

 private:
  struct Stage {
    // m = remaining length / radix, s = stride of the sub-transforms; offsets into the tables
    int64_t radix, m, s, twiddle, roots;
  };
  void run_stage(const Stage& st, const V* xr, const V* xi, V* yr, V* yi) const;
  void direct(V* re, V* im, V* work) const;

  int64_t n_;
  R sign_;  // -1 forward, +1 inverse: the exponent's sign
  std::vector<Stage> stages_;
  std::vector<R> tw_re_, tw_im_;    // per stage, per p: w^(p k) for k = 1 .. radix-1
  std::vector<R> root_re_, root_im_;  // per generic-radix stage: the radix's roots of unity
  // Bluestein: the forward plan of the convolution's length m_, the chirp and the kernel's spectrum.
  int64_t m_ = 0;
  std::unique_ptr<Plan> sub_;
  std::vector<R> chirp_re_, chirp_im_, kernel_re_, kernel_im_;
};

// One long line (2^20 points, say) as an n1 x n2 matrix (the "six-step" transform): transforms
// of length n1 down the columns, a twiddle w_n^(j2 k1) per element, transforms of length n2
// along the rows, and the transposed read-out X[k1 + n1 k2]. Columns and rows move as lane
// groups through Plan<R, Vec<R>> and are split across the thread pool, so a single long line
// runs at the lane engine's speed, on every thread. Same interface as Plan<R, R>.
template <class R> class LongPlan {
 public:
  using Value = R;
  // A split n = n1 * n2 with both multiples of the lane count and small enough for lane plans;
  // {0, 0} where there is none.
  static std::pair<int64_t, int64_t> split(int64_t n);
  LongPlan(int64_t n, bool inverse);
  int64_t size() const { return n_; }
  int64_t work_size() const { return 2 * n_; }
  void transform(R* re, R* im, R* work) const;

 private:
  int64_t n_, n1_, n2_;
  std::shared_ptr<const Plan<R, Vec<R>>> columns_, rows_;
  std::vector<R> tw_re_, tw_im_;  // w_n^(j2 k1) at k1 * n2 + j2
};

// The object make() builds for (n, inverse), kept in a small per-type cache of the most recently
// used ones: building a plan costs a sincos per twiddle, about what transforming 16 lines of its
// length costs, and models call the same few lengths again and again (as torch's plan cache).
template <class T, class Make> std::shared_ptr<const T> cached(int64_t n, bool inverse, const Make& make) {
  constexpr size_t kEntries = 16;
  struct Entry {
    int64_t n;
    bool inverse;
    uint64_t used;
    std::shared_ptr<const T> value;
  };
  static std::mutex mutex;
  static std::vector<Entry> entries;
  static uint64_t clock = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (Entry& e : entries)
      if (e.n == n && e.inverse == inverse) {
        e.used = ++clock;
        return e.value;
      }
  }
  std::shared_ptr<const T> built = make();  // outside the lock: other lengths need not wait
  std::lock_guard<std::mutex> lock(mutex);
  if (entries.size() < kEntries) {
    entries.push_back({n, inverse, ++clock, built});
  } else {
    Entry* oldest = &entries[0];
    for (Entry& e : entries)
      if (e.used < oldest->used) oldest = &e;
    *oldest = {n, inverse, ++clock, built};
  }
  return built;
}

extern template class Plan<float, float>;
extern template class Plan<double, double>;
extern template class Plan<float, Vec<float>>;
extern template class Plan<double, Vec<double>>;
extern template class LongPlan<float>;
extern template class LongPlan<double>;

}  // namespace ember::cpu::fft
