// CPU kernel of searchsorted: one binary search per value over its row of the sorted sequence,
// rows split over threads. Both operands are converted to their common dtype first.
#include "core/dtype_dispatch.h"
#include "core/parallel.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/reduce_utils.h"

namespace ember::cpu {
namespace {

// First index in [0, n) whose element is >= value (right: > value); n when none. Written with
// negated comparisons, as torch's, so a NaN value lands after every element.
template <class T> int64_t bound(const T* seq, int64_t n, T value, bool right) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + ((hi - lo) >> 1);
    bool go_right = right ? !(seq[mid] > value) : !(seq[mid] >= value);
    if (go_right) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

Tensor searchsorted_cpu(const Tensor& sorted_sequence, const Tensor& values, bool out_int32, bool right) {
  DType common = reduce::compute_dtype(result_type(sorted_sequence, values));
  Tensor seq = reduce::convert(sorted_sequence, common, /*contig=*/true);
  Tensor vals = reduce::convert(values, common, /*contig=*/true);
  Tensor out = empty(values.sizes(), {.dtype = kInt64, .device = values.device()});
  const int64_t m = seq.sizes().back();
  const int64_t n = values.dim() == 0 ? 1 : values.sizes().back();
  const int64_t rows = n == 0 ? 0 : values.numel() / n;
  const bool shared_row = seq.dim() == 1;
  visit_dtype<kNumericTypes>(common, "searchsorted", [&]<class T>() {
    const T* s = seq.data_ptr<T>();
    const T* v = vals.data_ptr<T>();
    int64_t* o = out.data_ptr<int64_t>();
    parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* row = shared_row ? s : s + r * m;
        for (int64_t j = 0; j < n; ++j) o[r * n + j] = bound(row, m, v[r * n + j], right);
      }
    });
  });
  return out_int32 ? reduce::convert(out, kInt32) : out;
}

EMBER_REGISTER_KERNEL(searchsorted, CPU, searchsorted_cpu);

}  // namespace
}  // namespace ember::cpu
