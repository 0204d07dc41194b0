// CUDA flash attention (forward and backward) for float16/bfloat16, head dims 64 and 128: the
// T x T score matrix is never stored; float accumulation throughout. Host side:
// flash_attention_ops.cpp.
//
// Forward (FlashAttention-2's order, mma.sync through PTX): a block of 4 warps owns 128 query
// rows of one head, each warp 32 of them (two m16 tiles, so each K / V fragment read from
// shared memory feeds two MMAs; head dim 64 keeps Q's fragments in registers). 64-key tiles of
// K and V stream through two shared-memory stages (cp.async: the next tile loads while this
// one is used). Per tile: S = Q K^T into registers, the online softmax in registers (running
// max m and sum l in base 2; the output accumulator rescaled by exp2(m_old - m_new)), P
// rounded to the storage type (as FlashAttention) is used directly as the A operand of P V.
// Out = acc / l and lse = log(sum exp(scaled scores)) per row, kept for the backward.
//
// Backward (FlashAttention-2's order, the same instructions): a block of 4 warps owns 64 keys
// of one head, each warp 16; dK and dV accumulate in registers over every 64-query tile (Q and
// dO stream through two cp.async stages): S^T = K_w Q^T and dP^T = V_w dO^T, P^T = exp(S^T -
// lse), dS^T = P^T (dP^T - rowdot), then dV += P^T dO and dK += dS^T Q with P^T and dS^T as A
// operands straight from registers. dQ += dS K needs every warp's keys, so dS^T goes through
// shared memory and the warps share out the 64 x D dQ tile, each unit summed over the block's
// 64 keys into a zeroed float buffer with atomics (as FlashAttention-2); a last kernel scales
// and rounds it.
// Causal masks are top-left aligned (query i sees keys j <= i), as torch's is_causal; tiles
// wholly above the diagonal are skipped.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/flash_attention_launchers.h"
#include "cuda/reduce_device.cuh"

