// Reductions and scans: the public functions, their dtype rules and argument checks.
// Dispatched ops are listed in op_list.h; std, logsumexp, count_nonzero and the full max/min
// are composites of them. Kernels: src/cpu/reduce_kernels.cpp.
#include <cmath>

#include "amp/autocast.h"
#include "ops/reduce_utils.h"
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
// sum/mean of a complex tensor: the real reduction of its (re, im) pairs, the pair dim kept.
Tensor complex_reduce(bool is_mean, const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  EMBER_CHECK(!dtype || is_complex(*dtype), is_mean ? "mean" : "sum", "(): a complex input needs a complex dtype, got ",
              dtype_name(*dtype));
  Tensor z = dtype ? a.to(*dtype) : a;
  if (z.dim() == 0) return is_mean ? z : z.clone();
  Shape d;
  if (dims.empty()) for (int64_t i = 0; i < z.dim(); ++i) d.push_back(i);
  else for (int64_t x : dims) d.push_back(reduce::wrap_dim(x, z.dim()));
  Tensor r = view_as_real(z);
  Tensor s = is_mean ? ops::mean()(r, d, keepdim, std::nullopt) : ops::sum()(r, d, keepdim, std::nullopt);
  return view_as_complex(s.contiguous());
}
}  // namespace

Tensor sum(const Tensor& a, std::optional<DType> dtype) { return sum(a, {}, false, dtype); }
Tensor sum(const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  if (is_complex(a.dtype())) return complex_reduce(false, a, dims, keepdim, dtype);
  return ops::sum()(a, dims, keepdim, dtype);
}

// NaN counted as 0: the gradient is 0 at NaN inputs (where's), as PyTorch's nansum.
Tensor nansum(const Tensor& a, std::optional<DType> dtype) { return nansum(a, {}, false, dtype); }
Tensor nansum(const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  Tensor x = is_floating(a.dtype()) ? where(isnan(a), Scalar(0), a) : a;
  return sum(x, dims, keepdim, dtype);
}

Tensor mean(const Tensor& a, std::optional<DType> dtype) { return mean(a, {}, false, dtype); }
Tensor mean(const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  if (is_complex(a.dtype())) return complex_reduce(true, a, dims, keepdim, dtype);
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

namespace {
Tensor full_extremum(const Tensor& a, bool is_max);  // amax/amin over all dims, recorded as Max/MinBackward1
}
Tensor max(const Tensor& a) {
  EMBER_CHECK(a.numel() > 0, "max(): Expected reduction dim to be specified for input.numel() == 0. "
              "Specify the reduction dim with the 'dim' argument.");
  return full_extremum(a, true);
}
Tensor min(const Tensor& a) {
  EMBER_CHECK(a.numel() > 0, "min(): Expected reduction dim to be specified for input.numel() == 0. "
              "Specify the reduction dim with the 'dim' argument.");
  return full_extremum(a, false);
}
std::tuple<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim) { return ops::max_dim()(a, dim, keepdim); }
std::tuple<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim) { return ops::min_dim()(a, dim, keepdim); }

Tensor amax(const Tensor& a, IntArrayRef dims, bool keepdim) { return ops::amax()(a, dims, keepdim); }
Tensor amin(const Tensor& a, IntArrayRef dims, bool keepdim) { return ops::amin()(a, dims, keepdim); }

std::tuple<Tensor, Tensor> aminmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) {
    EMBER_CHECK(a.numel() > 0, "aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                "identity.");
    return {amin(a, {}, keepdim), amax(a, {}, keepdim)};
  }
  int64_t d = reduce::wrap_dim(*dim, a.dim());
  if (a.dim() > 0) EMBER_CHECK_INDEX(a.size(d) != 0, "aminmax: Expected reduction dim ", d, " to have non-zero size.");
  return {amin(a, {d}, keepdim), amax(a, {d}, keepdim)};
}

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

