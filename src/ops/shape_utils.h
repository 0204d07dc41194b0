#pragma once
// Dimension and shape arithmetic shared by the op families.
#include <optional>

#include "ember/tensor.h"

namespace ember {

// Wraps a possibly negative dim into [0, ndim); a 0-dim tensor accepts -1 and 0 as PyTorch does.
inline int64_t wrap_dim(int64_t dim, int64_t ndim) {
  int64_t n = ndim > 0 ? ndim : 1;
  EMBER_CHECK_INDEX(dim >= -n && dim < n, "Dimension out of range (expected to be in range of [", -n, ", ",
                    n - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

// Resolves one -1 in a requested shape against numel; errors as torch.view/reshape do.
Shape infer_size(IntArrayRef shape, int64_t numel);

// Strides that let `newshape` view memory laid out as (oldshape, oldstride), or nullopt when
// no view exists (PyTorch's computeStride).
std::optional<Shape> compute_view_strides(IntArrayRef oldshape, IntArrayRef oldstride, IntArrayRef newshape);

// A new tensor sharing self's storage and version counter with another window (read as `dtype`:
// view_as_real, view(dtype)).
Tensor make_view(const Tensor& self, Shape sizes, Shape strides, int64_t offset);
Tensor make_view(const Tensor& self, DType dtype, Shape sizes, Shape strides, int64_t offset);

}  // namespace ember
