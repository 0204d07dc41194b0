#pragma once
// Shared helpers for reductions and softmax: dim wrapping and validation with PyTorch's
// messages, reduced output shapes, PyTorch's C++ type names for dtype errors, and a
// dtype/layout conversion that only needs empty + copy_.
#include <cstdint>
#include <vector>

#include "ember/ops.h"

namespace ember::reduce {

// The name PyTorch prints in "not implemented for 'Long'" style messages.
inline const char* torch_type_name(DType t) {
  switch (t) {
    case DType::Bool: return "Bool";
    case DType::UInt8: return "Byte";
    case DType::Int8: return "Char";
    case DType::Int16: return "Short";
    case DType::Int32: return "Int";
    case DType::Int64: return "Long";
    case DType::Float16: return "Half";
    case DType::BFloat16: return "BFloat16";
    case DType::Float32: return "Float";
    case DType::Float64: return "Double";
  }
  return "?";
}

// Wraps a possibly negative dim; 0-dim tensors accept dims -1 and 0 (as PyTorch).
inline int64_t wrap_dim(int64_t dim, int64_t ndim) {
  int64_t n = ndim > 0 ? ndim : 1;
  EMBER_CHECK_INDEX(dim >= -n && dim < n, "Dimension out of range (expected to be in range of [", -n, ", ",
                    n - 1, "], but got ", dim, ")");
  if (dim < 0) dim += n;
  return ndim == 0 ? 0 : dim;
}

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
