// CUDA launchers of softmax and log_softmax along one dim of a contiguous input viewed as
// [outer, n, inner]; float16/bfloat16 are loaded and stored as themselves and computed in float.
//   inner == 1, n <= 1024: a warp per row, the row held in registers (kPer values a lane):
//     max, then the sum of exp(x - max), then the scaled output, as the CPU kernel;
//   inner == 1, longer rows: a block per row; each thread keeps a running (max, sum) (the
//     online form), the block merges them, a second pass writes;
//   inner > 1: tx neighbouring inner positions per block (coalesced), ty threads share each
//     column's n with running (max, sum) pairs merged in shared memory, then write.
// Special values follow the CPU kernel, which subtracts the (NaN-ignoring) row max before exp:
// a NaN or +inf anywhere makes the whole row NaN, an all -inf row is NaN, and -inf entries of
// other rows give 0 (log: -inf).
#include <cuda/std/cmath>

#include <algorithm>

#include "cuda/reduce_device.cuh"
#include "cuda/reduce_launchers.h"

namespace ember::cuda {
namespace {

template <class C> __device__ __forceinline__ C max_t(C a, C x) { return x > a ? x : a; }  // NaN never wins
template <class C> __device__ __forceinline__ C neg_inf() { return -::cuda::std::numeric_limits<C>::infinity(); }

template <class C, bool kLog> __device__ __forceinline__ C finish_value(C x, C m, C scale) {
  // scale: log(sum) for log_softmax, 1 / sum for softmax
  if constexpr (kLog) return (x - m) - scale;
  else return ::cuda::std::exp(x - m) * scale;
}
template <class C, bool kLog> __device__ __forceinline__ C scale_of(C sum) {
  if constexpr (kLog) return ::cuda::std::log(sum);
  else return C(1) / sum;
}

// ---------------------------------------------------------------- a warp per row
inline constexpr int kWarpRowsPerBlock = 8;

template <class T, bool kLog, int kPer>
__global__ void __launch_bounds__(32 * kWarpRowsPerBlock) softmax_warp_kernel(const T* in, T* out, int64_t rows, int n) {
  using C = compute_t<T>;
  const int lane = int(threadIdx.x) & 31;
  const int64_t stride = int64_t(gridDim.x) * kWarpRowsPerBlock;
  for (int64_t row = int64_t(blockIdx.x) * kWarpRowsPerBlock + (threadIdx.x >> 5); row < rows; row += stride) {
    const T* x = in + row * n;
    T* y = out + row * n;
    C v[kPer];
    C m = neg_inf<C>();
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int j = k * 32 + lane;
      v[k] = j < n ? convert<C>(x[j]) : neg_inf<C>();
      m = max_t(m, v[k]);
    }
    for (int off = 16; off > 0; off >>= 1) m = max_t(m, __shfl_xor_sync(0xffffffffu, m, off));
    C s = C(0);
#pragma unroll
    for (int k = 0; k < kPer; ++k)
      if (k * 32 + lane < n) s += ::cuda::std::exp(v[k] - m);
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    const C scale = scale_of<C, kLog>(s);
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int j = k * 32 + lane;
      if (j < n) y[j] = convert<T>(finish_value<C, kLog>(v[k], m, scale));
    }
  }
}

// ---------------------------------------------------------------- running (max, sum)
// sum holds sum(exp(x - max)) over the values seen. -inf values add nothing (if the row's max
// ends -inf the output is NaN anyway, from x - max); NaN makes the sum NaN; a +inf max makes it
// NaN through exp(inf - inf), as in the CPU's sum. While max is -inf, sum is 0 or NaN.
template <class C> struct MaxSum {
  C m, s;
};
template <class C> __device__ __forceinline__ MaxSum<C> add_value(MaxSum<C> a, C x) {
  if (x > a.m) {
    a.s = a.s * ::cuda::std::exp(a.m - x) + (x - x + C(1));  // x - x + 1: 1, or NaN for x = +inf
    a.m = x;
  } else if (x != neg_inf<C>()) {
    a.s += ::cuda::std::exp(x - a.m);
  }
  return a;
}
template <class C> __device__ __forceinline__ MaxSum<C> merge(MaxSum<C> a, MaxSum<C> b) {
  const C m = max_t(a.m, b.m);
  const C sa = a.m == neg_inf<C>() ? a.s : a.s * ::cuda::std::exp(a.m - m);
  const C sb = b.m == neg_inf<C>() ? b.s : b.s * ::cuda::std::exp(b.m - m);
  return {m, sa + sb};
}

