#pragma once
// The CUDA elementwise engine, the GPU twin of the CPU's TensorIter loops. The host side
// (elementwise_host.cpp) reduces the operands to an ElementwiseArgs through the shared
// ElementwisePlan (broadcasting, promotion, merged dims); launch<R, T, NIN>(args, f) then picks
// one of three kernels for the functor f (a formula of ops/elementwise_formulas.h, called in the
// compute type T and returning R):
//   dense:   every operand one dense run (host scalars by value), 4 elements per thread through
//            16/8/4-byte vector loads and stores; float16/bfloat16 operands of a float32 op load
//            and store their own type and compute in float (no cast passes);
//   strided: operands of the loop's own types at any strides, 32-bit index arithmetic;
//   casting: anything else (mixed dtypes, more than 2^31 elements): each operand converted on
//            load and store from its own dtype, 64-bit indices.
// Each functor is instantiated for the compute types its op needs, and only these kernels.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/cuda_check.h"
#include "cuda/elementwise_args.h"

namespace ember::cuda {

inline constexpr int kBlock = 256;
inline constexpr int kVec = 4;

// ---------------------------------------------------------------- element conversions
template <class T> inline constexpr bool is_reduced_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

template <class To, class From> __device__ __forceinline__ To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, __half>) {
    return convert<To>(__half2float(v));
  } else if constexpr (std::is_same_v<From, __nv_bfloat16>) {
    return convert<To>(__bfloat162float(v));
  } else if constexpr (std::is_same_v<To, __half>) {
    return __float2half_rn(float(v));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return __float2bfloat16_rn(float(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else {
    return static_cast<To>(v);
  }
}

template <class T> constexpr int8_t code_of() {
  if constexpr (std::is_same_v<T, bool>) return kCodeBool;
  else if constexpr (std::is_same_v<T, uint8_t>) return kCodeUInt8;
  else if constexpr (std::is_same_v<T, int8_t>) return kCodeInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return kCodeInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return kCodeInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return kCodeInt64;
  else if constexpr (std::is_same_v<T, __half>) return kCodeFloat16;
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return kCodeBFloat16;
  else if constexpr (std::is_same_v<T, float>) return kCodeFloat32;
  else return kCodeFloat64;
}

// An operand of any real dtype, read as / written from T.
template <class T> __device__ __forceinline__ T load_dynamic(const char* p, int8_t code) {
  switch (code) {
    case kCodeBool: return convert<T>(*reinterpret_cast<const bool*>(p));
    case kCodeUInt8: return convert<T>(*reinterpret_cast<const uint8_t*>(p));
    case kCodeInt8: return convert<T>(*reinterpret_cast<const int8_t*>(p));
    case kCodeInt16: return convert<T>(*reinterpret_cast<const int16_t*>(p));
    case kCodeInt32: return convert<T>(*reinterpret_cast<const int32_t*>(p));
    case kCodeInt64: return convert<T>(*reinterpret_cast<const int64_t*>(p));
    case kCodeFloat16: return convert<T>(*reinterpret_cast<const __half*>(p));
    case kCodeBFloat16: return convert<T>(*reinterpret_cast<const __nv_bfloat16*>(p));
    case kCodeFloat32: return convert<T>(*reinterpret_cast<const float*>(p));
    default: return convert<T>(*reinterpret_cast<const double*>(p));
  }
}
template <class T> __device__ __forceinline__ void store_dynamic(char* p, int8_t code, T v) {
  switch (code) {
    case kCodeBool: *reinterpret_cast<bool*>(p) = convert<bool>(v); break;
    case kCodeUInt8: *reinterpret_cast<uint8_t*>(p) = convert<uint8_t>(v); break;
    case kCodeInt8: *reinterpret_cast<int8_t*>(p) = convert<int8_t>(v); break;
    case kCodeInt16: *reinterpret_cast<int16_t*>(p) = convert<int16_t>(v); break;
    case kCodeInt32: *reinterpret_cast<int32_t*>(p) = convert<int32_t>(v); break;
    case kCodeInt64: *reinterpret_cast<int64_t*>(p) = convert<int64_t>(v); break;
    case kCodeFloat16: *reinterpret_cast<__half*>(p) = convert<__half>(v); break;
    case kCodeBFloat16: *reinterpret_cast<__nv_bfloat16*>(p) = convert<__nv_bfloat16>(v); break;
    case kCodeFloat32: *reinterpret_cast<float*>(p) = convert<float>(v); break;
    default: *reinterpret_cast<double*>(p) = convert<double>(v); break;
  }
}

// ---------------------------------------------------------------- kernel parameters
template <int N> struct Pointers { char* p[N]; };
template <class T, int N> struct Immediates {
  T v[N > 0 ? N : 1];
  bool is[N > 0 ? N : 1];
};
template <int N> struct Geometry {
  int ndim;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims][N];
};
template <int N> struct Codes { int8_t c[N]; };
template <class T, int V> struct alignas(sizeof(T) * V) Vec { T v[V]; };

template <class R, class F, class T, int NIN> __device__ __forceinline__ R apply(const F& f, const T* x) {
  if constexpr (NIN == 0) return R(f());
  else if constexpr (NIN == 1) return R(f(x[0]));
  else if constexpr (NIN == 2) return R(f(x[0], x[1]));
  else return R(f(x[0], x[1], x[2]));
}

// ---------------------------------------------------------------- kernels
template <class SO, class SI, class R, class T, int NIN, class F>
__global__ void __launch_bounds__(kBlock) dense_kernel(F f, SO* out, Pointers<NIN + 1> in, Immediates<T, NIN> imm, int64_t n) {
  const int64_t base = (int64_t(blockIdx.x) * kBlock + threadIdx.x) * kVec;
  if (base >= n) return;
  if (base + kVec <= n) {
    T x[kVec][NIN > 0 ? NIN : 1];
#pragma unroll
    for (int k = 0; k < NIN; ++k) {
      if (imm.is[k]) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) x[j][k] = imm.v[k];
      } else {
        Vec<SI, kVec> v = *reinterpret_cast<const Vec<SI, kVec>*>(reinterpret_cast<const SI*>(in.p[k + 1]) + base);
#pragma unroll
        for (int j = 0; j < kVec; ++j) x[j][k] = convert<T>(v.v[j]);
      }
    }
    Vec<SO, kVec> o;
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      T a[NIN > 0 ? NIN : 1];
#pragma unroll
      for (int k = 0; k < NIN; ++k) a[k] = x[j][k];
      o.v[j] = convert<SO>(apply<R, F, T, NIN>(f, a));
    }
    *reinterpret_cast<Vec<SO, kVec>*>(out + base) = o;
  } else {
    for (int64_t i = base; i < n; ++i) {
      T a[NIN > 0 ? NIN : 1];
#pragma unroll
      for (int k = 0; k < NIN; ++k) a[k] = imm.is[k] ? imm.v[k] : convert<T>(reinterpret_cast<const SI*>(in.p[k + 1])[i]);
      out[i] = convert<SO>(apply<R, F, T, NIN>(f, a));
    }
  }
}

