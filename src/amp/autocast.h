#pragma once
// How autocast applies a policy row (src/amp/autocast_policy.h) to one call: find the call's
// device type, look up its column, cast the eligible arguments, and run the op once more with
// the Autocast layer excluded (so neither it nor what it calls is cast twice). The dispatched
// ops' Autocast kernels (autocast_kernels.cpp) and the composites' entry hook (EMBER_AUTOCAST)
// share it.
//
//   Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
//     EMBER_AUTOCAST(linear, input, weight, bias);
//     ...the body, which now sees the cast arguments...
//   }
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "amp/autocast_policy.h"
#include "ember/amp.h"
#include "ember/dispatch/dispatch_key.h"
#include "ember/tensor.h"

namespace ember::amp::detail {

// True when this thread has autocast on for some device and this call is not already below
// an autocast layer: the one check a composite pays when autocast is off.
inline bool autocast_pending() {
  const auto& s = local_dispatch_state();
  return s.included.has(DispatchKey::Autocast) && !s.excluded.has(DispatchKey::Autocast);
}

CastPolicy policy_for(AutocastOp op, DeviceType device_type);
// The cast torch's cached_cast makes: `t` itself unless it is eligible (floating, of
// device_type, not float64) and of another dtype. Leaf parameters cast to the region's dtype are
// cached until the outermost region ends (when the cache is on and grad mode is on).
Tensor cached_cast(const Tensor& t, DType target, DeviceType device_type);
bool is_eligible(const Tensor& t, DeviceType device_type);
// How many casts the cache holds (tests check that a region reuses a parameter's cast).
size_t cache_size();
// torch's prioritize(): float32 if any eligible input is float32, else the region's dtype;
// an eligible input of another reduced type (float16 in a bfloat16 region) is an error.
DType promote_dtype(const std::vector<const Tensor*>& tensors, DeviceType device_type, const char* op);
[[noreturn]] void throw_banned(const char* op);

// ---- walking the arguments ----
inline void collect(std::vector<const Tensor*>& out, const Tensor& t) { if (t.defined()) out.push_back(&t); }
inline void collect(std::vector<const Tensor*>& out, const std::optional<Tensor>& t) { if (t) collect(out, *t); }
inline void collect(std::vector<const Tensor*>& out, TensorList ts) { for (const Tensor& t : ts) collect(out, t); }
inline void collect(std::vector<const Tensor*>& out, const std::vector<Tensor>& ts) { for (const Tensor& t : ts) collect(out, t); }
template <class T> void collect(std::vector<const Tensor*>&, const T&) {}

// What a call's tensors are cast to, or nothing to do (no tensor, autocast off for their
// device type, a None policy, or Fp32Opt, which sets dtype arguments instead).
struct CastPlan {
  DeviceType device_type = DeviceType::CPU;
  CastPolicy policy = CastPolicy::None;
  DType target = DType::Float32;
};

// The plan for a call with these tensor inputs (any order; the first one decides Fp32Opt).
std::optional<CastPlan> plan_from(AutocastOp op, const std::vector<const Tensor*>& tensors);
template <class... A> std::optional<CastPlan> plan_for(AutocastOp op, const A&... args) {
  std::vector<const Tensor*> tensors;
  (collect(tensors, args), ...);
  return plan_from(op, tensors);
}
// The row named `name` (torch's op name as in the table), or nullopt.
std::optional<AutocastOp> autocast_op_named(std::string_view name);

// ---- casting one argument by its kind ----
inline bool casts_tensors(const CastPlan& p) { return p.policy != CastPolicy::Fp32Opt && p.policy != CastPolicy::Keep; }
inline Tensor cast_arg(const CastPlan& p, const Tensor& t) {
  return casts_tensors(p) ? cached_cast(t, p.target, p.device_type) : t;
}
inline std::optional<Tensor> cast_arg(const CastPlan& p, const std::optional<Tensor>& t) {
  if (!t) return std::nullopt;
  return cast_arg(p, *t);
}
inline std::vector<Tensor> cast_arg(const CastPlan& p, TensorList ts) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(cast_arg(p, t));
  return out;
}
inline std::vector<Tensor> cast_arg(const CastPlan& p, const std::vector<Tensor>& ts) { return cast_arg(p, TensorList(ts)); }
inline std::optional<DType> cast_arg(const CastPlan& p, const std::optional<DType>& dtype) {
  if (p.policy == CastPolicy::Fp32Opt && !dtype) return DType::Float32;
  return dtype;
}
// In-place targets (Tensor&) and every non-tensor argument pass through untouched.
inline Tensor& cast_arg(const CastPlan&, Tensor& t) { return t; }
template <class T>
  requires(!std::is_same_v<std::decay_t<T>, Tensor> && !std::is_same_v<std::decay_t<T>, std::optional<Tensor>> &&
           !std::is_same_v<std::decay_t<T>, std::vector<Tensor>> && !std::is_same_v<std::decay_t<T>, TensorList> &&
           !std::is_same_v<std::decay_t<T>, std::optional<DType>>)
const T& cast_arg(const CastPlan&, const T& v) {
  return v;
}

// Runs fn(cast args...) below the Autocast layer when the policy applies; nullopt otherwise
// (the caller goes on with autocast still on for what it calls, as torch's fallthrough).
template <class F, class... A>
auto apply_policy(AutocastOp op, F&& fn, const A&... args) -> std::optional<decltype(fn(args...))> {
  auto plan = plan_for(op, args...);
  if (!plan) return std::nullopt;
  ExcludeDispatchKeyGuard no_autocast{DispatchKeySet(DispatchKey::Autocast)};
  return fn(cast_arg(*plan, args)...);
}

}  // namespace ember::amp::detail

// At the top of a composite listed in EMBER_AUTOCAST_COMPOSITE_OPS: re-enters the function with
// the cast arguments when its policy applies. The arguments are the function's parameters.
#define EMBER_AUTOCAST(op, ...)                                                                  \
  do {                                                                                           \
    if (::ember::amp::detail::autocast_pending()) {                                              \
      if (auto ember_autocast_result_ = ::ember::amp::detail::apply_policy(                      \
              ::ember::amp::AutocastOp::op, [&](const auto&... a) { return op(a...); }, __VA_ARGS__)) \
        return std::move(*ember_autocast_result_);                                               \
    }                                                                                            \
  } while (0)