// ---------------------------------------------------------------- a block per row
template <class T, bool kLog> __global__ void __launch_bounds__(1024) softmax_block_kernel(const T* in, T* out, int64_t rows, int64_t n) {
  using C = compute_t<T>;
  __shared__ MaxSum<C> warp_part[32];
  __shared__ MaxSum<C> row_total;
  const int tid = int(threadIdx.x), nthreads = int(blockDim.x);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = in + row * n;
    T* y = out + row * n;
    MaxSum<C> a{neg_inf<C>(), C(0)};
    for (int64_t j = tid; j < n; j += nthreads) a = add_value(a, convert<C>(x[j]));
    for (int off = 16; off > 0; off >>= 1) a = merge(a, shfl_xor(a, off));
    if ((tid & 31) == 0) warp_part[tid >> 5] = a;
    __syncthreads();
    if (tid < 32) {
      const int nw = nthreads >> 5;
      MaxSum<C> b = tid < nw ? warp_part[tid] : MaxSum<C>{neg_inf<C>(), C(0)};
      for (int off = 16; off > 0; off >>= 1) b = merge(b, shfl_xor(b, off));
      if (tid == 0) row_total = b;
    }
    __syncthreads();
    const MaxSum<C> t = row_total;
    const C scale = scale_of<C, kLog>(t.s);
    for (int64_t j = tid; j < n; j += nthreads) y[j] = convert<T>(finish_value<C, kLog>(convert<C>(x[j]), t.m, scale));
    __syncthreads();  // the next row writes warp_part and row_total again
  }
}

// ---------------------------------------------------------------- a block per row, in registers
// Rows of up to 8192 elements, a multiple of 4 and 16-byte aligned (the common case past the
// warp kernel: attention and vocabulary rows): 256 threads hold the row in registers, kVecs
// 4-element vectors each, every load in flight at once, so the row is read from memory once
// (the online kernel reads it twice, in 4-byte loads) and max, then the sum of exp(x - max), is
// the warp kernel's order, with its special values.
inline constexpr int kRegThreads = 256;

template <class C, class Op> __device__ __forceinline__ C block_all_reduce(C a, Op op, C* part) {
  for (int off = 16; off > 0; off >>= 1) a = op(a, __shfl_xor_sync(0xffffffffu, a, off));
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = a;
  __syncthreads();
  a = part[0];
#pragma unroll
  for (int w = 1; w < kRegThreads / 32; ++w) a = op(a, part[w]);
  __syncthreads();  // part is written again by the next reduction
  return a;
}

template <class T, bool kLog, int kVecs>
__global__ void __launch_bounds__(kRegThreads) softmax_block_regs_kernel(const T* in, T* out, int64_t rows, int n) {
  using C = compute_t<T>;
  using V = Vec<T, 4>;
  __shared__ C part[kRegThreads / 32];
  const int tid = int(threadIdx.x), nv = n / 4;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const V* x = reinterpret_cast<const V*>(in + row * n);
    V* y = reinterpret_cast<V*>(out + row * n);
    C v[kVecs][4];
    C m = neg_inf<C>();
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const int j = k * kRegThreads + tid;
      if (j < nv) {
        const V q = x[j];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          v[k][e] = convert<C>(q.v[e]);
          m = max_t(m, v[k][e]);
        }
      }
    }
    m = block_all_reduce(m, [](C a, C b) { return max_t(a, b); }, part);
    C s = C(0);
#pragma unroll
    for (int k = 0; k < kVecs; ++k)
      if (k * kRegThreads + tid < nv)
#pragma unroll
        for (int e = 0; e < 4; ++e) s += ::cuda::std::exp(v[k][e] - m);
    s = block_all_reduce(s, [](C a, C b) { return a + b; }, part);
    const C scale = scale_of<C, kLog>(s);
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const int j = k * kRegThreads + tid;
      if (j < nv) {
        V o;
#pragma unroll
        for (int e = 0; e < 4; ++e) o.v[e] = convert<T>(finish_value<C, kLog>(v[k][e], m, scale));
        y[j] = o;
      }
    }
  }
}

