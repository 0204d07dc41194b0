// CUDA kernels of flip, tril, triu, arange and linspace, registered with the dispatcher (CPU
// twins: src/cpu/shape_kernels.cpp, src/cpu/creation_kernels.cpp). cat, repeat and roll need
// none: their CompositeBackend kernels (narrow / as_strided views and copy_) serve every device.
#include <cmath>

#include "core/dtype_dispatch.h"
#include "cuda/index_host.h"
#include "ops/arange_length.h"
#include "ops/op_handles.h"
#include "ops/shape_utils.h"

namespace ember::cuda {
namespace {

// flip: the source walked with the flipped dims' strides negated from their last element, so
// the copy itself is a plain strided copy into a dense result.
Tensor flip_cuda(const Tensor& self, IntArrayRef dims) {
  if (self.dim() == 0) return self.clone();
  Tensor out = empty(self.sizes(), {.dtype = self.dtype(), .device = self.device()});
  if (out.numel() == 0) return out;
  GpuGuard guard(self.device().index);
  const int64_t es = self.element_size();
  Shape st = self.strides();
  char* base = static_cast<char*>(self.data_ptr());
  std::vector<bool> flipped(size_t(self.dim()), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, self.dim());
    if (flipped[size_t(w)]) continue;
    flipped[size_t(w)] = true;
    base += (self.size(w) - 1) * st[size_t(w)] * es;
    st[size_t(w)] = -st[size_t(w)];
  }
  const Walk o{static_cast<char*>(out.data_ptr()), contiguous_strides(self.sizes()), es}, s{base, st, es};
  const IndexGeometry g = make_geometry("flip", self.sizes(), {&o, &s});
  launch_strided_copy(g, o.data, base, out.numel(), int(es), current_cuda_stream(self.device().index));
  return out;
}

// tril / triu: a dense copy with the masked part of every matrix zeroed, in one pass.
Tensor triangle(const Tensor& self, int64_t k, bool lower) {
  EMBER_CHECK(self.dim() >= 2, lower ? "tril" : "triu", ": input tensor must have at least 2 dimensions");
  Tensor out = empty(self.sizes(), {.dtype = self.dtype(), .device = self.device()});
  if (out.numel() == 0) return out;
  GpuGuard guard(self.device().index);
  const int64_t es = self.element_size();
  const Walk o{static_cast<char*>(out.data_ptr()), contiguous_strides(self.sizes()), es},
      s{static_cast<char*>(self.data_ptr()), self.strides(), es};
  const IndexGeometry g = make_geometry(lower ? "tril" : "triu", self.sizes(), {&o, &s});
  launch_triangle(g, o.data, s.data, out.numel(), self.size(-2), self.size(-1), k, lower, int(es),
                  current_cuda_stream(self.device().index));
  return out;
}
Tensor tril_cuda(const Tensor& self, int64_t k) { return triangle(self, k, true); }
Tensor triu_cuda(const Tensor& self, int64_t k) { return triangle(self, k, false); }

// arange and linspace: the CPU kernels' checks, lengths and formulas (creation_kernels.cpp).
Tensor arange_cuda(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions opts) {
  const DType dt = opts.dtype_or_default();
  const int64_t n = arange_length(start, end, step, dt);
  const double s = start.to_double(), st = step.to_double();
  if (dt == kBool || is_complex(dt)) throw_dtype_not_implemented("arange", dt);
  Tensor out = empty({n}, {.dtype = dt, .device = opts.device_or()});
  GpuGuard guard(out.device().index);
  const bool integral = !start.is_floating() && !step.is_floating();
  launch_arange(out.data_ptr(), int8_t(dt), n, integral, integral ? start.to_int() : 0, integral ? step.to_int() : 0, s, st,
                current_cuda_stream(out.device().index));
  return out;
}

Tensor linspace_cuda(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions opts) {
  const DType dt = opts.dtype_or_default();
  if (dt == kBool || is_complex(dt)) throw_dtype_not_implemented("linspace", dt);
  Tensor out = empty({steps}, {.dtype = dt, .device = opts.device_or()});
  const double s = start.to_double(), e = end.to_double();
  const double step = steps > 1 ? (e - s) / double(steps - 1) : 0.0;
  GpuGuard guard(out.device().index);
  launch_linspace(out.data_ptr(), int8_t(dt), steps, s, e, step, current_cuda_stream(out.device().index));
  return out;
}

EMBER_REGISTER_KERNEL(flip, CUDA, flip_cuda);
EMBER_REGISTER_KERNEL(tril, CUDA, tril_cuda);
EMBER_REGISTER_KERNEL(triu, CUDA, triu_cuda);
EMBER_REGISTER_KERNEL(arange, CUDA, arange_cuda);
EMBER_REGISTER_KERNEL(linspace, CUDA, linspace_cuda);

}  // namespace
}  // namespace ember::cuda