namespace ember::cuda {
namespace {

constexpr int kTile = 64;  // keys (forward) / queries (backward) per step
constexpr float kLog2e = 1.4426950408889634f;

template <int D> constexpr int ld_of() { return D + 8; }  // row stride of D-wide tiles in shared memory

// ---------------------------------------------------------------- forward
// Tensor-core instructions through PTX (mma.sync m16n8k16, ldmatrix, cp.async): their register
// layouts are documented, so the scores, the probabilities and the output accumulator stay in
// registers (WMMA's fragment layout is opaque, which forced shared-memory round trips).
// m16n8k16 fragments, g = lane / 4, t = lane % 4: A (16x16) a0 (row g, cols 2t, 2t+1), a1 (row g+8),
// a2 (row g, cols 2t+8, 2t+9), a3 (row g+8, cols 2t+8..); B (16x8) b0 (rows 2t, 2t+1, col g),
// b1 (rows 2t+8, 2t+9); C (16x8 float) c0, c1 (row g, cols 2t, 2t+1), c2, c3 (row g+8).
__device__ __forceinline__ uint32_t smem_addr(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
template <class T> __device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Two floats as one register of the storage type (the lower column in the low half, as the
// fragments want).
template <class T> __device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  } else {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
}
// Columns col, col + 1 of a row of a [*, D] matrix in one 4-byte store (a C fragment's pair).
template <class T, int D> __device__ __forceinline__ void store_pair(T* m, int row, int col, float lo, float hi) {
  *reinterpret_cast<uint32_t*>(m + int64_t(row) * D + col) = pack2<T>(lo, hi);
}
// 16 bytes global -> shared without a register round trip; zeros when !valid.
__device__ __forceinline__ void cp_async16(void* s, const void* g, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(s)), "l"(g), "r"(valid ? 16 : 0));
}
// 2^x in one MUFU instruction: exp2f without fast-math is ex2.approx plus a denormal-range fix-up
// (three more FP32 instructions per value), which the softmax, bound by these instructions beside
// the tensor cores, cannot afford; flushed denormal probabilities are below bf16's resolution.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
// 4 bytes global -> shared (cached in L1: every block of a head reads the same row statistics).
__device__ __forceinline__ void cp_async4(void* s, const void* g, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(s)), "l"(g), "r"(valid ? 4 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_one() { asm volatile("cp.async.wait_group 1;\n" ::); }

constexpr int kFwdWarps = 4;
constexpr int kFwdM = 2;  // m16 tiles per warp: each K / V fragment read from shared memory feeds two MMAs
constexpr int kFwdThreads = 32 * kFwdWarps;
constexpr int kFwdRows = 16 * kFwdM * kFwdWarps;  // 128 query rows a block

// The first element of head h of a strided input.
template <class T> __device__ __forceinline__ const T* head_start(const T* base, const HeadLayout& at, int64_t h, int64_t inner_heads) {
  return base + (h / inner_heads) * at.outer + (h % inner_heads) * at.inner;
}

// Rows [row0, row0 + n) of a [rows, D] matrix (rows `stride` elements apart) into shared memory (row stride D + 8: the 8 rows
// an ldmatrix reads fall in distinct banks), asynchronously; rows past the end are zeros.
template <class T, int D, int kThreadsHere>
__device__ __forceinline__ void load_rows_async(T* s, const T* g, int64_t stride, int64_t row0, int n, int64_t rows) {
  constexpr int kChunks = D * int(sizeof(T)) / 16, kPer = 16 / int(sizeof(T));
  for (int i = threadIdx.x; i < n * kChunks; i += kThreadsHere) {
    const int r = i / kChunks, c = (i % kChunks) * kPer;
    const bool valid = row0 + r < rows;
    cp_async16(s + r * ld_of<D>() + c, g + (valid ? (row0 + r) * stride + c : 0), valid);
  }
}

template <class T, int D> constexpr size_t forward_smem() {
  return size_t(kFwdRows + 4 * kTile) * ld_of<D>() * sizeof(T);  // Q, then two stages of K and V
}

template <class T, int D>
__global__ void __launch_bounds__(kFwdThreads)
    flash_forward_kernel(const T* __restrict q, const T* __restrict k, const T* __restrict v, T* __restrict out,
                         float* __restrict lse, HeadLayout q_at, HeadLayout k_at, HeadLayout v_at, int64_t inner_heads,
                         int tq, int tk, float scale, bool causal) {
  constexpr int ld = ld_of<D>();
  // Head dim 64 keeps the warp's Q fragments in registers; 128 would not leave room for the
  // accumulators, so they are re-read from shared memory per tile.
  constexpr bool kQInRegs = D <= 64;
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem);
  T* kv = qs + kFwdRows * ld;  // stage s: K at kv + s * 2 * kTile * ld, V after it
  const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31, g = lane >> 2, t4 = lane & 3;
  const int64_t head = blockIdx.y;
  // Causal blocks further down see more keys: they start first, so the short ones fill the tail.
  const int q0 = int(causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x) * kFwdRows;
  const T* kh = head_start(k, k_at, head, inner_heads);
  const T* vh = head_start(v, v_at, head, inner_heads);
  int kb_end = (tk + kTile - 1) / kTile;
  if (causal) kb_end = min(kb_end, (q0 + kFwdRows - 1) / kTile + 1);

  load_rows_async<T, D, kFwdThreads>(qs, head_start(q, q_at, head, inner_heads), q_at.row, q0, kFwdRows, tq);
  load_rows_async<T, D, kFwdThreads>(kv, kh, k_at.row, 0, kTile, tk);
  load_rows_async<T, D, kFwdThreads>(kv + kTile * ld, vh, v_at.row, 0, kTile, tk);
  cp_async_commit();

  const int q_lo = q0 + warp * 16 * kFwdM;  // the warp's first query row; m-tile mi holds rows
  // q_lo + 16 mi + g (c0, c1: "a") and + 8 (c2, c3: "b")
  const float sl2 = scale * kLog2e;
  const int qa_row = warp * 16 * kFwdM + (lane & 7) + ((lane >> 3) & 1) * 8, qa_col = (lane >> 4) * 8;
  uint32_t qf[kQInRegs ? kFwdM : 1][kQInRegs ? D / 16 : 1][4];
  float o[kFwdM][D / 8][4];
  float m_a[kFwdM], m_b[kFwdM], l_a[kFwdM], l_b[kFwdM];  // l: this thread's share of the row sums
#pragma unroll
  for (int mi = 0; mi < kFwdM; ++mi) {
    m_a[mi] = m_b[mi] = -INFINITY;
    l_a[mi] = l_b[mi] = 0.f;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) o[mi][n][0] = o[mi][n][1] = o[mi][n][2] = o[mi][n][3] = 0.f;
  }

