// Adam and AdamW: torch 1.13's _single_tensor_adam / _single_tensor_adamw, fused into one
// elementwise pass per parameter (scalars cast to the parameter's dtype as torch's kernels do).
#include "ember/optim/adam.h"

#include <algorithm>
#include <cmath>

#include "core/parallel.h"
#include "core/dtype_dispatch.h"
#include "ember/autograd/grad_mode.h"
#include "ember/core/errors.h"
#include "ember/ops.h"

namespace ember::optim {
namespace {

using detail::num0;
using detail::py_num;

template <class O> void check_options(const O& o) {
  EMBER_CHECK_VALUE(0.0 <= o.lr, "Invalid learning rate: ", py_num(o.lr));
  EMBER_CHECK_VALUE(0.0 <= o.eps, "Invalid epsilon value: ", py_num(o.eps));
  EMBER_CHECK_VALUE(0.0 <= o.betas.first && o.betas.first < 1.0, "Invalid beta parameter at index 0: ",
                    py_num(o.betas.first));
  EMBER_CHECK_VALUE(0.0 <= o.betas.second && o.betas.second < 1.0, "Invalid beta parameter at index 1: ",
                    py_num(o.betas.second));
  EMBER_CHECK_VALUE(0.0 <= o.weight_decay, "Invalid weight_decay value: ", py_num(o.weight_decay));
}

Value betas_value(std::pair<double, double> b) { return Value::tuple({b.first, b.second}); }

Value adam_defaults(const AdamOptions& o) {
  check_options(o);
  return Value::dict({{"lr", o.lr}, {"betas", betas_value(o.betas)}, {"eps", o.eps},
                      {"weight_decay", num0(o.weight_decay)}, {"amsgrad", o.amsgrad},
                      {"maximize", o.maximize}, {"foreach", nullptr}, {"capturable", false},
                      {"differentiable", false}, {"fused", false}});
}

Value adamw_defaults(const AdamWOptions& o) {
  check_options(o);
  return Value::dict({{"lr", o.lr}, {"betas", betas_value(o.betas)}, {"eps", o.eps},
                      {"weight_decay", num0(o.weight_decay)}, {"amsgrad", o.amsgrad},
                      {"foreach", nullptr}, {"maximize", o.maximize}, {"capturable", false}});
}

struct AdamStep {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, maximize, decoupled;
};

// One fused pass: the whole single-tensor formula per element. Flags that change the formula are
// template parameters so that the loop has no branches and vectorises; maximize and decoupled
// decay become exact multiplications by -1 and by 1 when off.
template <class T, bool L2, bool AMS>
void adam_loop(int64_t n, T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v,
               T* __restrict vmax, T sign, T decay, T wd, T b1, T b2, T one_m_b1, T one_m_b2, T bc2_sqrt, T eps,
               T neg_step_size) {
  parallel_for(0, n, kGrainSize / 8, [=](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) {
      T gi = g[i] * sign;
      T pi = p[i] * decay;
      if constexpr (L2) gi = gi + wd * pi;
      T mi = m[i] * b1 + one_m_b1 * gi;
      T vi = v[i] * b2 + one_m_b2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      T denom_src = vi;
      if constexpr (AMS) {
        T mx = vmax[i];
        denom_src = (vi > mx || vi != vi) ? vi : mx;  // torch.maximum: NaN propagates
        vmax[i] = denom_src;
      }
      T denom = std::sqrt(denom_src) / bc2_sqrt + eps;
      p[i] = pi + neg_step_size * mi / denom;
    }
  });
}

template <class T>
void adam_kernel(int64_t n, T* p, const T* g, T* m, T* v, T* vmax, const AdamStep& s, double step) {
  const double bias_correction1 = 1 - std::pow(s.beta1, step);
  const double bias_correction2 = 1 - std::pow(s.beta2, step);
  const T neg_step_size = T(-(s.lr / bias_correction1));
  const T bc2_sqrt = T(std::sqrt(bias_correction2));
  const T b1 = T(s.beta1), b2 = T(s.beta2), one_m_b1 = T(1 - s.beta1), one_m_b2 = T(1 - s.beta2);
  const T eps = T(s.eps), wd = T(s.weight_decay);
  const T decay = s.decoupled ? T(1 - s.lr * s.weight_decay) : T(1), sign = s.maximize ? T(-1) : T(1);
  const bool l2 = !s.decoupled && s.weight_decay != 0;
#define EMBER_ADAM_LOOP(L2, AMS) \
  adam_loop<T, L2, AMS>(n, p, g, m, v, vmax, sign, decay, wd, b1, b2, one_m_b1, one_m_b2, bc2_sqrt, eps, neg_step_size)
  if (l2) {
    if (s.amsgrad) EMBER_ADAM_LOOP(true, true); else EMBER_ADAM_LOOP(true, false);
  } else {
    if (s.amsgrad) EMBER_ADAM_LOOP(false, true); else EMBER_ADAM_LOOP(false, false);
  }
#undef EMBER_ADAM_LOOP
}

void adam_step(Optimizer& opt, bool decoupled) {
  NoGradGuard guard;
  for (auto& group : opt.param_groups) {
    const Value& o = group.options;
    const Value& betas = o.at("betas");
    AdamStep s{o.at("lr").to_double(), betas[0].to_double(), betas[1].to_double(), o.at("eps").to_double(),
               o.at("weight_decay").to_double(), o.at("amsgrad").to_bool(), o.at("maximize").to_bool(),
               decoupled};
    for (auto& param : group.params) {
      if (!param.grad().defined()) continue;
      Value& st = opt.state_for(param);
      if (!st.contains("step")) {
        st["step"] = detail::step_tensor(0);
        st["exp_avg"] = zeros(param.sizes(), param.options());
        st["exp_avg_sq"] = zeros(param.sizes(), param.options());
        if (s.amsgrad) st["max_exp_avg_sq"] = zeros(param.sizes(), param.options());
      }
      EMBER_CHECK(!s.amsgrad || st.contains("max_exp_avg_sq"), "Adam: amsgrad state is missing max_exp_avg_sq");
      double step = detail::increment_step(st);
      Tensor& m = st["exp_avg"].to_tensor();
      Tensor& v = st["exp_avg_sq"].to_tensor();
      Tensor* vmax = s.amsgrad ? &st["max_exp_avg_sq"].to_tensor() : nullptr;
      EMBER_CHECK(m.is_contiguous() && v.is_contiguous() && (!vmax || vmax->is_contiguous()),
                  "Adam: state tensors must be contiguous");
      detail::with_contiguous(param, [&](Tensor& p, const Tensor& g) {
        visit_dtype<kFloatTypes>(p.dtype(), decoupled ? "AdamW" : "Adam", [&]<class T>() {
          adam_kernel<T>(p.numel(), p.data_ptr<T>(), g.data_ptr<T>(), m.data_ptr<T>(), v.data_ptr<T>(),
                         vmax ? vmax->data_ptr<T>() : nullptr, s, step);
        });
      });
    }
  }
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamOptions options) : Adam(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}
Adam::Adam(std::vector<ParamGroup> groups, AdamOptions options) : Optimizer(adam_defaults(options)) {
  init_groups(std::move(groups));
}
void Adam::step() { adam_step(*this, false); }

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options) : AdamW(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}
AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions options) : Optimizer(adamw_defaults(options)) {
  init_groups(std::move(groups));
}
void AdamW::step() { adam_step(*this, true); }

}  // namespace ember::optim
