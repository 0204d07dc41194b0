#pragma once
// Op<Sig>: one dispatched operation. It holds a kernel per dispatch key and routes a call:
//   Profiler (observers see begin/end) -> Tracer (ember.compile's capture) -> Autocast -> Autograd
//   -> backend kernel.
// Layers are fall-through: an empty slot is skipped. A backend is added by registering kernels
// for its key (see EMBER_REGISTER_KERNEL); no op code changes.
#include <array>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "ember/dispatch/dispatch_key.h"
#include "ember/dispatch/op_recording.h"
#include "ember/options.h"
#include "ember/tensor.h"

namespace ember {

// ---- observers: the generic layer the profiler is built on ----
struct OpObserver {
  std::function<void(const char* op_name)> on_begin;
  std::function<void(const char* op_name)> on_end;
};
// Returns an id for remove_op_observer. Observers see every dispatched op on every thread.
int add_op_observer(OpObserver observer);
void remove_op_observer(int id);
// True while an observer is registered or a profiler session records ops: the one check the
// dispatcher makes per op when nothing is watching (one relaxed load).
inline bool has_op_observers() { return profiler::detail::g_op_recording.load(std::memory_order_relaxed) != 0; }
// Observers registered with add_op_observer (not counting the profiler).
inline bool has_plain_op_observers() {
  return profiler::detail::g_op_recording.load(std::memory_order_relaxed) & profiler::detail::kPlainObservers;
}
void notify_op_begin(const char* name);
void notify_op_end(const char* name);

[[noreturn]] void throw_no_kernel(const char* op, DispatchKey key);

// ---- computing the key set from the arguments ----
namespace detail {
struct KeyCollector {
  DispatchKeySet keys;
  bool have_backend = false;
  // Every argument's device joins the set; the most specific backend (CUDA, PrivateUse1 over
  // CPU) runs, so a cross-device copy_ or a CPU scalar with a CUDA tensor reaches the accelerator.
  void backend(Device d) {
    keys = keys.add(backend_key(d.type));
    have_backend = true;
  }
  void operator()(const Tensor& t) {
    if (!t.defined()) return;
    backend(t.device());
    if (auto* m = t.impl()->autograd_meta(); m && m->requires_grad() && local_dispatch_state().grad_enabled)
      keys = keys.add(DispatchKey::Autograd);
  }
  void operator()(const std::optional<Tensor>& t) { if (t) (*this)(*t); }
  void operator()(TensorList ts) { for (const auto& t : ts) (*this)(t); }
  void operator()(ArrayRef<std::optional<Tensor>> ts) { for (const auto& t : ts) (*this)(t); }
  void operator()(const std::vector<Tensor>& ts) { for (const auto& t : ts) (*this)(t); }
  void operator()(const TensorOptions& o) { backend(o.device_or()); }
  template <class T> void operator()(const T&) {}
};
}  // namespace detail

template <class Sig> class Op;

template <class R, class... A> class Op<R(A...)> {
 public:
  using Fn = R (*)(A...);
  explicit Op(const char* name) : name_(name) {}
  const char* name() const { return name_; }

  void set_kernel(DispatchKey k, Fn fn) { table_[size_t(k)] = fn; }
  Fn kernel(DispatchKey k) const { return table_[size_t(k)]; }
  bool has_kernel(DispatchKey k) const { return table_[size_t(k)] != nullptr; }

  R operator()(A... args) const {
    detail::KeyCollector c;
    (c(args), ...);
    const auto& tls = local_dispatch_state();
    DispatchKeySet ks = c.keys | tls.included;
    if (!c.have_backend) ks = ks.add(DispatchKey::CPU);
    if (has_op_observers()) ks = ks.add(DispatchKey::Profiler);
    return redispatch(ks - tls.excluded, std::forward<A>(args)...);
  }

  R redispatch(DispatchKeySet ks, A... args) const {
    auto& tls = local_dispatch_state();
    // A layer kernel (autograd, autocast) re-calls its own op below itself: record it once.
    if (ks.has(DispatchKey::Profiler) && tls.profiling_op != this) {
      int64_t handle = -1;
      if (profiler::detail::recording_ops()) {
        std::vector<profiler::InputInfo> inputs;
        if (profiler::detail::recording_inputs()) {
          inputs.reserve(sizeof...(A));
          profiler::detail::InputDescriber d{inputs};
          (d(args), ...);
        }
        handle = profiler::detail::op_begin(name_, ks.has(DispatchKey::Autograd), std::move(inputs));
      }
      struct Scope {
        const char* n; const void* saved; int64_t handle; bool observers;
        ~Scope() {
          local_dispatch_state().profiling_op = saved;
          if (handle >= 0) profiler::detail::op_end(handle);
          if (observers) notify_op_end(n);
        }
      } scope{name_, tls.profiling_op, handle, has_plain_op_observers()};
      if (scope.observers) notify_op_begin(name_);
      tls.profiling_op = this;
      return call_layers(ks, std::forward<A>(args)...);
    }
    return call_layers(ks, std::forward<A>(args)...);
  }

 private:
  R call_layers(DispatchKeySet ks, A... args) const {
    if (ks.has(DispatchKey::Tracer) && table_[size_t(DispatchKey::Tracer)])
      return table_[size_t(DispatchKey::Tracer)](std::forward<A>(args)...);
    if (ks.has(DispatchKey::Autocast) && table_[size_t(DispatchKey::Autocast)])
      return table_[size_t(DispatchKey::Autocast)](std::forward<A>(args)...);
    if (ks.has(DispatchKey::Autograd) && table_[size_t(DispatchKey::Autograd)])
      return table_[size_t(DispatchKey::Autograd)](std::forward<A>(args)...);
    local_dispatch_state().profiling_op = nullptr;  // ops nested inside the kernel are recorded
    DispatchKey backend = DispatchKey::CPU;
    for (int k = kNumDeviceTypes - 1; k >= 0; --k)
      if (ks.has(DispatchKey(k))) { backend = DispatchKey(k); break; }
    Fn fn = table_[size_t(backend)];
    if (!fn) fn = table_[size_t(DispatchKey::CompositeBackend)];
    if (!fn) throw_no_kernel(name_, backend);
    return fn(std::forward<A>(args)...);
  }

  const char* name_;
  std::array<Fn, kNumDispatchKeys> table_{};
};

}  // namespace ember

// Registers `fn` as op `name`'s kernel for KEY (CPU, CUDA, PrivateUse1, CompositeBackend,
// Autograd, Autocast) from a static initialiser. (Tracer kernels are registered for every op at
// once, in ops/op_handles.cpp.)
#define EMBER_CONCAT_INNER(a, b) a##b
#define EMBER_CONCAT(a, b) EMBER_CONCAT_INNER(a, b)
#define EMBER_REGISTER_KERNEL(name, KEY, fn)                                                   \
  static const bool EMBER_CONCAT(ember_reg_##name##_##KEY##_, __LINE__) =                      \
      (::ember::ops::name().set_kernel(::ember::DispatchKey::KEY, fn), true)