// An integral correction goes to the kernel; another one rescales the population variance by
// N / (N - correction), the divisor clamped at 0 as PyTorch's.
Tensor var(const Tensor& a, IntArrayRef dims, const std::optional<Scalar>& correction, bool keepdim) {
  check_var_input(a);
  double c = correction ? correction->to_double() : 1.0;
  if (c == std::floor(c) && std::abs(c) < 9e15) return ops::var()(a, dims, int64_t(c), keepdim);
  Tensor v = ops::var()(a, dims, 0, keepdim);
  double n = double(reduce::reduced_numel(a.sizes(), reduce::dim_mask(dims, a.dim())));
  return v * (n / std::max(n - c, 0.0));
}
Tensor std(const Tensor& a, IntArrayRef dims, const std::optional<Scalar>& correction, bool keepdim) {
  return sqrt(var(a, dims, correction, keepdim));
}
std::tuple<Tensor, Tensor> var_mean(const Tensor& a, IntArrayRef dims, const std::optional<Scalar>& correction,
                                    bool keepdim) {
  return {var(a, dims, correction, keepdim), mean(a, dims, keepdim)};
}
std::tuple<Tensor, Tensor> std_mean(const Tensor& a, IntArrayRef dims, const std::optional<Scalar>& correction,
                                    bool keepdim) {
  return {std(a, dims, correction, keepdim), mean(a, dims, keepdim)};
}

Tensor norm(const Tensor& a, const Scalar& p) { return ops::norm()(a, p, {}, false); }
Tensor norm(const Tensor& a, const Scalar& p, IntArrayRef dims, bool keepdim) {
  return ops::norm()(a, p, dims, keepdim);
}
Tensor norm(const Tensor& a, const Scalar& p, IntArrayRef dims, bool keepdim, DType dtype) {
  return ops::norm()(a.to(dtype), p, dims, keepdim);
}

