// CUDA kernels for indexing: the gather / scatter / scatter-add element moves that index_select,
// gather, scatter_, scatter_add_, index_add_, index and index_put_ are built from
// (index_ops.cpp), the offsets of advanced indexing, and nonzero's flag / count / select passes.
//
// Moves are instantiated by element size (5 forms) times the width the position is divided in
// (32 or 64 bits); only scatter-add is instantiated per dtype, for its arithmetic.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "cuda/index_common.cuh"

namespace ember::cuda {
namespace {
using namespace detail;

// ---------------------------------------------------------------- gather / scatter

// Scatter false: out[p] = src[p + v * stride]; true: dst[p + v * stride] = src[p].
template <class U, class I, bool Scatter> __global__ void __launch_bounds__(kThreads) move_kernel(IndexArgs a) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < a.numel; i += int64_t(gridDim.x) * kThreads) {
    int64_t off[3];
    offsets_at<I>(a.g, I(i), off);
    int64_t v;
    if (!read_index(a, a.data[2] + off[2], v)) return;
    const int64_t moved = v * a.index_stride;
    *reinterpret_cast<U*>(a.data[0] + off[0] + (Scatter ? moved : 0)) =
        *reinterpret_cast<const U*>(a.data[1] + off[1] + (Scatter ? 0 : moved));
  }
}

template <bool Scatter> void launch_move(const IndexArgs& a) {
  if (a.numel == 0) return;
  visit_element_size(a.element_size, [&]<class U>() {
    if (fits_32(a.numel)) move_kernel<U, uint32_t, Scatter><<<blocks_for(a.numel), kThreads, 0, a.stream>>>(a);
    else move_kernel<U, int64_t, Scatter><<<blocks_for(a.numel), kThreads, 0, a.stream>>>(a);
  });
  EMBER_CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------- scatter-add

// The 32-bit word holding a 1- or 2-byte element, updated with compare-and-swap: types without
// a native atomic add (int8, uint8, int16). The word never leaves the allocation: allocations
// are 512-byte aligned and sized in multiples of 512.
template <class T, class F> __device__ void atomic_update_subword(T* addr, F f) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2);
  const uintptr_t p = reinterpret_cast<uintptr_t>(addr);
  unsigned int* word = reinterpret_cast<unsigned int*>(p & ~uintptr_t(3));
  const unsigned shift = unsigned(p & 3) * 8;
  const unsigned mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
  unsigned old = *word, assumed;
  do {
    assumed = old;
    using B = typename UintOf<sizeof(T)>::type;
    const B bits = B((assumed & mask) >> shift);
    T cur;
    memcpy(&cur, &bits, sizeof(T));
    const T next = f(cur);
    B nb;
    memcpy(&nb, &next, sizeof(T));
    old = atomicCAS(word, assumed, (assumed & ~mask) | ((unsigned(nb) << shift) & mask));
  } while (assumed != old);
}

template <class T> __device__ __forceinline__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t> ||
                       std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    atomicAdd(p, v);
  } else {  // int8, uint8, int16: wrapping add in the element's width
    atomic_update_subword(p, [v](T cur) { return T(cur + v); });
  }
}

// T's value of alpha * x, alpha taken in T as the CPU does; float16/bfloat16 multiply in float
// and round the product (then the atomic add rounds the sum: PyTorch's CUDA order).
template <class T> struct Scaled {
  __device__ static T of(T x, const IndexArgs& a, bool unit) {
    if constexpr (std::is_same_v<T, __half>)
      return unit ? x : __float2half_rn(__half2float(__float2half_rn(float(a.alpha_f))) * __half2float(x));
    else if constexpr (std::is_same_v<T, __nv_bfloat16>)
      return unit ? x : __float2bfloat16_rn(__bfloat162float(__float2bfloat16_rn(float(a.alpha_f))) * __bfloat162float(x));
    else if constexpr (std::is_floating_point_v<T>) return unit ? x : T(a.alpha_f) * x;
    else return unit ? x : T(a.alpha_i * int64_t(x));
  }
};

