#pragma once
// The keys an op call is routed by. Layer keys (Profiler, Tracer, Autocast, Autograd) wrap every op;
// backend keys pick the kernel for a device. A layer that has run excludes itself on this
// thread and redispatches, so the call falls through to the layers below it.
#include <cstdint>

#include "ember/core/device.h"

namespace ember {

enum class DispatchKey : uint8_t {
  CPU = 0, CUDA = 1, PrivateUse1 = 2, Meta = 3,  // == DeviceType values
  CompositeBackend,  // a device-agnostic kernel (view ops), used when a backend has none
  Autograd,
  Autocast,
  Profiler,
  Tracer,  // ember.compile's capture (src/compile/capture.cpp): records the op, then runs it below
  NumKeys,
};
inline constexpr int kNumDispatchKeys = int(DispatchKey::NumKeys);

const char* dispatch_key_name(DispatchKey k);
inline DispatchKey backend_key(DeviceType t) { return DispatchKey(int(t)); }

struct DispatchKeySet {
  uint32_t bits = 0;
  constexpr DispatchKeySet() = default;
  constexpr DispatchKeySet(DispatchKey k) : bits(1u << int(k)) {}
  constexpr bool has(DispatchKey k) const { return bits & (1u << int(k)); }
  constexpr DispatchKeySet add(DispatchKey k) const { DispatchKeySet s; s.bits = bits | (1u << int(k)); return s; }
  constexpr DispatchKeySet remove(DispatchKey k) const { DispatchKeySet s; s.bits = bits & ~(1u << int(k)); return s; }
  constexpr DispatchKeySet operator|(DispatchKeySet o) const { DispatchKeySet s; s.bits = bits | o.bits; return s; }
  constexpr DispatchKeySet operator-(DispatchKeySet o) const { DispatchKeySet s; s.bits = bits & ~o.bits; return s; }
};

// Per-thread state: layers switched on for this thread (e.g. autocast) and layers excluded
// because they are already running further up the stack.
struct LocalDispatchState {
  DispatchKeySet included;
  DispatchKeySet excluded;
  const void* profiling_op = nullptr;  // the op whose layers are running, recorded already
  bool grad_enabled = true;            // autograd's grad mode (NoGradGuard turns it off)
};
LocalDispatchState& local_dispatch_state();

// Excludes keys for the lifetime of the guard (a layer's "redispatch below me").
class ExcludeDispatchKeyGuard {
 public:
  explicit ExcludeDispatchKeyGuard(DispatchKeySet ks)
      : saved_(local_dispatch_state().excluded) { local_dispatch_state().excluded = saved_ | ks; }
  ~ExcludeDispatchKeyGuard() { local_dispatch_state().excluded = saved_; }
  ExcludeDispatchKeyGuard(const ExcludeDispatchKeyGuard&) = delete;
  ExcludeDispatchKeyGuard& operator=(const ExcludeDispatchKeyGuard&) = delete;
 private:
  DispatchKeySet saved_;
};

// Includes keys (turns a layer on) for the lifetime of the guard.
class IncludeDispatchKeyGuard {
 public:
  explicit IncludeDispatchKeyGuard(DispatchKeySet ks)
      : saved_(local_dispatch_state().included) { local_dispatch_state().included = saved_ | ks; }
  ~IncludeDispatchKeyGuard() { local_dispatch_state().included = saved_; }
  IncludeDispatchKeyGuard(const IncludeDispatchKeyGuard&) = delete;
  IncludeDispatchKeyGuard& operator=(const IncludeDispatchKeyGuard&) = delete;
 private:
  DispatchKeySet saved_;
};

}  // namespace ember
