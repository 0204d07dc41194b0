#pragma once
// Device-side pieces shared by the indexing, sorting and shape kernels: walking an
// IndexGeometry, element types by size, launch shapes, and the device-side assert that stops a
// kernel on a bad index.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "cuda/cuda_check.h"
#include "cuda/index_launchers.h"

namespace ember::cuda::detail {

inline constexpr int kThreads = 256;

// Blocks for n positions, one per thread, each thread looping with the grid's stride when n
// needs more than the largest grid (never in practice: 2^31 blocks of 256).
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < int64_t(INT32_MAX) ? b : int64_t(INT32_MAX));
}

// An element of N bytes, moved as one load and one store.
struct alignas(16) Bytes16 {
  uint64_t lo, hi;
};
template <int N> struct UintOf;
template <> struct UintOf<1> { using type = uint8_t; };
template <> struct UintOf<2> { using type = uint16_t; };
template <> struct UintOf<4> { using type = uint32_t; };
template <> struct UintOf<8> { using type = uint64_t; };
template <> struct UintOf<16> { using type = Bytes16; };

// Calls f.template operator()<U>() with U the element type of `bytes` (1, 2, 4, 8 or 16).
template <class F> void visit_element_size(int bytes, F&& f) {
  switch (bytes) {
    case 1: return f.template operator()<uint8_t>();
    case 2: return f.template operator()<uint16_t>();
    case 4: return f.template operator()<uint32_t>();
    case 8: return f.template operator()<uint64_t>();
    default: return f.template operator()<Bytes16>();
  }
}

// Byte offsets of the three operands at position `lin` (row-major over g, innermost dim first
// in g). I is the type the position is divided in: uint32_t when the whole iteration fits.
template <class I> __device__ __forceinline__ void offsets_at(const IndexGeometry& g, I lin, int64_t (&off)[3]) {
  off[0] = off[1] = off[2] = 0;
  for (int d = 0; d < g.ndim; ++d) {
    const I size = I(g.sizes[d]);
    const I q = lin / size;
    const int64_t r = int64_t(lin - q * size);
    lin = q;
    off[0] += r * g.strides[d][0];
    off[1] += r * g.strides[d][1];
    off[2] += r * g.strides[d][2];
  }
}

// Whether positions of this iteration can be divided in 32 bits.
inline bool fits_32(int64_t numel) { return numel <= int64_t(UINT32_MAX); }

__device__ __forceinline__ const char* index_op_name(IndexOp op) {
  switch (op) {
    case IndexOp::kIndexSelect: return "index_select()";
    case IndexOp::kGather: return "gather()";
    case IndexOp::kScatter: return "scatter()";
    case IndexOp::kScatterAdd: return "scatter_add()";
    case IndexOp::kIndexAdd: return "index_add_()";
    case IndexOp::kIndex: return "index";
    default: return "index_put_";
  }
}

// Prints what was wrong, then fails a device-side assert (compiled in under NDEBUG too): the
// kernel stops and the context reports cudaErrorAssert, "device-side assert triggered".
__device__ __noinline__ inline void fail_index(IndexOp op, int64_t v, int dim, int64_t size) {
  printf("%s: index %lld is out of bounds for dimension %d with size %lld\n", index_op_name(op), (long long)v, dim,
         (long long)size);
#if defined(__CUDA_ARCH__)  // (declared for device code only; the host pass never calls this)
  __assert_fail("index out of bounds", __FILE__, __LINE__, __func__);
#endif
}

// The index value at p, checked (and wrapped when negative values are allowed). Returns false
// after failing the assert, so the caller never touches memory with a bad index.
__device__ __forceinline__ bool read_index(const IndexArgs& a, const char* p, int64_t& v) {
  v = a.index_int64 ? *reinterpret_cast<const int64_t*>(p) : int64_t(*reinterpret_cast<const int32_t*>(p));
  if (!a.check) return true;
  const int64_t lo = a.wrap_negative ? -a.index_size : 0;
  if (v < lo || v >= a.index_size) [[unlikely]] {
    fail_index(a.op, v, a.dim, a.index_size);
    return false;
  }
  if (v < 0) v += a.index_size;
  return true;
}

}  // namespace ember::cuda::detail