  for (int kb = 0; kb < kb_end; ++kb) {
    const T* ks = kv + (kb & 1) * 2 * kTile * ld;
    const T* vs = ks + kTile * ld;
    if (kb + 1 < kb_end) {  // the next tiles load while this one is used
      T* nk = kv + ((kb + 1) & 1) * 2 * kTile * ld;
      load_rows_async<T, D, kFwdThreads>(nk, kh, k_at.row, int64_t(kb + 1) * kTile, kTile, tk);
      load_rows_async<T, D, kFwdThreads>(nk + kTile * ld, vh, v_at.row, int64_t(kb + 1) * kTile, kTile, tk);
    }
    cp_async_commit();
    cp_async_wait_one();
    __syncthreads();
    if constexpr (kQInRegs) {
      if (kb == 0) {
#pragma unroll
        for (int mi = 0; mi < kFwdM; ++mi)
#pragma unroll
          for (int kk = 0; kk < D / 16; ++kk) ldmatrix_x4(qf[mi][kk], qs + (qa_row + mi * 16) * ld + kk * 16 + qa_col);
      }
    }
    // S = Q K^T: per m-tile, 8 tiles of 8 keys
    float s[kFwdM][8][4];
#pragma unroll
    for (int mi = 0; mi < kFwdM; ++mi)
#pragma unroll
      for (int j = 0; j < 8; ++j) s[mi][j][0] = s[mi][j][1] = s[mi][j][2] = s[mi][j][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t qx[kFwdM][4];
      if constexpr (!kQInRegs) {
#pragma unroll
        for (int mi = 0; mi < kFwdM; ++mi) ldmatrix_x4(qx[mi], qs + (qa_row + mi * 16) * ld + kk * 16 + qa_col);
      }
#pragma unroll
      for (int nj = 0; nj < 4; ++nj) {
        uint32_t b[4];
        ldmatrix_x4(b, ks + (nj * 16 + (lane & 7) + (lane >> 4) * 8) * ld + kk * 16 + ((lane >> 3) & 1) * 8);
#pragma unroll
        for (int mi = 0; mi < kFwdM; ++mi) {
          const uint32_t(&a)[4] = kQInRegs ? qf[mi][kQInRegs ? kk : 0] : qx[mi];
          mma_16816<T>(s[mi][2 * nj], a, b[0], b[1]);
          mma_16816<T>(s[mi][2 * nj + 1], a, b[2], b[3]);
        }
      }
    }
    // online softmax in base 2 per m-tile (a quad of lanes shares a row); only tiles that cross
    // the causal diagonal or the end of the keys test positions
    const int k0 = kb * kTile;
    const bool edge = k0 + kTile > tk || (causal && k0 + kTile - 1 > q_lo);
    uint32_t pa[kFwdM][4][4];  // P as the A operand of P V: k-step tt covers keys 16 tt .. 16 tt + 15
#pragma unroll
    for (int mi = 0; mi < kFwdM; ++mi) {
      const int row_a = q_lo + mi * 16 + g, row_b = row_a + 8;
      if (edge) {
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = k0 + j * 8 + t4 * 2 + (e & 1);
            if (key >= tk || (causal && key > (e < 2 ? row_a : row_b))) s[mi][j][e] = -INFINITY;
          }
      }
      float mx_a = -INFINITY, mx_b = -INFINITY;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        mx_a = fmaxf(mx_a, fmaxf(s[mi][j][0], s[mi][j][1]));
        mx_b = fmaxf(mx_b, fmaxf(s[mi][j][2], s[mi][j][3]));
      }
#pragma unroll
      for (int off = 1; off <= 2; off <<= 1) {
        mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, off));
        mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, off));
      }
      // scores scale by sl2 > 0 inside exp2 (one fma per value): the max commutes with it
      const float mn_a = fmaxf(m_a[mi], mx_a * sl2), mn_b = fmaxf(m_b[mi], mx_b * sl2);
      const float base_a = mn_a == -INFINITY ? 0.f : mn_a, base_b = mn_b == -INFINITY ? 0.f : mn_b;
      const float alpha_a = fast_exp2(m_a[mi] - base_a), alpha_b = fast_exp2(m_b[mi] - base_b);
      m_a[mi] = mn_a;
      m_b[mi] = mn_b;
      float sum_a = 0.f, sum_b = 0.f;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float p0 = fast_exp2(fmaf(s[mi][j][0], sl2, -base_a)), p1 = fast_exp2(fmaf(s[mi][j][1], sl2, -base_a));
        const float p2 = fast_exp2(fmaf(s[mi][j][2], sl2, -base_b)), p3 = fast_exp2(fmaf(s[mi][j][3], sl2, -base_b));
        sum_a += p0 + p1;
        sum_b += p2 + p3;
        pa[mi][j >> 1][(j & 1) * 2] = pack2<T>(p0, p1);
        pa[mi][j >> 1][(j & 1) * 2 + 1] = pack2<T>(p2, p3);
      }
      l_a[mi] = l_a[mi] * alpha_a + sum_a;
      l_b[mi] = l_b[mi] * alpha_b + sum_b;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[mi][n][0] *= alpha_a;
        o[mi][n][1] *= alpha_a;
        o[mi][n][2] *= alpha_b;
        o[mi][n][3] *= alpha_b;
      }
    }
    // O += P V
