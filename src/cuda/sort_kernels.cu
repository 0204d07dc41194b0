// CUDA kernels for sorting (sort, topk, unique; sort_ops.cpp) and searchsorted.
//
// Sorting maps each element to an unsigned key whose order is the CPU kernels' value order
// (cpu/sort_utils.h: NaN the largest, -0.0 equal to 0.0), then sorts (key, position) pairs
// with a stable sort. Elements of up to 4 bytes get 64-bit keys (row << 32) | key, so one
// device-wide radix sort orders every row at once, over only the bits the rows need; 8-byte
// elements use the radix sort for one row and cub's segmented sort for several. So cub's sorts
// are instantiated twice in all; only the small key-making and comparison kernels exist per
// dtype.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "cuda/elementwise.cuh"
#include "cuda/index_common.cuh"

namespace ember::cuda {
namespace {
using namespace detail;

// ---------------------------------------------------------------- keys

// Unsigned keys of floating values: the sign-magnitude order folded into unsigned order; every
// NaN is the largest key, -0.0 is 0.0.
__device__ __forceinline__ uint32_t float_key(float f) {
  if (f != f) return 0xffffffffu;
  if (f == 0.0f) f = 0.0f;
  const uint32_t b = __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ uint64_t double_key(double f) {
  if (f != f) return ~0ull;
  if (f == 0.0) f = 0.0;
  const uint64_t b = static_cast<uint64_t>(__double_as_longlong(f));
  return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
}

template <class T> __device__ __forceinline__ auto key_of(T v) {
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, uint8_t>) return uint32_t(v);
  else if constexpr (std::is_same_v<T, int8_t>) return uint32_t(uint8_t(v) ^ 0x80u);
  else if constexpr (std::is_same_v<T, int16_t>) return uint32_t(uint16_t(v) ^ 0x8000u);
  else if constexpr (std::is_same_v<T, int32_t>) return uint32_t(v) ^ 0x80000000u;
  else if constexpr (std::is_same_v<T, int64_t>) return uint64_t(v) ^ 0x8000000000000000ull;
  else if constexpr (std::is_same_v<T, __half>) return float_key(__half2float(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return float_key(__bfloat162float(v));
  else if constexpr (std::is_same_v<T, float>) return float_key(v);
  else return double_key(v);
}

// Elements of up to 4 bytes: (row << 32) | key, the row i / row_len (0 when row_len is 0).
// 8 bytes: the key alone.
template <class T> __global__ void __launch_bounds__(kThreads) keys_kernel(const T* x, int64_t n, int64_t row_len, bool descending,
                                                                          uint64_t* keys) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += int64_t(gridDim.x) * kThreads) {
    if constexpr (sizeof(T) <= 4) {
      const uint32_t k = key_of(x[i]);
      const uint64_t row = row_len ? uint64_t(i / row_len) : 0;
      keys[i] = (row << 32) | (descending ? ~k : k);
    } else {
      const uint64_t k = key_of(x[i]);
      keys[i] = descending ? ~k : k;
    }
  }
}


__global__ void __launch_bounds__(kThreads) positions_kernel(int64_t* pos, int64_t n, int64_t row) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += int64_t(gridDim.x) * kThreads) pos[i] = i % row;
}

struct RowStart {
  int64_t row;
  __host__ __device__ int64_t operator()(int64_t r) const { return r * row; }
};

// Bits needed to count to v (0 for v = 0).
int bit_width(uint64_t v) {
  int b = 0;
  while (v) ++b, v >>= 1;
  return b;
}

void radix_sort(const uint64_t* keys_in, uint64_t* keys_out, const int64_t* values_in, int64_t* values_out, int64_t n,
                int end_bit, Scratch& scratch, cudaStream_t stream) {
  size_t bytes = 0;
  EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys_in, keys_out, values_in, values_out, n, 0, end_bit,
                                                   stream));
  void* temp = scratch.allocate(bytes);
  EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, bytes, keys_in, keys_out, values_in, values_out, n, 0, end_bit,
                                                   stream));
}

void segmented_sort(const uint64_t* keys_in, uint64_t* keys_out, const int64_t* values_in, int64_t* values_out,
                    int64_t rows, int64_t row, Scratch& scratch, cudaStream_t stream) {
  auto begin = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), RowStart{row});
  auto end = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(1), RowStart{row});
  size_t bytes = 0;
  EMBER_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(nullptr, bytes, keys_in, keys_out, values_in, values_out,
                                                             rows * row, rows, begin, end, stream));
  void* temp = scratch.allocate(bytes);
  EMBER_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(temp, bytes, keys_in, keys_out, values_in, values_out,
                                                             rows * row, rows, begin, end, stream));
}

// ---------------------------------------------------------------- unique

template <class T> __device__ __forceinline__ bool same_value(T a, T b) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(a) == __half2float(b);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(a) == __bfloat162float(b);
  else return a == b;  // NaN differs from everything, -0.0 equals 0.0
}

template <class T> __global__ void __launch_bounds__(kThreads) unique_flags_kernel(const T* x, int64_t n, uint8_t* flags) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += int64_t(gridDim.x) * kThreads)
    flags[i] = i == 0 || !same_value(x[i], x[i - 1]);
}

struct FlagToGroup {
  __host__ __device__ int64_t operator()(uint8_t f) const { return f; }
};

__global__ void __launch_bounds__(kThreads) minus_one_kernel(int64_t* g, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += int64_t(gridDim.x) * kThreads) g[i] -= 1;
}

__global__ void __launch_bounds__(kThreads) scatter_positions_kernel(const int64_t* group, const int64_t* perm, int64_t n,
                                                                     int64_t* out) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += int64_t(gridDim.x) * kThreads)
    out[perm[i]] = group[i];
}

