// torch.backends.cudnn's flags (include/ember/cudnn_flags.h): atomics, read by the cuDNN
// convolutions on every call.
#include "ember/cudnn_flags.h"

#include <atomic>

#include "ember/cuda.h"

namespace ember {
namespace {

std::atomic<bool> g_enabled{true};
std::atomic<bool> g_benchmark{false};
std::atomic<int64_t> g_benchmark_limit{10};
std::atomic<bool> g_deterministic{false};
std::atomic<bool> g_allow_tf32{true};
std::atomic<int64_t (*)()> g_version{nullptr};

}  // namespace

bool cudnn_enabled() { return g_enabled.load(std::memory_order_relaxed); }
void set_cudnn_enabled(bool enabled) { g_enabled.store(enabled); }
bool cudnn_benchmark() { return g_benchmark.load(std::memory_order_relaxed); }
void set_cudnn_benchmark(bool benchmark) { g_benchmark.store(benchmark); }
int64_t cudnn_benchmark_limit() { return g_benchmark_limit.load(std::memory_order_relaxed); }
void set_cudnn_benchmark_limit(int64_t limit) { g_benchmark_limit.store(limit); }
bool cudnn_deterministic() { return g_deterministic.load(std::memory_order_relaxed); }
void set_cudnn_deterministic(bool deterministic) { g_deterministic.store(deterministic); }
bool cudnn_allow_tf32() { return g_allow_tf32.load(std::memory_order_relaxed); }
void set_cudnn_allow_tf32(bool allow) { g_allow_tf32.store(allow); }

int64_t cudnn_version() {
  auto* fn = g_version.load();
  return fn ? fn() : 0;
}

bool cudnn_is_available() { return cudnn_version() > 0 && cuda::is_available(); }

void detail::register_cudnn_version(int64_t (*version)()) { g_version.store(version); }

}  // namespace ember
