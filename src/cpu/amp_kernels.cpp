// CPU kernels of GradScaler's two ops (declared in the mixed precision section of
// src/ops/op_list.h, checked in src/amp/grad_scaler_ops.cpp). The unscale multiplies in the
// gradient's compute type (float for float16/bfloat16, as torch's opmath) and flags any value
// that is not finite, before or after the multiplication: an inf times 0 would hide it.
#include <atomic>
#include <cmath>

#include "core/dtype_dispatch.h"
#include "core/parallel.h"
#include "ember/ops.h"
#include "ops/dense_run.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

template <class T> using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;

void non_finite_check_and_unscale(TensorList grads, const Tensor& found_inf, const Tensor& inv_scale) {
  const float inv = *static_cast<const float*>(inv_scale.data_ptr());
  std::atomic<bool> found{false};
  for (const Tensor& g : grads) {
    if (g.numel() == 0) continue;
    DenseRun run(g);
    visit_dtype<kFloatTypes | kReducedFloatTypes>(g.dtype(), "_amp_foreach_non_finite_check_and_unscale_", [&]<class T>() {
      using C = Compute<T>;
      T* p = run.data<T>();
      const C s = C(inv);
      parallel_for(0, g.numel(), kGrainSize, [&](int64_t b, int64_t e) {
        bool bad = false;
        for (int64_t i = b; i < e; ++i) {
          C v = C(p[i]);
          bad |= !std::isfinite(v);
          if (inv != 1.0f) p[i] = T(v * s);
        }
        if (bad) found.store(true, std::memory_order_relaxed);
      });
    });
    run.write_back();
  }
  if (found.load()) *static_cast<float*>(found_inf.data_ptr()) = 1.0f;
}

Tensor update_scale(const Tensor& scale, const Tensor& growth_tracker, const Tensor& found_inf, double growth_factor,
                    double backoff_factor, int64_t growth_interval) {
  float& s = *static_cast<float*>(scale.data_ptr());
  int32_t& tracker = *static_cast<int32_t*>(growth_tracker.data_ptr());
  if (*static_cast<const float*>(found_inf.data_ptr()) > 0.0f) {
    s = float(double(s) * backoff_factor);
    tracker = 0;
    return scale;
  }
  int32_t successful = tracker + 1;
  if (successful == growth_interval) {
    float grown = float(double(s) * growth_factor);
    if (std::isfinite(grown)) s = grown;  // a scale that overflowed is not kept
    tracker = 0;
  } else {
    tracker = successful;
  }
  return scale;
}

}  // namespace

EMBER_REGISTER_KERNEL(_amp_foreach_non_finite_check_and_unscale_, CPU, non_finite_check_and_unscale);
EMBER_REGISTER_KERNEL(_amp_update_scale_, CPU, update_scale);

}  // namespace ember::cpu