template <class R, class T, int NIN, class F>
__global__ void __launch_bounds__(kBlock) strided_kernel(F f, Pointers<NIN + 1> ptr, Geometry<NIN + 1> g, Immediates<T, NIN> imm,
                                                         uint32_t n) {
  const uint32_t i = blockIdx.x * kBlock + threadIdx.x;
  if (i >= n) return;
  int64_t off[NIN + 1] = {};
  uint32_t rem = i;
  for (int d = 0; d < g.ndim; ++d) {
    const uint32_t size = uint32_t(g.sizes[d]);
    const uint32_t q = rem / size, r = rem - q * size;
    rem = q;
#pragma unroll
    for (int k = 0; k <= NIN; ++k) off[k] += int64_t(r) * g.strides[d][k];
  }
  T a[NIN > 0 ? NIN : 1];
#pragma unroll
  for (int k = 0; k < NIN; ++k) a[k] = imm.is[k] ? imm.v[k] : *reinterpret_cast<const T*>(ptr.p[k + 1] + off[k + 1]);
  *reinterpret_cast<R*>(ptr.p[0] + off[0]) = apply<R, F, T, NIN>(f, a);
}

template <class R, class T, int NIN, class F>
__global__ void __launch_bounds__(kBlock) casting_kernel(F f, Pointers<NIN + 1> ptr, Geometry<NIN + 1> g, Immediates<T, NIN> imm,
                                                         Codes<NIN + 1> codes, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (i >= n) return;
  int64_t off[NIN + 1] = {};
  int64_t rem = i;
  for (int d = 0; d < g.ndim; ++d) {
    const int64_t q = rem / g.sizes[d], r = rem - q * g.sizes[d];
    rem = q;
#pragma unroll
    for (int k = 0; k <= NIN; ++k) off[k] += r * g.strides[d][k];
  }
  T a[NIN > 0 ? NIN : 1];
#pragma unroll
  for (int k = 0; k < NIN; ++k) a[k] = imm.is[k] ? imm.v[k] : load_dynamic<T>(ptr.p[k + 1] + off[k + 1], codes.c[k + 1]);
  store_dynamic<R>(ptr.p[0] + off[0], codes.c[0], apply<R, F, T, NIN>(f, a));
}

