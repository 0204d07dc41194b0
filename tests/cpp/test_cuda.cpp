// The CUDA backend (issue 16). Without a GPU (CI, most development machines) the tests that
// need one skip with the reason shown; the ones here that run everywhere check what a CUDA build
// must do on a CPU-only machine: report no GPU, keep the statistics at zero, and fail cleanly.
// The elementwise op tests of the other files run on CUDA as well when a GPU is present
// (EMBER_DEVICE_TEST, device_test.cpp).
#include <gtest/gtest.h>

#include <cmath>

#include "ember/cuda.h"
#include "ember/ember.h"
#include "test_utils.h"

namespace ember {
namespace {

#define REQUIRE_GPU() \
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA GPU on this machine: the CUDA backend compiled but did not run"

TEST(CudaWithoutGpu, QueriesAnswerAsTorchOnACpuMachine) {
  if (cuda::is_available()) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_EQ(cuda::device_count(), 0);
  EXPECT_EQ(cuda::memory_allocated(), 0);
  EXPECT_EQ(cuda::max_memory_reserved(), 0);
  EXPECT_TRUE(cuda::memory_stats().empty());
  EXPECT_NE(cuda::memory_summary().find("memory summary, device ID 0"), std::string::npos);
  cuda::empty_cache();          // no-ops, as torch's
  cuda::manual_seed_all(1);
  if (cuda::is_built()) {
    EXPECT_FALSE(cuda::version().empty());
    EXPECT_THROW_MSG(cuda::current_device(), Error, "No CUDA GPUs are available");
    EXPECT_THROW_MSG(zeros({2}, {.device = Device("cuda")}), Error, "No CUDA GPUs are available");
    EXPECT_THROW_MSG(ones({2}).pin_memory(), Error, "no CUDA GPU is available");
  } else {
    EXPECT_TRUE(cuda::version().empty());
  }
  EXPECT_FALSE(ones({2}).is_pinned());
}

// ---- with a GPU
TEST(Cuda, DevicesAndProperties) {
  REQUIRE_GPU();
  EXPECT_GT(cuda::device_count(), 0);
  DeviceProperties p = cuda::get_device_properties(0);
  EXPECT_FALSE(p.name.empty());
  EXPECT_GT(p.total_memory, 0);
  EXPECT_GT(p.multi_processor_count, 0);
  EXPECT_GE(p.major, 7);
  cuda::set_device(0);
  EXPECT_EQ(cuda::current_device(), 0);
  EXPECT_THROW(cuda::set_device(cuda::device_count()), IndexError);
}

TEST(Cuda, AllocatorStatisticsCountExactBytes) {
  REQUIRE_GPU();
  cuda::synchronize();
  cuda::empty_cache();
  const int64_t base = cuda::memory_allocated();
  const int64_t base_reserved = cuda::memory_reserved();
  cuda::reset_peak_memory_stats();
  {
    Tensor small = empty({1000}, {.device = Device("cuda:0")});  // 4000 bytes -> 4096 (512-byte rounding)
    EXPECT_EQ(cuda::memory_allocated() - base, 4096);
    EXPECT_EQ(cuda::memory_reserved() - base_reserved, 2 << 20);  // a fresh 2 MiB small-pool segment
    Tensor large = empty({3 << 20}, {.device = Device("cuda:0")});  // 12 MiB: its own segment
    EXPECT_EQ(cuda::memory_allocated() - base, 4096 + (12 << 20));
    EXPECT_EQ(cuda::max_memory_allocated() - base, 4096 + (12 << 20));
  }
  EXPECT_EQ(cuda::memory_allocated(), base);  // freed to the cache
  EXPECT_EQ(cuda::memory_reserved() - base_reserved, (2 << 20) + (12 << 20));
  cuda::empty_cache();
  EXPECT_EQ(cuda::memory_reserved(), base_reserved);
}

TEST(Cuda, OutOfMemorySaysHowMuch) {
  REQUIRE_GPU();
  auto [free_bytes, total] = cuda::mem_get_info();
  EXPECT_THROW_MSG(empty({int64_t(total)}, {.device = Device("cuda:0")}), OutOfMemoryError, "Tried to allocate");
  EXPECT_EQ(cuda::memory_stats_raw().num_ooms, 1);
}

TEST(Cuda, CopiesRoundTripWithConversion) {
  REQUIRE_GPU();
  Tensor x = randn({5, 7});
  Tensor g = x.to(Device("cuda:0"));
  EXPECT_TRUE(g.is_cuda());
  EXPECT_TRUE(equal(g.cpu(), x));
  EXPECT_TRUE(equal(g.to(kFloat64).cpu(), x.to(kFloat64)));
  EXPECT_TRUE(equal(x.t().to(Device("cuda:0")).cpu(), x.t().contiguous()));  // strided upload
  EXPECT_TRUE(equal(g.t().cpu(), x.t().contiguous()));                     // strided download
  Tensor pinned = x.pin_memory();
  EXPECT_TRUE(pinned.is_pinned());
  Tensor async = pinned.to(Device("cuda:0"), false, /*non_blocking=*/true);
  cuda::synchronize();
  EXPECT_TRUE(equal(async.cpu(), x));
}

TEST(Cuda, ElementwiseMatchesTheCpu) {
  REQUIRE_GPU();
  Tensor a = randn({33, 65}), b = randn({65});
  Device gpu("cuda:0");
  Tensor ga = a.to(gpu), gb = b.to(gpu);
  EXPECT_TRUE(allclose((ga + gb).cpu(), a + b));
  EXPECT_TRUE(allclose((ga * 2.5).cpu(), a * 2.5));
  EXPECT_TRUE(allclose(ga.t().exp().cpu(), a.t().exp(), 1e-5, 1e-6));
  EXPECT_TRUE(allclose(ga.to(kBFloat16).sigmoid().to(kFloat32).cpu(), a.to(kBFloat16).sigmoid().to(kFloat32), 1e-2, 1e-2));
  EXPECT_TRUE(equal((ga > gb).cpu(), a > b));
  EXPECT_TRUE(equal(where(ga > 0, ga, gb).cpu(), where(a > 0, a, b)));
  EXPECT_THROW_MSG(ga + b.to(kFloat32).expand({33, 65}), Error, "Expected all tensors to be on the same device");
}

TEST(Cuda, StreamsAndEvents) {
  REQUIRE_GPU();
  Stream s = cuda::new_stream();
  EXPECT_NE(s.id, 0);
  cuda::Event start(true), end(true);
  {
    StreamGuard g(s);
    EXPECT_EQ(cuda::current_stream(), s);
    start.record();
    Tensor x = ones({1 << 20}, {.device = Device("cuda:0")}) * 3;
    end.record();
  }
  end.synchronize();
  EXPECT_TRUE(end.query());
  EXPECT_GE(start.elapsed_time(end), 0.0);
  EXPECT_EQ(cuda::current_stream().id, 0);
}

// ---- graphs
TEST(CudaGraph, CapturesAndReplaysOnItsPool) {
  REQUIRE_GPU();
  const Device gpu("cuda:0");
  Tensor x = ones({1000}, {.device = gpu});
  Stream side = cuda::new_stream();
  cuda::CUDAGraph g;
  Tensor y;
  {
    StreamGuard guard(side);
    EXPECT_FALSE(cuda::is_current_stream_capturing());
    g.capture_begin();
    EXPECT_TRUE(cuda::is_current_stream_capturing());
    y = (x * 2 + 1).exp().sum();  // temporaries and the result come from the graph's pool
    g.capture_end();
    EXPECT_FALSE(cuda::is_current_stream_capturing());
  }
  EXPECT_GT(g.pool(), 0);
  x.fill_(0.5);
  g.replay();
  EXPECT_NEAR(y.item<double>(), 1000 * std::exp(2.0), 1e-2);
  x.fill_(-0.5);
  g.replay();
  EXPECT_NEAR(y.item<double>(), 1000.0, 1e-3);
  // A second graph on the first one's pool, then both reset: nothing is left allocated.
  cuda::CUDAGraph g2;
  Tensor z;
  {
    StreamGuard guard(side);
    g2.capture_begin(g.pool());
    z = y * 3;
    g2.capture_end();
  }
  g.replay();
  g2.replay();
  EXPECT_NEAR(z.item<double>(), 3000.0, 1e-2);
  g.reset();
  g2.reset();
  EXPECT_NEAR(z.item<double>(), 3000.0, 1e-2);  // tensors outlive their graph
}

TEST(CudaGraph, RefusesWhatWouldBreakACapture) {
  REQUIRE_GPU();
  cuda::CUDAGraph g;
  EXPECT_THROW_MSG(g.capture_begin(), Error, "non-default stream");
  EXPECT_THROW_MSG(g.replay(), Error, "holds no capture");
  EXPECT_THROW_MSG(g.capture_begin(0, "sometimes"), ValueError, "capture_error_mode");
  Stream side = cuda::new_stream();
  Tensor x = ones({16}, {.device = Device("cuda:0")});
  {
    StreamGuard guard(side);
    g.capture_begin();
    EXPECT_THROW_MSG(randn({4}, {.device = Device("cuda:0")}), Error, "inside a CUDA graph capture");
    EXPECT_THROW_MSG(x.sum().item<double>(), Error, "not allowed while a CUDA graph is being captured");
    EXPECT_THROW_MSG(g.capture_end(), Error, "the capture failed");
  }
  // The stream and the graph work again afterwards.
  {
    StreamGuard guard(side);
    g.capture_begin();
    Tensor y = x + 1;
    g.capture_end();
    g.replay();
    cuda::synchronize();
    EXPECT_EQ(y.sum().item<double>(), 32.0);
  }
}

}  // namespace
}  // namespace ember
