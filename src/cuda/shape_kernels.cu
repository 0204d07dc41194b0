// CUDA kernels of the shape ops that copy (flip, tril, triu; shape_ops.cpp) and of the range
// factories (arange, linspace). Copies move elements by size; the factories compute each
// element with the CPU kernel's formula (src/cpu/creation_kernels.cpp) in double and convert.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "cuda/elementwise.cuh"
#include "cuda/index_common.cuh"

namespace ember::cuda {
namespace {
using namespace detail;

template <class U, class I>
__global__ void __launch_bounds__(kThreads) strided_copy_kernel(IndexGeometry g, char* dst, const char* src, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += int64_t(gridDim.x) * kThreads) {
    int64_t off[3];
    offsets_at<I>(g, I(i), off);
    *reinterpret_cast<U*>(dst + off[0]) = *reinterpret_cast<const U*>(src + off[1]);
  }
}

template <class U, class I>
__global__ void __launch_bounds__(kThreads) triangle_kernel(IndexGeometry g, U* out, const char* src, int64_t n, int64_t rows,
                                                            int64_t cols, int64_t k, bool lower) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += int64_t(gridDim.x) * kThreads) {
    const I q = I(i) / I(cols);
    const int64_t col = int64_t(I(i) - q * I(cols));
    const int64_t row = int64_t(q % I(rows));
    const bool keep = lower ? col - row <= k : col - row >= k;
    if (keep) {
      int64_t off[3];
      offsets_at<I>(g, I(i), off);
      out[i] = *reinterpret_cast<const U*>(src + off[1]);
    } else {
      out[i] = U{};  // zero bits are zero in every dtype
    }
  }
}

// T from a double, as the CPU's from_double: float16/bfloat16 through float, integers through
// int64 (negative values wrap as on the CPU; a direct conversion to unsigned saturates on CUDA).
template <class T> __device__ __forceinline__ T from_double(double v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(float(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(float(v));
  else if constexpr (std::is_integral_v<T>) return T(int64_t(v));
  else return static_cast<T>(v);
}

template <class T>
__global__ void __launch_bounds__(kThreads) arange_kernel(T* out, int64_t n, bool integral, int64_t start_i, int64_t step_i,
                                                          double start, double step) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += int64_t(gridDim.x) * kThreads) {
    if constexpr (std::is_integral_v<T>) {
      if (integral) {
        out[i] = T(start_i + i * step_i);
        continue;
      }
    }
    out[i] = from_double<T>(fma(double(i), step, start));
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) linspace_kernel(T* out, int64_t steps, double start, double end, double step) {
  const int64_t half = steps / 2;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < steps; i += int64_t(gridDim.x) * kThreads) {
    const double v = (i < half || steps == 1) ? fma(step, double(i), start) : fma(-step, double(steps - 1 - i), end);
    out[i] = from_double<T>(v);
  }
}


}  // namespace

void launch_strided_copy(const IndexGeometry& g, char* dst, const char* src, int64_t numel, int element_size,
                         cudaStream_t stream) {
  if (numel == 0) return;
  visit_element_size(element_size, [&]<class U>() {
    if (fits_32(numel)) strided_copy_kernel<U, uint32_t><<<blocks_for(numel), kThreads, 0, stream>>>(g, dst, src, numel);
    else strided_copy_kernel<U, int64_t><<<blocks_for(numel), kThreads, 0, stream>>>(g, dst, src, numel);
  });
  EMBER_CUDA_CHECK_LAUNCH();
}

void launch_triangle(const IndexGeometry& g, char* out, const char* src, int64_t numel, int64_t rows, int64_t cols,
                     int64_t k, bool lower, int element_size, cudaStream_t stream) {
  if (numel == 0) return;
  visit_element_size(element_size, [&]<class U>() {
    U* o = reinterpret_cast<U*>(out);
    if (fits_32(numel))
      triangle_kernel<U, uint32_t><<<blocks_for(numel), kThreads, 0, stream>>>(g, o, src, numel, rows, cols, k, lower);
    else triangle_kernel<U, int64_t><<<blocks_for(numel), kThreads, 0, stream>>>(g, o, src, numel, rows, cols, k, lower);
  });
  EMBER_CUDA_CHECK_LAUNCH();
}

void launch_arange(void* out, int8_t code, int64_t n, bool integral, int64_t start_i, int64_t step_i, double start,
                   double step, cudaStream_t stream) {
  if (n == 0) return;
  visit_storage<kStoreAll & ~code_bit(kCodeBool)>(code, "arange", [&]<class T>() {
    arange_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(out), n, integral, start_i, step_i, start, step);
  });
  EMBER_CUDA_CHECK_LAUNCH();
}

void launch_linspace(void* out, int8_t code, int64_t steps, double start, double end, double step, cudaStream_t stream) {
  if (steps == 0) return;
  visit_storage<kStoreAll & ~code_bit(kCodeBool)>(code, "linspace", [&]<class T>() {
    linspace_kernel<T><<<blocks_for(steps), kThreads, 0, stream>>>(static_cast<T*>(out), steps, start, end, step);
  });
  EMBER_CUDA_CHECK_LAUNCH();
}

}  // namespace ember::cuda
