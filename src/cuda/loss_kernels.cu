// CUDA kernels of the fused cross entropy with class-index targets (host side: loss_ops.cpp),
// the formulas of the CPU kernel (src/cpu/loss_kernels.cpp). A block per row: the row's max
// (NaN never wins; an infinite max leaves log-sum 0, so +inf and NaN rows give NaN as torch)
// and the sum of exp(x - max) in one pass over the row; with label smoothing the sum and
// sum_c w[c] (x[c] - max), sum_c w[c] take a second pass after the max:
//   loss = -((1 - ls) w[t] logp[t] + ls / C sum_c w[c] logp[c]),  logp = (x - max) - logsum;
//   d loss / d x[j] = g (softmax[j] A - (1 - ls) w[t] [j == t] - ls / C w[j]),
//     A = (1 - ls) w[t] + ls / C sum_c w[c].
// A target outside [0, classes) that is not ignore_index fails a device-side assert, as torch.
#include <cuda/std/cmath>

#include <cstdio>

#include "cuda/loss_launchers.h"
#include "cuda/reduce_device.cuh"
#include "cuda/reduce_launchers.h"  // pow2_ceil

namespace ember::cuda {
namespace {

template <class C> __device__ C block_reduce(C v, C* scratch, bool is_max) {
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5, warps = int(blockDim.x) >> 5;
  for (int off = 16; off > 0; off >>= 1) {
    const C o = __shfl_xor_sync(0xffffffffu, v, off);
    v = is_max ? (o > v ? o : v) : v + o;
  }
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const C id = is_max ? -::cuda::std::numeric_limits<C>::infinity() : C(0);
  v = lane < warps ? scratch[lane] : id;
  for (int off = 16; off > 0; off >>= 1) {
    const C o = __shfl_xor_sync(0xffffffffu, v, off);
    v = is_max ? (o > v ? o : v) : v + o;
  }
  return v;
}

__device__ void check_target(int64_t t, int64_t classes) {
  if (t < 0 || t >= classes) {
    printf("cross_entropy: Target %lld is out of bounds (classes: %lld)\n", (long long)t, (long long)classes);
    __assert_fail("target out of bounds", __FILE__, __LINE__, __func__);
  }
}

// Calls f(j, x[j]) for the elements of row p (n values) this thread owns. GPT-2's 50257-wide
// rows are bound by memory, and one 4-byte load per thread leaves too few bytes in flight to
// reach the bandwidth: the body is read in 16-byte vectors, two per thread at a time, between a
// scalar head up to the first 16-byte boundary (rows of an odd width start anywhere) and a tail.
template <class T, class F> __device__ __forceinline__ void for_each_in_row(const T* p, int64_t n, F&& f) {
  constexpr int V = 16 / int(sizeof(T));
  int64_t head = int64_t(((uintptr_t(0) - reinterpret_cast<uintptr_t>(p)) & 15) / sizeof(T));
  if (head > n) head = n;
  const int64_t step = blockDim.x;
  for (int64_t j = threadIdx.x; j < head; j += step) f(j, p[j]);
  const int64_t nvec = (n - head) / V;
  const Vec<T, V>* vp = reinterpret_cast<const Vec<T, V>*>(p + head);
  int64_t i = threadIdx.x;
  for (; i + step < nvec; i += 2 * step) {
    const Vec<T, V> a = vp[i], b = vp[i + step];
#pragma unroll
    for (int k = 0; k < V; ++k) f(head + i * V + k, a.v[k]);
#pragma unroll
    for (int k = 0; k < V; ++k) f(head + (i + step) * V + k, b.v[k]);
  }
  if (i < nvec) {
    const Vec<T, V> a = vp[i];
#pragma unroll
    for (int k = 0; k < V; ++k) f(head + i * V + k, a.v[k]);
  }
  for (int64_t j = head + nvec * V + threadIdx.x; j < n; j += step) f(j, p[j]);
}

// o[j] = f(j, x[j]) over a row, vectorised as for_each_in_row when o and p share their place
// within 16 bytes (a contiguous input with a storage offset may not).
template <class T, class F> __device__ __forceinline__ void map_row(const T* p, T* o, int64_t n, F&& f) {
  constexpr int V = 16 / int(sizeof(T));
  const int64_t step = blockDim.x;
  if (((reinterpret_cast<uintptr_t>(p) ^ reinterpret_cast<uintptr_t>(o)) & 15) != 0) {
    for (int64_t j = threadIdx.x; j < n; j += step) o[j] = f(j, p[j]);
    return;
  }
  int64_t head = int64_t(((uintptr_t(0) - reinterpret_cast<uintptr_t>(p)) & 15) / sizeof(T));
  if (head > n) head = n;
  for (int64_t j = threadIdx.x; j < head; j += step) o[j] = f(j, p[j]);
  const int64_t nvec = (n - head) / V;
  const Vec<T, V>* vp = reinterpret_cast<const Vec<T, V>*>(p + head);
  Vec<T, V>* vo = reinterpret_cast<Vec<T, V>*>(o + head);
  int64_t i = threadIdx.x;
  for (; i + step < nvec; i += 2 * step) {
    const Vec<T, V> a = vp[i], b = vp[i + step];
    Vec<T, V> ra, rb;
#pragma unroll
    for (int k = 0; k < V; ++k) ra.v[k] = f(head + i * V + k, a.v[k]);
#pragma unroll
    for (int k = 0; k < V; ++k) rb.v[k] = f(head + (i + step) * V + k, b.v[k]);
    vo[i] = ra;
    vo[i + step] = rb;
  }
  if (i < nvec) {
    const Vec<T, V> a = vp[i];
    Vec<T, V> ra;
#pragma unroll
    for (int k = 0; k < V; ++k) ra.v[k] = f(head + i * V + k, a.v[k]);
    vo[i] = ra;
  }
  for (int64_t j = head + nvec * V + threadIdx.x; j < n; j += step) o[j] = f(j, p[j]);
}

template <class C> struct RowStats {
  C mx, logsum, wx, wall;  // wx, wall: only with label smoothing
};

// Without label smoothing the max and the sum of exp(x - max) come from one pass (a running
// max that rescales the sum it has, as online softmax): GPT-2's 50257-wide rows do not stay in
// L2 between passes, so each pass is a full read from memory.
template <class T> __device__ RowStats<compute_t<T>> row_stats_one_pass(const T* xr, int64_t classes, compute_t<T>* scratch) {
  using C = compute_t<T>;
  constexpr C kNegInf = -::cuda::std::numeric_limits<C>::infinity();
  C mx = kNegInf, s = C(0);
  for_each_in_row(xr, classes, [&](int64_t, T x) {
    const C v = convert<C>(x);
    if (v > mx) {  // NaN never wins the max; it makes the sum NaN below
      // (before any finite value the sum is 0, or NaN from a NaN: times 0 keeps which)
      s = (mx == kNegInf ? s * C(0) : s * ::cuda::std::exp(mx - v)) + C(1);
      mx = v;
    } else {
      s += mx == kNegInf && v == kNegInf ? C(0) : ::cuda::std::exp(v - mx);
    }
  });
  const C row_max = block_reduce(mx, scratch, true);
  // each thread's sum moved to the row's max before adding up (a thread that saw only -inf adds 0;
  // with an infinite max the log-sum is 0 and the loss NaN or inf, as the two-pass form)
  const bool inf = ::cuda::std::isinf(row_max);
  const C mine = mx == kNegInf || inf ? s * C(0) : s * ::cuda::std::exp(mx - row_max);
  const C total = block_reduce(mine, scratch, false);
  return {row_max, inf ? C(0) : ::cuda::std::log(total), C(0), C(0)};
}

template <class T> __device__ RowStats<compute_t<T>> row_stats(const T* xr, const compute_t<T>* w, int64_t classes,
                                                               bool smooth, compute_t<T>* scratch) {
  using C = compute_t<T>;
  if (!smooth) return row_stats_one_pass(xr, classes, scratch);
  C mx = -::cuda::std::numeric_limits<C>::infinity();
  for_each_in_row(xr, classes, [&](int64_t, T x) {
    const C v = convert<C>(x);
    mx = v > mx ? v : mx;
  });
  mx = block_reduce(mx, scratch, true);
  const bool inf = ::cuda::std::isinf(mx);
  C s = C(0), wx = C(0), wall = C(0);
  for_each_in_row(xr, classes, [&](int64_t j, T x) {
    const C d = convert<C>(x) - mx;
    if (!inf) s += ::cuda::std::exp(d);
    if (smooth) {
      const C wj = w ? w[j] : C(1);
      wx += wj * d;
      wall += wj;
    }
  });
  s = block_reduce(s, scratch, false);
  if (smooth) {
    wx = block_reduce(wx, scratch, false);
    wall = block_reduce(wall, scratch, false);
  }
  return {mx, inf ? C(0) : ::cuda::std::log(s), wx, wall};
}

template <class T>
__global__ void ce_forward_kernel(const T* __restrict x, const int64_t* __restrict target, const compute_t<T>* w,
                                  compute_t<T>* row_loss, compute_t<T>* row_weight, int64_t m, int64_t classes,
                                  int64_t ignore_index, double ls) {
  using C = compute_t<T>;
  __shared__ C scratch[32];
  for (int64_t r = blockIdx.x; r < m; r += gridDim.x) {
    const int64_t t = target[r];
    if (t == ignore_index) {
      if (threadIdx.x == 0) row_loss[r] = row_weight[r] = C(0);
      continue;
    }
    check_target(t, classes);
    const T* xr = x + r * classes;
    const RowStats<C> st = row_stats(xr, w, classes, ls > 0, scratch);
    if (threadIdx.x == 0) {
      const C wt = w ? w[t] : C(1);
      C l = -C(1.0 - ls) * wt * ((convert<C>(xr[t]) - st.mx) - st.logsum);
      if (ls > 0) l -= C(ls / double(classes)) * (st.wx - st.logsum * st.wall);
      row_loss[r] = l;
      row_weight[r] = wt;
    }
  }
}

template <class C>
__global__ void ce_target_weight_kernel(const int64_t* target, const C* w, C* row_weight, int64_t m, int64_t classes,
                                        int64_t ignore_index) {
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < m; r += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = target[r];
    if (t == ignore_index) {
      row_weight[r] = C(0);
      continue;
    }
    check_target(t, classes);
    row_weight[r] = w ? w[t] : C(1);
  }
}

template <class T>
__global__ void ce_backward_kernel(const T* __restrict x, const int64_t* __restrict target, const compute_t<T>* w,
                                   const compute_t<T>* grad, bool per_row, const compute_t<T>* weight_sum,
                                   T* __restrict dx, int64_t m, int64_t classes, int64_t ignore_index, double ls) {
  using C = compute_t<T>;
  __shared__ C scratch[32];
  for (int64_t r = blockIdx.x; r < m; r += gridDim.x) {
    const int64_t t = target[r];
    T* o = dx + r * classes;
    if (t == ignore_index) {
      for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) o[j] = convert<T>(C(0));
      continue;
    }
    check_target(t, classes);
    const T* xr = x + r * classes;
    const RowStats<C> st = row_stats(xr, w, classes, ls > 0, scratch);
    C g = per_row ? grad[r] : grad[0];
    if (weight_sum) g /= *weight_sum;
    const C wt = w ? w[t] : C(1);
    const C lsc = C(ls / double(classes));
    const C A = g * (C(1.0 - ls) * wt + lsc * st.wall);
    map_row(xr, o, classes, [&](int64_t j, T x) {
      C v = ::cuda::std::exp((convert<C>(x) - st.mx) - st.logsum) * A;
      if (ls > 0) v -= g * lsc * (w ? w[j] : C(1));
      if (j == t) v -= g * C(1.0 - ls) * wt;
      return convert<T>(v);
    });
  }
}

