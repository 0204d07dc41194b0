// CUDA kernels of the optimizers' updates (_fused_adam_, _fused_adamw_, _fused_sgd_,
// _fused_adagrad_, _fused_rmsprop_): one launch per batch of up to kOptimBatch parameters (each
// block works on one of them), one pass over each parameter with the CPU kernels' formulas
// (src/cpu/optim_kernels.cpp, torch 1.13's single-tensor rules), scalars cast to the compute
// type first as there. The step count is read on the device, and the bias corrections that
// depend on it are computed once per thread, before its grid-stride loop. Options are runtime
// flags: the branches are uniform across the grid and the loop is bound by memory, so one
// kernel per rule and dtype (4 x 4 instantiations) is enough.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "cuda/cuda_check.h"
#include "cuda/elementwise.cuh"
#include "cuda/multi_tensor.cuh"
#include "cuda/optim_launchers.h"

namespace ember::cuda {
namespace {

constexpr int kThreads = 256;

// This block's parameter (copied out of the argument list: the index is only known at run time)
// and the block's first element and stride within it.
struct BlockPart {
  OptimTensors t;
  int64_t first, stride;
};
__device__ __forceinline__ BlockPart block_part(const OptimBatch& b) {
  const BlockShare s = block_share(b);
  return {b.t[s.k], s.first, s.stride};
}

template <class S, class T> __device__ __forceinline__ T ld(const void* p, int64_t i) {
  return convert<T>(static_cast<const S*>(p)[i]);
}
template <class S, class T> __device__ __forceinline__ void st(void* p, int64_t i, T v) {
  static_cast<S*>(p)[i] = convert<S>(v);
}

// ---------------------------------------------------------------- Adam / AdamW
template <class S, class T> __global__ void adam_kernel(OptimBatch b, AdamRule r) {
  const BlockPart part = block_part(b);
  const OptimTensors& t = part.t;
  const double step = double(*t.step);
  const double bc1 = 1 - pow(r.beta1, step), bc2 = 1 - pow(r.beta2, step);
  const T neg_step_size = T(-(r.lr / bc1)), bc2_sqrt = T(sqrt(bc2));
  const T b1 = T(r.beta1), b2 = T(r.beta2), one_m_b1 = T(1 - r.beta1), one_m_b2 = T(1 - r.beta2);
  const T eps = T(r.eps), wd = T(r.weight_decay);
  const T decay = r.decoupled ? T(1 - r.lr * r.weight_decay) : T(1), sign = r.maximize ? T(-1) : T(1);
  const bool l2 = !r.decoupled && r.weight_decay != 0;
  for (int64_t i = part.first; i < t.numel; i += part.stride) {
    T g = ld<S, T>(t.grad, i) * sign;
    T p = ld<S, T>(t.param, i) * decay;
    if (l2) g = g + wd * p;
    T m = ld<S, T>(t.state[0], i) * b1 + one_m_b1 * g;
    T v = ld<S, T>(t.state[1], i) * b2 + one_m_b2 * g * g;
    st<S, T>(t.state[0], i, m);
    st<S, T>(t.state[1], i, v);
    T denom_src = v;
    if (r.amsgrad) {
      T mx = ld<S, T>(t.state[2], i);
      denom_src = (v > mx || v != v) ? v : mx;  // torch.maximum: NaN propagates
      st<S, T>(t.state[2], i, denom_src);
    }
    T denom = sqrt(denom_src) / bc2_sqrt + eps;
    st<S, T>(t.param, i, p + neg_step_size * m / denom);
  }
}

// ---------------------------------------------------------------- SGD
template <class S, class T> __global__ void sgd_kernel(OptimBatch b, SGDRule r) {
  const BlockPart part = block_part(b);
  const OptimTensors& t = part.t;
  const T wd = T(r.weight_decay), mom = T(r.momentum), one_m_damp = T(1 - r.dampening), neg_lr = T(-r.lr);
  const T sign = r.maximize ? T(-1) : T(1);
  const bool has_buf = t.state[0] != nullptr;
  for (int64_t i = part.first; i < t.numel; i += part.stride) {
    T p = ld<S, T>(t.param, i);
    T d = ld<S, T>(t.grad, i) * sign;
    if (r.weight_decay != 0) d = d + wd * p;
    if (has_buf) {
      T b = r.first_step ? d : ld<S, T>(t.state[0], i) * mom + one_m_damp * d;
      st<S, T>(t.state[0], i, b);
      d = r.nesterov ? d + mom * b : b;
    }
    st<S, T>(t.param, i, p + neg_lr * d);
  }
}

// ---------------------------------------------------------------- Adagrad (dense)
template <class S, class T> __global__ void adagrad_kernel(OptimBatch b, AdagradRule r) {
  const BlockPart part = block_part(b);
  const OptimTensors& t = part.t;
  const double clr = r.lr / (1 + (double(*t.step) - 1) * r.lr_decay);
  const T sign = r.maximize ? T(-1) : T(1), wd = T(r.weight_decay), eps = T(r.eps), neg_clr = T(-clr);
  for (int64_t i = part.first; i < t.numel; i += part.stride) {
    T p = ld<S, T>(t.param, i);
    T g = ld<S, T>(t.grad, i) * sign;
    if (r.weight_decay != 0) g = g + wd * p;
    T s = ld<S, T>(t.state[0], i) + T(1) * g * g;
    st<S, T>(t.state[0], i, s);
    st<S, T>(t.param, i, p + neg_clr * g / (sqrt(s) + eps));
  }
}

// ---------------------------------------------------------------- RMSprop
template <class S, class T> __global__ void rmsprop_kernel(OptimBatch b, RMSpropRule r) {
  const BlockPart part = block_part(b);
  const OptimTensors& t = part.t;
  const T alpha = T(r.alpha), one_m_alpha = T(1 - r.alpha), eps = T(r.eps), wd = T(r.weight_decay);
  const T mom = T(r.momentum), neg_lr = T(-r.lr), sign = r.maximize ? T(-1) : T(1);
  const bool has_buf = t.state[1] != nullptr, centered = t.state[2] != nullptr;
  for (int64_t i = part.first; i < t.numel; i += part.stride) {
    T p = ld<S, T>(t.param, i);
    T g = ld<S, T>(t.grad, i) * sign;
    if (r.weight_decay != 0) g = g + wd * p;
    T s = ld<S, T>(t.state[0], i) * alpha + one_m_alpha * g * g;
    st<S, T>(t.state[0], i, s);
    T avg;
    if (centered) {
      T ga = ld<S, T>(t.state[2], i) * alpha + one_m_alpha * g;
      st<S, T>(t.state[2], i, ga);
      avg = sqrt(s + T(-1) * ga * ga);
    } else {
      avg = sqrt(s);
    }
    avg = avg + eps;
    if (has_buf) {
      T b = ld<S, T>(t.state[1], i) * mom + T(1) * g / avg;
      st<S, T>(t.state[1], i, b);
      st<S, T>(t.param, i, p + neg_lr * b);
    } else {
      st<S, T>(t.param, i, p + neg_lr * g / avg);
    }
  }
}

// Launches K<S, T> for the tensors' storage type S (float16/bfloat16 compute in float32).
#define EMBER_OPTIM_LAUNCH(KERNEL)                                                                     \
  template <class S, class T> struct KERNEL##_t {                                                      \
    static void run(const OptimBatch& b, const auto& r) {                                              \
      KERNEL<S, T><<<unsigned(b.first_block[b.count]), kThreads, 0, b.t[0].stream>>>(b, r);             \
    }                                                                                                  \
  };
EMBER_OPTIM_LAUNCH(adam_kernel)
EMBER_OPTIM_LAUNCH(sgd_kernel)
EMBER_OPTIM_LAUNCH(adagrad_kernel)
EMBER_OPTIM_LAUNCH(rmsprop_kernel)
#undef EMBER_OPTIM_LAUNCH

template <template <class, class> class K, class Rule> void dispatch(const char* op, const OptimBatch& b, const Rule& r) {
  if (b.count == 0) return;
  // float16/bfloat16 parameters compute in float32, as the elementwise kernels.
  visit_storage<kStoreFloat>(b.t[0].dtype, op, [&]<class S>() {
    K<S, std::conditional_t<std::is_same_v<S, double>, double, float>>::run(b, r);
  });
  EMBER_CUDA_CHECK_LAUNCH();
}

}  // namespace

int64_t optim_blocks(int64_t n) { return std::clamp<int64_t>((n + 4 * kThreads - 1) / (4 * kThreads), 1, 4096); }

void launch_adam_update(const OptimBatch& b, const AdamRule& r) {
  dispatch<adam_kernel_t>(r.decoupled ? "_fused_adamw_" : "_fused_adam_", b, r);
}
void launch_sgd_update(const OptimBatch& b, const SGDRule& r) { dispatch<sgd_kernel_t>("_fused_sgd_", b, r); }
void launch_adagrad_update(const OptimBatch& b, const AdagradRule& r) {
  dispatch<adagrad_kernel_t>("_fused_adagrad_", b, r);
}
void launch_rmsprop_update(const OptimBatch& b, const RMSpropRule& r) {
  dispatch<rmsprop_kernel_t>("_fused_rmsprop_", b, r);
}

}  // namespace ember::cuda
