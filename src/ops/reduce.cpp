// Reductions and scans: the public functions, their dtype rules and argument checks.
// Dispatched ops are listed in op_list.h; std, logsumexp, count_nonzero and the full max/min
// are composites of them. Kernels: src/cpu/reduce_kernels.cpp.
#include <cmath>

#include "cpu/reduce_utils.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember {

using reduce::torch_type_name;

namespace {
void check_float_dtype_arg(const char* fn, std::optional<DType> dtype) {
  if (dtype) EMBER_CHECK(is_floating(*dtype), fn, ": could not infer output dtype. Optional dtype must be either a "
                         "floating point or complex dtype. Got: ", torch_type_name(*dtype));
}
void check_var_input(const Tensor& a) {
  EMBER_CHECK(is_floating(a.dtype()), "std and var only support floating point and complex dtypes");
}
}  // namespace

Tensor sum(const Tensor& a, std::optional<DType> dtype) { return ops::sum()(a, {}, false, dtype); }
Tensor sum(const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  return ops::sum()(a, dims, keepdim, dtype);
}

Tensor mean(const Tensor& a, std::optional<DType> dtype) { return mean(a, {}, false, dtype); }
Tensor mean(const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  if (dtype) {
    check_float_dtype_arg("mean()", dtype);
  } else {
    EMBER_CHECK(is_floating(a.dtype()), "mean(): could not infer output dtype. Input dtype must be either a "
                "floating point or complex dtype. Got: ", torch_type_name(a.dtype()));
  }
  return ops::mean()(a, dims, keepdim, dtype);
}

Tensor prod(const Tensor& a, std::optional<DType> dtype) { return ops::prod()(a, {}, false, dtype); }
Tensor prod(const Tensor& a, int64_t dim, bool keepdim, std::optional<DType> dtype) {
  int64_t d = reduce::wrap_dim(dim, a.dim());
  return ops::prod()(a, {d}, keepdim, dtype);
}

Tensor max(const Tensor& a) {
  EMBER_CHECK(a.numel() > 0, "max(): Expected reduction dim to be specified for input.numel() == 0. "
              "Specify the reduction dim with the 'dim' argument.");
  return ops::amax()(a, {}, false);
}
Tensor min(const Tensor& a) {
  EMBER_CHECK(a.numel() > 0, "min(): Expected reduction dim to be specified for input.numel() == 0. "
              "Specify the reduction dim with the 'dim' argument.");
  return ops::amin()(a, {}, false);
}
std::tuple<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim) { return ops::max_dim()(a, dim, keepdim); }
std::tuple<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim) { return ops::min_dim()(a, dim, keepdim); }

Tensor amax(const Tensor& a, IntArrayRef dims, bool keepdim) { return ops::amax()(a, dims, keepdim); }
Tensor amin(const Tensor& a, IntArrayRef dims, bool keepdim) { return ops::amin()(a, dims, keepdim); }

Tensor argmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim) { return ops::argmax()(a, dim, keepdim); }
Tensor argmin(const Tensor& a, std::optional<int64_t> dim, bool keepdim) { return ops::argmin()(a, dim, keepdim); }

Tensor var(const Tensor& a, bool unbiased) { return var(a, {}, unbiased, false); }
Tensor var(const Tensor& a, IntArrayRef dims, bool unbiased, bool keepdim) {
  check_var_input(a);
  return ops::var()(a, dims, unbiased ? 1 : 0, keepdim);
}
Tensor std(const Tensor& a, bool unbiased) { return std(a, {}, unbiased, false); }
Tensor std(const Tensor& a, IntArrayRef dims, bool unbiased, bool keepdim) {
  return sqrt(var(a, dims, unbiased, keepdim));
}

Tensor norm(const Tensor& a, const Scalar& p) { return ops::norm()(a, p, {}, false); }
Tensor norm(const Tensor& a, const Scalar& p, IntArrayRef dims, bool keepdim) {
  return ops::norm()(a, p, dims, keepdim);
}

// log(sum(exp(x - m))) + m with m the max over dims; rows whose max is infinite use m = 0 so
// that -inf rows give -inf (not nan) and +inf rows give +inf.
Tensor logsumexp(const Tensor& a, IntArrayRef dims, bool keepdim) {
  // Integral inputs give the default float dtype; float16/bfloat16 compute in float32.
  DType out_dt = is_floating(a.dtype()) ? a.dtype() : default_dtype();
  Tensor x = reduce::convert(a, is_reduced_float(out_dt) ? kFloat32 : out_dt);
  if (x.numel() == 0) return reduce::convert(log(sum(exp(x), dims, keepdim)), out_dt);
  Tensor m = amax(x, dims, /*keepdim=*/true);
  m = nan_to_num(m, 0.0, 0.0, 0.0);  // a nan max gives a nan result either way
  Tensor r = log(sum(exp(sub(x, m)), dims, /*keepdim=*/true));
  r = add(r, m);
  if (!keepdim) {
    uint64_t mask = reduce::dim_mask(dims, a.dim());
    r = r.reshape(reduce::reduced_shape(a.sizes(), mask, false));
  }
  return reduce::convert(r, out_dt);
}

Tensor any(const Tensor& a) { return ops::any()(a, {}, false); }
Tensor any(const Tensor& a, int64_t dim, bool keepdim) {
  int64_t d = reduce::wrap_dim(dim, a.dim());
  return ops::any()(a, {d}, keepdim);
}
Tensor all(const Tensor& a) { return ops::all()(a, {}, false); }
Tensor all(const Tensor& a, int64_t dim, bool keepdim) {
  int64_t d = reduce::wrap_dim(dim, a.dim());
  return ops::all()(a, {d}, keepdim);
}

Tensor count_nonzero(const Tensor& a, IntArrayRef dims) {
  Tensor nz = empty(a.sizes(), {.dtype = kBool, .device = a.device()});
  nz.copy_(a);  // nonzero -> true
  return sum(nz, dims, false, kInt64);
}

Tensor cumsum(const Tensor& a, int64_t dim, std::optional<DType> dtype) { return ops::cumsum()(a, dim, dtype); }
Tensor cumprod(const Tensor& a, int64_t dim, std::optional<DType> dtype) { return ops::cumprod()(a, dim, dtype); }

}  // namespace ember
