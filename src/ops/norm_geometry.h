#pragma once
// What the layer/RMS/batch norm kernels of both backends (src/cpu/norm_kernels.cpp,
// src/cuda/norm_ops.cpp) share: the [m, n] row split of the input for normalized_shape, the shape
// of the per-row statistics, and the optional parameters as contiguous tensors of the compute dtype.
#include <cstdint>
#include <optional>
#include <utility>

#include "ember/tensor.h"
#include "ops/reduce_utils.h"

namespace ember::norm_rows {

// [m, n] rows of x for normalized_shape (checked by nn/functional/norm.cpp): n values per row,
// m the product of the leading dims (also when n == 0).
inline std::pair<int64_t, int64_t> split_rows(const Tensor& x, IntArrayRef normalized_shape) {
  int64_t n = 1, m = 1;
  for (int64_t s : normalized_shape) n *= s;
  for (int64_t d = 0; d < x.dim() - int64_t(normalized_shape.size()); ++d) m *= x.sizes()[d];
  return {m, n};
}

// The leading dims: one statistic (mean, rstd) per row.
inline Shape stat_shape(const Tensor& x, IntArrayRef normalized_shape) {
  return Shape(x.sizes().begin(), x.sizes().end() - normalized_shape.size());
}

// An optional parameter (weight, bias) as a contiguous tensor of dt; undefined when absent.
inline Tensor param_in(const std::optional<Tensor>& t, DType dt) {
  return t && t->defined() ? reduce::convert(*t, dt, /*contig=*/true) : Tensor();
}

}  // namespace ember::norm_rows
