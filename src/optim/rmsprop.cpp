// RMSprop: torch 1.13's _single_tensor_rmsprop fused into one elementwise pass per parameter.
#include "ember/optim/rmsprop.h"

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

Value rmsprop_defaults(const RMSpropOptions& o) {
  EMBER_CHECK_VALUE(0.0 <= o.lr, "Invalid learning rate: ", py_num(o.lr));
  EMBER_CHECK_VALUE(0.0 <= o.eps, "Invalid epsilon value: ", py_num(o.eps));
  EMBER_CHECK_VALUE(0.0 <= o.momentum, "Invalid momentum value: ", py_num(o.momentum));
  EMBER_CHECK_VALUE(0.0 <= o.weight_decay, "Invalid weight_decay value: ", py_num(o.weight_decay));
  EMBER_CHECK_VALUE(0.0 <= o.alpha, "Invalid alpha value: ", py_num(o.alpha));
  return Value::dict({{"lr", o.lr}, {"momentum", num0(o.momentum)}, {"alpha", o.alpha}, {"eps", o.eps},
                      {"centered", o.centered}, {"weight_decay", num0(o.weight_decay)}, {"foreach", nullptr},
                      {"maximize", o.maximize}, {"differentiable", false}});
}

struct RMSpropStep {
  double lr, alpha, eps, weight_decay, momentum;
  bool centered, maximize;
};

template <class T, bool WD, bool CENTERED, bool MOM>
void rmsprop_loop(int64_t n, T* __restrict p, const T* __restrict g, T* __restrict sq, T* __restrict buf,
                  T* __restrict gavg, T sign, T wd, T alpha, T one_m_alpha, T eps, T mom, T neg_lr) {
  parallel_for(0, n, kGrainSize / 8, [=](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) {
      T gi = g[i] * sign;
      if constexpr (WD) gi = gi + wd * p[i];
      T si = sq[i] * alpha + one_m_alpha * gi * gi;
      sq[i] = si;
      T avg;
      if constexpr (CENTERED) {
        T ga = gavg[i] * alpha + one_m_alpha * gi;
        gavg[i] = ga;
        avg = std::sqrt(si + T(-1) * ga * ga);
      } else {
        avg = std::sqrt(si);
      }
      avg = avg + eps;
      if constexpr (MOM) {
        T bi = buf[i] * mom + T(1) * gi / avg;
        buf[i] = bi;
        p[i] = p[i] + neg_lr * bi;
      } else {
        p[i] = p[i] + neg_lr * gi / avg;
      }
    }
  });
}

template <class T>
void rmsprop_kernel(int64_t n, T* p, const T* g, T* sq, T* buf, T* gavg, const RMSpropStep& s) {
  const T alpha = T(s.alpha), one_m_alpha = T(1 - s.alpha), eps = T(s.eps), wd = T(s.weight_decay);
  const T mom = T(s.momentum), neg_lr = T(-s.lr), sign = s.maximize ? T(-1) : T(1);
  auto run = [&]<bool WD, bool CENTERED>() {
    if (buf) rmsprop_loop<T, WD, CENTERED, true>(n, p, g, sq, buf, gavg, sign, wd, alpha, one_m_alpha, eps, mom, neg_lr);
    else rmsprop_loop<T, WD, CENTERED, false>(n, p, g, sq, buf, gavg, sign, wd, alpha, one_m_alpha, eps, mom, neg_lr);
  };
  bool wd_on = s.weight_decay != 0;
  if (wd_on && gavg) run.template operator()<true, true>();
  else if (wd_on) run.template operator()<true, false>();
  else if (gavg) run.template operator()<false, true>();
  else run.template operator()<false, false>();
}

}  // namespace

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions options)
    : RMSprop(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}
RMSprop::RMSprop(std::vector<ParamGroup> groups, RMSpropOptions options) : Optimizer(rmsprop_defaults(options)) {
  init_groups(std::move(groups));
}

void RMSprop::step() {
  NoGradGuard guard;
  for (auto& group : param_groups) {
    const Value& o = group.options;
    RMSpropStep s{o.at("lr").to_double(), o.at("alpha").to_double(), o.at("eps").to_double(),
                  o.at("weight_decay").to_double(), o.at("momentum").to_double(), o.at("centered").to_bool(),
                  o.at("maximize").to_bool()};
    for (auto& param : group.params) {
      if (!param.grad().defined()) continue;
      Value& st = state_for(param);
      if (!st.contains("step")) {
        st["step"] = int64_t(0);
        st["square_avg"] = zeros(param.sizes(), param.options());
        if (s.momentum > 0) st["momentum_buffer"] = zeros(param.sizes(), param.options());
        if (s.centered) st["grad_avg"] = zeros(param.sizes(), param.options());
      }
      EMBER_CHECK(s.momentum <= 0 || st.contains("momentum_buffer"), "RMSprop: momentum_buffer state is missing");
      EMBER_CHECK(!s.centered || st.contains("grad_avg"), "RMSprop: grad_avg state is missing");
      detail::increment_step(st);
      Tensor& sq = st["square_avg"].to_tensor();
      Tensor* buf = s.momentum > 0 ? &st["momentum_buffer"].to_tensor() : nullptr;
      Tensor* gavg = s.centered ? &st["grad_avg"].to_tensor() : nullptr;
      EMBER_CHECK(sq.is_contiguous() && (!buf || buf->is_contiguous()) && (!gavg || gavg->is_contiguous()),
                  "RMSprop: state tensors must be contiguous");
      detail::with_contiguous(param, [&](Tensor& p, const Tensor& g) {
        visit_dtype<kFloatTypes>(p.dtype(), "RMSprop", [&]<class T>() {
          rmsprop_kernel<T>(p.numel(), p.data_ptr<T>(), g.data_ptr<T>(), sq.data_ptr<T>(),
                            buf ? buf->data_ptr<T>() : nullptr, gavg ? gavg->data_ptr<T>() : nullptr, s);
        });
      });
    }
  }
}

}  // namespace ember::optim