#pragma unroll
    for (int tt = 0; tt < 4; ++tt)
#pragma unroll
      for (int nd = 0; nd < D / 16; ++nd) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, vs + (tt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * ld + nd * 16 + (lane >> 4) * 8);
#pragma unroll
        for (int mi = 0; mi < kFwdM; ++mi) {
          mma_16816<T>(o[mi][2 * nd], pa[mi][tt], b[0], b[1]);
          mma_16816<T>(o[mi][2 * nd + 1], pa[mi][tt], b[2], b[3]);
        }
      }
    __syncthreads();  // this stage's buffers are refilled by the next iteration's loads
  }
  T* oh = out + head * tq * D;
#pragma unroll
  for (int mi = 0; mi < kFwdM; ++mi) {
    const int row_a = q_lo + mi * 16 + g, row_b = row_a + 8;
    float la = l_a[mi], lb = l_b[mi];
#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) {
      la += __shfl_xor_sync(0xffffffffu, la, off);
      lb += __shfl_xor_sync(0xffffffffu, lb, off);
    }
    const float inv_a = 1.f / la, inv_b = 1.f / lb;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      const int col = n * 8 + t4 * 2;
      if (row_a < tq) store_pair<T, D>(oh, row_a, col, o[mi][n][0] * inv_a, o[mi][n][1] * inv_a);
      if (row_b < tq) store_pair<T, D>(oh, row_b, col, o[mi][n][2] * inv_b, o[mi][n][3] * inv_b);
    }
    if (t4 == 0) {
      if (row_a < tq) lse[head * tq + row_a] = (m_a[mi] + log2f(la)) / kLog2e;
      if (row_b < tq) lse[head * tq + row_b] = (m_b[mi] + log2f(lb)) / kLog2e;
    }
  }
}

// ---------------------------------------------------------------- backward
// sum_d grad_out[i, d] * out[i, d] for every query row: a warp per row.
template <class T, int D>
__global__ void row_dot_kernel(const T* __restrict go, const T* __restrict o, float* __restrict dd, HeadLayout go_at,
                               HeadLayout o_at, int64_t inner_heads, int64_t tq, int64_t rows) {
  const int lane = int(threadIdx.x) & 31;
  for (int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; row < rows;
       row += (int64_t(gridDim.x) * blockDim.x) >> 5) {
    const int64_t h = row / tq, i = row - h * tq;
    const T* gr = head_start(go, go_at, h, inner_heads) + i * go_at.row;
    const T* orow = head_start(o, o_at, h, inner_heads) + i * o_at.row;
    float s = 0.f;
    for (int d = lane; d < D; d += 32) s += convert<float>(gr[d]) * convert<float>(orow[d]);
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) dd[row] = s;
  }
}