// log(sum(exp(x - m))) + m with m the max over dims; rows whose max is infinite use m = 0 so
// that -inf rows give -inf (not nan) and +inf rows give +inf.
Tensor logsumexp(const Tensor& a, IntArrayRef dims, bool keepdim) {
  EMBER_AUTOCAST(logsumexp, a, dims, keepdim);
  // Integral inputs give the default float dtype; float16/bfloat16 compute in float32.
  DType out_dt = is_floating(a.dtype()) ? a.dtype() : default_dtype();
  Tensor x = reduce::convert(a, is_reduced_float(out_dt) ? kFloat32 : out_dt);
  if (x.numel() == 0) return reduce::convert(log(sum(exp(x), dims, keepdim)), out_dt);
  // The shift m cancels out of the value and of the gradient: it is held constant (detached),
  // so autograd sees log(sum(exp(x - m))) + m with d/dx = softmax(x), as PyTorch's formula.
  Tensor m = amax(x.detach(), dims, /*keepdim=*/true);
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
Tensor any(const Tensor& a, IntArrayRef dims, bool keepdim) { return ops::any()(a, dims, keepdim); }
Tensor all(const Tensor& a) { return ops::all()(a, {}, false); }
Tensor all(const Tensor& a, int64_t dim, bool keepdim) {
  int64_t d = reduce::wrap_dim(dim, a.dim());
  return ops::all()(a, {d}, keepdim);
}
Tensor all(const Tensor& a, IntArrayRef dims, bool keepdim) { return ops::all()(a, dims, keepdim); }

Tensor count_nonzero(const Tensor& a, IntArrayRef dims) {
  Tensor nz = empty(a.sizes(), {.dtype = kBool, .device = a.device()});
  nz.copy_(a);  // nonzero -> true
  return sum(nz, dims, false, kInt64);
}

Tensor cumsum(const Tensor& a, int64_t dim, std::optional<DType> dtype) { return ops::cumsum()(a, dim, dtype); }
Tensor cumprod(const Tensor& a, int64_t dim, std::optional<DType> dtype) { return ops::cumprod()(a, dim, dtype); }

namespace {
// prepend/append must match the input in every dim but the differencing one.
void check_diff_operand(const Tensor& a, const std::optional<Tensor>& other, int64_t dim) {
  if (!other) return;
  EMBER_CHECK(other->dim() == a.dim(), "diff expects prepend or append to be the same dimension as input");
  for (int64_t i = 0; i < other->dim(); ++i) {
    if (i == dim) continue;
    EMBER_CHECK(other->size(i) == a.size(i), "diff expects the shape of tensor to prepend or append to match that "
                "of input except along the differencing dimension; input.size(", i, ") = ", a.size(i),
                ", but got tensor.size(", i, ") = ", other->size(i));
  }
}
}  // namespace

// n-th forward difference along dim (logical_xor for bool), after prepend/append are joined
// on; composed of differentiable ops. n beyond the length leaves an empty dim, as PyTorch.
Tensor diff(const Tensor& a, int64_t n, int64_t dim, const std::optional<Tensor>& prepend,
            const std::optional<Tensor>& append) {
  EMBER_CHECK(a.dim() >= 1, "diff expects input to be at least one-dimensional");
  EMBER_CHECK(n >= 0, "order must be non-negative but got ", n);
  int64_t d = reduce::wrap_dim(dim, a.dim());
  check_diff_operand(a, prepend, d);
  check_diff_operand(a, append, d);
  if (n == 0) return a.clone();
  Tensor out = a;
  if (prepend || append) {
    std::vector<Tensor> parts;
    if (prepend) parts.push_back(*prepend);
    parts.push_back(a);
    if (append) parts.push_back(*append);
    out = cat(parts, d);
  }
  n = std::min(n, out.size(d));
  for (int64_t i = 0; i < n; ++i) {
    int64_t len = out.size(d) - 1;
    Tensor hi = out.narrow(d, 1, len), lo = out.narrow(d, 0, len);
    out = out.dtype() == kBool ? logical_xor(hi, lo) : sub(hi, lo);
  }
  return out;
}

}  // namespace ember

// ---------------------------------------------------------------- gradients
// Formulas follow PyTorch's derivatives.yaml / FunctionsManual.cpp and are written with ember
// ops, so they are differentiable again (double backward). A reduced gradient is first brought
// back to keepdim shape, then broadcast over the reduced dims.
#include "autograd/record.h"
#include "ops/reduce_backward.h"