// ---------------------------------------------------------------- the launcher
template <class T> T immediate(const ElementwiseArgs& a, int operand) {
  if constexpr (std::is_floating_point_v<T>) return T(a.scalar_f[operand]);
  else if constexpr (std::is_same_v<T, bool>) return a.scalar_i[operand] != 0;
  else return T(a.scalar_i[operand]);
}

inline bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

template <class SO, class SI, class R, class T, int NIN, class F>
bool try_dense(const ElementwiseArgs& a, const F& f, const Immediates<T, NIN>& imm, const Pointers<NIN + 1>& ptr) {
  if (a.dtype[0] != code_of<SO>() || !aligned(a.data[0], sizeof(SO) * kVec)) return false;
  for (int k = 1; k <= NIN; ++k)
    if (!a.host_scalar[k] && (a.dtype[k] != code_of<SI>() || !aligned(a.data[k], sizeof(SI) * kVec))) return false;
  const int64_t blocks = (a.numel + int64_t(kBlock) * kVec - 1) / (int64_t(kBlock) * kVec);
  dense_kernel<SO, SI, R, T, NIN, F><<<unsigned(blocks), kBlock, 0, a.stream>>>(f, reinterpret_cast<SO*>(a.data[0]), ptr, imm, a.numel);
  EMBER_CUDA_CHECK_LAUNCH();
  return true;
}

