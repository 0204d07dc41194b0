// CUDA kernels of the fused normalisations (layer norm, RMS norm, batch norm, channel affine)
// and their backwards; the host side is norm_ops.cpp. Statistics are exact two-pass ones, as
// the CPU kernels (src/cpu/norm_kernels.cpp): the mean first, then the sum of squared
// deviations from it, so a large mean costs no precision (a one-pass sum of squares would
// cancel). float16/bfloat16 are loaded and stored as themselves and computed in float.
//   rows (layer/RMS norm): a block per row; rows of up to 4096 values are read once into
//     registers, longer ones re-read from L1/L2 by each pass; the weight/bias gradients are
//     column sums over row chunks, finished by the host.
//   channels (batch norm): (channel, split) blocks sum their share of the channel's planes * s
//     values into partials; one thread per channel combines them; an elementwise pass applies
//     y = x * scale[c] + shift[c] (or dx = k0 g + k1 (x - mean) + k2).
#include <algorithm>

#include "cuda/norm_launchers.h"
#include "cuda/reduce_launchers.h"  // pow2_ceil
#include "cuda/reduce_device.cuh"

namespace ember::cuda {
namespace {

// The sum of v over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
// `scratch` holds 32 values; the block must not be inside another block_sum when it starts.
template <class C> __device__ C block_sum(C v, C* scratch) {
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5, warps = int(blockDim.x) >> 5;
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  __syncthreads();  // scratch may still be read by the previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : C(0);
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

template <class C> __device__ __forceinline__ C rsqrt_t(C v) {
  if constexpr (std::is_same_v<C, float>) return rsqrtf(v);
  else return rsqrt(v);
}

// ---------------------------------------------------------------- rows: layer norm, RMS norm
// The elementwise ends of a row, shared by the register and the re-reading kernels: y from the
// normalised value (times w[j], plus b[j] where given), and the backward's g * w[j].
template <class C> __device__ __forceinline__ C affine_at(C xhat, const C* w, const C* b, int j) {
  if (w) xhat *= w[j];
  if (b) xhat += b[j];
  return xhat;
}
template <class T, class C> __device__ __forceinline__ C weighted_grad(const T* gr, const C* w, int j) {
  return w ? convert<C>(gr[j]) * w[j] : convert<C>(gr[j]);
}

template <class T, bool kCenter>
__global__ void row_norm_kernel(const T* __restrict x, T* __restrict y, compute_t<T>* mean_out, compute_t<T>* rstd_out,
                                const compute_t<T>* __restrict w, const compute_t<T>* __restrict b, int64_t m, int n,
                                double eps) {
  using C = compute_t<T>;
  __shared__ C scratch[32];
  for (int64_t row = blockIdx.x; row < m; row += gridDim.x) {
    const T* xr = x + row * n;
    T* yr = y + row * n;
    C mu = C(0);
    if constexpr (kCenter) {
      C s = C(0);
      for (int j = threadIdx.x; j < n; j += blockDim.x) s += convert<C>(xr[j]);
      mu = block_sum(s, scratch) / C(n);
    }
    C q = C(0);
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const C d = convert<C>(xr[j]) - mu;
      q += d * d;
    }
    const C rs = rsqrt_t(block_sum(q, scratch) / C(n) + C(eps));
    if (threadIdx.x == 0) {
      if constexpr (kCenter) mean_out[row] = mu;
      rstd_out[row] = rs;
    }
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      yr[j] = convert<T>(affine_at((convert<C>(xr[j]) - mu) * rs, w, b, j));
    }
  }
}

int row_threads(int64_t n) { return int(std::min<int64_t>(512, std::max<int64_t>(32, pow2_ceil((n + 3) / 4)))); }

// Rows of up to kPer * kRegThreads values: the row is read from memory once into registers
// (element j = k * kRegThreads + thread, coalesced), both statistics and the output come from
// there. Most models' widths (768 .. 4096) take this path.
inline constexpr int kRegThreads = 128;

template <class T, bool kCenter, int kPer>
__global__ void __launch_bounds__(kRegThreads)
    row_norm_regs_kernel(const T* __restrict x, T* __restrict y, compute_t<T>* mean_out, compute_t<T>* rstd_out,
                         const compute_t<T>* __restrict w, const compute_t<T>* __restrict b, int64_t m, int n,
                         double eps) {
  using C = compute_t<T>;
  __shared__ C scratch[32];
  for (int64_t row = blockIdx.x; row < m; row += gridDim.x) {
    const T* xr = x + row * n;
    C v[kPer];
    C s = C(0);
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int j = k * kRegThreads + int(threadIdx.x);
      v[k] = j < n ? convert<C>(xr[j]) : C(0);
      s += v[k];
    }
    const C mu = kCenter ? block_sum(s, scratch) / C(n) : C(0);
    C q = C(0);
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int j = k * kRegThreads + int(threadIdx.x);
      const C d = j < n ? v[k] - mu : C(0);
      q += d * d;
    }
    const C rs = rsqrt_t(block_sum(q, scratch) / C(n) + C(eps));
    if (threadIdx.x == 0) {
      if constexpr (kCenter) mean_out[row] = mu;
      rstd_out[row] = rs;
    }
    T* yr = y + row * n;
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int j = k * kRegThreads + int(threadIdx.x);
      if (j < n) yr[j] = convert<T>(affine_at((v[k] - mu) * rs, w, b, j));
    }
  }
}

