// CPU kernels of the optimizers' multi-tensor update ops (_fused_adam_, _fused_adamw_,
// _fused_sgd_, _fused_adagrad_, _fused_rmsprop_; declared in the optimizers section of
// src/ops/op_list.h, checked in src/ops/optim.cpp). Each parameter gets one fused elementwise
// pass of torch 1.13's single-tensor formula, split across threads; options that change the
// formula are template parameters so the loop has no branches and vectorises, and maximize
// and decoupled decay become exact multiplications by -1 and by 1 when off. Scalars are cast to
// the parameter's dtype first, as torch's kernels do.
#include <cmath>
#include <optional>

#include "core/parallel.h"
#include "core/dtype_dispatch.h"
#include "ember/ops.h"
#include "ops/dense_run.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

// The dtype check runs over the whole list first, so a bad list fails before any update.
// float16/bfloat16 parameters are updated in float32 (DenseRun's upcast, written back rounded once
// per value, as torch's opmath): the loops are instantiated for float and double only.
void check_float(const char* op, TensorList params) {
  for (const Tensor& p : params)
    if (!is_floating(p.dtype())) throw_dtype_not_implemented(op, p.dtype());
}
DType compute_dtype(DType t) { return t == DType::Float64 ? t : DType::Float32; }
constexpr bool kUpcast = true;

// The step count of parameter i: a one-element float32 tensor on the CPU (checked by the op).
double step_value(TensorList state_steps, size_t i) {
  return double(*static_cast<const float*>(state_steps[i].data_ptr()));
}

// ---------------------------------------------------------------- Adam / AdamW
struct AdamStep {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, maximize, decoupled;
};

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

void adam_cpu(const char* op, TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
              TensorList max_exp_avg_sqs, TensorList state_steps, const AdamStep& s) {
  check_float(op, params);
  for (size_t i = 0; i < params.size(); ++i) {
    DenseRun p(params[i], kUpcast), m(exp_avgs[i], kUpcast), v(exp_avg_sqs[i], kUpcast);
    std::optional<DenseRun> vmax;
    if (s.amsgrad) vmax.emplace(max_exp_avg_sqs[i], kUpcast);
    const DenseRun g(grads[i], kUpcast);  // only read
    visit_dtype<kFloatTypes>(compute_dtype(params[i].dtype()), op, [&]<class T>() {
      adam_kernel<T>(params[i].numel(), p.data<T>(), g.data<T>(), m.data<T>(), v.data<T>(),
                     vmax ? vmax->data<T>() : nullptr, s, step_value(state_steps, i));
    });
    p.write_back();
    m.write_back();
    v.write_back();
    if (vmax) vmax->write_back();
  }
}

void fused_adam_cpu(TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                    TensorList max_exp_avg_sqs, TensorList state_steps, double lr, double beta1, double beta2,
                    double weight_decay, double eps, bool amsgrad, bool maximize) {
  adam_cpu("_fused_adam_", params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
           {lr, beta1, beta2, eps, weight_decay, amsgrad, maximize, /*decoupled=*/false});
}

void fused_adamw_cpu(TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                     TensorList max_exp_avg_sqs, TensorList state_steps, double lr, double beta1, double beta2,
                     double weight_decay, double eps, bool amsgrad, bool maximize) {
  adam_cpu("_fused_adamw_", params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
           {lr, beta1, beta2, eps, weight_decay, amsgrad, maximize, /*decoupled=*/true});
}

// ---------------------------------------------------------------- SGD
struct SGDStep {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
};

// MOM: a momentum buffer (FIRST: overwritten with this step's d_p).
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

void fused_sgd_cpu(TensorList params, TensorList grads, TensorList momentum_buffer_list, double weight_decay,
                   double momentum, double lr, double dampening, bool nesterov, bool maximize, bool is_first_step) {
  const char* op = "_fused_sgd_";
  check_float(op, params);
  const SGDStep s{lr, momentum, dampening, weight_decay, nesterov, maximize};
  for (size_t i = 0; i < params.size(); ++i) {
    DenseRun p(params[i], kUpcast);
    std::optional<DenseRun> buf;
    if (momentum != 0) buf.emplace(momentum_buffer_list[i], kUpcast);
    const DenseRun g(grads[i], kUpcast);  // only read
    visit_dtype<kFloatTypes>(compute_dtype(params[i].dtype()), op, [&]<class T>() {
      sgd_kernel<T>(params[i].numel(), p.data<T>(), g.data<T>(), buf ? buf->data<T>() : nullptr, is_first_step, s);
    });
    p.write_back();
    if (buf) buf->write_back();
  }
}

// ---------------------------------------------------------------- Adagrad (dense)
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

void fused_adagrad_cpu(TensorList params, TensorList grads, TensorList state_sums, TensorList state_steps, double lr,
                       double lr_decay, double weight_decay, double eps, bool maximize) {
  const char* op = "_fused_adagrad_";
  check_float(op, params);
  for (size_t i = 0; i < params.size(); ++i) {
    const double clr = lr / (1 + (step_value(state_steps, i) - 1) * lr_decay);
    DenseRun p(params[i], kUpcast), sum(state_sums[i], kUpcast);
    const DenseRun g(grads[i], kUpcast);  // only read
    visit_dtype<kFloatTypes>(compute_dtype(params[i].dtype()), op, [&]<class T>() {
      adagrad_kernel<T>(params[i].numel(), p.data<T>(), g.data<T>(), sum.data<T>(), clr, eps, weight_decay,
                        maximize);
    });
    p.write_back();
    sum.write_back();
  }
}

// ---------------------------------------------------------------- RMSprop
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

void fused_rmsprop_cpu(TensorList params, TensorList grads, TensorList square_avgs, TensorList momentum_buffer_list,
                       TensorList grad_avgs, double lr, double alpha, double eps, double weight_decay, double momentum,
                       bool centered, bool maximize) {
  const char* op = "_fused_rmsprop_";
  check_float(op, params);
  const RMSpropStep s{lr, alpha, eps, weight_decay, momentum, centered, maximize};
  for (size_t i = 0; i < params.size(); ++i) {
    DenseRun p(params[i], kUpcast), sq(square_avgs[i], kUpcast);
    std::optional<DenseRun> buf, gavg;
    if (momentum > 0) buf.emplace(momentum_buffer_list[i], kUpcast);
    if (centered) gavg.emplace(grad_avgs[i], kUpcast);
    const DenseRun g(grads[i], kUpcast);  // only read
    visit_dtype<kFloatTypes>(compute_dtype(params[i].dtype()), op, [&]<class T>() {
      rmsprop_kernel<T>(params[i].numel(), p.data<T>(), g.data<T>(), sq.data<T>(), buf ? buf->data<T>() : nullptr,
                        gavg ? gavg->data<T>() : nullptr, s);
    });
    p.write_back();
    sq.write_back();
    if (buf) buf->write_back();
    if (gavg) gavg->write_back();
  }
}

}  // namespace

EMBER_REGISTER_KERNEL(_fused_adam_, CPU, fused_adam_cpu);
EMBER_REGISTER_KERNEL(_fused_adamw_, CPU, fused_adamw_cpu);
EMBER_REGISTER_KERNEL(_fused_sgd_, CPU, fused_sgd_cpu);
EMBER_REGISTER_KERNEL(_fused_adagrad_, CPU, fused_adagrad_cpu);
EMBER_REGISTER_KERNEL(_fused_rmsprop_, CPU, fused_rmsprop_cpu);

}  // namespace ember::cpu