template <int W> constexpr int bwd_threads() { return 32 * W; }
template <int W> constexpr int bwd_keys() { return 16 * W; }  // W warps of 16 keys
constexpr int kLdDs = kTile + 8;  // row stride of the block's dS^T tile

template <class T, int D, int W> constexpr size_t backward_smem() {
  constexpr int kBwdKeys = bwd_keys<W>();
  // K, V, two stages of (Q, dO), dS^T, two stages of the query rows' lse and rowdot
  return size_t(2 * kBwdKeys + 4 * kTile) * ld_of<D>() * sizeof(T) + size_t(kBwdKeys) * kLdDs * sizeof(T) +
         size_t(2 * 2 * kTile) * sizeof(float);
}

// A query tile's lse and rowdot into shared memory beside its Q and dO (the first half of the
// threads takes lse, the second rowdot; zeros past the end): read per score from global memory,
// they stalled the backward on load latency (a quarter of its cycles).
__device__ __forceinline__ void load_row_stats_async(float* s, const float* lse_h, const float* dd_h, int q0, int tq) {
  if (threadIdx.x >= 2 * kTile) return;
  const int i = int(threadIdx.x) % kTile, q = q0 + i;
  const float* src = threadIdx.x < kTile ? lse_h : dd_h;
  cp_async4(s + (threadIdx.x < kTile ? 0 : kTile) + i, src + (q < tq ? q : 0), q < tq);
}