// Runs out = f(in...) over the args: R the result's type, T the compute type, NIN inputs.
template <class R, class T, int NIN, class F> void launch(const ElementwiseArgs& a, const F& f) {
  if (a.numel == 0) return;
  Immediates<T, NIN> imm{};
  Pointers<NIN + 1> ptr{};
  Codes<NIN + 1> codes{};
  Geometry<NIN + 1> g{};
  bool same = a.dtype[0] == code_of<R>();
  for (int k = 0; k <= NIN; ++k) {
    ptr.p[k] = a.data[k];
    codes.c[k] = a.dtype[k];
    if (k > 0) {
      imm.is[k - 1] = a.host_scalar[k];
      if (a.host_scalar[k]) imm.v[k - 1] = immediate<T>(a, k);
      else same = same && a.dtype[k] == code_of<T>();
    }
  }
  if (a.dense) {
    if (same && try_dense<R, T, R, T, NIN>(a, f, imm, ptr)) return;
    if constexpr (std::is_same_v<T, float>) {
      // float16/bfloat16 tensors of a float32-computing op: load, compute in float, store.
      using OutH = std::conditional_t<std::is_same_v<R, float>, __half, R>;
      using OutB = std::conditional_t<std::is_same_v<R, float>, __nv_bfloat16, R>;
      if (try_dense<OutH, __half, R, T, NIN>(a, f, imm, ptr)) return;
      if (try_dense<OutB, __nv_bfloat16, R, T, NIN>(a, f, imm, ptr)) return;
    }
  }
  g.ndim = a.ndim;
  for (int d = 0; d < a.ndim; ++d) {
    g.sizes[d] = a.sizes[d];
    for (int k = 0; k <= NIN; ++k) g.strides[d][k] = a.strides[k][d];
  }
  if (same && a.numel <= int64_t(INT32_MAX)) {
    const unsigned blocks = unsigned((a.numel + kBlock - 1) / kBlock);
    strided_kernel<R, T, NIN, F><<<blocks, kBlock, 0, a.stream>>>(f, ptr, g, imm, uint32_t(a.numel));
  } else {
    const int64_t blocks = (a.numel + kBlock - 1) / kBlock;
    casting_kernel<R, T, NIN, F><<<unsigned(blocks), kBlock, 0, a.stream>>>(f, ptr, g, imm, codes, a.numel);
  }
  EMBER_CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------- the dtype switch
inline constexpr uint32_t code_bit(int8_t c) { return 1u << c; }
inline constexpr uint32_t kCudaFloat = code_bit(kCodeFloat32) | code_bit(kCodeFloat64);
inline constexpr uint32_t kCudaInt = code_bit(kCodeUInt8) | code_bit(kCodeInt8) | code_bit(kCodeInt16) |
                                     code_bit(kCodeInt32) | code_bit(kCodeInt64);
inline constexpr uint32_t kCudaNumeric = kCudaFloat | kCudaInt;
inline constexpr uint32_t kCudaNumericAndBool = kCudaNumeric | code_bit(kCodeBool);
inline constexpr uint32_t kCudaIntAndBool = kCudaInt | code_bit(kCodeBool);


inline constexpr uint32_t kStoreReduced = code_bit(kCodeFloat16) | code_bit(kCodeBFloat16);
inline constexpr uint32_t kStoreFloat = kCudaFloat | kStoreReduced;
inline constexpr uint32_t kStoreAll = kCudaNumericAndBool | kStoreReduced;

// Calls g.template operator()<T>() with the storage type of `code` (__half, __nv_bfloat16 for
// the reduced floats), for codes in Set; torch's "not implemented for" error otherwise.
template <uint32_t Set, class G> void visit_storage(int8_t code, const char* op, G&& g) {
#define EMBER_CUDA_CASE(C, T) \
  case C: if constexpr ((Set & code_bit(C)) != 0) { g.template operator()<T>(); return; } break;
  switch (code) {
    EMBER_CUDA_CASE(kCodeBool, bool)
    EMBER_CUDA_CASE(kCodeUInt8, uint8_t)
    EMBER_CUDA_CASE(kCodeInt8, int8_t)
    EMBER_CUDA_CASE(kCodeInt16, int16_t)
    EMBER_CUDA_CASE(kCodeInt32, int32_t)
    EMBER_CUDA_CASE(kCodeInt64, int64_t)
    EMBER_CUDA_CASE(kCodeFloat16, __half)
    EMBER_CUDA_CASE(kCodeBFloat16, __nv_bfloat16)
    EMBER_CUDA_CASE(kCodeFloat32, float)
    EMBER_CUDA_CASE(kCodeFloat64, double)
    default: break;
  }
#undef EMBER_CUDA_CASE
  throw_dtype_not_implemented(op, code);
}

// Calls g.template operator()<T>() with the C++ compute type of `code`, for codes in Set
// (float16/bfloat16 have none of their own: their ops compute in float32).
template <uint32_t Set, class G> void visit_compute(int8_t code, const char* op, G&& g) {
  visit_storage<Set & ~kStoreReduced>(code, op, static_cast<G&&>(g));
}

}  // namespace ember::cuda
