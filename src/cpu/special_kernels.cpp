// CPU kernels of the special functions (formulas in ops/special_formulas.h, computed in double
// and rounded once) and of the scans cummax, cummin and logcumsumexp.
#include <cmath>
#include <limits>

#include "cpu/tensor_iter.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/reduce_utils.h"
#include "ops/special_formulas.h"

namespace ember::cpu {
namespace {

namespace f = formula;

template <class Fn> Tensor& special_into(Tensor& out, const Tensor& a, const char* name, Fn fn) {
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = name, .int_to_float = true});
  visit_dtype<kFloatTypes>(it.compute_dtype(), name, [&]<class T>() {
    cpu_kernel(it, [fn](T x) -> T { return fn(x); });
  });
  out = it.output();
  return out;
}

#define EMBER_SPECIAL_KERNELS(n)                                                                        \
  Tensor n##_cpu(const Tensor& a) { Tensor out; return special_into(out, a, #n, f::n##_fn<>{}); }      \
  Tensor& n##_inplace_cpu(Tensor& a) { return special_into(a, a, #n "_", f::n##_fn<>{}); }             \
  EMBER_REGISTER_KERNEL(n, CPU, n##_cpu);                                                               \
  EMBER_REGISTER_KERNEL(n##_, CPU, n##_inplace_cpu);
EMBER_UNARY_SPECIAL_OPS(EMBER_SPECIAL_KERNELS)
#undef EMBER_SPECIAL_KERNELS

Tensor polygamma_cpu(int64_t n, const Tensor& a) {
  Tensor out;
  return special_into(out, a, "polygamma", f::polygamma_fn<>{n});
}

// (alpha, x) -> d x / d alpha, floating types only (as torch's _standard_gamma_grad).
Tensor standard_gamma_grad_cpu(const Tensor& alpha, const Tensor& x) {
  Tensor out;
  TensorIter it = TensorIter::binary_op(out, alpha, x, {.op_name = "_standard_gamma_grad"});
  visit_dtype<kFloatTypes>(it.compute_dtype(), "_standard_gamma_grad", [&]<class T>() {
    cpu_kernel(it, [](T a, T v) -> T { return f::standard_gamma_grad_fn<>{}(a, v); });
  });
  return it.output();
}

// igamma / igammac: integers compute in the default float dtype, as torch's.
template <class Fn> Tensor incomplete_gamma_cpu(const Tensor& a, const Tensor& x, const char* name) {
  Tensor out;
  TensorIter it = TensorIter::binary_op(out, a, x, {.op_name = name, .int_to_float = true});
  visit_dtype<kFloatTypes>(it.compute_dtype(), name, [&]<class T>() {
    cpu_kernel(it, [](T p, T q) -> T { return Fn{}(p, q); });
  });
  return it.output();
}
Tensor igamma_cpu(const Tensor& a, const Tensor& x) { return incomplete_gamma_cpu<f::igamma_fn<>>(a, x, "igamma"); }
Tensor igammac_cpu(const Tensor& a, const Tensor& x) { return incomplete_gamma_cpu<f::igammac_fn<>>(a, x, "igammac"); }

// ---------------------------------------------------------------- scans along one dim
// The input is made contiguous and viewed as (outer, n, inner); each (outer, inner) line is
// walked in order. Lines are independent, so they split over threads.
struct ScanShape {
  int64_t outer = 1, n = 1, inner = 1;
};
ScanShape scan_shape(const Tensor& a, int64_t d) {
  ScanShape s;
  if (a.dim() == 0) return s;
  s.n = a.sizes()[d];
  for (int64_t i = 0; i < d; ++i) s.outer *= a.sizes()[i];
  for (int64_t i = d + 1; i < a.dim(); ++i) s.inner *= a.sizes()[i];
  return s;
}

template <class F> void for_each_line(const ScanShape& s, F line) {
  parallel_for(0, s.outer * s.inner, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(s.n, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t l = b; l < e; ++l) line((l / s.inner) * s.n * s.inner + l % s.inner, s.inner);
               });
}

// PyTorch's rule: x replaces the running extreme when x is NaN, or when neither is NaN and x is
// at least as large (max) / small (min): the index is the last position of the extreme.
template <bool kMax> std::tuple<Tensor, Tensor> cum_extreme_cpu(const Tensor& a, int64_t dim) {
  const char* name = kMax ? "cummax" : "cummin";
  int64_t d = reduce::wrap_dim(dim, a.dim());
  DType cdt = reduce::compute_dtype(a.dtype());
  Tensor x = reduce::convert(a, cdt, /*contig=*/true);
  Tensor values = empty(a.sizes(), {.dtype = cdt, .device = a.device()});
  Tensor indices = empty(a.sizes(), {.dtype = kInt64, .device = a.device()});
  if (a.numel() > 0) {
    ScanShape s = scan_shape(a, d);
    visit_dtype<kNumericAndBool>(cdt, name, [&]<class T>() {
      const T* in = x.data_ptr<T>();
      T* vo = values.data_ptr<T>();
      int64_t* io = indices.data_ptr<int64_t>();
      for_each_line(s, [&](int64_t start, int64_t stride) {
        T best = in[start];
        int64_t best_i = 0;
        for (int64_t i = 0; i < s.n; ++i) {
          T v = in[start + i * stride];
          bool v_nan = false, best_nan = false;
          if constexpr (std::is_floating_point_v<T>) { v_nan = std::isnan(v); best_nan = std::isnan(best); }
          if (v_nan || (!best_nan && (kMax ? v >= best : v <= best))) {
            best = v;
            best_i = i;
          }
          vo[start + i * stride] = best;
          io[start + i * stride] = best_i;
        }
      });
    });
  }
  return {reduce::convert(values, a.dtype()), indices};
}

Tensor logcumsumexp_cpu(const Tensor& a, int64_t dim) {
  int64_t d = reduce::wrap_dim(dim, a.dim());
  EMBER_CHECK(is_floating(a.dtype()) || !is_integral(a.dtype(), true),
              "logcumsumexp(): expected input to have floating point dtype but got ", scalar_type_name(a.dtype()));
  DType out_dt = is_floating(a.dtype()) ? a.dtype() : default_dtype();
  DType cdt = reduce::compute_dtype(out_dt);
  Tensor x = reduce::convert(a, cdt, /*contig=*/true);
  Tensor out = empty(a.sizes(), {.dtype = cdt, .device = a.device()});
  if (a.numel() > 0) {
    ScanShape s = scan_shape(a, d);
    visit_dtype<kFloatTypes>(cdt, "logcumsumexp", [&]<class T>() {
      const T* in = x.data_ptr<T>();
      T* o = out.data_ptr<T>();
      for_each_line(s, [&](int64_t start, int64_t stride) {
        T acc = -std::numeric_limits<T>::infinity();
        for (int64_t i = 0; i < s.n; ++i) {
          T v = in[start + i * stride];
          // logaddexp(acc, v); equal infinities give themselves, NaN propagates.
          T hi = std::max(acc, v), lo = std::min(acc, v);
          if (std::isnan(v) || std::isnan(acc)) acc = std::numeric_limits<T>::quiet_NaN();
          else if (std::isinf(hi) && (hi > 0 || lo == hi)) acc = hi;
          else acc = hi + std::log1p(std::exp(lo - hi));
          o[start + i * stride] = acc;
        }
      });
    });
  }
  return reduce::convert(out, out_dt);
}

std::tuple<Tensor, Tensor> cummax_cpu(const Tensor& a, int64_t dim) { return cum_extreme_cpu<true>(a, dim); }
std::tuple<Tensor, Tensor> cummin_cpu(const Tensor& a, int64_t dim) { return cum_extreme_cpu<false>(a, dim); }

EMBER_REGISTER_KERNEL(polygamma, CPU, polygamma_cpu);
EMBER_REGISTER_KERNEL(_standard_gamma_grad, CPU, standard_gamma_grad_cpu);
EMBER_REGISTER_KERNEL(igamma, CPU, igamma_cpu);
EMBER_REGISTER_KERNEL(igammac, CPU, igammac_cpu);
EMBER_REGISTER_KERNEL(cummax, CPU, cummax_cpu);
EMBER_REGISTER_KERNEL(cummin, CPU, cummin_cpu);
EMBER_REGISTER_KERNEL(logcumsumexp, CPU, logcumsumexp_cpu);

}  // namespace
}  // namespace ember::cpu