template <class T, class I> __global__ void __launch_bounds__(kThreads) scatter_add_kernel(IndexArgs a) {
  const bool unit = a.alpha_f == 1.0 && a.alpha_i == 1;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < a.numel; i += int64_t(gridDim.x) * kThreads) {
    int64_t off[3];
    offsets_at<I>(a.g, I(i), off);
    int64_t v;
    if (!read_index(a, a.data[2] + off[2], v)) return;
    T* dst = reinterpret_cast<T*>(a.data[0] + off[0] + v * a.index_stride);
    const T x = *reinterpret_cast<const T*>(a.data[1] + off[1]);
    if constexpr (std::is_same_v<T, bool>) {
      // or: every writer stores the same 1, so a plain byte store is race-free
      if (x && a.alpha_i != 0) *dst = true;
    } else {
      atomic_add(dst, Scaled<T>::of(x, a, unit));
    }
  }
}

template <class T> void launch_scatter_add_typed(const IndexArgs& a) {
  if (fits_32(a.numel)) scatter_add_kernel<T, uint32_t><<<blocks_for(a.numel), kThreads, 0, a.stream>>>(a);
  else scatter_add_kernel<T, int64_t><<<blocks_for(a.numel), kThreads, 0, a.stream>>>(a);
  EMBER_CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------- advanced-indexing offsets

template <class I> __global__ void __launch_bounds__(kThreads) offsets_kernel(IndexArgs a, int64_t elem_stride, bool assign) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < a.numel; i += int64_t(gridDim.x) * kThreads) {
    int64_t off[3];
    offsets_at<I>(a.g, I(i), off);
    int64_t v;
    if (!read_index(a, a.data[2] + off[2], v)) return;
    int64_t* o = reinterpret_cast<int64_t*>(a.data[0] + off[0]);
    *o = assign ? v * elem_stride : *o + v * elem_stride;
  }
}

// ---------------------------------------------------------------- nonzero

template <class U> __global__ void __launch_bounds__(kThreads) flags_kernel(const U* x, int64_t n, U mask, uint8_t* flags) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += int64_t(gridDim.x) * kThreads)
    flags[i] = (x[i] & mask) != 0;
}

struct FlagToCount {
  __host__ __device__ int64_t operator()(uint8_t f) const { return f; }
};

__global__ void __launch_bounds__(kThreads) unravel_kernel(const int64_t* lin, int64_t count, IndexGeometry shape, int ndim,
                                                            int64_t* out) {
  for (int64_t j = int64_t(blockIdx.x) * kThreads + threadIdx.x; j < count; j += int64_t(gridDim.x) * kThreads) {
    int64_t l = lin[j];
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t s = shape.sizes[d];
      const int64_t q = l / s;
      out[j * ndim + d] = l - q * s;
      l = q;
    }
  }
}

// ---------------------------------------------------------------- bincount

template <class W> __global__ void __launch_bounds__(kThreads) bincount_kernel(const int64_t* x, int64_t n, const W* w, W* out) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += int64_t(gridDim.x) * kThreads) {
    if constexpr (std::is_same_v<W, int64_t>) atomic_add(out + x[i], int64_t(1));
    else atomicAdd(out + x[i], w[i]);
  }
}

}  // namespace

void launch_index_gather(const IndexArgs& a) { launch_move<false>(a); }
void launch_index_scatter(const IndexArgs& a) { launch_move<true>(a); }

void launch_index_scatter_add(const IndexArgs& a) {
  if (a.numel == 0) return;
  switch (a.dtype) {
    case kCodeBool: return launch_scatter_add_typed<bool>(a);
    case kCodeUInt8: return launch_scatter_add_typed<uint8_t>(a);
    case kCodeInt8: return launch_scatter_add_typed<int8_t>(a);
    case kCodeInt16: return launch_scatter_add_typed<int16_t>(a);
    case kCodeInt32: return launch_scatter_add_typed<int32_t>(a);
    case kCodeInt64: return launch_scatter_add_typed<int64_t>(a);
    case kCodeFloat16: return launch_scatter_add_typed<__half>(a);
    case kCodeBFloat16: return launch_scatter_add_typed<__nv_bfloat16>(a);
    case kCodeFloat32: return launch_scatter_add_typed<float>(a);
    case kCodeFloat64: return launch_scatter_add_typed<double>(a);
    default: break;
  }
  const char* names[] = {"index_select", "gather", "scatter", "scatter_add", "index_add_", "index", "index_put_"};
  throw_dtype_not_implemented(names[int(a.op)], a.dtype);
}

void launch_index_offsets(const IndexArgs& a, int64_t elem_stride, bool assign) {
  if (a.numel == 0) return;
  if (fits_32(a.numel)) offsets_kernel<uint32_t><<<blocks_for(a.numel), kThreads, 0, a.stream>>>(a, elem_stride, assign);
  else offsets_kernel<int64_t><<<blocks_for(a.numel), kThreads, 0, a.stream>>>(a, elem_stride, assign);
  EMBER_CUDA_CHECK_LAUNCH();
}

