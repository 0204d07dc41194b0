// CUDA kernels of the multi-tensor ops (foreach_launchers.h): a norm per tensor and an in-place
// scale, a launch (two for the norm) per batch of tensors. Each block finds its tensor from the
// batch's first_block table and walks its share with a block-stride loop of 16-byte vectors. The norm's blocks leave partial values that a second kernel (a block per tensor)
// combines: no atomics, so the result does not depend on timing.
#include <cuda/std/cmath>

#include <algorithm>

#include "cuda/foreach_launchers.h"
#include "cuda/multi_tensor.cuh"
#include "cuda/reduce_device.cuh"  // compute_t, pick, pick_identity

namespace ember::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kValuesPerThread = 16;  // the share a block is sized for

template <class C> __device__ __forceinline__ C fold(int kind, C acc, C x) {
  const C ax = ::cuda::std::fabs(x);
  if (kind == kForeachNormInf) return pick<true>(acc, ax);
  return kind == kForeachNormL1 ? acc + ax : acc + ax * ax;
}
template <class C> __device__ __forceinline__ C combine(int kind, C a, C b) {
  return kind == kForeachNormInf ? pick<true>(a, b) : a + b;
}

// The block's threads combined; the result is valid in thread 0.
template <class C> __device__ C block_combine(int kind, C v) {
  __shared__ C warp_part[kThreads / 32];
  for (int off = 16; off > 0; off >>= 1) v = combine(kind, v, shfl_down(v, off));
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  if (lane == 0) warp_part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x) / 32 ? warp_part[lane] : C(0);  // 0: the identity of both (see below)
    for (int off = 16; off > 0; off >>= 1) v = combine(kind, v, shfl_down(v, off));
  }
  return v;
}

// Elements [0, nvec * V) of a 16-byte aligned tensor travel as Vec<S, V> (two in flight per
// thread), the rest one by one; f(value) is called for each in some order.
template <class S, class F> __device__ __forceinline__ void for_each_value(const S* p, int64_t n, const BlockShare& part, F&& f) {
  constexpr int V = 16 / int(sizeof(S));
  const int64_t nvec = (reinterpret_cast<uintptr_t>(p) & 15) == 0 ? n / V : 0;
  const Vec<S, V>* vp = reinterpret_cast<const Vec<S, V>*>(p);
  int64_t i = part.first;
  for (; i + part.stride < nvec; i += 2 * part.stride) {
    const Vec<S, V> a = vp[i], b = vp[i + part.stride];
#pragma unroll
    for (int k = 0; k < V; ++k) f(a.v[k]);
#pragma unroll
    for (int k = 0; k < V; ++k) f(b.v[k]);
  }
  if (i < nvec) {
    const Vec<S, V> a = vp[i];
#pragma unroll
    for (int k = 0; k < V; ++k) f(a.v[k]);
  }
  for (int64_t j = nvec * V + part.first; j < n; j += part.stride) f(p[j]);
}

template <class S, class C> __global__ void __launch_bounds__(kThreads) norm_partial_kernel(ForeachBatch b, int kind, C* partial) {
  const BlockShare part = block_share(b);
  // |x| >= 0, so 0 is the identity of the max too (and NaN still wins through pick).
  C acc = C(0);
  for_each_value(static_cast<const S*>(b.data[part.k]), b.numel[part.k], part,
                 [&](S v) { acc = fold(kind, acc, convert<C>(v)); });
  acc = block_combine(kind, acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

struct FirstBlocks {
  int64_t v[kForeachBatch + 1];
};
template <class C> __global__ void __launch_bounds__(kThreads) norm_finish_kernel(FirstBlocks fb, int kind, const C* partial, C* out) {
  const int k = int(blockIdx.x);
  C acc = C(0);
  for (int64_t j = fb.v[k] + threadIdx.x; j < fb.v[k + 1]; j += blockDim.x) acc = combine(kind, acc, partial[j]);
  acc = block_combine(kind, acc);
  if (threadIdx.x == 0) out[k] = kind == kForeachNormL2 ? ::cuda::std::sqrt(acc) : acc;
}

template <class S, class C> __global__ void __launch_bounds__(kThreads) mul_kernel(ForeachBatch b, const C* scale) {
  const BlockShare part = block_share(b);
  S* p = static_cast<S*>(b.data[part.k]);
  const int64_t n = b.numel[part.k];
  const C s = *scale;
  constexpr int V = 16 / int(sizeof(S));
  const int64_t nvec = (reinterpret_cast<uintptr_t>(p) & 15) == 0 ? n / V : 0;
  Vec<S, V>* vp = reinterpret_cast<Vec<S, V>*>(p);
  for (int64_t i = part.first; i < nvec; i += part.stride) {
    Vec<S, V> a = vp[i];
#pragma unroll
    for (int k = 0; k < V; ++k) a.v[k] = convert<S>(convert<C>(a.v[k]) * s);
    vp[i] = a;
  }
  for (int64_t j = nvec * V + part.first; j < n; j += part.stride) p[j] = convert<S>(convert<C>(p[j]) * s);
}

template <class S> using foreach_compute_t = std::conditional_t<std::is_same_v<S, double>, double, float>;

}  // namespace

int64_t foreach_blocks(int64_t n) {
  return std::clamp<int64_t>((n + kValuesPerThread * kThreads - 1) / (kValuesPerThread * kThreads), 1, 4096);
}

void launch_foreach_norm(const ForeachBatch& b, int kind, void* partial, void* out) {
  if (b.count == 0) return;
  visit_storage<kStoreFloat>(b.dtype, "_foreach_norm_cuda", [&]<class S>() {
    using C = foreach_compute_t<S>;
    norm_partial_kernel<S, C><<<unsigned(b.first_block[b.count]), kThreads, 0, b.stream>>>(b, kind, static_cast<C*>(partial));
    EMBER_CUDA_CHECK_LAUNCH();
    FirstBlocks fb;
    for (int k = 0; k <= b.count; ++k) fb.v[k] = b.first_block[k];
    norm_finish_kernel<C><<<unsigned(b.count), kThreads, 0, b.stream>>>(fb, kind, static_cast<const C*>(partial),
                                                                        static_cast<C*>(out));
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

void launch_foreach_mul(const ForeachBatch& b, const void* scale) {
  if (b.count == 0) return;
  visit_storage<kStoreFloat>(b.dtype, "_foreach_mul_cuda", [&]<class S>() {
    using C = foreach_compute_t<S>;
    mul_kernel<S, C><<<unsigned(b.first_block[b.count]), kThreads, 0, b.stream>>>(b, static_cast<const C*>(scale));
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace ember::cuda
