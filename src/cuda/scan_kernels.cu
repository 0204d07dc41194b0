// CUDA launchers of the scans along one dim: cumsum, cumprod, logcumsumexp, cummax, cummin.
// The input is contiguous, viewed as [outer, n, inner] (reduce_launchers.h). One engine,
// templated on an Op:
//   using In, Acc;  Acc init();  Acc from(In v, int64_t r);  Acc combine(Acc earlier, Acc later);
//   void store(int64_t offset, Acc);
// combine is associative (cummax's "NaN, else the larger, ties to the later" is a max over a
// total order with ties to the right), so a block may scan a row in parallel:
//   rows (inner == 1, n > 64): a block per row walks it in tiles of kScanBlock * kScanItems,
//     CUB's BlockScan carrying the running prefix from tile to tile;
//   lines (inner > 1, or short rows): a thread per (outer, inner) line, in order, coalesced
//     across neighbouring lines.
// When a few lines are long, the host cuts n into nchunks chunks: pass 1 reduces every chunk to
// its aggregate, pass 2 turns each line's aggregates into exclusive prefixes, pass 3 rescans
// every chunk seeded with its prefix.
// Accumulators: float for float32/float16/bfloat16, double for float64, int64 for int64.
#include <cub/block/block_load.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda/std/cmath>

#include "cuda/reduce_device.cuh"
#include "cuda/reduce_launchers.h"