// layer_norm_dx_kernel's formula with the row's g (times w) and x held in registers.
template <class T, int kPer>
__global__ void __launch_bounds__(kRegThreads)
    layer_norm_dx_regs_kernel(const T* __restrict g, const T* __restrict x, const compute_t<T>* __restrict mean,
                              const compute_t<T>* __restrict rstd, const compute_t<T>* __restrict w, T* __restrict dx,
                              int64_t m, int n) {
  using C = compute_t<T>;
  __shared__ C scratch[32];
  for (int64_t row = blockIdx.x; row < m; row += gridDim.x) {
    const T* gr = g + row * n;
    const T* xr = x + row * n;
    const C mu = mean[row], rs = rstd[row];
    C gx[kPer], xh[kPer];
    C sg = C(0), sgx = C(0);
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int j = k * kRegThreads + int(threadIdx.x);
      gx[k] = j < n ? weighted_grad(gr, w, j) : C(0);
      xh[k] = j < n ? (convert<C>(xr[j]) - mu) * rs : C(0);
      sg += gx[k];
      sgx += gx[k] * xh[k];
    }
    sg = block_sum(sg, scratch) / C(n);
    sgx = block_sum(sgx, scratch) / C(n);
    T* dr = dx + row * n;
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int j = k * kRegThreads + int(threadIdx.x);
      if (j < n) dr[j] = convert<T>(rs * (gx[k] - sg - xh[k] * sgx));
    }
  }
}

// Calls f.template operator()<kPer>() with the smallest register count that holds n values.
template <class F> bool with_row_regs(int64_t n, F&& f) {
  if (n <= 2 * kRegThreads) f.template operator()<2>();
  else if (n <= 4 * kRegThreads) f.template operator()<4>();
  else if (n <= 8 * kRegThreads) f.template operator()<8>();
  else if (n <= 16 * kRegThreads) f.template operator()<16>();
  else if (n <= 32 * kRegThreads) f.template operator()<32>();
  else return false;
  return true;
}

// dx = rstd * (gx - sum(gx) / n - xh * sum(gx * xh) / n), gx = g * w, xh = (x - mean) * rstd.
template <class T>
__global__ void layer_norm_dx_kernel(const T* __restrict g, const T* __restrict x, const compute_t<T>* __restrict mean,
                                     const compute_t<T>* __restrict rstd, const compute_t<T>* __restrict w,
                                     T* __restrict dx, int64_t m, int n) {
  using C = compute_t<T>;
  __shared__ C scratch[32];
  for (int64_t row = blockIdx.x; row < m; row += gridDim.x) {
    const T* gr = g + row * n;
    const T* xr = x + row * n;
    const C mu = mean[row], rs = rstd[row];
    C sg = C(0), sgx = C(0);
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const C gx = weighted_grad(gr, w, j);
      sg += gx;
      sgx += gx * (convert<C>(xr[j]) - mu) * rs;
    }
    sg = block_sum(sg, scratch) / C(n);
    sgx = block_sum(sgx, scratch) / C(n);
    T* dr = dx + row * n;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const C gx = weighted_grad(gr, w, j);
      const C xh = (convert<C>(xr[j]) - mu) * rs;
      dr[j] = convert<T>(rs * (gx - sg - xh * sgx));
    }
  }
}