void launch_nonzero_flags(const void* x, int64_t n, int element_size, bool floating, uint8_t* flags, cudaStream_t stream) {
  if (n == 0) return;
  switch (element_size) {
#define EMBER_FLAGS_CASE(N)                                                                                   \
  case N: {                                                                                                   \
    using U = UintOf<N>::type;                                                                                \
    const U mask = floating ? U(~(U(1) << (8 * N - 1))) : U(~U(0));                                           \
    flags_kernel<U><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const U*>(x), n, mask, flags);        \
    break;                                                                                                    \
  }
    EMBER_FLAGS_CASE(1)
    EMBER_FLAGS_CASE(2)
    EMBER_FLAGS_CASE(4)
    EMBER_FLAGS_CASE(8)
#undef EMBER_FLAGS_CASE
    default: throw_dtype_not_implemented("nonzero", kCodeComplex128);  // the host refuses complex first
  }
  EMBER_CUDA_CHECK_LAUNCH();
}

void launch_count_flags(const uint8_t* flags, int64_t n, int64_t* count, Scratch& scratch, cudaStream_t stream) {
  auto in = thrust::make_transform_iterator(flags, FlagToCount{});
  size_t bytes = 0;
  EMBER_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, bytes, in, count, n, stream));
  void* temp = scratch.allocate(bytes);
  EMBER_CUDA_CHECK(cub::DeviceReduce::Sum(temp, bytes, in, count, n, stream));
}

void launch_select_flagged(const uint8_t* flags, int64_t n, int64_t* out, int64_t* selected, Scratch& scratch,
                           cudaStream_t stream) {
  thrust::counting_iterator<int64_t> positions(0);
  size_t bytes = 0;
  EMBER_CUDA_CHECK(cub::DeviceSelect::Flagged(nullptr, bytes, positions, flags, out, selected, n, stream));
  void* temp = scratch.allocate(bytes);
  EMBER_CUDA_CHECK(cub::DeviceSelect::Flagged(temp, bytes, positions, flags, out, selected, n, stream));
}

void launch_unravel(const int64_t* lin, int64_t count, const int64_t* sizes, int ndim, int64_t* out, cudaStream_t stream) {
  if (count == 0) return;
  IndexGeometry shape;  // only its sizes: the row-major shape, outer first
  for (int d = 0; d < ndim; ++d) shape.sizes[d] = sizes[d];
  unravel_kernel<<<blocks_for(count), kThreads, 0, stream>>>(lin, count, shape, ndim, out);
  EMBER_CUDA_CHECK_LAUNCH();
}

void launch_min_max(const int64_t* x, int64_t n, int64_t* out, Scratch& scratch, cudaStream_t stream) {
  size_t bytes_min = 0, bytes_max = 0;
  EMBER_CUDA_CHECK(cub::DeviceReduce::Min(nullptr, bytes_min, x, out, n, stream));
  EMBER_CUDA_CHECK(cub::DeviceReduce::Max(nullptr, bytes_max, x, out + 1, n, stream));
  void* temp = scratch.allocate(bytes_min > bytes_max ? bytes_min : bytes_max);
  EMBER_CUDA_CHECK(cub::DeviceReduce::Min(temp, bytes_min, x, out, n, stream));
  EMBER_CUDA_CHECK(cub::DeviceReduce::Max(temp, bytes_max, x, out + 1, n, stream));
}

void launch_bincount(const int64_t* x, int64_t n, const void* w, int8_t w_code, void* out, cudaStream_t stream) {
  if (n == 0) return;
  if (w == nullptr)
    bincount_kernel<int64_t><<<blocks_for(n), kThreads, 0, stream>>>(x, n, nullptr, static_cast<int64_t*>(out));
  else if (w_code == kCodeFloat32)
    bincount_kernel<float><<<blocks_for(n), kThreads, 0, stream>>>(x, n, static_cast<const float*>(w), static_cast<float*>(out));
  else
    bincount_kernel<double><<<blocks_for(n), kThreads, 0, stream>>>(x, n, static_cast<const double*>(w),
                                                                   static_cast<double*>(out));
  EMBER_CUDA_CHECK_LAUNCH();
}

}  // namespace ember::cuda
