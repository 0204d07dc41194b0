// SGD: torch 1.13's _single_tensor_sgd fused into one elementwise pass per parameter.
#include "ember/optim/sgd.h"

#include "core/parallel.h"
#include "core/dtype_dispatch.h"
#include "ember/autograd/grad_mode.h"
#include "ember/core/errors.h"
#include "ember/ops.h"

namespace ember::optim {
namespace {

using detail::num0;
using detail::py_num;

Value sgd_defaults(const SGDOptions& o) {
  if (o.lr) EMBER_CHECK_VALUE(0.0 <= *o.lr, "Invalid learning rate: ", py_num(*o.lr));
  EMBER_CHECK_VALUE(0.0 <= o.momentum, "Invalid momentum value: ", py_num(o.momentum));
  EMBER_CHECK_VALUE(0.0 <= o.weight_decay, "Invalid weight_decay value: ", py_num(o.weight_decay));
  EMBER_CHECK_VALUE(!o.nesterov || (o.momentum > 0 && o.dampening == 0),
                    "Nesterov momentum requires a momentum and zero dampening");
  return Value::dict({{"lr", o.lr ? Value(*o.lr) : Value("<required parameter>")},
                      {"momentum", num0(o.momentum)}, {"dampening", num0(o.dampening)},
                      {"weight_decay", num0(o.weight_decay)}, {"nesterov", o.nesterov},
                      {"maximize", o.maximize}, {"foreach", nullptr}, {"differentiable", false}});
}

struct SGDStep {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
};

// MOM: a momentum buffer (FIRST: created from this step's d_p). Flags are template parameters so
// the loop vectorises; maximize is an exact multiplication by -1.
template <class T, bool WD, bool MOM, bool FIRST, bool NESTEROV>
void sgd_loop(int64_t n, T* __restrict p, const T* __restrict g, T* __restrict buf, T sign, T wd, T mom,
              T one_m_damp, T neg_lr) {
  parallel_for(0, n, kGrainSize / 4, [=](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) {
      T d = g[i] * sign;
      if constexpr (WD) d = d + wd * p[i];
      if constexpr (MOM) {
        T bi;
        if constexpr (FIRST) bi = d; else bi = buf[i] * mom + one_m_damp * d;
        buf[i] = bi;
        if constexpr (NESTEROV) d = d + mom * bi; else d = bi;
      }
      p[i] = p[i] + neg_lr * d;
    }
  });
}

template <class T> void sgd_kernel(int64_t n, T* p, const T* g, T* buf, bool first, const SGDStep& s) {
  const T wd = T(s.weight_decay), mom = T(s.momentum), one_m_damp = T(1 - s.dampening), neg_lr = T(-s.lr);
  const T sign = s.maximize ? T(-1) : T(1);
  auto run = [&]<bool WD>() {
    if (!buf) return sgd_loop<T, WD, false, false, false>(n, p, g, buf, sign, wd, mom, one_m_damp, neg_lr);
    if (first) {
      if (s.nesterov) return sgd_loop<T, WD, true, true, true>(n, p, g, buf, sign, wd, mom, one_m_damp, neg_lr);
      return sgd_loop<T, WD, true, true, false>(n, p, g, buf, sign, wd, mom, one_m_damp, neg_lr);
    }
    if (s.nesterov) return sgd_loop<T, WD, true, false, true>(n, p, g, buf, sign, wd, mom, one_m_damp, neg_lr);
    sgd_loop<T, WD, true, false, false>(n, p, g, buf, sign, wd, mom, one_m_damp, neg_lr);
  };
  if (s.weight_decay != 0) run.template operator()<true>(); else run.template operator()<false>();
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : SGD(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}
SGD::SGD(std::vector<ParamGroup> groups, SGDOptions options) : Optimizer(sgd_defaults(options)) {
  init_groups(std::move(groups));
}

void SGD::step() {
  NoGradGuard guard;
  for (auto& group : param_groups) {
    const Value& o = group.options;
    SGDStep s{o.at("lr").to_double(), o.at("momentum").to_double(), o.at("dampening").to_double(),
              o.at("weight_decay").to_double(), o.at("nesterov").to_bool(), o.at("maximize").to_bool()};
    for (auto& param : group.params) {
      if (!param.grad().defined()) continue;
      Value& st = state_for(param);
      bool first = !st.contains("momentum_buffer") || st.at("momentum_buffer").is_none();
      Tensor* buf = nullptr;
      if (s.momentum != 0) {
        if (first) st["momentum_buffer"] = zeros(param.sizes(), param.options());
        buf = &st["momentum_buffer"].to_tensor();
        EMBER_CHECK(buf->is_contiguous(), "SGD: momentum_buffer must be contiguous");
      } else if (first) {
        st["momentum_buffer"] = nullptr;
      }
      detail::with_contiguous(param, [&](Tensor& p, const Tensor& g) {
        visit_dtype<kFloatTypes>(p.dtype(), "SGD", [&]<class T>() {
          sgd_kernel<T>(p.numel(), p.data_ptr<T>(), g.data_ptr<T>(), buf ? buf->data_ptr<T>() : nullptr, first, s);
        });
      });
    }
  }
}

}  // namespace ember::optim
