// The checks of GradScaler's two dispatched ops (ember/amp.h), in torch's words, before any
// backend kernel runs: the kernels then trust one-element float32 / int32 tensors on one device.
#include <string>

#include "ember/amp.h"
#include "ember/core/errors.h"
#include "ops/op_handles.h"

namespace ember::amp {
namespace {

void check_one_element(const char* op, const char* what, const Tensor& t, DType dtype) {
  EMBER_CHECK(t.defined(), op, ": ", what, " is undefined");
  EMBER_CHECK(t.numel() == 1, op, ": ", what, " must be a 1-element tensor, got ", t.numel(), " elements");
  EMBER_CHECK(t.dtype() == dtype, op, ": ", what, " must be a ", dtype == DType::Int32 ? "int" : "float",
              " tensor, got ", dtype_name(t.dtype()));
  EMBER_CHECK(t.is_contiguous(), op, ": ", what, " must be contiguous");
}

}  // namespace

void _amp_foreach_non_finite_check_and_unscale_(TensorList grads, const Tensor& found_inf, const Tensor& inv_scale) {
  constexpr const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  check_one_element(op, "inv_scale", inv_scale, DType::Float32);
  check_one_element(op, "found_inf", found_inf, DType::Float32);
  EMBER_CHECK(inv_scale.device() == found_inf.device(), op, ": found_inf and inv_scale must be on the same device, got ",
              found_inf.device().str(), " and ", inv_scale.device().str());
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = grads[i];
    EMBER_CHECK(g.defined(), op, ": scaled_grads[", i, "] is undefined");
    EMBER_CHECK(g.device() == inv_scale.device(), op, ": scaled_grads[", i, "] is on ", g.device().str(),
                " but inv_scale is on ", inv_scale.device().str(), " (one call per device)");
    EMBER_CHECK(is_floating(g.dtype()), op, ": scaled_grads must be floating point tensors, scaled_grads[", i,
                "] is ", dtype_name(g.dtype()));
  }
  if (grads.empty()) return;
  ops::_amp_foreach_non_finite_check_and_unscale_()(grads, found_inf, inv_scale);
}

Tensor _amp_update_scale_(const Tensor& scale, const Tensor& growth_tracker, const Tensor& found_inf,
                          double growth_factor, double backoff_factor, int64_t growth_interval) {
  constexpr const char* op = "_amp_update_scale_";
  check_one_element(op, "current_scale", scale, DType::Float32);
  check_one_element(op, "growth_tracker", growth_tracker, DType::Int32);
  check_one_element(op, "found_inf", found_inf, DType::Float32);
  EMBER_CHECK(scale.device() == growth_tracker.device() && scale.device() == found_inf.device(), op,
              ": current_scale, growth_tracker and found_inf must be on one device, got ", scale.device().str(), ", ",
              growth_tracker.device().str(), " and ", found_inf.device().str());
  EMBER_CHECK(growth_interval > 0, op, ": growth_interval must be positive, got ", growth_interval);
  return ops::_amp_update_scale_()(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval);
}

}  // namespace ember::amp
