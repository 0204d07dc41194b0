// Adagrad: torch 1.13's _single_tensor_adagrad (dense) fused into one elementwise pass per
// parameter.
#include "ember/optim/adagrad.h"

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

Value adagrad_defaults(const AdagradOptions& o) {
  EMBER_CHECK_VALUE(0.0 <= o.lr, "Invalid learning rate: ", py_num(o.lr));
  EMBER_CHECK_VALUE(0.0 <= o.lr_decay, "Invalid lr_decay value: ", py_num(o.lr_decay));
  EMBER_CHECK_VALUE(0.0 <= o.weight_decay, "Invalid weight_decay value: ", py_num(o.weight_decay));
  EMBER_CHECK_VALUE(0.0 <= o.initial_accumulator_value, "Invalid initial_accumulator_value value: ",
                    py_num(o.initial_accumulator_value));
  EMBER_CHECK_VALUE(0.0 <= o.eps, "Invalid epsilon value: ", py_num(o.eps));
  return Value::dict({{"lr", o.lr}, {"lr_decay", num0(o.lr_decay)}, {"eps", o.eps},
                      {"weight_decay", num0(o.weight_decay)},
                      {"initial_accumulator_value", num0(o.initial_accumulator_value)}, {"foreach", nullptr},
                      {"maximize", o.maximize}});
}

template <class T, bool WD>
void adagrad_loop(int64_t n, T* __restrict p, const T* __restrict g, T* __restrict sum, T sign, T wd, T eps,
                  T neg_clr) {
  parallel_for(0, n, kGrainSize / 8, [=](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) {
      T gi = g[i] * sign;
      if constexpr (WD) gi = gi + wd * p[i];
      T si = sum[i] + T(1) * gi * gi;
      sum[i] = si;
      T std_ = std::sqrt(si) + eps;
      p[i] = p[i] + neg_clr * gi / std_;
    }
  });
}

template <class T>
void adagrad_kernel(int64_t n, T* p, const T* g, T* sum, double clr, double eps, double wd, bool maximize) {
  const T sign = maximize ? T(-1) : T(1);
  if (wd != 0) adagrad_loop<T, true>(n, p, g, sum, sign, T(wd), T(eps), T(-clr));
  else adagrad_loop<T, false>(n, p, g, sum, sign, T(wd), T(eps), T(-clr));
}

}  // namespace

Adagrad::Adagrad(std::vector<Tensor> params, AdagradOptions options)
    : Adagrad(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}
Adagrad::Adagrad(std::vector<ParamGroup> groups, AdagradOptions options) : Optimizer(adagrad_defaults(options)) {
  init_groups(std::move(groups));
}

// torch creates Adagrad's state in the constructor (and for groups added later).
void Adagrad::on_group_added(ParamGroup& group) {
  NoGradGuard guard;
  double init = group.options.at("initial_accumulator_value").to_double();
  for (auto& p : group.params) {
    Value& st = state_for(p);
    st["step"] = detail::step_tensor(0);
    st["sum"] = full(p.sizes(), init, p.options());
  }
}

void Adagrad::step() {
  NoGradGuard guard;
  for (auto& group : param_groups) {
    const Value& o = group.options;
    double lr = o.at("lr").to_double(), lr_decay = o.at("lr_decay").to_double(), eps = o.at("eps").to_double();
    double wd = o.at("weight_decay").to_double();
    bool maximize = o.at("maximize").to_bool();
    for (auto& param : group.params) {
      if (!param.grad().defined()) continue;
      Value& st = state_for(param);
      EMBER_CHECK(st.contains("sum"), "Adagrad: state 'sum' is missing");
      double step = detail::increment_step(st);
      double clr = lr / (1 + (step - 1) * lr_decay);
      Tensor& sum = st["sum"].to_tensor();
      EMBER_CHECK(sum.is_contiguous(), "Adagrad: state tensors must be contiguous");
      detail::with_contiguous(param, [&](Tensor& p, const Tensor& g) {
        visit_dtype<kFloatTypes>(p.dtype(), "Adagrad", [&]<class T>() {
          adagrad_kernel<T>(p.numel(), p.data_ptr<T>(), g.data_ptr<T>(), sum.data_ptr<T>(), clr, eps, wd, maximize);
        });
      });
    }
  }
}

}  // namespace ember::optim
