#pragma once
// The pool's side of set_flush_denormal (include/ember/flush_denormal.h): workers follow the mode
// the last call set, checked with one load each time they wake for chunks.
#include <atomic>
#include <cstdint>

#include "ember/flush_denormal.h"

namespace ember {

namespace detail {
extern std::atomic<uint32_t> g_denormal_generation;  // bumped by each set_flush_denormal
void apply_denormal_mode();                          // this thread takes the current mode
// A pool worker, before running chunks: one relaxed load when nothing changed.
inline void follow_denormal_mode() {
  thread_local uint32_t seen = 0;
  const uint32_t g = g_denormal_generation.load(std::memory_order_acquire);
  if (g != seen) {
    seen = g;
    apply_denormal_mode();
  }
}
}  // namespace detail

}  // namespace ember