// ---------------------------------------------------------------- inner > 1
template <class T, bool kLog>
__global__ void __launch_bounds__(256) softmax_cols_kernel(const T* in, T* out, int64_t outer, int64_t n, int64_t inner) {
  using C = compute_t<T>;
  extern __shared__ __align__(16) unsigned char softmax_smem[];
  MaxSum<C>* part = reinterpret_cast<MaxSum<C>*>(softmax_smem);
  const int x = int(threadIdx.x), yy = int(threadIdx.y), tx = int(blockDim.x), ty = int(blockDim.y);
  const int64_t per_outer = (inner + tx - 1) / tx;
  const int64_t groups = outer * per_outer;
  for (int64_t grp = blockIdx.x; grp < groups; grp += gridDim.x) {
    const int64_t o = grp / per_outer;
    const int64_t i = (grp - o * per_outer) * tx + x;
    const bool valid = i < inner;
    const int64_t base = o * n * inner + i;
    MaxSum<C> a{neg_inf<C>(), C(0)};
    if (valid)
      for (int64_t r = yy; r < n; r += ty) a = add_value(a, convert<C>(in[base + r * inner]));
    if (ty > 1) {
      part[yy * tx + x] = a;
      __syncthreads();
      for (int s = ty / 2; s > 0; s >>= 1) {
        if (yy < s) part[yy * tx + x] = merge(part[yy * tx + x], part[(yy + s) * tx + x]);
        __syncthreads();
      }
      a = part[x];
      __syncthreads();  // the next group writes part again
    }
    const C scale = scale_of<C, kLog>(a.s);
    if (valid)
      for (int64_t r = yy; r < n; r += ty)
        out[base + r * inner] = convert<T>(finish_value<C, kLog>(convert<C>(in[base + r * inner]), a.m, scale));
  }
}


template <bool kLog> void run_softmax(const SoftmaxLaunch& L) {
  visit_storage<kStoreFloat>(L.code, kLog ? "log_softmax_cuda" : "softmax_cuda", [&]<class T>() {
    using C = compute_t<T>;
    const T* in = static_cast<const T*>(L.in);
    T* out = static_cast<T*>(L.out);
    if (L.outer == 0 || L.n == 0 || L.inner == 0) return;
    if (L.inner == 1 && L.n <= 1024) {
      const unsigned blocks = grid_for((L.outer + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock);
      const int n = int(L.n);
      const unsigned threads = 32 * kWarpRowsPerBlock;
      if (n <= 64) softmax_warp_kernel<T, kLog, 2><<<blocks, threads, 0, L.stream>>>(in, out, L.outer, n);
      else if (n <= 256) softmax_warp_kernel<T, kLog, 8><<<blocks, threads, 0, L.stream>>>(in, out, L.outer, n);
      else softmax_warp_kernel<T, kLog, 32><<<blocks, threads, 0, L.stream>>>(in, out, L.outer, n);
    } else if (L.inner == 1 && L.n <= 8 * 4 * kRegThreads && L.n % 4 == 0 && aligned(in, 4 * sizeof(T)) &&
               aligned(out, 4 * sizeof(T))) {
      const int n = int(L.n);
      const unsigned blocks = grid_for(L.outer);
      if (n <= 2 * 4 * kRegThreads) softmax_block_regs_kernel<T, kLog, 2><<<blocks, kRegThreads, 0, L.stream>>>(in, out, L.outer, n);
      else if (n <= 4 * 4 * kRegThreads) softmax_block_regs_kernel<T, kLog, 4><<<blocks, kRegThreads, 0, L.stream>>>(in, out, L.outer, n);
      else softmax_block_regs_kernel<T, kLog, 8><<<blocks, kRegThreads, 0, L.stream>>>(in, out, L.outer, n);
    } else if (L.inner == 1) {
      const unsigned threads = L.n <= 4096 ? 256 : (L.n <= 16384 ? 512 : 1024);
      softmax_block_kernel<T, kLog><<<grid_for(L.outer), threads, 0, L.stream>>>(in, out, L.outer, L.n);
    } else {
      // tx inner positions (up to a warp's worth), ty threads per column sharing n, unless
      // there are columns enough to fill the GPU with one thread each.
      int tx = pow2_ceil(L.inner < 32 ? L.inner : 32);
      const bool many_columns = L.outer * L.inner >= int64_t(L.sms) * L.threads_per_sm;
      const int ty = many_columns ? 1 : std::min(256 / tx, pow2_floor(std::max<int64_t>(L.n / 8, 1)));
      if (tx * ty < 256) tx = std::min(pow2_ceil(L.inner), 256 / ty);
      const int64_t groups = L.outer * ((L.inner + tx - 1) / tx);
      const size_t smem = ty > 1 ? size_t(tx) * ty * sizeof(MaxSum<C>) : 0;
      softmax_cols_kernel<T, kLog><<<grid_for(groups), dim3(unsigned(tx), unsigned(ty)), smem, L.stream>>>(in, out, L.outer, L.n,
                                                                                                        L.inner);
    }
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

void launch_softmax(const SoftmaxLaunch& L) { run_softmax<false>(L); }
void launch_log_softmax(const SoftmaxLaunch& L) { run_softmax<true>(L); }

}  // namespace ember::cuda
