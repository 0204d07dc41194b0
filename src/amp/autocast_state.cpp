// Autocast's per-thread state (ember/amp.h): which device types have it on, their dtypes, the
// nesting depth and the cache of cast parameters. Turning autocast on for any device type puts
// the Autocast key in this thread's included set, so ops reach their Autocast kernels; with it
// off the dispatcher never looks at an Autocast slot.
#include <cstdio>
#include <unordered_map>

#include "amp/autocast.h"
#include "ember/amp.h"
#include "ember/core/errors.h"
#include "ember/cuda.h"
#include "ember/ops.h"

namespace ember::amp {
namespace {

struct CacheKey {
  const TensorImpl* impl;
  DType dtype;
  bool grad_mode;  // a cast made under no_grad has no graph: it only serves no_grad calls
  bool operator==(const CacheKey&) const = default;
};
struct CacheKeyHash {
  size_t operator()(const CacheKey& k) const {
    return std::hash<const void*>()(k.impl) ^ (size_t(k.dtype) << 1) ^ size_t(k.grad_mode);
  }
};
struct CacheEntry {
  Tensor source;  // kept alive so its address is not reused by another tensor within the region
  uint32_t version;
  Tensor cast;
};

struct AutocastState {
  bool enabled[kNumDeviceTypes] = {};
  DType dtype[kNumDeviceTypes] = {DType::BFloat16, DType::Float16, DType::Float16, DType::Float32};
  bool cache_enabled = true;
  int nesting = 0;
  std::unordered_map<CacheKey, CacheEntry, CacheKeyHash> cache;
};
static_assert(int(DeviceType::CPU) == 0 && kNumDeviceTypes == 4);

AutocastState& state() {
  thread_local AutocastState s;
  return s;
}

void sync_dispatch_key() {
  const auto& s = state();
  bool any = false;
  for (bool e : s.enabled) any = any || e;
  auto& tls = local_dispatch_state();
  tls.included = any ? tls.included.add(DispatchKey::Autocast) : tls.included.remove(DispatchKey::Autocast);
}

void warn(const std::string& message) { std::fprintf(stderr, "UserWarning: %s\n", message.c_str()); }

}  // namespace

bool is_autocast_enabled(DeviceType t) { return state().enabled[int(t)]; }
void set_autocast_enabled(DeviceType t, bool enabled) {
  state().enabled[int(t)] = enabled;
  sync_dispatch_key();
}
DType get_autocast_dtype(DeviceType t) { return state().dtype[int(t)]; }
void set_autocast_dtype(DeviceType t, DType dtype) {
  EMBER_CHECK(is_floating(dtype), "set_autocast_dtype: the autocast dtype must be a floating type, got ",
              dtype_name(dtype));
  state().dtype[int(t)] = dtype;
}
bool is_autocast_cache_enabled() { return state().cache_enabled; }
void set_autocast_cache_enabled(bool enabled) { state().cache_enabled = enabled; }
int autocast_increment_nesting() { return ++state().nesting; }
int autocast_decrement_nesting() { return --state().nesting; }
void clear_autocast_cache() { state().cache.clear(); }

AutocastGuard::AutocastGuard(DeviceType device_type, std::optional<DType> dtype, bool enabled,
                             std::optional<bool> cache_enabled)
    : device_type_(device_type) {
  DType fast = dtype.value_or(get_autocast_dtype(device_type));
  if (enabled && device_type == DeviceType::CUDA && !cuda::is_available()) {
    warn("User provided device_type of 'cuda', but CUDA is not available. Disabling");
    enabled = false;
  }
  if (enabled && fast != DType::BFloat16 && fast != DType::Float16) {
    const char* which = device_type == DeviceType::CPU ? "CPU" : device_type == DeviceType::CUDA ? "CUDA" : "device";
    warn(::ember::detail::cat("In ", which, " autocast, but the target dtype is not supported. Disabling autocast.\n",
                              which, " Autocast only supports dtype of torch.bfloat16, torch.float16 currently."));
    enabled = false;
  }
  enabled_ = enabled;
  prev_enabled_ = is_autocast_enabled(device_type);
  prev_dtype_ = get_autocast_dtype(device_type);
  prev_cache_enabled_ = is_autocast_cache_enabled();
  set_autocast_enabled(device_type, enabled);
  set_autocast_dtype(device_type, fast);
  autocast_increment_nesting();
  set_autocast_cache_enabled(cache_enabled.value_or(prev_cache_enabled_));
}

AutocastGuard::~AutocastGuard() {
  if (autocast_decrement_nesting() == 0) clear_autocast_cache();
  set_autocast_enabled(device_type_, prev_enabled_);
  set_autocast_dtype(device_type_, prev_dtype_);
  set_autocast_cache_enabled(prev_cache_enabled_);
}

namespace detail {

CastPolicy policy_for(AutocastOp op, DeviceType t) {
  const auto& row = kAutocastPolicy[size_t(op)];
  return t == DeviceType::CPU ? row.cpu : row.cuda;
}

std::optional<CastPlan> plan_from(AutocastOp op, const std::vector<const Tensor*>& tensors) {
  if (tensors.empty()) return std::nullopt;
  CastPlan p;
  // The most specific device among the inputs, as the dispatcher picks the backend.
  for (const Tensor* t : tensors)
    if (int(t->device().type) > int(p.device_type)) p.device_type = t->device().type;
  if (!is_autocast_enabled(p.device_type)) return std::nullopt;
  p.policy = policy_for(op, p.device_type);
  const char* name = kAutocastPolicy[size_t(op)].name;
  switch (p.policy) {
    case CastPolicy::None: return std::nullopt;
    case CastPolicy::Keep: break;
    case CastPolicy::Banned: throw_banned(name);
    case CastPolicy::Lower: p.target = get_autocast_dtype(p.device_type); break;
    case CastPolicy::Fp32: p.target = DType::Float32; break;
    case CastPolicy::Fp32Opt:
      // torch casts nothing here; it passes dtype=float32 when the first input is eligible.
      if (!is_eligible(*tensors[0], p.device_type)) return std::nullopt;
      break;
    case CastPolicy::Promote: p.target = promote_dtype(tensors, p.device_type, name); break;
  }
  return p;
}

std::optional<AutocastOp> autocast_op_named(std::string_view name) {
  for (size_t i = 0; i < size_t(AutocastOp::NumOps); ++i)
    if (name == kAutocastPolicy[i].name) return AutocastOp(i);
  return std::nullopt;
}

size_t cache_size() { return state().cache.size(); }

bool is_eligible(const Tensor& t, DeviceType device_type) {
  return t.defined() && t.device().type == device_type && is_floating(t.dtype()) && t.dtype() != DType::Float64;
}

Tensor cached_cast(const Tensor& t, DType target, DeviceType device_type) {
  if (!is_eligible(t, device_type) || t.dtype() == target) return t;
  auto& s = state();
  // torch caches the casts of float32 leaf parameters to the region's dtype: a model's weights,
  // cast once per region however many times the forward uses them. ember also keys on the
  // version (a parameter updated inside the region is cast again) and on grad mode: a cast made
  // under no_grad (an eval loop) is reused by no_grad calls only, never handed to a forward that
  // needs the gradient.
  const bool cacheable = s.cache_enabled && target == s.dtype[int(device_type)] && t.dtype() == DType::Float32 &&
                         t.requires_grad() && t.is_leaf();
  if (!cacheable) return t.to(target);
  CacheKey key{t.impl(), target, local_dispatch_state().grad_enabled};
  auto it = s.cache.find(key);
  if (it != s.cache.end() && it->second.version == t._version()) return it->second.cast;
  Tensor cast = t.to(target);
  s.cache.insert_or_assign(key, CacheEntry{t, t._version(), cast});
  return cast;
}

DType promote_dtype(const std::vector<const Tensor*>& tensors, DeviceType device_type, const char* op) {
  const DType lower = get_autocast_dtype(device_type);
  DType current = lower;
  for (const Tensor* t : tensors) {
    if (!is_eligible(*t, device_type)) continue;
    DType next = t->dtype();
    if (current == DType::Float32 || next == DType::Float32) current = DType::Float32;
    else EMBER_CHECK(next == lower, op, " under autocast: unexpected floating dtype ", dtype_name(next),
                     " among the inputs of a ", dtype_name(lower), " autocast region (promote expects float32 or ",
                     dtype_name(lower), ")");
  }
  return current;
}

void throw_banned(const char* op) {
  throw Error(::ember::detail::cat(
      "torch.nn.functional.", op, " and torch.nn.BCELoss are unsafe to autocast.\n"
      "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
      "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
      "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
      "safe to autocast."));
}

}  // namespace detail
}  // namespace ember::amp
