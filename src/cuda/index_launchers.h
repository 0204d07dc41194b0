#pragma once
// What the CUDA indexing, sorting and shape kernels (index_kernels.cu, sort_kernels.cu,
// shape_kernels.cu) get from the host side (index_ops.cpp, sort_ops.cpp, shape_ops.cpp), as
// plain data: no tensor headers here, so nvcc stays fast.
//
// Most of these ops move elements from one place to another, one of the two places found
// through an index value. They share one iteration: a shape walked in row-major order with up to
// three operands, each with its own byte strides (IndexGeometry). Pure moves are instantiated by
// element size (1, 2, 4, 8 or 16 bytes), not per dtype; only arithmetic (scatter-add, sort keys,
// the range factories) is per dtype.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/elementwise_args.h"  // kMaxDims, DTypeCode

namespace ember::cuda {

// An iteration shape and the byte strides of up to three operands over it, innermost dim first,
// dims of size 1 dropped and mergeable dims merged (index_host.h builds it). ndim 0 is one element.
struct IndexGeometry {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims][3] = {};
};

// Which op an index belongs to, so a kernel can name it when an index is out of range.
enum class IndexOp : int8_t { kIndexSelect, kGather, kScatter, kScatterAdd, kIndexAdd, kIndex, kIndexPut };

// Device scratch memory (cub's temporary storage, intermediate buffers) handed to the .cu code:
// the host side allocates it from the caching allocator and keeps it until the op returns
// (stream-ordered, so freeing it after the launches are queued is safe).
class Scratch {
 public:
  virtual void* allocate(size_t bytes) = 0;

 protected:
  ~Scratch() = default;
};

// ---------------------------------------------------------------- index_kernels.cu
// One element move per position p of the geometry, with v the index read at operand 2
// (int64 or int32) and, when `check`, v checked against [-size, size) when `wrap_negative`
// (negative values then count from the end) or [0, size) otherwise. A bad index prints the op,
// the value, the dim and the size, then stops the kernel with a device-side assert (the host
// sees "device-side assert triggered" at its next synchronisation, as with PyTorch).
struct IndexArgs {
  IndexGeometry g;
  char* data[3] = {};         // see each launcher for the operands' roles
  int64_t numel = 0;          // positions in g
  int64_t index_size = 0;     // the size the index values address
  int64_t index_stride = 0;   // bytes moved per index step on the indexed operand
  int element_size = 0;       // bytes of one element (1, 2, 4, 8, 16)
  int8_t dtype = 0;           // DTypeCode of the data (scatter_add / index_add arithmetic)
  bool index_int64 = true;    // false: the index operand holds int32
  bool check = true;          // false: the index values are already known to be in range
  bool wrap_negative = false;
  IndexOp op = IndexOp::kGather;
  int dim = 0;                // the dim named in an out-of-range message
  double alpha_f = 1;         // index_add_'s alpha, as floating and integral values
  int64_t alpha_i = 1;
  cudaStream_t stream = nullptr;
};

// out[p] = src[p + v * index_stride]: data = {out, src, index}.
void launch_index_gather(const IndexArgs& a);
// dst[p + v * index_stride] = src[p]: data = {dst, src, index}. Duplicate indices: one of the
// writes wins (unspecified which, as in PyTorch on CUDA).
void launch_index_scatter(const IndexArgs& a);
// dst[p + v * index_stride] += alpha * src[p] with atomics: data = {dst, src, index}; dtype
// picks the arithmetic (bool: or; float16/bfloat16 through their native atomics).
void launch_index_scatter_add(const IndexArgs& a);

// Advanced indexing with several index tensors: offsets[p] (+)= wrap(v) * elem_stride, data =
// {offsets (int64), unused, index}; assign: the first index tensor writes, the others add.
void launch_index_offsets(const IndexArgs& a, int64_t elem_stride, bool assign);

// nonzero over a dense run of n elements of `element_size` bytes: flags[i] = x[i] != 0 (for
// floating dtypes the sign bit is ignored, so -0.0 is zero and NaN is not).
void launch_nonzero_flags(const void* x, int64_t n, int element_size, bool floating, uint8_t* flags, cudaStream_t stream);
// count[0] = the number of set flags (device memory).
void launch_count_flags(const uint8_t* flags, int64_t n, int64_t* count, Scratch& scratch, cudaStream_t stream);
// out[0..count) = the positions of the set flags, in order; selected: device int64 for cub.
void launch_select_flagged(const uint8_t* flags, int64_t n, int64_t* out, int64_t* selected, Scratch& scratch,
                           cudaStream_t stream);
// out (count, ndim) row-major = the coordinates of the linear positions lin[0..count) in a
// row-major shape `sizes` (ndim >= 1, outer first). out and lin may not overlap.
void launch_unravel(const int64_t* lin, int64_t count, const int64_t* sizes, int ndim, int64_t* out, cudaStream_t stream);

