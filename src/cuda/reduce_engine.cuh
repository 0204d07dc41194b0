#pragma once
// The CUDA reduction engine: one set of kernels for every reduction, templated on an Op:
//   using In, Acc;                       the storage type read and the accumulator
//   Acc init();                          the identity
//   Acc reduce(Acc, In v, int64_t r);    folds in element r of the reduced dim (a thread sees
//                                        its elements in increasing r)
//   Acc combine(Acc a, Acc b);           merges two accumulators (associative; index-carrying
//                                        ops break ties by index, so the order is free)
//   void store(int64_t o, Acc);          writes output o
// Geometry and launch shape come from the host (reduce_launchers.h):
//   rows:    tx lanes share one output's reduced dim (warp shuffles, then shared memory across
//            warps when tx > 32), ty outputs per block; a dense reduced dim is read in 16-byte
//            vectors after a scalar head that aligns each lane's start;
//   columns: tx neighbouring outputs per block (coalesced), ty threads share each output's
//            reduced dim and meet in shared memory;
//   both:    with nchunks > 1, grid.y cuts the reduced dim and each chunk writes its partial
//            accumulators; reduce_finish_kernel (a warp per output) combines them. With
//            outer_red > 1 (two reduced dims), every output of the main pass is a partial
//            accumulator and the finish kernel folds the outer reduced dim.
#include "cuda/reduce_device.cuh"
#include "cuda/reduce_launchers.h"