// Column sums of g * xh (dweight) and g (dbias) over the rows of chunk blockIdx.y: a 32 x 8
// block, threadIdx.x along columns (coalesced), threadIdx.y along rows, merged in shared memory.
template <class T>
__global__ void layer_norm_dwdb_kernel(const T* __restrict g, const T* __restrict x, const compute_t<T>* __restrict mean,
                                       const compute_t<T>* __restrict rstd, compute_t<T>* dw_partial,
                                       compute_t<T>* db_partial, int64_t m, int n, int64_t rows_per_chunk) {
  using C = compute_t<T>;
  __shared__ C sw[8][33], sb[8][33];
  const int j = int(blockIdx.x) * 32 + int(threadIdx.x);
  const int64_t r0 = int64_t(blockIdx.y) * rows_per_chunk, r1 = std::min<int64_t>(m, r0 + rows_per_chunk);
  C aw = C(0), ab = C(0);
  if (j < n)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {
      const C gv = convert<C>(g[r * n + j]);
      ab += gv;
      if (dw_partial) aw += gv * (convert<C>(x[r * n + j]) - mean[r]) * rstd[r];
    }
  sw[threadIdx.y][threadIdx.x] = aw;
  sb[threadIdx.y][threadIdx.x] = ab;
  __syncthreads();
  if (threadIdx.y == 0 && j < n) {
    for (int k = 1; k < 8; ++k) {
      aw += sw[k][threadIdx.x];
      ab += sb[k][threadIdx.x];
    }
    if (dw_partial) dw_partial[int64_t(blockIdx.y) * n + j] = aw;
    if (db_partial) db_partial[int64_t(blockIdx.y) * n + j] = ab;
  }
}

// ---------------------------------------------------------------- channels: batch norm
// Element k (0 <= k < planes * s) of channel ch lives at (k / s * c + ch) * s + k % s.
template <class I> __device__ __forceinline__ I channel_offset(I k, I ch, I c, I s) {
  const I p = k / s;
  return (p * c + ch) * s + (k - p * s);
}

// Partial sums of channel blockIdx.x over split blockIdx.y: kMode 0: x; 1: (x - mean)^2;
// 2: g and g * (x - mean). partial[(split * c + ch) * 2 + {0, 1}].
template <class T, class I, int kMode>
__global__ void channel_sums_kernel(const T* __restrict x, const T* __restrict g, const compute_t<T>* __restrict mean,
                                    compute_t<T>* partial, I c, I s, I total, I per_split) {
  using C = compute_t<T>;
  __shared__ C scratch[32];
  const I ch = I(blockIdx.x), split = I(blockIdx.y);
  const I k0 = split * per_split, k1 = k0 + per_split < total ? k0 + per_split : total;
  const C mu = kMode == 0 ? C(0) : mean[ch];
  C a = C(0), b = C(0);
  for (I k = k0 + I(threadIdx.x); k < k1; k += I(blockDim.x)) {
    const I off = channel_offset(k, ch, c, s);
    if constexpr (kMode == 0) {
      a += convert<C>(x[off]);
    } else if constexpr (kMode == 1) {
      const C d = convert<C>(x[off]) - mu;
      a += d * d;
    } else {
      const C gv = convert<C>(g[off]);
      a += gv;
      b += gv * (convert<C>(x[off]) - mu);
    }
  }
  a = block_sum(a, scratch);
  if constexpr (kMode == 2) b = block_sum(b, scratch);
  if (threadIdx.x == 0) {
    partial[(int64_t(split) * c + ch) * 2] = a;
    partial[(int64_t(split) * c + ch) * 2 + 1] = b;
  }
}