// bincount: out[0] = min(x), out[1] = max(x) (device int64) for n > 0 int64 values.
void launch_min_max(const int64_t* x, int64_t n, int64_t* out, Scratch& scratch, cudaStream_t stream);
// bincount: out[x[i]] += 1 (int64, w null) or += w[i] (float32 / float64: w_code), with
// atomics, so float sums may round in another order than the CPU's.
void launch_bincount(const int64_t* x, int64_t n, const void* w, int8_t w_code, void* out, cudaStream_t stream);

// ---------------------------------------------------------------- sort_kernels.cu
// Sort keys: every dtype maps to an unsigned key (32 bits for elements of up to 4 bytes, 64 bits
// for 8) whose unsigned order is the value order of the CPU kernels: NaN the largest, -0.0 equal
// to 0.0; descending stores the complement so that an ascending stable sort gives the descending
// order with ties still by position. A 32-bit key is stored as (row << 32) | key, row = i /
// row_len (row_len 0: no row part), so that one sort orders all rows ("row keys").
// keys[i] (uint64) for a dense run of n elements of dtype `code`, rows of row_len elements.
void launch_sort_keys(const void* x, int8_t code, int64_t n, int64_t row_len, bool descending, uint64_t* keys,
                      cudaStream_t stream);
// pos[i] = i % row for i < n (the position of each element in its row).
void launch_row_positions(int64_t* pos, int64_t n, int64_t row, cudaStream_t stream);
// Stable sort of `rows` rows of `row` keys with their int64 values (keys_out: the sorted keys,
// values_out: the values in that order). row_keys: the keys carry their row (elements of up to
// 4 bytes, rows <= 2^32), so one radix sort over all of them orders each row; otherwise one row
// is radix-sorted and several take cub's segmented sort.
void launch_sort_pairs(bool row_keys, const uint64_t* keys_in, uint64_t* keys_out, const int64_t* values_in,
                       int64_t* values_out, int64_t rows, int64_t row, Scratch& scratch, cudaStream_t stream);
// unique: flags[i] = (i == 0) || x[i] != x[i - 1] (value comparison of dtype `code`: NaN differs
// from everything, -0.0 equals 0.0), for a dense sorted run of n elements.
void launch_unique_flags(const void* x, int8_t code, int64_t n, uint8_t* flags, cudaStream_t stream);
// group[i] = (inclusive prefix sum of flags)[i] - 1, int64.
void launch_group_ids(const uint8_t* flags, int64_t n, int64_t* group, Scratch& scratch, cudaStream_t stream);
// out[perm[i]] = group[i] for i < n (the inverse of a permutation applied to group ids).
void launch_scatter_positions(const int64_t* group, const int64_t* perm, int64_t n, int64_t* out, cudaStream_t stream);
// counts[g] = starts[g + 1] - starts[g] (starts[u] taken as n) for g < u.
void launch_run_lengths(const int64_t* starts, int64_t u, int64_t n, int64_t* counts, cudaStream_t stream);

// searchsorted over the last dim: out[v] = the insertion point of values[v] in its row of
// `sorted` (rows of `len` elements, row = v / per_row, or row 0 when the sequence is 1-D,
// per_row = 0); right: after equal elements. NaN sorts last. out int64 or int32.
void launch_searchsorted(const void* sorted, const void* values, int8_t code, int64_t nvalues, int64_t per_row,
                         int64_t len, bool right, void* out, bool out_int32, cudaStream_t stream);

// ---------------------------------------------------------------- shape_kernels.cu
// dst[p] = src[p] over a geometry with operands {dst, src} (strides may be negative: flip).
void launch_strided_copy(const IndexGeometry& g, char* dst, const char* src, int64_t numel, int element_size,
                         cudaStream_t stream);
// tril/triu: out (dense, shape [..., rows, cols]) = src (operand 1 of `g`, over the same
// positions) where the element is kept, else zero bits. Kept: col - row <= k (lower) or
// col - row >= k (upper), row and col taken from the position.
void launch_triangle(const IndexGeometry& g, char* out, const char* src, int64_t numel, int64_t rows, int64_t cols,
                     int64_t k, bool lower, int element_size, cudaStream_t stream);
// arange: out[i] = start_i + i * step_i (int64 arithmetic, integral forms) or start + i * step
// in double (fused multiply-add, as the CPU kernel compiles) converted to `code`.
void launch_arange(void* out, int8_t code, int64_t n, bool integral, int64_t start_i, int64_t step_i, double start,
                   double step, cudaStream_t stream);
// linspace: the CPU's two-sided formula: start + step * i below steps / 2, end - step *
// (steps - 1 - i) from there (each one fused multiply-add), converted to `code`.
void launch_linspace(void* out, int8_t code, int64_t steps, double start, double end, double step, cudaStream_t stream);

}  // namespace ember::cuda