namespace ember::cuda {
namespace {

inline constexpr int kTile = kScanBlock * kScanItems;
enum ScanMode : int { kScanAll = 0, kAggregate = 1, kSeeded = 2 };

template <class Op> struct Combine {
  Op op;
  __device__ __forceinline__ typename Op::Acc operator()(const typename Op::Acc& a, const typename Op::Acc& b) const {
    return op.combine(a, b);
  }
};

// CUB's block prefix callback: hands the running prefix to the tile and folds the tile in.
template <class Op> struct RunningPrefix {
  using Acc = typename Op::Acc;
  Op op;
  Acc running;
  __device__ __forceinline__ Acc operator()(Acc tile_aggregate) {
    const Acc before = running;
    running = op.combine(running, tile_aggregate);
    return before;
  }
};

template <class Op>
__global__ void __launch_bounds__(kScanBlock)
    scan_rows_kernel(Op op, const typename Op::In* in, int64_t outer, int64_t n, int64_t chunk, int64_t nchunks,
                     typename Op::Acc* agg, int mode) {
  using In = typename Op::In;
  using Acc = typename Op::Acc;
  using Load = cub::BlockLoad<In, kScanBlock, kScanItems, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Scan = cub::BlockScan<Acc, kScanBlock>;
  __shared__ union {
    typename Load::TempStorage load;
    typename Scan::TempStorage scan;
  } temp;
  const int64_t c = blockIdx.y;
  const int64_t begin = c * chunk;
  const int64_t end = n < begin + chunk ? n : begin + chunk;
  for (int64_t row = blockIdx.x; row < outer; row += gridDim.x) {
    const In* rp = in + row * n;
    RunningPrefix<Op> prefix{op, mode == kSeeded ? agg[row * nchunks + c] : op.init()};
    for (int64_t t0 = begin; t0 < end; t0 += kTile) {
      const int valid = int(end - t0 < kTile ? end - t0 : kTile);
      In raw[kScanItems];
      Load(temp.load).Load(rp + t0, raw, valid);
      __syncthreads();  // temp is reused by the scan
      Acc items[kScanItems];
#pragma unroll
      for (int k = 0; k < kScanItems; ++k) {
        const int j = int(threadIdx.x) * kScanItems + k;
        items[k] = j < valid ? op.from(raw[k], t0 + j) : op.init();
      }
      Scan(temp.scan).InclusiveScan(items, items, Combine<Op>{op}, prefix);
      __syncthreads();  // temp is reused by the next load
      if (mode != kAggregate) {
#pragma unroll
        for (int k = 0; k < kScanItems; ++k) {
          const int j = int(threadIdx.x) * kScanItems + k;
          if (j < valid) op.store(row * n + t0 + j, items[k]);
        }
      }
    }
    // Thread 0 (lane 0 of warp 0) holds the prefix CUB applied: after the last tile, the chunk's total.
    if (mode == kAggregate && threadIdx.x == 0) agg[row * nchunks + c] = prefix.running;
  }
}

template <class Op>
__global__ void __launch_bounds__(kScanBlock)
    scan_lines_kernel(Op op, const typename Op::In* in, int64_t outer, int64_t n, int64_t inner, int64_t chunk,
                      int64_t nchunks, typename Op::Acc* agg, int mode) {
  using Acc = typename Op::Acc;
  const int64_t lines = outer * inner;
  const int64_t c = blockIdx.y;
  const int64_t begin = c * chunk;
  const int64_t end = n < begin + chunk ? n : begin + chunk;
  for (int64_t line = int64_t(blockIdx.x) * kScanBlock + threadIdx.x; line < lines; line += int64_t(gridDim.x) * kScanBlock) {
    const int64_t o = line / inner, i = line - o * inner;
    int64_t pos = (o * n + begin) * inner + i;
    Acc acc = mode == kSeeded ? agg[line * nchunks + c] : op.init();
    for (int64_t r = begin; r < end; ++r, pos += inner) {
      acc = op.combine(acc, op.from(in[pos], r));
      if (mode != kAggregate) op.store(pos, acc);
    }
    if (mode == kAggregate) agg[line * nchunks + c] = acc;
  }
}

// Pass 2: each line's chunk aggregates become exclusive prefixes, in place.
template <class Op>
__global__ void __launch_bounds__(kScanBlock) scan_chunks_kernel(Op op, typename Op::Acc* agg, int64_t lines, int64_t nchunks) {
  using Acc = typename Op::Acc;
  for (int64_t line = int64_t(blockIdx.x) * kScanBlock + threadIdx.x; line < lines; line += int64_t(gridDim.x) * kScanBlock) {
    Acc running = op.init();
    for (int64_t c = 0; c < nchunks; ++c) {
      const Acc a = agg[line * nchunks + c];
      agg[line * nchunks + c] = running;
      running = op.combine(running, a);
    }
  }
}

template <class Op> void run_scan(const ScanLaunch& L, const Op& op) {
  using In = typename Op::In;
  using Acc = typename Op::Acc;
  static_assert(sizeof(Acc) <= kReduceMaxAccBytes, "accumulator too large for the scratch");
  const In* in = static_cast<const In*>(L.in);
  Acc* agg = static_cast<Acc*>(L.agg);
  const bool rows = scan_uses_rows(L);
  const int64_t lines = L.outer * L.inner;
  const dim3 grid(rows ? grid_for(L.outer) : grid_for((lines + kScanBlock - 1) / kScanBlock), unsigned(L.nchunks));
  auto pass = [&](int mode) {
    if (rows) scan_rows_kernel<Op><<<grid, kScanBlock, 0, L.stream>>>(op, in, L.outer, L.n, L.chunk, L.nchunks, agg, mode);
    else scan_lines_kernel<Op><<<grid, kScanBlock, 0, L.stream>>>(op, in, L.outer, L.n, L.inner, L.chunk, L.nchunks, agg, mode);
    EMBER_CUDA_CHECK_LAUNCH();
  };
  if (L.nchunks == 1) {
    pass(kScanAll);
    return;
  }
  pass(kAggregate);
  scan_chunks_kernel<Op><<<grid_for((lines + kScanBlock - 1) / kScanBlock), kScanBlock, 0, L.stream>>>(op, agg, lines, L.nchunks);
  EMBER_CUDA_CHECK_LAUNCH();
  pass(kSeeded);
}

// ---------------------------------------------------------------- ops
template <class T, bool kSum> struct ArithScanOp {
  using In = T;
  using Acc = compute_t<T>;
  T* out;
  __device__ Acc init() const { return Acc(kSum ? 0 : 1); }
  __device__ Acc from(In v, int64_t) const { return convert<Acc>(v); }
  __device__ Acc combine(Acc a, Acc b) const { return kSum ? a + b : a * b; }
  __device__ void store(int64_t pos, Acc a) const { out[pos] = convert<T>(a); }
};

// A running logaddexp, the CPU's rule: NaN propagates, equal infinities (and +inf) give
// themselves, otherwise hi + log1p(exp(lo - hi)).
template <class T> struct LogCumSumExpOp {
  using In = T;
  using Acc = compute_t<T>;
  T* out;
  __device__ Acc init() const { return -::cuda::std::numeric_limits<Acc>::infinity(); }
  __device__ Acc from(In v, int64_t) const { return convert<Acc>(v); }
  __device__ Acc combine(Acc a, Acc b) const {
    if (a != a || b != b) return ::cuda::std::numeric_limits<Acc>::quiet_NaN();
    const Acc hi = a > b ? a : b, lo = a > b ? b : a;
    if (::cuda::std::isinf(hi) && (hi > 0 || lo == hi)) return hi;
    return hi + ::cuda::std::log1p(::cuda::std::exp(lo - hi));
  }
  __device__ void store(int64_t pos, Acc a) const { out[pos] = convert<T>(a); }
};

template <class C> struct ValueIndex {
  C v;
  int64_t i;
};
// The later value replaces the running extreme when it is NaN, or when neither is NaN and it is
// at least as large (max) / small (min): the index is the last position of the extreme.
template <class T, bool kMax> struct CumExtremeOp {
  using In = T;
  using C = compute_t<T>;
  using Acc = ValueIndex<C>;
  T* values;
  int64_t* indices;
  __device__ Acc init() const { return {pick_identity<kMax, C>(), -1}; }
  __device__ Acc from(In v, int64_t r) const { return {convert<C>(v), r}; }
  __device__ Acc combine(Acc a, Acc b) const {
    const bool later = is_nan(b.v) || (!is_nan(a.v) && (kMax ? b.v >= a.v : b.v <= a.v));
    return later ? b : a;
  }
  __device__ void store(int64_t pos, Acc a) const {
    values[pos] = convert<T>(a.v);
    indices[pos] = a.i;
  }
};

inline constexpr uint32_t kArithScanTypes = code_bit(kCodeInt64) | kStoreFloat;
inline constexpr uint32_t kExtremeScanTypes = code_bit(kCodeInt32) | code_bit(kCodeInt64) | kStoreFloat;

}  // namespace

void launch_cumsum(const ScanLaunch& L) {
  visit_storage<kArithScanTypes>(L.code, "cumsum_cuda", [&]<class T>() { run_scan(L, ArithScanOp<T, true>{static_cast<T*>(L.out)}); });
}
void launch_cumprod(const ScanLaunch& L) {
  visit_storage<kArithScanTypes>(L.code, "cumprod_cuda", [&]<class T>() { run_scan(L, ArithScanOp<T, false>{static_cast<T*>(L.out)}); });
}
void launch_logcumsumexp(const ScanLaunch& L) {
  visit_storage<kStoreFloat>(L.code, "logcumsumexp_cuda", [&]<class T>() { run_scan(L, LogCumSumExpOp<T>{static_cast<T*>(L.out)}); });
}
void launch_cummax(const ScanLaunch& L) {
  visit_storage<kExtremeScanTypes>(L.code, "cummax_cuda", [&]<class T>() {
    run_scan(L, CumExtremeOp<T, true>{static_cast<T*>(L.out), L.indices});
  });
}
void launch_cummin(const ScanLaunch& L) {
  visit_storage<kExtremeScanTypes>(L.code, "cummin_cuda", [&]<class T>() {
    run_scan(L, CumExtremeOp<T, false>{static_cast<T*>(L.out), L.indices});
  });
}

}  // namespace ember::cuda
