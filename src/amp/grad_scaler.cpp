// ember::amp::GradScaler (ember/amp.h): torch.amp.GradScaler's state machine for C++ optimizers.
// Per optimizer and iteration: Ready -> (unscale_) Unscaled -> (step) Stepped -> update() resets.
// The scale, the growth tracker and every found_inf flag stay on the device; step() reads the
// flags once, which is the iteration's only host round trip (as torch's).
#include <cstdio>
#include <map>

#include "ember/amp.h"
#include "ember/autograd/grad_mode.h"
#include "ember/core/errors.h"
#include "ember/cuda.h"
#include "ember/ops.h"
#include "ember/optim/optimizer.h"
#include "ember/serialize/value.h"

namespace ember::amp {

GradScaler::GradScaler(Device device, GradScalerOptions o)
    : device_(device),
      enabled_(o.enabled),
      init_scale_(o.init_scale),
      growth_factor_(o.growth_factor),
      backoff_factor_(o.backoff_factor),
      growth_interval_(o.growth_interval) {
  if (enabled_ && device.type == DeviceType::CUDA && !cuda::is_available()) {
    std::fprintf(stderr, "UserWarning: torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.\n");
    enabled_ = false;
  }
  if (!enabled_) return;
  EMBER_CHECK(growth_factor_ > 1.0, "GradScaler: the growth factor must be > 1.0, got ", growth_factor_);
  EMBER_CHECK(backoff_factor_ < 1.0, "GradScaler: the backoff factor must be < 1.0, got ", backoff_factor_);
  EMBER_CHECK(growth_interval_ > 0, "GradScaler: growth_interval must be positive, got ", growth_interval_);
}

void GradScaler::lazy_init(Device device) {
  scale_ = full({}, init_scale_, {.dtype = DType::Float32, .device = device});
  growth_tracker_ = full({}, init_growth_tracker_, {.dtype = DType::Int32, .device = device});
}

void GradScaler::check_initialized(const char* fn) const {
  EMBER_CHECK(scale_.defined(), "Attempted ", fn,
              " but _scale is None.  This may indicate your script did not use scaler.scale(loss or outputs) "
              "earlier in the iteration.");
}

GradScaler::PerOptimizer& GradScaler::state_of(const optim::Optimizer& optimizer) { return per_optimizer_[&optimizer]; }

Tensor GradScaler::scale(const Tensor& outputs) {
  if (!enabled_) return outputs;
  if (!scale_.defined()) lazy_init(outputs.device());
  return outputs * scale_.to(outputs.device(), /*copy=*/false, /*non_blocking=*/true);
}

std::vector<Tensor> GradScaler::scale(const std::vector<Tensor>& outputs) {
  std::vector<Tensor> out;
  out.reserve(outputs.size());
  for (const Tensor& t : outputs) out.push_back(scale(t));
  return out;
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!enabled_) return;
  check_initialized("unscale_");
  PerOptimizer& st = state_of(optimizer);
  EMBER_CHECK(st.stage != Stage::Unscaled, "unscale_() has already been called on this optimizer since the last update().");
  EMBER_CHECK(st.stage != Stage::Stepped, "unscale_() is being called after step().");
  NoGradGuard no_grad;
  // The reciprocal in float64, rounded once to float32, as torch's.
  Tensor inv_scale = scale_.to(DType::Float64).reciprocal().to(DType::Float32);
  // Gradients grouped by device and dtype: one foreach call per group.
  std::map<std::pair<std::string, int>, std::vector<Tensor>> groups;
  for (const auto& group : optimizer.param_groups)
    for (const Tensor& p : group.params) {
      const Tensor& g = p.grad();
      if (!g.defined()) continue;
      EMBER_CHECK_VALUE(g.dtype() != DType::Float16, "Attempting to unscale FP16 gradients.");
      groups[{g.device().str(), int(g.dtype())}].push_back(g);
    }
  std::map<std::string, std::pair<Tensor, Tensor>> per_device;  // device -> (found_inf, inv_scale)
  for (auto& [key, grads] : groups) {
    auto it = per_device.find(key.first);
    if (it == per_device.end()) {
      Device d = grads[0].device();
      it = per_device.emplace(key.first, std::make_pair(zeros({}, {.dtype = DType::Float32, .device = d}),
                                                        inv_scale.to(d, /*copy=*/true, /*non_blocking=*/true)))
               .first;
    }
    _amp_foreach_non_finite_check_and_unscale_(grads, it->second.first, it->second.second);
  }
  st.found_inf_per_device.clear();
  for (auto& [dev, tensors] : per_device) st.found_inf_per_device.push_back(tensors.first);
  st.stage = Stage::Unscaled;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  check_initialized("step");
  PerOptimizer& st = state_of(optimizer);
  EMBER_CHECK(st.stage != Stage::Stepped, "step() has already been called since the last update().");
  if (st.stage == Stage::Ready) unscale_(optimizer);
  EMBER_CHECK(!st.found_inf_per_device.empty(), "No inf checks were recorded for this optimizer.");
  double found = 0;
  for (const Tensor& f : st.found_inf_per_device) found += f.item().to<double>();
  const bool stepped = found == 0;
  if (stepped) optimizer.step();
  st.stage = Stage::Stepped;
  return stepped;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!enabled_) return;
  check_initialized("update");
  if (new_scale) {
    scale_.fill_(*new_scale);
  } else {
    NoGradGuard no_grad;
    Tensor combined;
    for (auto& [opt, st] : per_optimizer_)
      for (const Tensor& f : st.found_inf_per_device) {
        Tensor here = f.to(scale_.device(), /*copy=*/false, /*non_blocking=*/true);
        combined = combined.defined() ? combined + here : here;
      }
    EMBER_CHECK(combined.defined(), "No inf checks were recorded prior to update.");
    _amp_update_scale_(scale_, growth_tracker_, combined, growth_factor_, backoff_factor_, growth_interval_);
  }
  per_optimizer_.clear();
}