template <class T, int D, int W>
__global__ void __launch_bounds__(bwd_threads<W>())
    flash_backward_kernel(const T* __restrict q, const T* __restrict k, const T* __restrict v, const T* __restrict go,
                          const float* __restrict lse, const float* __restrict row_dot, float* __restrict dq_acc,
                          T* __restrict dk, T* __restrict dv, HeadLayout q_at, HeadLayout k_at, HeadLayout v_at,
                          HeadLayout go_at, int64_t inner_heads, int tq, int tk, float scale, bool causal) {
  constexpr int kBwdWarps = W, kBwdThreads = bwd_threads<W>(), kBwdKeys = bwd_keys<W>();
  constexpr int ld = ld_of<D>();
  extern __shared__ __align__(128) unsigned char smem[];
  T* ks = reinterpret_cast<T*>(smem);
  T* vs = ks + kBwdKeys * ld;
  T* qd = vs + kBwdKeys * ld;  // stage st: Q at qd + st * 2 * kTile * ld, dO after it
  T* dst = qd + 4 * kTile * ld;  // dS^T: [key][query]
  float* stats = reinterpret_cast<float*>(dst + kBwdKeys * kLdDs);  // stage st: lse at stats + st * 2 * kTile, rowdot after
  const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31, g = lane >> 2, t4 = lane & 3;
  const int64_t head = blockIdx.y;
  const int k0 = int(blockIdx.x) * kBwdKeys;
  const int k_lo = k0 + warp * 16;  // the warp's first key
  const int key_a = k_lo + g, key_b = key_a + 8;  // the thread's two keys
  const T* qh = head_start(q, q_at, head, inner_heads);
  const T* goh = head_start(go, go_at, head, inner_heads);
  const float* lse_h = lse + head * tq;
  const float* dd_h = row_dot + head * tq;
  const float sl2 = scale * kLog2e;
  const int qb0 = causal ? k0 / kTile : 0, n_qb = (tq + kTile - 1) / kTile;

  load_rows_async<T, D, kBwdThreads>(ks, head_start(k, k_at, head, inner_heads), k_at.row, k0, kBwdKeys, tk);
  load_rows_async<T, D, kBwdThreads>(vs, head_start(v, v_at, head, inner_heads), v_at.row, k0, kBwdKeys, tk);
  if (qb0 < n_qb) {
    load_rows_async<T, D, kBwdThreads>(qd + (qb0 & 1) * 2 * kTile * ld, qh, q_at.row, int64_t(qb0) * kTile, kTile, tq);
    load_rows_async<T, D, kBwdThreads>(qd + (qb0 & 1) * 2 * kTile * ld + kTile * ld, goh, go_at.row, int64_t(qb0) * kTile,
                                       kTile, tq);
    load_row_stats_async(stats + (qb0 & 1) * 2 * kTile, lse_h, dd_h, qb0 * kTile, tq);
  }
  cp_async_commit();

  float dkc[D / 8][4], dvc[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dkc[n][e] = dvc[n][e] = 0.f;
  // A-fragment rows of this warp's 16 keys (K_w, V_w) and B-fragment addressing helpers
  const int a_row = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, a_col = (lane >> 4) * 8;
  const int b_row = (lane & 7) + (lane >> 4) * 8, b_col = ((lane >> 3) & 1) * 8;  // non-transposed B
  const int t_row = (lane & 7) + ((lane >> 3) & 1) * 8, t_col = (lane >> 4) * 8;  // transposed B

  for (int qb = qb0; qb < n_qb; ++qb) {
    const T* qs = qd + (qb & 1) * 2 * kTile * ld;
    const T* dos = qs + kTile * ld;
    if (qb + 1 < n_qb) {
      T* nq = qd + ((qb + 1) & 1) * 2 * kTile * ld;
      load_rows_async<T, D, kBwdThreads>(nq, qh, q_at.row, int64_t(qb + 1) * kTile, kTile, tq);
      load_rows_async<T, D, kBwdThreads>(nq + kTile * ld, goh, go_at.row, int64_t(qb + 1) * kTile, kTile, tq);
      load_row_stats_async(stats + ((qb + 1) & 1) * 2 * kTile, lse_h, dd_h, (qb + 1) * kTile, tq);
    }
    cp_async_commit();
    cp_async_wait_one();
    __syncthreads();
    const int q0 = qb * kTile;
    // S^T = K_w Q^T and dP^T = V_w dO^T (16 keys x 64 queries each)
    float s[8][4], dp[8][4];
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[j][e] = dp[j][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t ka[4], va[4];
      ldmatrix_x4(ka, ks + a_row * ld + kk * 16 + a_col);
      ldmatrix_x4(va, vs + a_row * ld + kk * 16 + a_col);
#pragma unroll
      for (int nj = 0; nj < 4; ++nj) {
        uint32_t b[4], c[4];
        ldmatrix_x4(b, qs + (nj * 16 + b_row) * ld + kk * 16 + b_col);
        ldmatrix_x4(c, dos + (nj * 16 + b_row) * ld + kk * 16 + b_col);
        mma_16816<T>(s[2 * nj], ka, b[0], b[1]);
        mma_16816<T>(s[2 * nj + 1], ka, b[2], b[3]);
        mma_16816<T>(dp[2 * nj], va, c[0], c[1]);
        mma_16816<T>(dp[2 * nj + 1], va, c[2], c[3]);
      }
    }
    // P^T = exp(S^T - lse) (0 where masked) and dS^T = P^T (dP^T - rowdot), both as A operands.
    // Only tiles that cross the causal diagonal or an end test positions (a path of their own).
    const float* lse_s = stats + (qb & 1) * 2 * kTile;
    const float* dd_s = lse_s + kTile;
    uint32_t pa[4][4], da[4][4];
    auto probabilities = [&]<bool kEdge>() {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float2 l2 = *reinterpret_cast<const float2*>(lse_s + j * 8 + t4 * 2);
        const float2 dd2 = *reinterpret_cast<const float2*>(dd_s + j * 8 + t4 * 2);
        float p[4], ds[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float l = (e & 1) ? l2.y : l2.x, dd = (e & 1) ? dd2.y : dd2.x;
          p[e] = fast_exp2(fmaf(s[j][e], sl2, -l * kLog2e));
          if constexpr (kEdge) {
            const int qc = q0 + j * 8 + t4 * 2 + (e & 1), key = e < 2 ? key_a : key_b;
            if (qc >= tq || key >= tk || (causal && key > qc)) p[e] = 0.f;
          }
          ds[e] = p[e] * (dp[j][e] - dd);
        }
        pa[j >> 1][(j & 1) * 2] = pack2<T>(p[0], p[1]);
        pa[j >> 1][(j & 1) * 2 + 1] = pack2<T>(p[2], p[3]);
        da[j >> 1][(j & 1) * 2] = pack2<T>(ds[0], ds[1]);
        da[j >> 1][(j & 1) * 2 + 1] = pack2<T>(ds[2], ds[3]);
        // dS^T into the block's tile (keys of this warp's rows, queries as columns)
        *reinterpret_cast<uint32_t*>(dst + (warp * 16 + g) * kLdDs + j * 8 + t4 * 2) = da[j >> 1][(j & 1) * 2];
        *reinterpret_cast<uint32_t*>(dst + (warp * 16 + g + 8) * kLdDs + j * 8 + t4 * 2) = da[j >> 1][(j & 1) * 2 + 1];
      }
    };
    if (q0 + kTile > tq || k_lo + 16 > tk || (causal && k_lo + 15 > q0)) probabilities.template operator()<true>();
    else probabilities.template operator()<false>();
    // dV_w += P^T dO, dK_w += dS^T Q (B: query rows of dO / Q, transposed)
#pragma unroll
    for (int tt = 0; tt < 4; ++tt)
#pragma unroll
      for (int nd = 0; nd < D / 16; ++nd) {
        uint32_t b[4], c[4];
        ldmatrix_x4_trans(b, dos + (tt * 16 + t_row) * ld + nd * 16 + t_col);
        ldmatrix_x4_trans(c, qs + (tt * 16 + t_row) * ld + nd * 16 + t_col);
        mma_16816<T>(dvc[2 * nd], pa[tt], b[0], b[1]);
        mma_16816<T>(dvc[2 * nd + 1], pa[tt], b[2], b[3]);
        mma_16816<T>(dkc[2 * nd], da[tt], c[0], c[1]);
        mma_16816<T>(dkc[2 * nd + 1], da[tt], c[2], c[3]);
      }
    __syncthreads();  // every warp's dS^T rows are in
    // dQ += dS K over the block's keys: the 64 x D tile is cut into (16-row, 16-column) units
    // shared out over the warps; float atomics into dq_acc (one per pair of values)
    constexpr int kDqUnits = (kTile / 16) * (D / 16);
#pragma unroll
    for (int u = warp; u < kDqUnits; u += kBwdWarps) {
      const int mt = u % (kTile / 16), nd = u / (kTile / 16);
      float acc[2][4] = {};
#pragma unroll
      for (int kt = 0; kt < kBwdKeys / 16; ++kt) {
        uint32_t a[4], b[4];
        ldmatrix_x4_trans(a, dst + (kt * 16 + (lane & 7) + (lane >> 4) * 8) * kLdDs + mt * 16 + ((lane >> 3) & 1) * 8);
        ldmatrix_x4_trans(b, ks + (kt * 16 + t_row) * ld + nd * 16 + t_col);
        mma_16816<T>(acc[0], a, b[0], b[1]);
        mma_16816<T>(acc[1], a, b[2], b[3]);
      }
      const int qr_a = q0 + mt * 16 + g, qr_b = qr_a + 8;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int col = nd * 16 + h * 8 + t4 * 2;
        if (qr_a < tq) atomicAdd(reinterpret_cast<float2*>(dq_acc + (head * tq + qr_a) * D + col), make_float2(acc[h][0], acc[h][1]));
        if (qr_b < tq) atomicAdd(reinterpret_cast<float2*>(dq_acc + (head * tq + qr_b) * D + col), make_float2(acc[h][2], acc[h][3]));
      }
    }
    __syncthreads();  // dS^T and this stage's Q, dO are refilled next
  }
  asm volatile("cp.async.wait_all;\n" ::);  // (no query tile at all: the K, V loads still land first)
  T* dkh = dk + head * tk * D;
  T* dvh = dv + head * tk * D;
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    const int col = n * 8 + t4 * 2;
    if (key_a < tk) {
      store_pair<T, D>(dkh, key_a, col, dkc[n][0] * scale, dkc[n][1] * scale);
      store_pair<T, D>(dvh, key_a, col, dvc[n][0], dvc[n][1]);
    }
    if (key_b < tk) {
      store_pair<T, D>(dkh, key_b, col, dkc[n][2] * scale, dkc[n][3] * scale);
      store_pair<T, D>(dvh, key_b, col, dvc[n][2], dvc[n][3]);
    }
  }
}