namespace ember::cuda::reduce_engine {

struct Geom {
  const char* in;
  char* partial;
  int64_t num_out, R, rstride, chunk, nchunks;
  bool to_partial;  // every output is a partial accumulator (two levels)
  int nkept;
  int64_t ksize[kReduceMaxKept], kstride[kReduceMaxKept];
};

// Element offset of output o's first reduced element.
__device__ __forceinline__ int64_t start_of(const Geom& g, int64_t o) {
  if (g.nkept <= 1) return o * g.kstride[0];
  int64_t off = 0;
#pragma unroll
  for (int d = kReduceMaxKept - 1; d >= 0; --d) {
    if (d < g.nkept) {
      const int64_t q = o / g.ksize[d];
      off += (o - q * g.ksize[d]) * g.kstride[d];
      o = q;
    }
  }
  return off;
}

// Elements a vector load carries: 16 bytes, at most 4 elements (bounded unrolling).
template <class In> inline constexpr int kVecOf = 16 / int(sizeof(In)) < 4 ? 16 / int(sizeof(In)) : 4;

// Lane `lane` of `tx` folds elements [r0, r1) of a dense run p: a scalar head up to the next
// vector boundary, vectors, a scalar tail. Each lane's positions increase.
template <class Op>
__device__ __forceinline__ typename Op::Acc reduce_dense(const Op& op, const typename Op::In* p, int64_t r0,
                                                         int64_t r1, int lane, int tx, typename Op::Acc acc) {
  using In = typename Op::In;
  constexpr int V = kVecOf<In>;
  const uintptr_t addr = reinterpret_cast<uintptr_t>(p + r0);
  int64_t head = int64_t((uintptr_t(0) - addr) & uintptr_t(V * sizeof(In) - 1)) / int64_t(sizeof(In));
  if (head > r1 - r0) head = r1 - r0;
  for (int64_t r = r0 + lane; r < r0 + head; r += tx) acc = op.reduce(acc, p[r], r);
  const int64_t b = r0 + head;
  const int64_t nvec = (r1 - b) / V;
  const Vec<In, V>* vp = reinterpret_cast<const Vec<In, V>*>(p + b);
  for (int64_t j = lane; j < nvec; j += tx) {
    const Vec<In, V> v = vp[j];
#pragma unroll
    for (int k = 0; k < V; ++k) acc = op.reduce(acc, v.v[k], b + j * V + k);
  }
  for (int64_t r = b + nvec * V + lane; r < r1; r += tx) acc = op.reduce(acc, p[r], r);
  return acc;
}

template <class Op> __device__ __forceinline__ void finish(const Op& op, const Geom& g, int64_t o, typename Op::Acc acc) {
  if (g.nchunks == 1 && !g.to_partial) op.store(o, acc);
  else reinterpret_cast<typename Op::Acc*>(g.partial)[int64_t(blockIdx.y) * g.num_out + o] = acc;
}

template <class Op> __global__ void __launch_bounds__(512) reduce_rows_kernel(Op op, Geom g) {
  using Acc = typename Op::Acc;
  using In = typename Op::In;
  extern __shared__ __align__(16) unsigned char reduce_smem[];
  Acc* smem = reinterpret_cast<Acc*>(reduce_smem);
  const int lane = int(threadIdx.x), tx = int(blockDim.x), ty = int(blockDim.y);
  const int64_t r0 = int64_t(blockIdx.y) * g.chunk;
  const int64_t r1 = g.R < r0 + g.chunk ? g.R : r0 + g.chunk;
  const int64_t groups = (g.num_out + ty - 1) / ty;
  const In* in = reinterpret_cast<const In*>(g.in);
  for (int64_t grp = blockIdx.x; grp < groups; grp += gridDim.x) {
    const int64_t o = grp * ty + threadIdx.y;
    Acc acc = op.init();
    if (o < g.num_out) {
      const In* p = in + start_of(g, o);
      if (g.rstride == 1) {
        acc = reduce_dense(op, p, r0, r1, lane, tx, acc);
      } else {
        const In* q = p + (r0 + lane) * g.rstride;
        const int64_t step = int64_t(tx) * g.rstride;
        for (int64_t r = r0 + lane; r < r1; r += tx, q += step) acc = op.reduce(acc, *q, r);
      }
    }
    // Every lane of every warp reaches here (whole warps: tx * ty is a multiple of 32).
    const int width = tx < 32 ? tx : 32;
    for (int off = width / 2; off > 0; off >>= 1) acc = op.combine(acc, shfl_down(acc, off, width));
    if (tx > 32) {
      const int nw = tx / 32;
      if ((lane & 31) == 0) smem[threadIdx.y * nw + lane / 32] = acc;
      __syncthreads();
      if (lane == 0)
        for (int w = 1; w < nw; ++w) acc = op.combine(acc, smem[threadIdx.y * nw + w]);
      __syncthreads();  // the next group writes smem again
    }
    if (lane == 0 && o < g.num_out) finish(op, g, o, acc);
  }
}

template <class Op> __global__ void __launch_bounds__(256) reduce_cols_kernel(Op op, Geom g) {
  using Acc = typename Op::Acc;
  using In = typename Op::In;
  extern __shared__ __align__(16) unsigned char reduce_smem[];
  Acc* smem = reinterpret_cast<Acc*>(reduce_smem);
  const int x = int(threadIdx.x), y = int(threadIdx.y), tx = int(blockDim.x), ty = int(blockDim.y);
  const int64_t r0 = int64_t(blockIdx.y) * g.chunk;
  const int64_t r1 = g.R < r0 + g.chunk ? g.R : r0 + g.chunk;
  const int64_t groups = (g.num_out + tx - 1) / tx;
  const In* in = reinterpret_cast<const In*>(g.in);
  for (int64_t grp = blockIdx.x; grp < groups; grp += gridDim.x) {
    const int64_t o = grp * tx + x;
    Acc acc = op.init();
    if (o < g.num_out) {
      const In* q = in + start_of(g, o) + (r0 + y) * g.rstride;
      const int64_t step = int64_t(ty) * g.rstride;
      for (int64_t r = r0 + y; r < r1; r += ty, q += step) acc = op.reduce(acc, *q, r);
    }
    if (ty > 1) {
      smem[y * tx + x] = acc;
      __syncthreads();
      for (int s = ty / 2; s > 0; s >>= 1) {
        if (y < s) smem[y * tx + x] = op.combine(smem[y * tx + x], smem[(y + s) * tx + x]);
        __syncthreads();
      }
      if (y == 0) acc = smem[x];
      __syncthreads();  // the next group writes smem again
    }
    if (y == 0 && o < g.num_out) finish(op, g, o, acc);
  }
}

// Columns with V neighbouring outputs per thread (the sum and mean of a bias gradient: [N, C]
// summed over N): each row's V values arrive as one 16-byte load, four rows in flight per thread,
// where the scalar kernel above moves 2 or 4 bytes per load and leaves the memory system idle.
// The host takes this path only for one contiguous kept dim whose size and row stride are
// multiples of V, on a 16-byte aligned input (ReduceLaunch::col_vec).
template <class Op> constexpr bool vector_columns() {
  if constexpr (requires { Op::kVectorColumns; }) return Op::kVectorColumns;
  else return false;
}
template <class Op, int V> __global__ void __launch_bounds__(256) reduce_cols_vec_kernel(Op op, Geom g) {
  using Acc = typename Op::Acc;
  using In = typename Op::In;
  extern __shared__ __align__(16) unsigned char reduce_smem[];
  Acc* smem = reinterpret_cast<Acc*>(reduce_smem);
  const int x = int(threadIdx.x), y = int(threadIdx.y), tx = int(blockDim.x), ty = int(blockDim.y);
  const int64_t r0 = int64_t(blockIdx.y) * g.chunk;
  const int64_t r1 = g.R < r0 + g.chunk ? g.R : r0 + g.chunk;
  const int64_t nvec = g.num_out / V;
  const int64_t groups = (nvec + tx - 1) / tx;
  const int64_t step = int64_t(ty) * (g.rstride / V);  // in vectors
  for (int64_t grp = blockIdx.x; grp < groups; grp += gridDim.x) {
    const int64_t ov = grp * tx + x;
    Acc acc[V];
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] = op.init();
    if (ov < nvec) {
      const Vec<In, V>* q =
          reinterpret_cast<const Vec<In, V>*>(reinterpret_cast<const In*>(g.in) + ov * V + (r0 + y) * g.rstride);
      int64_t r = r0 + y;
      for (; r + 3 * int64_t(ty) < r1; r += 4 * int64_t(ty), q += 4 * step) {
        const Vec<In, V> a = q[0], b = q[step], c = q[2 * step], d = q[3 * step];
#pragma unroll
        for (int k = 0; k < V; ++k) {
          acc[k] = op.reduce(acc[k], a.v[k], r);
          acc[k] = op.reduce(acc[k], b.v[k], r + ty);
          acc[k] = op.reduce(acc[k], c.v[k], r + 2 * ty);
          acc[k] = op.reduce(acc[k], d.v[k], r + 3 * ty);
        }
      }
      for (; r < r1; r += ty, q += step) {
        const Vec<In, V> a = q[0];
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k] = op.reduce(acc[k], a.v[k], r);
      }
    }
    if (ty > 1) {
#pragma unroll
      for (int k = 0; k < V; ++k) smem[(y * tx + x) * V + k] = acc[k];
      __syncthreads();
      for (int s = ty / 2; s > 0; s >>= 1) {
        if (y < s)
#pragma unroll
          for (int k = 0; k < V; ++k)
            smem[(y * tx + x) * V + k] = op.combine(smem[(y * tx + x) * V + k], smem[((y + s) * tx + x) * V + k]);
        __syncthreads();
      }
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] = smem[x * V + k];
      __syncthreads();  // the next group writes smem again
    }
    if (y == 0 && ov < nvec)
