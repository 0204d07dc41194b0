// ember's intra-op pool (core/thread_pool.h) and parallel_for (core/parallel.h): every chunk runs
// once, exceptions reach the caller, nested loops run inline, concurrent callers and a caller
// whose workers never start both finish, and the threaded GEMM split gives the unsplit result.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/parallel.h"
#include "cpu/gemm.h"
#include "ember/ops.h"

namespace ember {
namespace {

class ParallelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = get_num_threads();
    set_num_threads(4);  // more threads than this machine's cores: workers are often late
  }
  void TearDown() override { set_num_threads(saved_); }
  int saved_ = 1;
};

TEST_F(ParallelTest, EveryIndexOnceWhateverTheGrain) {
  for (int64_t n : {1, 7, 32768, 32769, 100000, 1 << 20}) {
    for (int64_t grain : {int64_t(1), int64_t(1000), kGrainSize}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[size_t(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "n=" << n << " grain=" << grain;
    }
  }
}

TEST_F(ParallelTest, ChunksDependOnlyOnTheRange) {
  // The same range cut twice gives the same chunks: results never depend on thread timing.
  auto cuts = [] {
    std::vector<std::pair<int64_t, int64_t>> out;
    std::mutex mu;
    parallel_for(10, 100010, 1000, [&](int64_t b, int64_t e) {
      std::lock_guard<std::mutex> g(mu);
      out.emplace_back(b, e);
    });
    std::sort(out.begin(), out.end());
    return out;
  };
  auto first = cuts();
  EXPECT_EQ(first.size(), 4u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(cuts(), first);
}

TEST_F(ParallelTest, ExceptionReachesTheCallerAndThePoolStillWorks) {
  EXPECT_THROW(parallel_for(0, 1 << 20, 1, [](int64_t b, int64_t) {
                 if (b > 0) throw std::runtime_error("chunk failed");
               }),
               std::runtime_error);
  std::atomic<int64_t> sum{0};
  parallel_for(0, 1 << 20, 1, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 1 << 20);
}

TEST_F(ParallelTest, NestedLoopsRunInlineAndSeeOneThread) {
  std::atomic<int64_t> total{0};
  parallel_for(0, 4, 1, [&](int64_t b, int64_t e) {
    EXPECT_TRUE(detail::in_parallel_region());
    EXPECT_EQ(detail::max_parallel_threads(), 1);
    for (int64_t i = b; i < e; ++i)
      parallel_for(0, 1000, 1, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
  });
  EXPECT_EQ(total.load(), 4000);
  EXPECT_FALSE(detail::in_parallel_region());
  EXPECT_EQ(get_num_threads(), 4);  // the caller's OpenMP thread count is restored
}

TEST_F(ParallelTest, ConcurrentCallersAllFinish) {
  std::vector<std::thread> callers;
  std::atomic<int64_t> total{0};
  for (int t = 0; t < 6; ++t)
    callers.emplace_back([&] {
      set_num_threads(4);
      for (int rep = 0; rep < 200; ++rep)
        parallel_for(0, 4096, 64, [&](int64_t b, int64_t e) { total += e - b; });
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(total.load(), int64_t(6) * 200 * 4096);
}

TEST_F(ParallelTest, ThreadedGemmEqualsOneCall) {
  // Products in the pool-split range (rows and columns), transposed or not, in float64 where
  // a block split and one call must agree to the last bit per element (same k order).
  for (auto [M, N, K] : {std::array<int64_t, 3>{300, 200, 64}, {40, 900, 128}, {256, 256, 256}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        std::vector<double> A(size_t(M * K)), B(size_t(K * N)), C(size_t(M * N)), R(size_t(M * N), 0.0);
        for (size_t i = 0; i < A.size(); ++i) A[i] = double((i * 7919) % 13) - 6.0;
        for (size_t i = 0; i < B.size(); ++i) B[i] = double((i * 104729) % 11) - 5.0;
        const int64_t lda = ta ? M : K, ldb = tb ? K : N;
        cpu::gemm(ta, tb, M, N, K, 1.0, A.data(), lda, B.data(), ldb, 0.0, C.data(), N);
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            double s = 0;
            for (int64_t k = 0; k < K; ++k)
              s += (ta ? A[size_t(k * M + i)] : A[size_t(i * K + k)]) * (tb ? B[size_t(j * K + k)] : B[size_t(k * N + j)]);
            R[size_t(i * N + j)] = s;
          }
        ASSERT_EQ(C, R) << M << "x" << N << "x" << K << " ta=" << ta << " tb=" << tb;
      }
    }
  }
}

}  // namespace
}  // namespace ember
