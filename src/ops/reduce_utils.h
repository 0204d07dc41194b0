#pragma once
// Shared helpers for reductions and softmax: dim wrapping and validation with PyTorch's
// messages, reduced output shapes, PyTorch's C++ type names for dtype errors, and a
// dtype/layout conversion that only needs empty + copy_.
#include <cstdint>
#include <vector>

#include "ember/ops.h"
#include "ops/shape_utils.h"

namespace ember::reduce {

using ::ember::wrap_dim;
inline const char* torch_type_name(DType t) { return scalar_type_name(t); }

// Bit d set when dim d is reduced. Empty dims = every dim. Duplicates are an error.
inline uint64_t dim_mask(IntArrayRef dims, int64_t ndim) {
  EMBER_CHECK(ndim <= 64, "reductions support at most 64 dimensions, got ", ndim);
  if (dims.empty()) return ndim >= 64 ? ~uint64_t(0) : ((uint64_t(1) << ndim) - 1);
  uint64_t mask = 0;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, ndim);
    if (ndim == 0) continue;
    EMBER_CHECK(!(mask & (uint64_t(1) << w)), "dim ", w, " appears multiple times in the list of dims");
    mask |= uint64_t(1) << w;
  }
  return mask;
}

// Output shape of a reduction over the dims in mask.
inline Shape reduced_shape(IntArrayRef sizes, uint64_t mask, bool keepdim) {
  Shape out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (mask & (uint64_t(1) << d)) {
      if (keepdim) out.push_back(1);
    } else {
      out.push_back(sizes[d]);
    }
  }
  return out;
}

// Product of the reduced sizes.
inline int64_t reduced_numel(IntArrayRef sizes, uint64_t mask) {
  int64_t n = 1;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (mask & (uint64_t(1) << d)) n *= sizes[d];
  return n;
}

// The dtype a kernel computes in: float16/bfloat16 in float32, everything else in itself.
inline DType compute_dtype(DType t) { return is_reduced_float(t) ? kFloat32 : t; }

// A tensor with t's values in dtype dt; contiguous when `contig`. Returns t itself when it
// already fits. Uses only empty + copy_ (dtype conversion and strided reads).
inline Tensor convert(const Tensor& t, DType dt, bool contig = false) {
  if (t.dtype() == dt && (!contig || t.is_contiguous())) return t;
  Tensor out = empty(t.sizes(), {.dtype = dt, .device = t.device()});
  out.copy_(t);
  return out;
}

// PyTorch's check for reductions without an identity (max, amax, argmax, ...) on empty input.
inline void zero_numel_check_dims(const Tensor& t, IntArrayRef dims, const char* fn) {
  if (t.numel() != 0) return;
  EMBER_CHECK_INDEX(!dims.empty(), fn,
                    ": Expected reduction dim to be specified for input.numel() == 0. "
                    "Specify the reduction dim with the 'dim' argument.");
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, t.dim());
    EMBER_CHECK_INDEX(t.dim() == 0 || t.sizes()[w] != 0, fn, ": Expected reduction dim ", w,
                      " to have non-zero size.");
  }
}

}  // namespace ember::reduce