void GradScaler::update(const Tensor& new_scale) {
  if (!enabled_) return;
  check_initialized("update");
  EMBER_CHECK(new_scale.numel() == 1 && !new_scale.requires_grad() && new_scale.device().type == device_.type,
              "new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor with "
              "requires_grad=False.");
  scale_.copy_(new_scale);
  per_optimizer_.clear();
}

double GradScaler::get_scale() const {
  if (!enabled_) return 1.0;
  return scale_.defined() ? scale_.item().to<double>() : init_scale_;
}

int64_t GradScaler::growth_tracker() const {
  if (!enabled_) return 0;
  return growth_tracker_.defined() ? growth_tracker_.item().to<int64_t>() : init_growth_tracker_;
}

Value GradScaler::state_dict() const {
  if (!enabled_) return Value::dict();
  Value d = Value::dict();
  d["scale"] = get_scale();
  d["growth_factor"] = growth_factor_;
  d["backoff_factor"] = backoff_factor_;
  d["growth_interval"] = growth_interval_;
  d["_growth_tracker"] = growth_tracker();
  return d;
}

void GradScaler::load_state_dict(const Value& state) {
  if (!enabled_) return;
  EMBER_CHECK(state.is_dict() && state.size() > 0,
              "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.");
  init_scale_ = state.at("scale").to_double();
  if (scale_.defined()) scale_.fill_(init_scale_);
  growth_factor_ = state.at("growth_factor").to_double();
  backoff_factor_ = state.at("backoff_factor").to_double();
  growth_interval_ = state.at("growth_interval").to_int();
  init_growth_tracker_ = state.at("_growth_tracker").to_int();
  if (growth_tracker_.defined()) growth_tracker_.fill_(init_growth_tracker_);
}

}  // namespace ember::amp
