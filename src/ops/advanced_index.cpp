// The backend-neutral geometry of advanced indexing (ops/advanced_index.h).
#include "ops/advanced_index.h"

#include "ember/ops.h"
#include "ops/index_checks.h"
#include "ops/op_handles.h"

namespace ember {

AdvancedIndexGeometry advanced_index_geometry(const Tensor& self, ArrayRef<std::optional<Tensor>> indices,
                                              const std::function<Tensor(const Tensor&)>& prepare) {
  // 1. Dtypes, and how many dims of self the indices consume.
  index_checks::check_advanced_indices(self, indices);
  // 2. Self's geometry, with masks expanded into one index per dim they cover.
  AdvancedIndexGeometry g;
  g.sz = self.sizes();
  g.st = self.strides();
  const TensorOptions longs{.dtype = kInt64, .device = self.device()};
  std::vector<std::optional<Tensor>> per_dim;
  size_t d = 0;
  for (const auto& ix : indices) {
    if (!ix) { per_dim.push_back(std::nullopt); ++d; continue; }
    const DType t = ix->dtype();
    if (t != kBool && t != kUInt8) {
      per_dim.push_back(prepare(*ix));
      ++d;
      continue;
    }
    const Tensor& m = *ix;
    if (m.dim() == 0) {
      g.sz.insert(g.sz.begin() + d, 1);
      g.st.insert(g.st.begin() + d, 0);
      per_dim.push_back(prepare(m.item().to_bool() ? zeros({1}, longs) : empty({0}, longs)));
      ++d;
      continue;
    }
    for (int64_t j = 0; j < m.dim(); ++j)
      EMBER_CHECK_INDEX(m.sizes()[j] == g.sz[d + j], "The shape of the mask ", m.sizes(), " at index ", j,
                        " does not match the shape of the indexed tensor ", self.sizes(), " at index ", d + j);
    const Tensor nz = ops::nonzero()(m);  // (n, k) int64, on the mask's device
    for (int64_t j = 0; j < m.dim(); ++j) per_dim.push_back(prepare(nz.select(1, j)));
    d += size_t(m.dim());
  }
  while (per_dim.size() < g.sz.size()) per_dim.push_back(std::nullopt);

  // 3. Broadcast the index tensors; indexed dims that are not adjacent move to the front.
  for (size_t i = 0; i < per_dim.size(); ++i)
    if (per_dim[i]) { g.idx.push_back(*per_dim[i]); g.idims.push_back(int64_t(i)); }
  g.bshape = index_checks::broadcast_index_shapes(g.idx);
  bool adjacent = true;
  for (size_t i = 1; i < g.idims.size(); ++i) adjacent = adjacent && g.idims[i] == g.idims[i - 1] + 1;
  const int64_t first = g.idims.empty() ? 0 : g.idims.front();
  for (size_t i = 0; i < per_dim.size(); ++i) {
    if (per_dim[i]) continue;
    if (adjacent && int64_t(i) < first) { g.pre_sizes.push_back(g.sz[i]); g.pre_strides.push_back(g.st[i]); }
    else { g.post_sizes.push_back(g.sz[i]); g.post_strides.push_back(g.st[i]); }
  }
  g.result_shape = g.pre_sizes;
  g.result_shape.insert(g.result_shape.end(), g.bshape.begin(), g.bshape.end());
  g.result_shape.insert(g.result_shape.end(), g.post_sizes.begin(), g.post_sizes.end());
  return g;
}

}  // namespace ember
