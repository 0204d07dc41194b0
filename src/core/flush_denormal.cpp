#include "core/flush_denormal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define EMBER_HAS_DENORMAL_MODE 1
#endif

namespace ember {
namespace detail {

std::atomic<uint32_t> g_denormal_generation{0};

namespace {
std::atomic<bool> g_flush{false};
}

void apply_denormal_mode() {
#ifdef EMBER_HAS_DENORMAL_MODE
  constexpr unsigned kFtz = 1u << 15, kDaz = 1u << 6;  // MXCSR: flush-to-zero, denormals-are-zero
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(g_flush.load(std::memory_order_relaxed) ? (csr | kFtz | kDaz) : (csr & ~(kFtz | kDaz)));
#endif
}

}  // namespace detail

bool set_flush_denormal(bool on) {
#ifdef EMBER_HAS_DENORMAL_MODE
  detail::g_flush.store(on, std::memory_order_relaxed);
  detail::g_denormal_generation.fetch_add(1, std::memory_order_release);
  detail::apply_denormal_mode();
  return true;
#else
  (void)on;
  return false;
#endif
}

}  // namespace ember
