#pragma once
// What the meta kernels (src/meta/) share: the device check and a fresh contiguous meta tensor.
#include "ember/core/errors.h"
#include "ops/empty_tensor.h"

namespace ember::meta {

// An operand of a meta op lives on meta, or is a host 0-dim tensor (a Python number), as torch's.
inline void check_on_meta(const Tensor& t) {
  if (!t.defined() || t.is_meta() || (t.is_cpu() && t.dim() == 0)) return;
  throw Error(detail::cat("Tensor on device ", t.device().str(), " is not on the expected device meta!"));
}
inline void check_on_meta(const std::optional<Tensor>& t) {
  if (t) check_on_meta(*t);
}

inline Tensor new_meta(IntArrayRef sizes, DType dt) { return empty_on(sizes, dt, Device(kMeta)); }

}  // namespace ember::meta