template <class T>
__global__ void scale_round_kernel(const float* __restrict in, T* __restrict out, float scale, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = convert<T>(in[i] * scale);
}

// Raises the kernel's dynamic shared memory limit once (above 48 KiB needs the opt-in).
template <class K> void allow_smem(K kernel, size_t bytes) {
  EMBER_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

template <class F> void visit_flash(const FlashAttentionLaunch& L, const char* op, F&& f) {
  visit_storage<kStoreReduced>(L.code, op, [&]<class T>() {
    if (L.head_dim == 64) f.template operator()<T, 64>();
    else f.template operator()<T, 128>();
  });
}

}  // namespace

bool flash_attention_supports(int head_dim, int8_t code) {
  return (head_dim == 64 || head_dim == 128) && (code == kCodeFloat16 || code == kCodeBFloat16);
}

void launch_flash_attention_forward(const FlashAttentionLaunch& L) {
  if (L.heads == 0 || L.tq == 0) return;
  visit_flash(L, "_flash_attention_forward_cuda", [&]<class T, int D>() {
    constexpr size_t smem = forward_smem<T, D>();
    auto kernel = flash_forward_kernel<T, D>;
    allow_smem(kernel, smem);
    const dim3 grid(unsigned((L.tq + kFwdRows - 1) / kFwdRows), unsigned(L.heads));
    kernel<<<grid, kFwdThreads, smem, L.stream>>>(static_cast<const T*>(L.q), static_cast<const T*>(L.k),
                                               static_cast<const T*>(L.v), static_cast<T*>(L.out), L.lse, L.q_at, L.k_at,
                                               L.v_at, L.inner_heads, int(L.tq), int(L.tk), L.scale, L.causal);
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

void launch_flash_attention_backward(const FlashAttentionLaunch& L) {
  if (L.heads == 0) return;
  visit_flash(L, "_flash_attention_backward_cuda", [&]<class T, int D>() {
    const int64_t rows = L.heads * L.tq;
    if (rows > 0) {
      row_dot_kernel<T, D><<<grid_for((rows + 7) / 8), 256, 0, L.stream>>>(
          static_cast<const T*>(L.grad_out), static_cast<const T*>(L.out), L.row_dot, L.grad_out_at, L.out_at,
          L.inner_heads, L.tq, rows);
      EMBER_CUDA_CHECK_LAUNCH();
    }
    if (L.tk > 0) {
      auto launch = [&]<int W>() {
      constexpr size_t smem = backward_smem<T, D, W>();
      auto kernel = flash_backward_kernel<T, D, W>;
      allow_smem(kernel, smem);
      const dim3 grid(unsigned((L.tk + bwd_keys<W>() - 1) / bwd_keys<W>()), unsigned(L.heads));
      kernel<<<grid, bwd_threads<W>(), smem, L.stream>>>(
          static_cast<const T*>(L.q), static_cast<const T*>(L.k), static_cast<const T*>(L.v),
          static_cast<const T*>(L.grad_out), L.lse, L.row_dot, L.grad_q_acc, static_cast<T*>(L.grad_k),
          static_cast<T*>(L.grad_v), L.q_at, L.k_at, L.v_at, L.grad_out_at, L.inner_heads, int(L.tq), int(L.tk),
          L.scale, L.causal);
      EMBER_CUDA_CHECK_LAUNCH();
      };
      // Head dim 128 with 8 warps (128 keys a block: half the dQ atomics; its registers allow two
      // 4-warp blocks a multiprocessor anyway) measured 2-6% faster; 64 with 4 (three 4-warp
      // blocks fit, one 8-warp one) 1-2% faster at T >= 4096 on an H100.
      if constexpr (D == 128) launch.template operator()<8>();
      else launch.template operator()<4>();
    }
    const int64_t n = rows * D;
    if (n > 0) {
      scale_round_kernel<T><<<grid_for((n + 255) / 256), 256, 0, L.stream>>>(L.grad_q_acc, static_cast<T*>(L.grad_q),
                                                                             L.scale, n);
      EMBER_CUDA_CHECK_LAUNCH();
    }
  });
}

}  // namespace ember::cuda