template <class C> __device__ C sum_splits(const C* partial, int64_t ch, int64_t c, int64_t splits, int which) {
  C v = C(0);
  for (int64_t sp = 0; sp < splits; ++sp) v += partial[(sp * c + ch) * 2 + which];
  return v;
}

template <class C> __global__ void bn_mean_kernel(const C* partial, C* mean, int64_t c, int64_t splits, double count) {
  const int64_t ch = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch < c) mean[ch] = count > 0 ? C(double(sum_splits(partial, ch, c, splits, 0)) / count) : C(NAN);
}

// invstd, and y = x * scale + shift with scale = invstd * w, shift = b - mean * scale (coef[0..2c)).
template <class C>
__global__ void bn_invstd_kernel(const C* partial, const C* mean, C* invstd, const C* w, const C* b, C* coef, int64_t c,
                                 int64_t splits, double count, double eps) {
  const int64_t ch = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  const double var = count > 0 ? double(sum_splits(partial, ch, c, splits, 0)) / count : NAN;
  const double rs = 1.0 / sqrt(var + eps);
  const double wc = w ? double(w[ch]) : 1.0, bc = b ? double(b[ch]) : 0.0;
  invstd[ch] = C(rs);
  coef[ch] = C(rs * wc);
  coef[c + ch] = C(bc - double(mean[ch]) * rs * wc);
}

// dweight = invstd * sum(g (x - mean)), dbias = sum(g); dx = k0 g + k1 (x - mean) + k2 with
// k0 = w invstd, k1 = -w invstd^2 dweight / count, k2 = -w invstd dbias / count (coef[0..3c)).
template <class C>
__global__ void bn_backward_coef_kernel(const C* partial, const C* invstd, const C* w, C* dweight, C* dbias, C* coef,
                                        int64_t c, int64_t splits, double count) {
  const int64_t ch = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  const double sg = double(sum_splits(partial, ch, c, splits, 0)), sgc = double(sum_splits(partial, ch, c, splits, 1));
  const double r = double(invstd[ch]), wc = w ? double(w[ch]) : 1.0;
  const double sxh = r * sgc;
  if (dweight) dweight[ch] = C(sxh);
  if (dbias) dbias[ch] = C(sg);
  coef[ch] = C(wc * r);
  coef[c + ch] = C(-wc * r * r * sxh / count);
  coef[2 * c + ch] = C(-wc * r * sg / count);
}

// y = x * A[ch] + B[ch] over every element (ch = (idx / s) % c).
template <class T, class I>
__global__ void channel_apply_kernel(const T* __restrict x, T* __restrict y, const compute_t<T>* __restrict A,
                                     const compute_t<T>* __restrict B, I c, I s, I total) {
  using C = compute_t<T>;
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += I(gridDim.x) * blockDim.x) {
    const I ch = (i / s) % c;
    y[i] = convert<T>(convert<C>(x[i]) * A[ch] + B[ch]);
  }
}

template <class T, class I>
__global__ void bn_dx_kernel(const T* __restrict g, const T* __restrict x, T* __restrict dx,
                             const compute_t<T>* __restrict mean, const compute_t<T>* __restrict coef, I c, I s,
                             I total) {
  using C = compute_t<T>;
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += I(gridDim.x) * blockDim.x) {
    const I ch = (i / s) % c;
    dx[i] = convert<T>(coef[ch] * convert<C>(g[i]) + coef[c + ch] * (convert<C>(x[i]) - mean[ch]) + coef[2 * c + ch]);
  }
}

constexpr int kChannelThreads = 256;
unsigned elementwise_blocks(int64_t total) { return grid_for((total + 255) / 256 < 65536 * 8 ? (total + 255) / 256 : 65536 * 8); }

// Runs f.template operator()<T, I>() with 32-bit indices when every offset fits.
template <class F> void with_index(int8_t code, const char* op, int64_t numel, F&& f) {
  visit_storage<kStoreFloat>(code, op, [&]<class T>() {
    if (numel < (int64_t(1) << 31)) f.template operator()<T, uint32_t>();
    else f.template operator()<T, uint64_t>();
  });
}

}  // namespace

