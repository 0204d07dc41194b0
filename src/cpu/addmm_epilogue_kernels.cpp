// The CPU's _addmm_epilogue (op_list.h): the product in blocks of rows (cpu::gemm_then), and on
// each block, while it is in cache: the bias (written first and accumulated onto by the GEMM, as
// addmm does), the activation (from pre into out when pre is kept), the residual. Eager runs the same steps
// as three ops with a pass over memory each (addmm, relu/gelu, add). Built with
// -ffp-contract=off and calling the eager kernels' formulas, so each step rounds as eager's does.
#include <cstring>

#include "core/parallel.h"
#include "cpu/blas_layout.h"
#include "cpu/elementwise_math.h"
#include "ember/ops.h"
#include "ops/addmm_epilogue.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

namespace f = formula;
using A = EpilogueActivation;

// One row segment each. Functions with restrict parameters, so that GCC vectorises the loops.
template <class T> void add_row(T* __restrict c, const T* __restrict x, int64_t n) {
  for (int64_t j = 0; j < n; ++j) c[j] = c[j] + x[j];
}
template <class T, class Fn> void activate_row(T* __restrict c, int64_t n) {
  for (int64_t j = 0; j < n; ++j) c[j] = Fn{}(c[j]);
}
template <class T, class Fn> void activate_row_into(T* __restrict dst, const T* __restrict src, int64_t n) {
  for (int64_t j = 0; j < n; ++j) dst[j] = Fn{}(src[j]);
}
// c = act(c), or, with a separate src, c = act(src) (src stays: the saved pre-activation)
template <class T> void activate(A act, T* c, const T* src, int64_t n) {
  if (src) {
    switch (act) {
      case A::None: std::memcpy(c, src, size_t(n) * sizeof(T)); break;
      case A::Relu: activate_row_into<T, f::relu_fn<CpuMath>>(c, src, n); break;
      case A::Gelu: activate_row_into<T, f::gelu_fn<CpuMath>>(c, src, n); break;
      case A::GeluTanh: activate_row_into<T, f::gelu_tanh_fn<CpuMath>>(c, src, n); break;
    }
    return;
  }
  switch (act) {
    case A::None: break;
    case A::Relu: activate_row<T, f::relu_fn<CpuMath>>(c, n); break;
    case A::Gelu: activate_row<T, f::gelu_fn<CpuMath>>(c, n); break;
    case A::GeluTanh: activate_row<T, f::gelu_tanh_fn<CpuMath>>(c, n); break;
  }
}

template <class T>
void addmm_epilogue_typed(const Tensor* bias, const Tensor& m1, const Tensor& m2, const Tensor* residual, A act,
                          Tensor& out, Tensor& pre) {
  const int64_t M = m1.size(0), K = m1.size(1), N = m2.size(1);
  T* C = out.data_ptr<T>();
  T* P = pre.defined() ? pre.data_ptr<T>() : nullptr;
  const Tensor b = bias ? bias->contiguous() : Tensor();
  const T* B = b.defined() ? b.data_ptr<T>() : nullptr;
  const Tensor r = residual ? residual->contiguous() : Tensor();
  const T* R = r.defined() ? r.data_ptr<T>() : nullptr;
  // With pre kept, the product goes into pre and the epilogue writes out from it (no copy of pre)
  auto epilogue = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    for (int64_t i = r0; i < r1; ++i) {
      T* row = C + i * N + c0;
      activate<T>(act, row, P ? P + i * N + c0 : nullptr, c1 - c0);
      if (R) add_row<T>(row, R + i * N + c0, c1 - c0);
    }
  };
  T* product = P ? P : C;
  if (K == 0) {  // an empty product: the bias (or zeros) alone
    parallel_for(0, M, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, N)), [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i) {
        if (B) std::memcpy(product + i * N, B, size_t(N) * sizeof(T));
        else std::fill(product + i * N, product + (i + 1) * N, T(0));
      }
      epilogue(r0, r1, 0, N);
    });
    return;
  }
  // the bias goes in first and the product accumulates onto it, as addmm computes it
  addmm_then(P ? pre : out, b, m1, m2, epilogue);
}

std::tuple<Tensor, Tensor> addmm_epilogue_cpu(const std::optional<Tensor>& bias, const Tensor& m1, const Tensor& m2,
                                              const std::optional<Tensor>& residual, int64_t activation,
                                              bool save_pre) {
  check_addmm_epilogue("_addmm_epilogue", bias, m1, m2, residual, activation);
  const DType dt = m1.dtype();
  if (dt != kFloat32 && dt != kFloat64) return addmm_epilogue_composite(bias, m1, m2, residual, activation, save_pre);
  const int64_t M = m1.size(0), N = m2.size(1);
  Tensor out = empty({M, N}, {.dtype = dt, .device = m1.device()});
  Tensor pre = save_pre ? empty({M, N}, {.dtype = dt, .device = m1.device()}) : Tensor();
  if (M > 0 && N > 0) {
    const Tensor* b = bias ? &*bias : nullptr;
    const Tensor* r = residual ? &*residual : nullptr;
    if (dt == kFloat32) addmm_epilogue_typed<float>(b, m1, m2, r, A(activation), out, pre);
    else addmm_epilogue_typed<double>(b, m1, m2, r, A(activation), out, pre);
  }
  return {out, pre};
}

}  // namespace

EMBER_REGISTER_KERNEL(_addmm_epilogue, CPU, addmm_epilogue_cpu);

}  // namespace ember::cpu
