// CUDA launchers that move or select bytes: copy with dtype conversion, fill, where and
// masked_fill_. Same-dtype work is dispatched on the element size (1, 2, 4, 8 or 16 bytes), so
// it is instantiated five times, not once per dtype.
#include <cstring>

#include "cuda/elementwise.cuh"
#include "cuda/elementwise_launchers.h"

namespace ember::cuda {
namespace {

struct alignas(16) Bytes16 {
  uint64_t lo, hi;
};
template <int N> struct uint_of;
template <> struct uint_of<1> { using type = uint8_t; };
template <> struct uint_of<2> { using type = uint16_t; };
template <> struct uint_of<4> { using type = uint32_t; };
template <> struct uint_of<8> { using type = uint64_t; };
template <> struct uint_of<16> { using type = Bytes16; };

int element_bytes(int8_t code) {
  switch (code) {
    case kCodeBool: case kCodeUInt8: case kCodeInt8: return 1;
    case kCodeInt16: case kCodeFloat16: case kCodeBFloat16: return 2;
    case kCodeInt32: case kCodeFloat32: return 4;
    case kCodeComplex128: return 16;
    default: return 8;
  }
}

template <class F> void visit_size(int bytes, F&& f) {
  switch (bytes) {
    case 1: return f.template operator()<uint_of<1>::type>();
    case 2: return f.template operator()<uint_of<2>::type>();
    case 4: return f.template operator()<uint_of<4>::type>();
    case 8: return f.template operator()<uint_of<8>::type>();
    default: return f.template operator()<uint_of<16>::type>();
  }
}

// Offsets of operand k for element i, in Index arithmetic (int64: these kernels also serve huge
// tensors; int32 where every offset fits, a 64-bit division costing several 32-bit ones).
template <int N, class Index = int64_t>
__device__ __forceinline__ void offsets(const Geometry<N>& g, Index i, int64_t (&off)[N]) {
  Index o[N];
#pragma unroll
  for (int k = 0; k < N; ++k) o[k] = 0;
  for (int d = 0; d < g.ndim; ++d) {
    const Index size = Index(g.sizes[d]), q = i / size, r = i - q * size;
    i = q;
#pragma unroll
    for (int k = 0; k < N; ++k) o[k] += r * Index(g.strides[d][k]);
  }
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = o[k];
}

template <class U, class Index>
__global__ void __launch_bounds__(kBlock) copy_same_kernel(Pointers<2> p, Geometry<2> g, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (i >= n) return;
  int64_t off[2];
  offsets<2, Index>(g, Index(i), off);
  *reinterpret_cast<U*>(p.p[0] + off[0]) = *reinterpret_cast<const U*>(p.p[1] + off[1]);
}

// out = cond ? a : b; a and b are read from memory, or are the values given when imm_a / imm_b.
template <class U>
__global__ void __launch_bounds__(kBlock) select_kernel(Pointers<4> p, Geometry<4> g, U va, U vb, bool imm_a, bool imm_b, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (i >= n) return;
  int64_t off[4];
  offsets(g, i, off);
  const bool c = *reinterpret_cast<const bool*>(p.p[1] + off[1]);
  U v = c ? (imm_a ? va : *reinterpret_cast<const U*>(p.p[2] + off[2])) : (imm_b ? vb : *reinterpret_cast<const U*>(p.p[3] + off[3]));
  *reinterpret_cast<U*>(p.p[0] + off[0]) = v;
}

template <int N> Geometry<N> geometry(const ElementwiseArgs& a) {
  Geometry<N> g{};
  g.ndim = a.ndim;
  for (int d = 0; d < a.ndim; ++d) {
    g.sizes[d] = a.sizes[d];
    for (int k = 0; k < N && k < a.ntensors; ++k) g.strides[d][k] = a.strides[k][d];
  }
  return g;
}

unsigned blocks_for(int64_t n) { return unsigned((n + kBlock - 1) / kBlock); }

// A strided same-dtype copy whose inner dim is contiguous in both operands moves `wide`-byte
// pieces instead of elements where the sizes, strides and pointers allow it: a [B,T,H,d] ->
// [B,H,T,d] bf16 permute (attention's heads) then takes 8 elements a thread, not 1.
bool widen_inner(Geometry<2>& g, int64_t& n, int bytes, int wide, char* const* data) {
  if (g.ndim == 0 || g.strides[0][0] != bytes || g.strides[0][1] != bytes || (g.sizes[0] * bytes) % wide != 0) return false;
  for (int k = 0; k < 2; ++k) {
    if (reinterpret_cast<uintptr_t>(data[k]) % wide != 0) return false;
    for (int d = 1; d < g.ndim; ++d)
      if (g.strides[d][k] % wide != 0) return false;
  }
  n = n / g.sizes[0] * (g.sizes[0] * bytes / wide);
  g.sizes[0] = g.sizes[0] * bytes / wide;
  g.strides[0][0] = g.strides[0][1] = wide;
  return true;
}

// Whether every element index and byte offset fits in 31 bits.
bool fits_int32(const Geometry<2>& g, int64_t n) {
  constexpr int64_t kMax = (int64_t(1) << 31) - 1;
  if (n > kMax) return false;
  for (int k = 0; k < 2; ++k) {
    int64_t reach = 0;
    for (int d = 0; d < g.ndim; ++d) reach += (g.sizes[d] - 1) * (g.strides[d][k] < 0 ? -g.strides[d][k] : g.strides[d][k]);
    if (reach > kMax) return false;
  }
  return true;
}

// A host value as the bits of dtype `code`.
template <class U> U value_bits(int8_t code, double fv, int64_t iv) {
  U out{};
  // Only the dtype whose size is U's is ever asked for; other sizes compile to nothing.
  auto put = [&](auto v) {
    if constexpr (sizeof(v) <= sizeof(U)) memcpy(&out, &v, sizeof(v));
  };
  switch (code) {
    case kCodeBool: put(bool(iv != 0 || fv != 0)); break;
    case kCodeUInt8: put(uint8_t(iv)); break;
    case kCodeInt8: put(int8_t(iv)); break;
    case kCodeInt16: put(int16_t(iv)); break;
    case kCodeInt32: put(int32_t(iv)); break;
    case kCodeInt64: put(int64_t(iv)); break;
    case kCodeFloat16: put(__float2half_rn(float(fv))); break;
    case kCodeBFloat16: put(__float2bfloat16_rn(float(fv))); break;
    case kCodeFloat32: put(float(fv)); break;
    case kCodeFloat64: put(double(fv)); break;
    default: break;
  }
  return out;
}

struct Identity {
  template <class T> __device__ T operator()(T x) const { return x; }
};
template <class T> struct Fill {
  T v;
  __device__ T operator()() const { return v; }
};

// A dense conversion between two floating types (autocast's casts, .float(), .half(), .double())
// through the vectorised dense kernel, 4 elements per thread; false when the operands are not
// these dtypes or not aligned for it. Six pairs are instantiated, not every dtype pair.
template <class SO, class SI> bool dense_convert(const ElementwiseArgs& a) {
  using T = std::conditional_t<std::is_same_v<SO, double> || std::is_same_v<SI, double>, double, float>;
  return try_dense<SO, SI, T, T, 1>(a, Identity{}, Immediates<T, 1>{}, Pointers<2>{{a.data[0], a.data[1]}});
}

}  // namespace

void launch_copy(const ElementwiseArgs& a) {
  if (a.numel == 0) return;
  if (a.dtype[0] == a.dtype[1] && a.dense && !a.host_scalar[1]) {
    // One dense run each: the copy engine's device-to-device copy.
    EMBER_CUDA_CHECK(cudaMemcpyAsync(a.data[0], a.data[1], size_t(a.numel) * size_t(element_bytes(a.dtype[0])),
                                     cudaMemcpyDeviceToDevice, a.stream));
    return;
  }
  if (a.dense && !a.host_scalar[1] &&
      (dense_convert<__nv_bfloat16, float>(a) || dense_convert<float, __nv_bfloat16>(a) ||
       dense_convert<__half, float>(a) || dense_convert<float, __half>(a) || dense_convert<float, double>(a) ||
       dense_convert<double, float>(a)))
    return;
  if (a.dtype[0] == a.dtype[1]) {
    Geometry<2> g = geometry<2>(a);
    int64_t n = a.numel;
    int bytes = element_bytes(a.dtype[0]);
    for (int wide = 16; wide > bytes; wide /= 2)
      if (widen_inner(g, n, bytes, wide, a.data)) {
        bytes = wide;
        break;
      }
    const bool narrow = fits_int32(g, n);
    visit_size(bytes, [&]<class U>() {
      auto kernel = narrow ? copy_same_kernel<U, int32_t> : copy_same_kernel<U, int64_t>;
      kernel<<<blocks_for(n), kBlock, 0, a.stream>>>(Pointers<2>{{a.data[0], a.data[1]}}, g, n);
    });
    EMBER_CUDA_CHECK_LAUNCH();
    return;
  }
  if (a.dtype[0] >= kCodeComplex64 || a.dtype[1] >= kCodeComplex64)
    throw_dtype_not_implemented("copy_ (complex conversion) on CUDA", a.dtype[0] >= kCodeComplex64 ? a.dtype[0] : a.dtype[1]);
  // Integers convert through int64 (exact), anything with a float through double.
  auto is_int = [](int8_t c) { return c <= kCodeInt64; };
  if (is_int(a.dtype[0]) && is_int(a.dtype[1])) launch<int64_t, int64_t, 1>(a, Identity{});
  else launch<double, double, 1>(a, Identity{});
}

void launch_fill(const ElementwiseArgs& a) {
  switch (a.dtype[0]) {
    case kCodeFloat16: case kCodeBFloat16: case kCodeFloat32: return launch<float, float, 0>(a, Fill<float>{float(a.param_f[0])});
    case kCodeFloat64: return launch<double, double, 0>(a, Fill<double>{a.param_f[0]});
    case kCodeBool: return launch<bool, bool, 0>(a, Fill<bool>{a.param_i[0] != 0});
    case kCodeUInt8: return launch<uint8_t, uint8_t, 0>(a, Fill<uint8_t>{uint8_t(a.param_i[0])});
    case kCodeInt8: return launch<int8_t, int8_t, 0>(a, Fill<int8_t>{int8_t(a.param_i[0])});
    case kCodeInt16: return launch<int16_t, int16_t, 0>(a, Fill<int16_t>{int16_t(a.param_i[0])});
    case kCodeInt32: return launch<int32_t, int32_t, 0>(a, Fill<int32_t>{int32_t(a.param_i[0])});
    case kCodeInt64: return launch<int64_t, int64_t, 0>(a, Fill<int64_t>{a.param_i[0]});
    default: throw_dtype_not_implemented("fill_ on CUDA", a.dtype[0]);
  }
}

// where: operands (out, cond, a, b); a and b already have the output's dtype or are host scalars.
void launch_where(const ElementwiseArgs& a) {
  if (a.numel == 0) return;
  visit_size(element_bytes(a.dtype[0]), [&]<class U>() {
    const U va = a.host_scalar[2] ? value_bits<U>(a.dtype[0], a.scalar_f[2], a.scalar_i[2]) : U{};
    const U vb = a.host_scalar[3] ? value_bits<U>(a.dtype[0], a.scalar_f[3], a.scalar_i[3]) : U{};
    select_kernel<U><<<blocks_for(a.numel), kBlock, 0, a.stream>>>(Pointers<4>{{a.data[0], a.data[1], a.data[2], a.data[3]}},
                                                                   geometry<4>(a), va, vb, a.host_scalar[2], a.host_scalar[3], a.numel);
  });
  EMBER_CUDA_CHECK_LAUNCH();
}

// masked_fill_: operands (self, self, mask); the value in param_f/param_i[0].
void launch_masked_fill(const ElementwiseArgs& a) {
  if (a.numel == 0) return;
  visit_size(element_bytes(a.dtype[0]), [&]<class U>() {
    const U v = value_bits<U>(a.dtype[0], a.param_f[0], a.param_i[0]);
    // select(out, cond = mask, a = value, b = self)
    Geometry<4> g{};
    g.ndim = a.ndim;
    for (int d = 0; d < a.ndim; ++d) {
      g.sizes[d] = a.sizes[d];
      g.strides[d][0] = a.strides[0][d];
      g.strides[d][1] = a.strides[2][d];
      g.strides[d][3] = a.strides[1][d];
    }
    select_kernel<U><<<blocks_for(a.numel), kBlock, 0, a.stream>>>(Pointers<4>{{a.data[0], a.data[2], nullptr, a.data[1]}}, g, v, U{},
                                                                   true, false, a.numel);
  });
  EMBER_CUDA_CHECK_LAUNCH();
}

}  // namespace ember::cuda