void launch_row_norm(const RowNormLaunch& L) {
  if (L.m == 0) return;
  visit_storage<kStoreFloat>(L.code, L.mean ? "native_layer_norm_cuda" : "native_rms_norm_cuda", [&]<class T>() {
    using C = compute_t<T>;
    const unsigned blocks = grid_for(L.m);
    auto* x = static_cast<const T*>(L.x);
    auto* y = static_cast<T*>(L.y);
    auto* mean = static_cast<C*>(L.mean);
    auto* rstd = static_cast<C*>(L.rstd);
    auto* w = static_cast<const C*>(L.weight);
    auto* b = static_cast<const C*>(L.bias);
    const int n = int(L.n);
    const bool in_regs = with_row_regs(L.n, [&]<int kPer>() {
      if (L.mean)
        row_norm_regs_kernel<T, true, kPer><<<blocks, kRegThreads, 0, L.stream>>>(x, y, mean, rstd, w, b, L.m, n, L.eps);
      else
        row_norm_regs_kernel<T, false, kPer><<<blocks, kRegThreads, 0, L.stream>>>(x, y, nullptr, rstd, w, b, L.m, n, L.eps);
    });
    if (!in_regs) {
      const unsigned threads = unsigned(row_threads(L.n));
      if (L.mean) row_norm_kernel<T, true><<<blocks, threads, 0, L.stream>>>(x, y, mean, rstd, w, b, L.m, n, L.eps);
      else row_norm_kernel<T, false><<<blocks, threads, 0, L.stream>>>(x, y, nullptr, rstd, w, b, L.m, n, L.eps);
    }
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

int64_t layer_norm_backward_chunks(int64_t m, int64_t n, int sms) {
  const int64_t col_blocks = std::max<int64_t>(1, (n + 31) / 32);
  const int64_t want = std::max<int64_t>(1, (4 * int64_t(sms) + col_blocks - 1) / col_blocks);
  return std::clamp<int64_t>(want, 1, std::min<int64_t>(65535, std::max<int64_t>(1, (m + 31) / 32)));
}

void launch_layer_norm_backward(const RowNormBackwardLaunch& L) {
  if (L.m == 0) return;
  visit_storage<kStoreFloat>(L.code, "native_layer_norm_backward_cuda", [&]<class T>() {
    using C = compute_t<T>;
    auto* g = static_cast<const T*>(L.g);
    auto* x = static_cast<const T*>(L.x);
    auto* mean = static_cast<const C*>(L.mean);
    auto* rstd = static_cast<const C*>(L.rstd);
    if (L.dx) {
      auto* w = static_cast<const C*>(L.weight);
      auto* dx = static_cast<T*>(L.dx);
      const bool in_regs = with_row_regs(L.n, [&]<int kPer>() {
        layer_norm_dx_regs_kernel<T, kPer><<<grid_for(L.m), kRegThreads, 0, L.stream>>>(g, x, mean, rstd, w, dx, L.m,
                                                                                        int(L.n));
      });
      if (!in_regs)
        layer_norm_dx_kernel<T><<<grid_for(L.m), unsigned(row_threads(L.n)), 0, L.stream>>>(g, x, mean, rstd, w, dx,
                                                                                            L.m, int(L.n));
      EMBER_CUDA_CHECK_LAUNCH();
    }
    if (L.dw_partial || L.db_partial) {
      const int64_t per = (L.m + L.chunks - 1) / L.chunks;
      const dim3 grid(unsigned((L.n + 31) / 32), unsigned(L.chunks));
      layer_norm_dwdb_kernel<T><<<grid, dim3(32, 8), 0, L.stream>>>(g, x, mean, rstd, static_cast<C*>(L.dw_partial),
                                                                     static_cast<C*>(L.db_partial), L.m, int(L.n), per);
      EMBER_CUDA_CHECK_LAUNCH();
    }
  });
}

int64_t batch_norm_splits(int64_t planes, int64_t c, int64_t s, int sms) {
  const int64_t total = planes * s;
  const int64_t want = std::max<int64_t>(1, (8 * int64_t(sms) + c - 1) / std::max<int64_t>(c, 1));
  return std::clamp<int64_t>(want, 1, std::min<int64_t>(65535, std::max<int64_t>(1, total / 4096)));
}

void launch_batch_norm(const ChannelLaunch& L) {
  if (L.c == 0) return;
  const int64_t total = L.planes * L.s, numel = total * L.c;
  with_index(L.code, "native_batch_norm_cuda", numel, [&]<class T, class I>() {
    using C = compute_t<T>;
    auto* x = static_cast<const T*>(L.x);
    auto* partial = static_cast<C*>(L.partial);
    auto* mean = static_cast<C*>(L.mean);
    auto* coef = static_cast<C*>(L.coef);
    const I per = I((total + L.splits - 1) / L.splits);
    const dim3 grid(unsigned(L.c), unsigned(L.splits));
    const unsigned fin = unsigned((L.c + 127) / 128);
    channel_sums_kernel<T, I, 0><<<grid, kChannelThreads, 0, L.stream>>>(x, nullptr, nullptr, partial, I(L.c), I(L.s),
                                                                         I(total), per);
    bn_mean_kernel<C><<<fin, 128, 0, L.stream>>>(partial, mean, L.c, L.splits, double(total));
    channel_sums_kernel<T, I, 1><<<grid, kChannelThreads, 0, L.stream>>>(x, nullptr, mean, partial, I(L.c), I(L.s),
                                                                         I(total), per);
    bn_invstd_kernel<C><<<fin, 128, 0, L.stream>>>(partial, mean, static_cast<C*>(L.invstd),
                                                   static_cast<const C*>(L.weight), static_cast<const C*>(L.bias), coef,
                                                   L.c, L.splits, double(total), L.eps);
    if (numel > 0)
      channel_apply_kernel<T, I><<<elementwise_blocks(numel), 256, 0, L.stream>>>(x, static_cast<T*>(L.y), coef,
                                                                                  coef + L.c, I(L.c), I(L.s), I(numel));
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

void launch_batch_norm_backward(const ChannelLaunch& L) {
  if (L.c == 0) return;
  const int64_t total = L.planes * L.s, numel = total * L.c;
  with_index(L.code, "native_batch_norm_backward_cuda", numel, [&]<class T, class I>() {
    using C = compute_t<T>;
    auto* x = static_cast<const T*>(L.x);
    auto* g = static_cast<const T*>(L.g);
    auto* partial = static_cast<C*>(L.partial);
    auto* mean = static_cast<const C*>(L.mean);
    auto* coef = static_cast<C*>(L.coef);
    const I per = I((total + L.splits - 1) / L.splits);
    const dim3 grid(unsigned(L.c), unsigned(L.splits));
    channel_sums_kernel<T, I, 2><<<grid, kChannelThreads, 0, L.stream>>>(x, g, mean, partial, I(L.c), I(L.s), I(total),
                                                                         per);
    bn_backward_coef_kernel<C><<<unsigned((L.c + 127) / 128), 128, 0, L.stream>>>(
        partial, static_cast<const C*>(L.invstd), static_cast<const C*>(L.weight), static_cast<C*>(L.dweight),
        static_cast<C*>(L.dbias), coef, L.c, L.splits, double(total));
    if (L.y && numel > 0)
      bn_dx_kernel<T, I><<<elementwise_blocks(numel), 256, 0, L.stream>>>(g, x, static_cast<T*>(L.y), mean, coef, I(L.c),
                                                                          I(L.s), I(numel));
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

void launch_channel_affine(const ChannelLaunch& L) {
  const int64_t numel = L.planes * L.c * L.s;
  if (numel == 0) return;
  with_index(L.code, "channel_affine_cuda", numel, [&]<class T, class I>() {
    using C = compute_t<T>;
    channel_apply_kernel<T, I><<<elementwise_blocks(numel), 256, 0, L.stream>>>(
        static_cast<const T*>(L.x), static_cast<T*>(L.y), static_cast<const C*>(L.weight), static_cast<const C*>(L.bias),
        I(L.c), I(L.s), I(numel));
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace ember::cuda
