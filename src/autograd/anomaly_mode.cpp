// The anomaly-detection flags the engine reads (ember/autograd/anomaly_mode.h).
#include "ember/autograd/anomaly_mode.h"

#include <atomic>

namespace ember::autograd {

namespace {
std::atomic<bool> g_enabled{false};
std::atomic<bool> g_check_nan{true};
}  // namespace

void set_anomaly_mode(bool enabled, bool check_nan) {
  g_check_nan.store(check_nan, std::memory_order_relaxed);
  g_enabled.store(enabled, std::memory_order_relaxed);
}

bool anomaly_mode_enabled() { return g_enabled.load(std::memory_order_relaxed); }

bool anomaly_check_nan() { return anomaly_mode_enabled() && g_check_nan.load(std::memory_order_relaxed); }

}  // namespace ember::autograd