namespace ember {
namespace {
using namespace autograd;  // record, below_autograd, saved_input, grad_for, ...

// Node names as PyTorch: the all-dims overload is ...Backward0, the dim overload ...Backward1.
const char* overload_name(IntArrayRef dims, const char* all, const char* with_dims) {
  return dims.empty() ? all : with_dims;
}

// g (the reduction's result shape) reshaped to keepdim shape: size 1 at each reduced dim.
Tensor unsqueeze_reduced(const Tensor& g, IntArrayRef in_sizes, uint64_t mask, bool keepdim) {
  if (keepdim || in_sizes.empty()) return g;
  return g.reshape(reduce::reduced_shape(in_sizes, mask, true));
}
// ... and broadcast to the input's shape.
Tensor expand_reduced(const Tensor& g, IntArrayRef in_sizes, uint64_t mask, bool keepdim) {
  return unsqueeze_reduced(g, in_sizes, mask, keepdim).expand(in_sizes);
}
// The gradient in the input's dtype (ops with a dtype argument compute in another one).
Tensor cast_back(const Tensor& g, DType dt) { return g.dtype() == dt ? g : g.to(dt); }

// The reduced dims as a list (for keepdim reductions inside formulas).
std::vector<int64_t> mask_dims(uint64_t mask, int64_t ndim) {
  std::vector<int64_t> d;
  for (int64_t i = 0; i < ndim; ++i)
    if (mask & (uint64_t(1) << i)) d.push_back(i);
  return d;
}

Tensor sum_ag(const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  Tensor out = below_autograd([&] { return ops::sum()(a, dims, keepdim, dtype); });
  uint64_t mask = reduce::dim_mask(dims, a.dim());
  record(overload_name(dims, "SumBackward0", "SumBackward1"), {a}, {out}, {},
         [s = a.sizes(), dt = a.dtype(), mask, keepdim](const variable_list& g, LambdaNode&) -> variable_list {
           return {cast_back(expand_reduced(g[0], s, mask, keepdim), dt)};
         });
  return out;
}

Tensor mean_ag(const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  Tensor out = below_autograd([&] { return ops::mean()(a, dims, keepdim, dtype); });
  uint64_t mask = reduce::dim_mask(dims, a.dim());
  record(overload_name(dims, "MeanBackward0", "MeanBackward1"), {a}, {out}, {},
         [s = a.sizes(), dt = a.dtype(), mask, keepdim](const variable_list& g, LambdaNode&) -> variable_list {
           double n = double(reduce::reduced_numel(s, mask));
           return {cast_back(expand_reduced(g[0] / n, s, mask, keepdim), dt)};
         });
  return out;
}

// PyTorch's prod_safe_zeros_backward along `dim`: each element's gradient is the product of the
// others, as an exclusive cumprod from the front times an exclusive cumprod from the back
// (no division, so zeros are exact).
Tensor prod_safe_zeros_backward(const Tensor& grad, const Tensor& x, int64_t dim) {
  if (x.numel() == 0) return grad.expand(x.sizes());
  Shape ones_size = x.sizes();
  ones_size[size_t(dim)] = 1;
  Tensor one = ones(ones_size, {.dtype = x.dtype(), .device = x.device()});
  int64_t n = x.sizes()[size_t(dim)];
  Tensor exclusive_normal = cumprod(cat({one, x.narrow(dim, 0, n - 1)}, dim), dim);
  Tensor narrow_reverse = x.narrow(dim, 1, n - 1).flip({dim});
  Tensor exclusive_reverse = cumprod(cat({one, narrow_reverse}, dim), dim).flip({dim});
  return grad * (exclusive_normal * exclusive_reverse);
}

// prod over the dims in mask: result / x when x has no zero (PyTorch's fast path); otherwise
// the reduced dims are moved last and flattened into one, and the zero-safe formula runs there.
Tensor prod_backward(const Tensor& g, const Tensor& x, const Tensor& result, uint64_t mask, bool keepdim) {
  if (x.dim() == 0) return g;
  Tensor gk = unsqueeze_reduced(g, x.sizes(), mask, keepdim);
  Tensor rk = unsqueeze_reduced(result, x.sizes(), mask, keepdim);
  if (x.numel() == 0 || !any(eq(x, 0)).item<bool>()) return gk * (rk / x);
  std::vector<int64_t> kept, reduced;
  for (int64_t d = 0; d < x.dim(); ++d) ((mask >> d) & 1 ? reduced : kept).push_back(d);
  std::vector<int64_t> perm = kept;
  perm.insert(perm.end(), reduced.begin(), reduced.end());
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int64_t(i);
  Tensor xp = x.permute(perm);
  Shape flat(xp.sizes().begin(), xp.sizes().begin() + int64_t(kept.size()));
  Shape gshape = flat;
  flat.push_back(-1);
  gshape.push_back(1);
  Tensor gp = gk.permute(perm).reshape(gshape);
  int64_t last = int64_t(kept.size());
  Tensor r = prod_safe_zeros_backward(gp, xp.reshape(flat), last);
  return r.reshape(xp.sizes()).permute(inverse);
}

Tensor prod_ag(const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  Tensor out = below_autograd([&] { return ops::prod()(a, dims, keepdim, dtype); });
  uint64_t mask = reduce::dim_mask(dims, a.dim());
  record(overload_name(dims, "ProdBackward0", "ProdBackward1"), {a}, {out}, {saved_input(a), saved_output(out)},
         [dt = a.dtype(), mask, keepdim](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor x = n.unpack(0), result = n.unpack(1);
           // With a dtype argument the product was taken of x cast to result's dtype.
           Tensor xc = x.dtype() == result.dtype() ? x : x.to(result.dtype());
           return {cast_back(prod_backward(g[0], xc, result, mask, keepdim), dt)};
         });
  return out;
}

// amax/amin: the gradient is split evenly among the elements equal to the result (ties).
LambdaNode::Backward extremum_backward(uint64_t mask, bool keepdim) {
  return [mask, keepdim](const variable_list& g, LambdaNode& n) -> variable_list {
    Tensor x = n.unpack(0), result = n.unpack(1);
    Tensor rk = unsqueeze_reduced(result, x.sizes(), mask, keepdim);
    Tensor gk = unsqueeze_reduced(g[0], x.sizes(), mask, keepdim);
    Tensor hit = eq(x, rk).to(g[0].dtype());
    Tensor count = hit.sum(mask_dims(mask, x.dim()), /*keepdim=*/true);
    return {(gk / count) * hit};
  };
}
Tensor amax_ag(const Tensor& a, IntArrayRef dims, bool keepdim) {
  Tensor out = below_autograd([&] { return ops::amax()(a, dims, keepdim); });
  record("AmaxBackward0", {a}, {out}, {saved_input(a), saved_output(out)},
         extremum_backward(reduce::dim_mask(dims, a.dim()), keepdim));
  return out;
}
Tensor amin_ag(const Tensor& a, IntArrayRef dims, bool keepdim) {
  Tensor out = below_autograd([&] { return ops::amin()(a, dims, keepdim); });
  record("AminBackward0", {a}, {out}, {saved_input(a), saved_output(out)},
         extremum_backward(reduce::dim_mask(dims, a.dim()), keepdim));
  return out;
}

std::tuple<Tensor, Tensor> max_dim_ag(const Tensor& a, int64_t dim, bool keepdim) {
  auto [values, indices] = below_autograd([&] { return ops::max_dim()(a, dim, keepdim); });
  int64_t d = reduce::wrap_dim(dim, a.dim());
  record("MaxBackward0", {a}, {values, indices}, {saved_output(indices)}, value_selecting_backward(a.sizes(), d, keepdim));
  return {values, indices};
}
std::tuple<Tensor, Tensor> min_dim_ag(const Tensor& a, int64_t dim, bool keepdim) {
  auto [values, indices] = below_autograd([&] { return ops::min_dim()(a, dim, keepdim); });
  int64_t d = reduce::wrap_dim(dim, a.dim());
  record("MinBackward0", {a}, {values, indices}, {saved_output(indices)}, value_selecting_backward(a.sizes(), d, keepdim));
  return {values, indices};
}

Tensor var_ag(const Tensor& a, IntArrayRef dims, int64_t correction, bool keepdim) {
  Tensor out = below_autograd([&] { return ops::var()(a, dims, correction, keepdim); });
  uint64_t mask = reduce::dim_mask(dims, a.dim());
  record("VarBackward0", {a}, {out}, {saved_input(a)},
         [mask, correction, keepdim](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor x = n.unpack(0);
           double dof = std::max<double>(0.0, double(reduce::reduced_numel(x.sizes(), mask) - correction));
           Tensor centered = x - x.mean(mask_dims(mask, x.dim()), /*keepdim=*/true);
           return {unsqueeze_reduced(g[0], x.sizes(), mask, keepdim) * (2.0 / dof) * centered};
         });
  return out;
}

// PyTorch's norm_backward (vector norms): subgradient 0 where the norm is 0.
Tensor norm_backward(const Tensor& g, const Tensor& x, double p, const Tensor& norm, uint64_t mask, bool keepdim) {
  Tensor gk = unsqueeze_reduced(g, x.sizes(), mask, keepdim);
  Tensor nk = unsqueeze_reduced(norm, x.sizes(), mask, keepdim);
  if (p == 0.0) return zeros_like(x);
  if (p == 1.0) return sign(x) * gk;
  if (p == 2.0) return gk * where(eq(nk, 0), 0.0, x / nk);
  if (std::isinf(p)) {
    Tensor is_eq_max = logical_or(eq(abs(x), nk), logical_and(isnan(x), isnan(nk))).to(x.dtype());
    Tensor nb_max = is_eq_max.sum(mask_dims(mask, x.dim()), /*keepdim=*/true);
    return sign(x) * is_eq_max * (gk / nb_max);
  }
  if (p < 1.0) {
    Tensor scaled = sign(x) * where(eq(x, 0), 0.0, pow(abs(x), p - 1));
    return scaled * gk * pow(nk, 1 - p);
  }
  Tensor scaled = p < 2.0 ? sign(x) * pow(abs(x), p - 1) : x * pow(abs(x), p - 2);
  return scaled * where(eq(nk, 0), 0.0, gk / pow(nk, p - 1));
}

Tensor norm_ag(const Tensor& a, const Scalar& p, IntArrayRef dims, bool keepdim) {
  Tensor out = below_autograd([&] { return ops::norm()(a, p, dims, keepdim); });
  uint64_t mask = reduce::dim_mask(dims, a.dim());
  record(overload_name(dims, "NormBackward0", "NormBackward1"), {a}, {out}, {saved_input(a), saved_output(out)},
         [pv = p.to_double(), mask, keepdim](const variable_list& g, LambdaNode& n) -> variable_list {
           return {norm_backward(g[0], n.unpack(0), pv, n.unpack(1), mask, keepdim)};
         });
  return out;
}

// Sum from the end along dim: the gradient of cumsum.
Tensor reversed_cumsum(const Tensor& t, int64_t dim) { return t.flip({dim}).cumsum(dim).flip({dim}); }

Tensor cumsum_ag(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  Tensor out = below_autograd([&] { return ops::cumsum()(a, dim, dtype); });
  int64_t d = reduce::wrap_dim(dim, a.dim());
  record("CumsumBackward0", {a}, {out}, {}, [d, dt = a.dtype()](const variable_list& g, LambdaNode&) -> variable_list {
    if (g[0].dim() == 0) return {cast_back(g[0], dt)};
    return {cast_back(reversed_cumsum(g[0], d), dt)};
  });
  return out;
}

// PyTorch's cumprod_backward. Without zeros: reversed_cumsum(grad * out) / x. With zeros, the
// gradient of x_k is sum_{j>=k} grad_j * prod_{i<=j, i!=k} x_i, computed per k from the products
// before k and the cumulative products after it (no division; differentiable again).
Tensor cumprod_backward(const Tensor& grad, const Tensor& x, int64_t dim, const Tensor& out) {
  if (x.numel() <= 1) return grad;
  int64_t n = x.sizes()[size_t(dim)];
  if (n == 1) return grad;
  if (!any(eq(x, 0)).item<bool>()) return reversed_cumsum(grad * out, dim) / x;
  Shape ones_size = x.sizes();
  ones_size[size_t(dim)] = 1;
  Tensor one = ones(ones_size, {.dtype = x.dtype(), .device = x.device()});
  std::vector<Tensor> parts;
  parts.reserve(size_t(n));
  for (int64_t k = 0; k < n; ++k) {
    Tensor omitted;  // for j >= k: prod_{i<=j, i!=k} x_i
    if (k == 0) {
      omitted = cat({one, x.slice(dim, 1).cumprod(dim)}, dim);
    } else {
      Tensor until_k = prod(x.slice(dim, 0, k), dim, /*keepdim=*/true);
      if (k == n - 1) {
        omitted = until_k;
      } else {
        Tensor after = x.slice(dim, k + 1).cumprod(dim);
        omitted = cat({until_k, until_k.expand(after.sizes()) * after}, dim);
      }
    }
    parts.push_back((grad.slice(dim, k) * omitted).sum({dim}, /*keepdim=*/true));
  }
  return cat(parts, dim);
}

Tensor cumprod_ag(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  Tensor out = below_autograd([&] { return ops::cumprod()(a, dim, dtype); });
  int64_t d = reduce::wrap_dim(dim, a.dim());
  record("CumprodBackward0", {a}, {out}, {saved_input(a), saved_output(out)},
         [d, dt = a.dtype()](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor x = n.unpack(0), result = n.unpack(1);
           if (x.dim() == 0) return {cast_back(g[0], dt)};
           Tensor xc = x.dtype() == result.dtype() ? x : x.to(result.dtype());
           return {cast_back(cumprod_backward(g[0], xc, d, result), dt)};
         });
  return out;
}

EMBER_REGISTER_KERNEL(sum, Autograd, sum_ag);
EMBER_REGISTER_KERNEL(mean, Autograd, mean_ag);
EMBER_REGISTER_KERNEL(prod, Autograd, prod_ag);
EMBER_REGISTER_KERNEL(amax, Autograd, amax_ag);
EMBER_REGISTER_KERNEL(amin, Autograd, amin_ag);
EMBER_REGISTER_KERNEL(max_dim, Autograd, max_dim_ag);
EMBER_REGISTER_KERNEL(min_dim, Autograd, min_dim_ag);
EMBER_REGISTER_KERNEL(var, Autograd, var_ag);
EMBER_REGISTER_KERNEL(norm, Autograd, norm_ag);
EMBER_REGISTER_KERNEL(cumsum, Autograd, cumsum_ag);
EMBER_REGISTER_KERNEL(cumprod, Autograd, cumprod_ag);

// The full max()/min(): amax/amin over every dim, named as PyTorch names max()'s node.
Tensor full_extremum(const Tensor& a, bool is_max) {
  Tensor out = below_autograd([&] { return is_max ? ops::amax()(a, {}, false) : ops::amin()(a, {}, false); });
  record(is_max ? "MaxBackward1" : "MinBackward1", {a}, {out}, {saved_input(a), saved_output(out)},
         [](const variable_list& g, LambdaNode& n) -> variable_list {
           return {evenly_distribute_backward(g[0], n.unpack(0), n.unpack(1))};
         });
  return out;
}

}  // namespace
}  // namespace ember

