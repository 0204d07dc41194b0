// torch.backends.cuda's SDPA switches (ember/sdp_flags.h): plain process-wide atomics, as torch's
// global context flags.
#include "ember/sdp_flags.h"

#include <atomic>

namespace ember {
namespace {
std::atomic<bool> g_flash{true}, g_mem_efficient{true}, g_math{true};
thread_local bool t_ignore_sizes = false;
}  // namespace

bool set_sdp_choice_ignores_sizes(bool on) {
  const bool was = t_ignore_sizes;
  t_ignore_sizes = on;
  return was;
}
bool sdp_choice_ignores_sizes() { return t_ignore_sizes; }

bool flash_sdp_enabled() { return g_flash.load(std::memory_order_relaxed); }
void enable_flash_sdp(bool enabled) { g_flash.store(enabled, std::memory_order_relaxed); }
bool mem_efficient_sdp_enabled() { return g_mem_efficient.load(std::memory_order_relaxed); }
void enable_mem_efficient_sdp(bool enabled) { g_mem_efficient.store(enabled, std::memory_order_relaxed); }
bool math_sdp_enabled() { return g_math.load(std::memory_order_relaxed); }
void enable_math_sdp(bool enabled) { g_math.store(enabled, std::memory_order_relaxed); }

}  // namespace ember
