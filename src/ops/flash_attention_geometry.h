#pragma once
// The argument checks and the geometry both backends' flash attention kernels share
// (src/cpu/flash_attention_kernels.cpp, src/cuda/flash_attention_ops.cpp): query [..., Tq, D],
// key and value [..., Tk, D] of one dtype with the same leading dims, viewed as `heads`
// independent [T, D] matrices. Each backend adds its own limits (dtypes, head dims).
#include <cstdint>

#include "ember/core/errors.h"
#include "ember/tensor.h"

namespace ember {

struct FlashAttentionGeometry {
  int64_t heads = 1, tq = 0, tk = 0, d = 0;
};

inline FlashAttentionGeometry flash_attention_geometry(const char* op, const Tensor& q, const Tensor& k,
                                                       const Tensor& v) {
  EMBER_CHECK(q.dim() >= 2 && k.dim() == q.dim() && v.dim() == q.dim(), op,
              ": expected query, key and value of the same rank (at least 2), got ", q.sizes(), ", ", k.sizes(),
              " and ", v.sizes());
  EMBER_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), op, ": expected query, key and value of one dtype, got ",
              dtype_name(q.dtype()), ", ", dtype_name(k.dtype()), " and ", dtype_name(v.dtype()));
  const int64_t nd = q.dim();
  FlashAttentionGeometry g;
  g.tq = q.sizes()[nd - 2];
  g.tk = k.sizes()[nd - 2];
  g.d = q.sizes()[nd - 1];
  for (int64_t i = 0; i < nd - 2; ++i) {
    EMBER_CHECK(k.sizes()[i] == q.sizes()[i] && v.sizes()[i] == q.sizes()[i], op,
                ": expected query, key and value with the same leading dims, got ", q.sizes(), ", ", k.sizes(), " and ",
                v.sizes());
    g.heads *= q.sizes()[i];
  }
  EMBER_CHECK(k.sizes()[nd - 1] == g.d && v.sizes()[nd - 1] == g.d && v.sizes()[nd - 2] == g.tk, op,
              ": expected key and value of head dim ", g.d, " and one length, got ", k.sizes(), " and ", v.sizes());
  return g;
}

}  // namespace ember