// ---------------------------------------------------------------- formulas shared with order_stats.cpp
namespace ember {
using autograd::LambdaNode;
using autograd::variable_list;

LambdaNode::Backward value_selecting_backward(Shape in_sizes, int64_t dim, bool keepdim) {
  return [in_sizes = std::move(in_sizes), dim, keepdim](const variable_list& g, LambdaNode& n) -> variable_list {
    if (in_sizes.empty()) return {g[0]};
    Tensor indices = n.unpack(0);
    Tensor gk = g[0], ik = indices;
    if (!keepdim) gk = gk.unsqueeze(dim), ik = ik.unsqueeze(dim);
    Shape pos_shape(in_sizes.size(), 1);
    pos_shape[size_t(dim)] = in_sizes[size_t(dim)];
    Tensor positions = arange(in_sizes[size_t(dim)], {.dtype = kInt64, .device = g[0].device()}).view(pos_shape);
    return {where(eq(positions, ik), gk.expand(in_sizes), 0.0)};
  };
}

Tensor evenly_distribute_backward(const Tensor& grad, const Tensor& input, const Tensor& value) {
  Tensor mask = logical_or(eq(input, value), logical_and(isnan(input), isnan(value)));
  Tensor m = mask.to(grad.dtype());
  return m * (grad / m.sum());
}

}  // namespace ember
