#pragma once
// ember::amp (torch.amp): automatic mixed precision.
//
// Autocast: inside a region, ops on the region's device type run in the precision torch's
// per-op policy gives them (src/amp/autocast_policy.h is the table): matmuls and convolutions
// in the lower precision (bfloat16 on the CPU, float16 on CUDA by default), numerically
// sensitive ops (losses, norms, exp/log/pow, sums on CUDA) in float32, a few multi-input ops in
// the widest input type. The state is per thread, as torch's. In C++:
//
//   { ember::amp::AutocastGuard autocast(DeviceType::CPU);   // bfloat16
//     auto loss = F::cross_entropy(model->forward(x), y); }   // matmuls in bf16, loss in fp32
//   loss.backward();                                         // backward outside the region
//
// GradScaler: scales the loss so float16 gradients do not underflow, unscales them before the
// optimizer step (skipping the step when a gradient overflowed) and adapts the scale, torch's
// algorithm and state_dict. The inf check and the unscale run on the gradients' device, one
// kernel per gradient, and nothing is read back to the host until step() decides.
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "ember/core/device.h"
#include "ember/core/dtype.h"
#include "ember/tensor.h"

namespace ember::optim {
class Optimizer;
}
namespace ember {
class Value;
}

namespace ember::amp {

// ---- autocast state (per thread) ----
bool is_autocast_enabled(DeviceType device_type);
void set_autocast_enabled(DeviceType device_type, bool enabled);
// The region's lower-precision dtype (defaults: bfloat16 on the CPU, float16 elsewhere).
DType get_autocast_dtype(DeviceType device_type);
void set_autocast_dtype(DeviceType device_type, DType dtype);
// Whether casts of leaf parameters are cached for the rest of the outermost region.
bool is_autocast_cache_enabled();
void set_autocast_cache_enabled(bool enabled);
// Regions nest; leaving the outermost one clears the cast cache (torch's nesting counter).
int autocast_increment_nesting();
int autocast_decrement_nesting();
void clear_autocast_cache();

// torch.autocast as a scope: saves the state, turns autocast on (or off, enabled=false) for
// device_type with `dtype` and restores everything on destruction. Unsupported dtypes follow
// torch: a warning and autocast stays off (CPU: bfloat16 and float16; CUDA: float16 and
// bfloat16). Autocast on CUDA without a GPU warns and stays off, as torch does.
class AutocastGuard {
 public:
  explicit AutocastGuard(DeviceType device_type = DeviceType::CUDA, std::optional<DType> dtype = std::nullopt,
                         bool enabled = true, std::optional<bool> cache_enabled = std::nullopt);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;
  bool enabled() const { return enabled_; }

 private:
  DeviceType device_type_;
  bool enabled_ = false;
  bool prev_enabled_ = false;
  DType prev_dtype_;
  bool prev_cache_enabled_ = true;
};

// ---- GradScaler's device kernels (torch._amp_*) ----
// Multiplies every gradient by inv_scale (a one-element float32 tensor on their device) in place
// and sets found_inf (one-element float32, same device) to 1 when any value is inf or NaN.
void _amp_foreach_non_finite_check_and_unscale_(TensorList grads, const Tensor& found_inf, const Tensor& inv_scale);
// One scale update: found_inf > 0 multiplies the scale by backoff_factor and resets the growth
// tracker (int32); otherwise the tracker counts up and every growth_interval clean steps the
// scale grows by growth_factor (kept only if finite). In place on the device; returns scale.
Tensor _amp_update_scale_(const Tensor& scale, const Tensor& growth_tracker, const Tensor& found_inf,
                          double growth_factor, double backoff_factor, int64_t growth_interval);

// torch.amp.GradScaler for C++ optimizers. Usage per iteration:
//   scaler.scale(loss).backward(); scaler.unscale_(opt) (optional, before clipping);
//   scaler.step(opt); scaler.update();
struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;
};

class GradScaler {
 public:
  // device: "cuda" (torch's default) or "cpu". A CUDA scaler without a GPU is disabled with
  // torch's warning, and then scale() returns its input and step() just steps.
  explicit GradScaler(Device device = Device(DeviceType::CUDA), GradScalerOptions options = {});

  bool is_enabled() const { return enabled_; }
  Tensor scale(const Tensor& outputs);
  std::vector<Tensor> scale(const std::vector<Tensor>& outputs);
  void unscale_(optim::Optimizer& optimizer);
  // Steps unless a gradient held inf/NaN; returns whether it stepped.
  bool step(optim::Optimizer& optimizer);
  void update(std::optional<double> new_scale = std::nullopt);
  void update(const Tensor& new_scale);

  double get_scale() const;
  double get_growth_factor() const { return growth_factor_; }
  void set_growth_factor(double v) { growth_factor_ = v; }
  double get_backoff_factor() const { return backoff_factor_; }
  void set_backoff_factor(double v) { backoff_factor_ = v; }
  int64_t get_growth_interval() const { return growth_interval_; }
  void set_growth_interval(int64_t v) { growth_interval_ = v; }
  int64_t growth_tracker() const;

  // torch's layout: {"scale", "growth_factor", "backoff_factor", "growth_interval",
  // "_growth_tracker"}; empty when disabled.
  Value state_dict() const;
  void load_state_dict(const Value& state);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    Stage stage = Stage::Ready;
    std::vector<Tensor> found_inf_per_device;
  };
  void lazy_init(Device device);
  void check_initialized(const char* fn) const;
  PerOptimizer& state_of(const optim::Optimizer& optimizer);

  Device device_;
  bool enabled_ = true;
  double init_scale_, growth_factor_, backoff_factor_;
  int64_t growth_interval_;
  int64_t init_growth_tracker_ = 0;
  Tensor scale_, growth_tracker_;  // undefined until the first scale()
  std::map<const optim::Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace ember::amp