unsigned row_threads(int64_t classes) {
  return unsigned(std::min<int64_t>(512, std::max<int64_t>(32, pow2_ceil((classes + 3) / 4))));
}

}  // namespace

void launch_cross_entropy(const CrossEntropyLaunch& L) {
  if (L.m == 0) return;
  visit_storage<kStoreFloat>(L.code, "cross_entropy_cuda", [&]<class T>() {
    using C = compute_t<T>;
    ce_forward_kernel<T><<<grid_for(L.m), row_threads(L.classes), 0, L.stream>>>(
        static_cast<const T*>(L.x), L.target, static_cast<const C*>(L.weight), static_cast<C*>(L.row_loss),
        static_cast<C*>(L.row_weight), L.m, L.classes, L.ignore_index, L.label_smoothing);
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

void launch_cross_entropy_target_weights(const CrossEntropyLaunch& L) {
  if (L.m == 0) return;
  visit_storage<kStoreFloat>(L.code, "cross_entropy_backward_cuda", [&]<class T>() {
    using C = compute_t<T>;
    ce_target_weight_kernel<C><<<grid_for((L.m + 255) / 256), 256, 0, L.stream>>>(
        L.target, static_cast<const C*>(L.weight), static_cast<C*>(L.row_weight), L.m, L.classes, L.ignore_index);
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

void launch_cross_entropy_backward(const CrossEntropyLaunch& L) {
  if (L.m == 0) return;
  visit_storage<kStoreFloat>(L.code, "cross_entropy_backward_cuda", [&]<class T>() {
    using C = compute_t<T>;
    ce_backward_kernel<T><<<grid_for(L.m), row_threads(L.classes), 0, L.stream>>>(
        static_cast<const T*>(L.x), L.target, static_cast<const C*>(L.weight), static_cast<const C*>(L.grad),
        L.grad_per_row, static_cast<const C*>(L.weight_sum), static_cast<T*>(L.dx), L.m, L.classes, L.ignore_index,
        L.label_smoothing);
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace ember::cuda