__global__ void __launch_bounds__(kThreads) run_lengths_kernel(const int64_t* starts, int64_t u, int64_t n, int64_t* counts) {
  for (int64_t g = int64_t(blockIdx.x) * kThreads + threadIdx.x; g < u; g += int64_t(gridDim.x) * kThreads)
    counts[g] = (g + 1 < u ? starts[g + 1] : n) - starts[g];
}

// ---------------------------------------------------------------- searchsorted

// The CPU's bound(): first index whose element is >= value (right: > value), written with
// negated comparisons so a NaN value lands after every element.
template <class T> __device__ __forceinline__ int64_t bound(const T* seq, int64_t n, T value, bool right) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + ((hi - lo) >> 1);
    const bool go_right = right ? !(seq[mid] > value) : !(seq[mid] >= value);
    if (go_right) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

template <class T>
__global__ void __launch_bounds__(kThreads) searchsorted_kernel(const T* seq, const T* values, int64_t nvalues, int64_t per_row,
                                                                int64_t len, bool right, void* out, bool out_int32) {
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < nvalues; i += int64_t(gridDim.x) * kThreads) {
    const T* row = per_row == 0 ? seq : seq + (i / per_row) * len;
    const int64_t r = bound(row, len, values[i], right);
    if (out_int32) static_cast<int32_t*>(out)[i] = int32_t(r);
    else static_cast<int64_t*>(out)[i] = r;
  }
}

}  // namespace

void launch_sort_keys(const void* x, int8_t code, int64_t n, int64_t row_len, bool descending, uint64_t* keys,
                      cudaStream_t stream) {
  if (n == 0) return;
  visit_storage<kStoreAll>(code, "sort", [&]<class T>() {
    keys_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), n, row_len, descending, keys);
  });
  EMBER_CUDA_CHECK_LAUNCH();
}

void launch_row_positions(int64_t* pos, int64_t n, int64_t row, cudaStream_t stream) {
  if (n == 0) return;
  positions_kernel<<<blocks_for(n), kThreads, 0, stream>>>(pos, n, row);
  EMBER_CUDA_CHECK_LAUNCH();
}

void launch_sort_pairs(bool row_keys, const uint64_t* keys_in, uint64_t* keys_out, const int64_t* values_in,
                       int64_t* values_out, int64_t rows, int64_t row, Scratch& scratch, cudaStream_t stream) {
  if (rows == 0 || row == 0) return;
  if (row_keys) radix_sort(keys_in, keys_out, values_in, values_out, rows * row, 32 + bit_width(uint64_t(rows - 1)), scratch, stream);
  else if (rows == 1) radix_sort(keys_in, keys_out, values_in, values_out, row, 64, scratch, stream);
  else segmented_sort(keys_in, keys_out, values_in, values_out, rows, row, scratch, stream);
}

void launch_unique_flags(const void* x, int8_t code, int64_t n, uint8_t* flags, cudaStream_t stream) {
  if (n == 0) return;
  visit_storage<kStoreAll>(code, "unique", [&]<class T>() {
    unique_flags_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), n, flags);
  });
  EMBER_CUDA_CHECK_LAUNCH();
}

void launch_group_ids(const uint8_t* flags, int64_t n, int64_t* group, Scratch& scratch, cudaStream_t stream) {
  if (n == 0) return;
  auto in = thrust::make_transform_iterator(flags, FlagToGroup{});
  size_t bytes = 0;
  EMBER_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, in, group, n, stream));
  void* temp = scratch.allocate(bytes);
  EMBER_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, bytes, in, group, n, stream));
  minus_one_kernel<<<blocks_for(n), kThreads, 0, stream>>>(group, n);
  EMBER_CUDA_CHECK_LAUNCH();
}

void launch_scatter_positions(const int64_t* group, const int64_t* perm, int64_t n, int64_t* out, cudaStream_t stream) {
  if (n == 0) return;
  scatter_positions_kernel<<<blocks_for(n), kThreads, 0, stream>>>(group, perm, n, out);
  EMBER_CUDA_CHECK_LAUNCH();
}

void launch_run_lengths(const int64_t* starts, int64_t u, int64_t n, int64_t* counts, cudaStream_t stream) {
  if (u == 0) return;
  run_lengths_kernel<<<blocks_for(u), kThreads, 0, stream>>>(starts, u, n, counts);
  EMBER_CUDA_CHECK_LAUNCH();
}

void launch_searchsorted(const void* sorted, const void* values, int8_t code, int64_t nvalues, int64_t per_row,
                         int64_t len, bool right, void* out, bool out_int32, cudaStream_t stream) {
  if (nvalues == 0) return;
  auto run = [&]<class T>() {
    searchsorted_kernel<T><<<blocks_for(nvalues), kThreads, 0, stream>>>(
        static_cast<const T*>(sorted), static_cast<const T*>(values), nvalues, per_row, len, right, out, out_int32);
  };
  switch (code) {  // the compute dtypes of the CPU kernel (float16/bfloat16 arrive as float32)
    case kCodeUInt8: run.template operator()<uint8_t>(); break;
    case kCodeInt8: run.template operator()<int8_t>(); break;
    case kCodeInt16: run.template operator()<int16_t>(); break;
    case kCodeInt32: run.template operator()<int32_t>(); break;
    case kCodeInt64: run.template operator()<int64_t>(); break;
    case kCodeFloat32: run.template operator()<float>(); break;
    case kCodeFloat64: run.template operator()<double>(); break;
    default: throw_dtype_not_implemented("searchsorted", code);
  }
  EMBER_CUDA_CHECK_LAUNCH();
}

}  // namespace ember::cuda