#pragma unroll
      for (int k = 0; k < V; ++k) finish(op, g, ov * V + k, acc[k]);
  }
}

// A warp per output combines the nchunks partial accumulators ([chunk][output]).
inline constexpr int kFinishRows = 8;
template <class Op>
__global__ void __launch_bounds__(32 * kFinishRows)
    reduce_finish_kernel(Op op, const typename Op::Acc* partial, int64_t nchunks, int64_t num_out) {
  using Acc = typename Op::Acc;
  const int64_t groups = (num_out + kFinishRows - 1) / kFinishRows;
  for (int64_t grp = blockIdx.x; grp < groups; grp += gridDim.x) {
    const int64_t o = grp * kFinishRows + threadIdx.y;
    Acc acc = op.init();
    if (o < num_out)
      for (int64_t c = threadIdx.x; c < nchunks; c += 32) acc = op.combine(acc, partial[c * num_out + o]);
    for (int off = 16; off > 0; off >>= 1) acc = op.combine(acc, shfl_down(acc, off));
    if (threadIdx.x == 0 && o < num_out) op.store(o, acc);
  }
}

template <class Op> void run(const ReduceLaunch& L, const Op& op) {
  using Acc = typename Op::Acc;
  static_assert(sizeof(Acc) <= kReduceMaxAccBytes && alignof(Acc) <= 16, "accumulator too large for the scratch");
  static_assert(std::is_trivially_copyable_v<Acc>);
  if (L.num_out == 0) return;
  Geom g{};
  g.in = static_cast<const char*>(L.in);
  g.partial = static_cast<char*>(L.partial);
  g.num_out = L.num_out;
  g.R = L.R;
  g.rstride = L.rstride;
  g.chunk = L.chunk;
  g.nchunks = L.nchunks;
  g.to_partial = L.outer_red > 1;
  g.nkept = L.nkept;
  for (int d = 0; d < kReduceMaxKept; ++d) {
    g.ksize[d] = L.ksize[d];
    g.kstride[d] = L.kstride[d];
  }
  const dim3 block(unsigned(L.tx), unsigned(L.ty));
  const dim3 grid(unsigned(L.grid_x), unsigned(L.nchunks));
  if (L.columns && L.col_vec > 1) {
    constexpr int V = 16 / int(sizeof(typename Op::In));
    // (the host offers col_vec == V only to the ops with the vector kernel: anything else is a bug)
    if constexpr (vector_columns<Op>() && V > 1) {
      if (L.col_vec != V)
        throw_cuda_error(cudaErrorInvalidValue, "reduce_engine: col_vec != 16 / sizeof(In)", __FILE__, __LINE__);
      const size_t smem = L.ty > 1 ? size_t(L.tx) * L.ty * V * sizeof(Acc) : 0;
      reduce_cols_vec_kernel<Op, V><<<grid, block, smem, L.stream>>>(op, g);
    } else {
      throw_cuda_error(cudaErrorInvalidValue, "reduce_engine: vector columns asked of a reduction without them",
                       __FILE__, __LINE__);
    }
  } else if (L.columns) {
    const size_t smem = L.ty > 1 ? size_t(L.tx) * L.ty * sizeof(Acc) : 0;
    reduce_cols_kernel<Op><<<grid, block, smem, L.stream>>>(op, g);
  } else {
    const size_t smem = L.tx > 32 ? size_t(L.ty) * (L.tx / 32) * sizeof(Acc) : 0;
    reduce_rows_kernel<Op><<<grid, block, smem, L.stream>>>(op, g);
  }
  EMBER_CUDA_CHECK_LAUNCH();
  if (L.nchunks > 1 || L.outer_red > 1) {
    // [chunk][output] partials: the grid.y chunks, or the outer reduced dim of two levels.
    const int64_t chunks = L.outer_red > 1 ? L.outer_red : L.nchunks;
    const int64_t outputs = L.num_out / (L.outer_red > 1 ? L.outer_red : 1);
    const unsigned blocks = grid_for((outputs + kFinishRows - 1) / kFinishRows);
    reduce_finish_kernel<Op><<<blocks, dim3(32, kFinishRows), 0, L.stream>>>(op, static_cast<const Acc*>(L.partial),
                                                                               chunks, outputs);
    EMBER_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace ember::cuda::reduce_engine
