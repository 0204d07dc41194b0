#pragma once
// Device helpers shared by the reduction, scan and softmax kernels: the storage-type switch
// (float16/bfloat16 included: these kernels load them natively and compute in float), warp
// shuffles of any small accumulator, NaN-propagating max/min, and grid sizing.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cuda/std/limits>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda/elementwise.cuh"  // convert, code_of, code_bit, Vec, kCode*, EMBER_CUDA_CHECK_LAUNCH

namespace ember::cuda {

// The type a kernel computes a storage type in.
template <class T> using compute_t = std::conditional_t<is_reduced_v<T>, float, T>;
template <class T> inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_reduced_v<T>;

// __shfl_down_sync of any trivially copyable value (accumulator structs included), 32 bits at
// a time. Every lane of the warp must call it.
template <class T> __device__ __forceinline__ T shfl_down(T v, int delta, int width = 32) {
  constexpr int kWords = int((sizeof(T) + 3) / 4);
  uint32_t w[kWords] = {};
  memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int k = 0; k < kWords; ++k) w[k] = __shfl_down_sync(0xffffffffu, w[k], delta, width);
  memcpy(&v, w, sizeof(T));
  return v;
}
template <class T> __device__ __forceinline__ T shfl_xor(T v, int mask, int width = 32) {
  constexpr int kWords = int((sizeof(T) + 3) / 4);
  uint32_t w[kWords] = {};
  memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int k = 0; k < kWords; ++k) w[k] = __shfl_xor_sync(0xffffffffu, w[k], mask, width);
  memcpy(&v, w, sizeof(T));
  return v;
}

// NaN-propagating max / min (the CPU's pick): x wins when it is larger (smaller) or NaN.
template <bool kMax, class T> __device__ __forceinline__ T pick(T a, T x) {
  if constexpr (std::is_same_v<T, bool>) {
    return kMax ? (a || x) : (a && x);
  } else if constexpr (std::is_floating_point_v<T>) {
    if constexpr (kMax) return (x > a || x != x) ? x : a;
    else return (x < a || x != x) ? x : a;
  } else {
    if constexpr (kMax) return x > a ? x : a;
    else return x < a ? x : a;
  }
}
// The identity of pick: -inf / +inf for floats, the extreme integers, false / true for bool.
template <bool kMax, class T> __host__ __device__ constexpr T pick_identity() {
  if constexpr (std::is_same_v<T, bool>) return !kMax;
  else if constexpr (std::is_floating_point_v<T>)
    return kMax ? -::cuda::std::numeric_limits<T>::infinity() : ::cuda::std::numeric_limits<T>::infinity();
  else return kMax ? ::cuda::std::numeric_limits<T>::lowest() : ::cuda::std::numeric_limits<T>::max();
}

template <class T> __device__ __forceinline__ bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  else return false;
}

// Blocks for a grid-stride loop over `groups` work items: at most what x can hold, and no more
// than needed.
inline unsigned grid_for(int64_t groups) {
  constexpr int64_t kMaxBlocks = int64_t(1) << 30;
  return unsigned(groups < 1 ? 1 : (groups > kMaxBlocks ? kMaxBlocks : groups));
}

}  // namespace ember::cuda
