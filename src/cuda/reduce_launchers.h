#pragma once
// Plain launch data for the CUDA reductions, scans and softmax (the .cu files include this and
// CUDA headers only), and the launchers they export. The host side (reduce_ops.cpp,
// softmax_ops.cpp) checks arguments, allocates outputs and scratch with ember ops, lays out the
// geometry and picks the launch shape; the launchers pick the kernel for the dtype.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ember::cuda {

// ---------------------------------------------------------------- reductions
// The kept dims (after dropping size-1 dims and merging those that walk memory as one), outer
// first: output number o (row-major over them, the output tensor's own order) starts at the
// input element sum_d idx_d(o) * kstride[d]. One reduced dim, at rstride: element r of output o
// is in[start(o) + r * rstride].
// Two reduced dims that do not merge (a bias gradient's sum over N, H, W of NCHW) run in two
// levels: the outer reduced dim (outer_red entries) is listed as the outermost kept dim, the
// main pass leaves all outer_red * (num_out / outer_red) accumulators in `partial` (the
// [chunk][output] layout), and the combining pass folds the outer_red chunks.
// Anything else (more kept dims, more reduced dims) is made contiguous first by the host.
inline constexpr int kReduceMaxKept = 4;
// Scratch per partial accumulator (the largest is var's float64 Welford state, 24 bytes).
inline constexpr int kReduceMaxAccBytes = 32;

struct ReduceLaunch {
  const void* in = nullptr;
  int8_t in_code = 0;          // DTypeCode of the input
  void* out = nullptr;         // the result (max_dim/min_dim: the values; argmax/argmin: null)
  int64_t* indices = nullptr;  // arg reductions: the indices
  int64_t num_out = 0, R = 0;
  int nkept = 0;
  int64_t ksize[kReduceMaxKept] = {}, kstride[kReduceMaxKept] = {};  // element strides
  int64_t rstride = 0;
  // columns: threadIdx.x walks neighbouring outputs (coalesced when the last kept dim is the
  // innermost in memory), threadIdx.y splits the reduced dim. Otherwise rows: threadIdx.x
  // splits one output's reduced dim, threadIdx.y walks outputs. tx and ty are powers of two; in
  // row mode tx * ty is a multiple of 32 (whole warps shuffle).
  bool columns = false;
  int tx = 1, ty = 1;
  // Columns: neighbouring outputs per thread, read as one 16-byte vector per row (1: one output
  // per thread). The caller offers 16 / element size for the reductions with the vector kernel
  // (sum, mean of floating types); the launch shape keeps it only where the layout allows.
  int col_vec = 1;
  int64_t grid_x = 1;  // blocks along outputs (each loops over output groups, grid-stride)
  // The reduced dim cut into nchunks pieces of `chunk` (grid.y); each writes a partial
  // accumulator to `partial` ([chunk][output], kReduceMaxAccBytes each), and a second kernel
  // combines them.
  int64_t nchunks = 1, chunk = 0;
  int64_t outer_red = 1;  // > 1: two levels (then nchunks == 1)
  void* partial = nullptr;
  cudaStream_t stream = nullptr;
  double param = 0;  // mean: 1/n (NaN when n == 0); norm: p; var: the correction
  int kind = 0;      // norm: a NormKind
};

enum NormKind : int { kNormL0, kNormL1, kNormL2, kNormInf, kNormNegInf, kNormP };

void launch_sum(const ReduceLaunch&);   // integral/bool input: int64 output
void launch_prod(const ReduceLaunch&);  // integral/bool input: int64 output
void launch_mean(const ReduceLaunch&);
void launch_amax(const ReduceLaunch&);
void launch_amin(const ReduceLaunch&);
void launch_max_arg(const ReduceLaunch&);  // values (when out is set) and indices
void launch_min_arg(const ReduceLaunch&);
void launch_var(const ReduceLaunch&);
void launch_norm(const ReduceLaunch&);
void launch_any(const ReduceLaunch&);  // output: bytes 0/1 (bool or uint8)
void launch_all(const ReduceLaunch&);

// ---------------------------------------------------------------- scans
// The contiguous input viewed as [outer, n, inner], scanned along n. Rows (inner == 1): a block
// per row; columns: a thread per (outer, inner) line. With nchunks > 1 each line's n is cut
// into chunks of `chunk`: the launcher reduces every chunk into `agg`
// ([line][chunk], kReduceMaxAccBytes each), scans those, then rescans the chunks from them.
struct ScanLaunch {
  const void* in = nullptr;
  int8_t code = 0;  // DTypeCode of input and output
  void* out = nullptr;
  int64_t* indices = nullptr;  // cummax/cummin
  int64_t outer = 1, n = 1, inner = 1;
  int64_t nchunks = 1, chunk = 0;
  void* agg = nullptr;
  cudaStream_t stream = nullptr;
};
inline constexpr int kScanBlock = 256;
inline constexpr int kScanItems = 4;  // per thread, per tile of the row scan
// Rows get the block scan; short rows and inner > 1 a thread per line.
inline bool scan_uses_rows(const ScanLaunch& L) { return L.inner == 1 && L.n > 64; }

void launch_cumsum(const ScanLaunch&);        // int64, float16, bfloat16, float32, float64
void launch_cumprod(const ScanLaunch&);       // the same
void launch_logcumsumexp(const ScanLaunch&);  // floating
void launch_cummax(const ScanLaunch&);        // int32, int64, floating
void launch_cummin(const ScanLaunch&);

// ---------------------------------------------------------------- softmax
// The contiguous input viewed as [outer, n, inner], normalised along n; output of the same dtype.
struct SoftmaxLaunch {
  const void* in = nullptr;
  void* out = nullptr;
  int8_t code = 0;
  int64_t outer = 1, n = 1, inner = 1;
  int sms = 1, threads_per_sm = 2048;
  cudaStream_t stream = nullptr;
};
void launch_softmax(const SoftmaxLaunch&);
void launch_log_softmax(const SoftmaxLaunch&);

// ---------------------------------------------------------------- the device's shape
// Multiprocessor count and resident threads per multiprocessor of a GPU (cached).
struct GpuShape {
  int sms = 1;
  int threads_per_sm = 2048;
};
GpuShape gpu_shape(int device);

// Powers of two around v (capped at 2^30), for block and chunk sizes.
inline int pow2_ceil(int64_t v) {
  int p = 1;
  while (p < v && p < (1 << 30)) p <<= 1;
  return p;
}
inline int pow2_floor(int64_t v) {
  int p = 1;
  while (int64_t(p) * 2 <= v && p < (1 << 30)) p <<= 1;
  return p;
}

}  // namespace ember::cuda
