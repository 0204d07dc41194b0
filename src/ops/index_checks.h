#pragma once
// Shape rules of the indexing ops that every backend applies the same way, with PyTorch's
// messages: gather/scatter's shape check, the broadcast of advanced-indexing index tensors, and
// the strides of a tensor broadcast to an indexing result. Header-only (inline) so a backend
// uses them without a new dispatched op.
#include <optional>
#include <sstream>
#include <vector>

#include "ember/tensor.h"

namespace ember::index_checks {

// Shape rules shared by gather and scatter (PyTorch's gather_shape_check / scatter_shape_check).
// src: scatter's source, or null (gather, scatter with a value).
inline void check_gather_shapes(const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src) {
  auto sizes1 = [](const Tensor& t) { return t.dim() ? t.sizes() : Shape{1}; };
  EMBER_CHECK(std::max<int64_t>(index.dim(), 1) == std::max<int64_t>(self.dim(), 1),
              "Index tensor must have the same number of dimensions as input tensor");
  if (src)
    EMBER_CHECK(std::max<int64_t>(index.dim(), 1) == std::max<int64_t>(src->dim(), 1),
                "Index tensor must have the same number of dimensions as src tensor");
  Shape isz = sizes1(index), ssz = sizes1(self);
  if (index.numel() == 0) return;
  for (size_t d = 0; d < isz.size(); ++d) {
    if (int64_t(d) != dim)
      EMBER_CHECK(isz[d] <= ssz[d], "Size does not match at dimension ", d, " expected index ", index.sizes(),
                  " to be smaller than self ", self.sizes(), " apart from dimension ", dim);
    if (src)
      EMBER_CHECK(isz[d] <= sizes1(*src)[d], "Size does not match at dimension ", d, " expected index ",
                  index.sizes(), " to be smaller than src ", src->sizes(), " apart from dimension ", dim);
  }
}

// The broadcast shape of advanced-indexing index tensors (IndexError as PyTorch's otherwise).
inline Shape broadcast_index_shapes(const std::vector<Tensor>& ts) {
  Shape out;
  for (const auto& t : ts) {
    const Shape& s = t.sizes();
    size_t nd = std::max(out.size(), s.size());
    Shape r(nd, 1);
    bool ok = true;
    for (size_t i = 0; i < nd; ++i) {
      int64_t a = i < nd - out.size() ? 1 : out[i - (nd - out.size())];
      int64_t b = i < nd - s.size() ? 1 : s[i - (nd - s.size())];
      if (a != b && a != 1 && b != 1) ok = false;
      r[i] = a == 1 ? b : a;
    }
    if (!ok) {
      std::ostringstream os;
      for (size_t j = 0; j < ts.size(); ++j) os << (j ? ", " : "") << IntArrayRef(ts[j].sizes());
      throw IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes " + os.str());
    }
    out = r;
  }
  return out;
}

// Strides (in elements) of t broadcast to `shape` (0 along broadcast dims), or nullopt.
// Extra leading size-1 dims of t are dropped (values of shape [1, 4] fit a result [4]).
inline std::optional<Shape> broadcast_strides(const Tensor& t, const Shape& shape) {
  size_t lead = 0;
  while (size_t(t.dim()) - lead > shape.size() && t.sizes()[lead] == 1) ++lead;
  if (size_t(t.dim()) - lead > shape.size()) return std::nullopt;
  Shape st(shape.size(), 0);
  const int64_t off = int64_t(shape.size()) - t.dim();  // d + off >= 0 for d >= lead
  for (int64_t d = int64_t(lead); d < t.dim(); ++d) {
    int64_t s = t.sizes()[d];
    if (s == shape[d + off]) st[d + off] = s == 1 ? 0 : t.strides()[d];
    else if (s == 1) st[d + off] = 0;
    else return std::nullopt;
  }
  return st;
}

// Advanced indexing's index dtypes (long, int, byte, bool) and count: each mask consumes as
// many dims of self as it has, every other entry (None included) one.
inline void check_advanced_indices(const Tensor& self, ArrayRef<std::optional<Tensor>> indices) {
  int64_t consumed = 0;
  for (const auto& ix : indices) {
    if (!ix) { ++consumed; continue; }
    DType t = ix->dtype();
    EMBER_CHECK_INDEX(t == kInt64 || t == kInt32 || t == kUInt8 || t == kBool,
                      "tensors used as indices must be long, int, byte or bool tensors");
    consumed += (t == kBool || t == kUInt8) ? ix->dim() : 1;
  }
  EMBER_CHECK_INDEX(consumed <= self.dim(), "too many indices for tensor of dimension ", self.dim(), " (got ",
                    consumed, ")");
}

// bincount's argument checks (torch's messages); true when weights are given.
inline bool check_bincount_args(const Tensor& self, const std::optional<Tensor>& weights, int64_t minlength) {
  EMBER_CHECK(self.dim() == 1 && is_integral(self.dtype(), false),
              "bincount only supports 1-d non-negative integral inputs.");
  EMBER_CHECK(minlength >= 0, "minlength should be >= 0");
  const bool has_w = weights.has_value() && weights->defined();
  if (has_w)
    EMBER_CHECK(weights->dim() == 1 && weights->numel() == self.numel(),
                "weights should be 1-d and have the same length as input");
  return has_w;
}

}  // namespace ember::index_checks
