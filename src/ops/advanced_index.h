#pragma once
// The geometry of one advanced-indexing expression (x[idx...], x[mask], x[..., idx] = v) over
// self, worked out the same way for every backend:
//   result = [pre dims] + [broadcast index dims] + [post dims]
// element (p, b, q) lives at self offset pre(p) + sum_i wrap(idx_i[b]) * st[idims_i] + post(q).
// Masks become one index per dim they cover (their nonzero coordinates); a 0-dim mask inserts a
// dim of size 1 indexed by [0] (true) or [] (false), as PyTorch does. The index values are not
// read here: each backend checks and wraps them in its own loops.
#include <functional>
#include <optional>
#include <vector>

#include "ember/tensor.h"

namespace ember {

struct AdvancedIndexGeometry {
  Shape sz, st;                // self's geometry, 0-dim masks' inserted dims included
  std::vector<Tensor> idx;     // the index tensors, each as the backend's `prepare` returned it
  std::vector<int64_t> idims;  // the dim of sz each one indexes
  Shape bshape;                // the index tensors' broadcast shape
  Shape pre_sizes, pre_strides, post_sizes, post_strides;
  Shape result_shape;
};

// prepare turns each index tensor (an integer tensor as given, or a mask's int64 column) into
// what the backend's loops read (CPU: contiguous int64; CUDA: on the device). Checks the index
// dtypes and counts and the masks' shapes, with PyTorch's messages.
AdvancedIndexGeometry advanced_index_geometry(const Tensor& self, ArrayRef<std::optional<Tensor>> indices,
                                              const std::function<Tensor(const Tensor&)>& prepare);

}  // namespace ember
