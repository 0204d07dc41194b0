// The meta device's kernels: what an op returns (sizes, strides, dtype) by the same shape and
// dtype rules as the CPU's, with no data to read or write. They cover building models on
// "meta" (factories, the nn.init fills, copies, dtype changes) and the shapes of the common
// forward ops (elementwise, reductions, matmuls, softmax, cat; the nn layers' ops are in
// meta_nn_kernels.cpp). An op without one raises the dispatcher's "Could not run 'op' with
// arguments from the 'Meta' backend". Views need none: their CompositeBackend kernels only make
// new geometry over the (empty) storage.
#include <algorithm>
#include <string_view>

#include "ember/ops.h"
#include "ops/advanced_index.h"
#include "ops/arange_length.h"
#include "ops/arith_config.h"
#include "ops/elementwise_plan.h"
#include "meta/meta_utils.h"
#include "ops/op_handles.h"
#include "ops/promotion.h"
#include "ops/reduce_utils.h"

namespace ember::meta {
namespace {

// The elementwise ops: the plan every backend uses, stopped before it would touch data.
Tensor& elementwise(Tensor& out, std::vector<Tensor> inputs, IterConfig cfg) {
  for (const auto& t : inputs) check_on_meta(t);
  check_on_meta(out);
  cfg.shapes_only = true;
  ElementwisePlan plan({out}, std::move(inputs), cfg);
  out = plan.output();
  return out;
}

// ---------------------------------------------------------------- factories, fills, copies
Tensor empty_meta(IntArrayRef size, TensorOptions opts) { return empty_on(size, opts.dtype_or_default(), opts.device_or()); }
Tensor empty_strided_meta(IntArrayRef size, IntArrayRef stride, TensorOptions opts) {
  return empty_strided_on(size, stride, opts.dtype_or_default(), opts.device_or());
}
Tensor& fill_meta(Tensor& self, const Scalar&) { check_on_meta(self); return self; }
// The random fills (nn.init's uniform_/normal_/trunc_normal_ on a meta module) have nothing to fill.
Tensor& uniform_meta(Tensor& self, double from, double to, Generator*) {
  EMBER_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  return self;
}
Tensor& normal_meta(Tensor& self, double, double std, Generator*) {
  EMBER_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  return self;
}
Tensor& random_meta(Tensor& self, int64_t, std::optional<int64_t>, Generator*) { return self; }
Tensor& bernoulli_meta(Tensor& self, double, Generator*) { return self; }
Tensor& exponential_meta(Tensor& self, double, Generator*) { return self; }
Tensor& log_normal_meta(Tensor& self, double, double, Generator*) { return self; }

// Into a meta tensor: the source must broadcast to it. Out of one: there is nothing to copy
// (torch's words; Module.to_empty is the way off the meta device).
Tensor& copy_meta(Tensor& self, const Tensor& src, bool) {
  if (!self.is_meta())
    throw NotImplementedError("Cannot copy out of meta tensor; no data! Please use torch.nn.Module.to_empty() "
                              "instead of torch.nn.Module.to() when moving module from meta to a different device.");
  Shape b = broadcast_shapes(self.sizes(), src.sizes());
  EMBER_CHECK(IntArrayRef(b) == IntArrayRef(self.sizes()), "The size of tensor a (", self.sizes(),
              ") must match the size of tensor b (", src.sizes(), ")");
  return self;
}

Tensor arange_meta(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions opts) {
  const DType dt = opts.dtype_or_default();
  return empty_on({arange_length(start, end, step, dt)}, dt, opts.device_or());
}
Tensor linspace_meta(const Scalar&, const Scalar&, int64_t steps, TensorOptions opts) {
  EMBER_CHECK(steps >= 0, "number of steps must be non-negative");
  return empty_on({steps}, opts.dtype_or_default(), opts.device_or());
}
Tensor randperm_meta(int64_t n, TensorOptions opts, Generator*) {
  EMBER_CHECK(n >= 0, "n must be non-negative, got", n);
  return empty_on({n}, opts.dtype.value_or(kInt64), opts.device_or());
}

// A fresh tensor of a's shape and dtype (clone, conj_physical, flip, roll, tril/triu).
Tensor same_shape_meta(const Tensor& a) { check_on_meta(a); return new_meta(a.sizes(), a.dtype()); }
Tensor to_dtype_meta(const Tensor& a, DType dt) { return new_meta(a.sizes(), dt); }

EMBER_REGISTER_KERNEL(empty, Meta, empty_meta);
EMBER_REGISTER_KERNEL(empty_strided, Meta, empty_strided_meta);
EMBER_REGISTER_KERNEL(fill_, Meta, fill_meta);
EMBER_REGISTER_KERNEL(uniform_, Meta, uniform_meta);
EMBER_REGISTER_KERNEL(normal_, Meta, normal_meta);
EMBER_REGISTER_KERNEL(random_, Meta, random_meta);
EMBER_REGISTER_KERNEL(bernoulli_, Meta, bernoulli_meta);
EMBER_REGISTER_KERNEL(exponential_, Meta, exponential_meta);
EMBER_REGISTER_KERNEL(log_normal_, Meta, log_normal_meta);
EMBER_REGISTER_KERNEL(copy_, Meta, copy_meta);
EMBER_REGISTER_KERNEL(arange, Meta, arange_meta);
EMBER_REGISTER_KERNEL(linspace, Meta, linspace_meta);
EMBER_REGISTER_KERNEL(randperm, Meta, randperm_meta);
EMBER_REGISTER_KERNEL(clone, Meta, same_shape_meta);
EMBER_REGISTER_KERNEL(to_dtype, Meta, to_dtype_meta);

// ---------------------------------------------------------------- elementwise families
// The IterConfigs of the CPU (and CUDA) kernels, so dtypes come out the same.
#define EMBER_META_UNARY_FLOAT(n)                                                                             \
  Tensor n##_meta(const Tensor& a) { Tensor out; return elementwise(out, {a}, {.op_name = #n, .int_to_float = true}); } \
  Tensor& n##_inplace_meta(Tensor& a) { return elementwise(a, {a}, {.op_name = #n "_", .int_to_float = true}); }        \
  EMBER_REGISTER_KERNEL(n, Meta, n##_meta);                                                                   \
  EMBER_REGISTER_KERNEL(n##_, Meta, n##_inplace_meta);
EMBER_UNARY_FLOAT_OPS(EMBER_META_UNARY_FLOAT)
EMBER_UNARY_SPECIAL_OPS(EMBER_META_UNARY_FLOAT)
#undef EMBER_META_UNARY_FLOAT

// abs of a complex tensor is real; every other op of the family keeps its input's dtype.
IterConfig keep_config(const char* name, const Tensor& a) {
  IterConfig cfg{.op_name = name};
  if (is_complex(a.dtype()) && std::string_view(name).starts_with("abs")) cfg.output_dtype = complex_to_real(a.dtype());
  return cfg;
}
#define EMBER_META_KEEP(n)                                                                                   \
  Tensor n##_meta(const Tensor& a) { Tensor out; return elementwise(out, {a}, keep_config(#n, a)); }        \
  Tensor& n##_inplace_meta(Tensor& a) { return elementwise(a, {a}, keep_config(#n "_", a)); }               \
  EMBER_REGISTER_KERNEL(n, Meta, n##_meta);                                                                  \
  EMBER_REGISTER_KERNEL(n##_, Meta, n##_inplace_meta);
EMBER_UNARY_KEEP_OPS(EMBER_META_KEEP)
#undef EMBER_META_KEEP

#define EMBER_META_ARITH(n)                                                                                  \
  Tensor n##_meta(const Tensor& a, const Tensor& b) { Tensor out; return elementwise(out, {a, b}, arith_config(#n)); } \
  Tensor& n##_inplace_meta(Tensor& a, const Tensor& b) { return elementwise(a, {a, b}, arith_config(#n "_")); }        \
  EMBER_REGISTER_KERNEL(n, Meta, n##_meta);                                                                  \
  EMBER_REGISTER_KERNEL(n##_, Meta, n##_inplace_meta);
EMBER_BINARY_ARITH_OPS(EMBER_META_ARITH)
#undef EMBER_META_ARITH

#define EMBER_META_COMPARE(n)                                                                                \
  Tensor n##_meta(const Tensor& a, const Tensor& b) {                                                        \
    Tensor out;                                                                                              \
    return elementwise(out, {a, b}, {.op_name = #n, .output_dtype = kBool});                                 \
  }                                                                                                          \
  EMBER_REGISTER_KERNEL(n, Meta, n##_meta);
EMBER_COMPARE_OPS(EMBER_META_COMPARE)
#undef EMBER_META_COMPARE

// ---------------------------------------------------------------- elementwise, one by one
Tensor add_meta(const Tensor& a, const Tensor& b, const Scalar&) { Tensor out; return elementwise(out, {a, b}, {.op_name = "add"}); }
Tensor& add_inplace_meta(Tensor& a, const Tensor& b, const Scalar&) { return elementwise(a, {a, b}, {.op_name = "add_"}); }
Tensor sub_meta(const Tensor& a, const Tensor& b, const Scalar&) { Tensor out; return elementwise(out, {a, b}, {.op_name = "sub"}); }
Tensor& sub_inplace_meta(Tensor& a, const Tensor& b, const Scalar&) { return elementwise(a, {a, b}, {.op_name = "sub_"}); }
IterConfig div_config(const char* name, const std::optional<std::string>& mode) { return {.op_name = name, .int_to_float = !mode}; }
Tensor div_meta(const Tensor& a, const Tensor& b, const std::optional<std::string>& mode) {
  Tensor out;
  return elementwise(out, {a, b}, div_config("div", mode));
}
Tensor& div_inplace_meta(Tensor& a, const Tensor& b, const std::optional<std::string>& mode) {
  return elementwise(a, {a, b}, div_config("div_", mode));
}
Tensor where_meta(const Tensor& cond, const Tensor& a, const Tensor& b) {
  EMBER_CHECK(cond.dtype() == kBool, "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              dtype_name(cond.dtype()));
  const DType dt = compute_result_type({a, b});
  Tensor out;
  return elementwise(out, {cond, a, b}, {.op_name = "where", .compute_dtype = dt, .output_dtype = dt, .cast_inputs = false});
}
DType clamp_dtype(const Tensor& a, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  std::vector<Tensor> parts{a};
  if (lo) parts.push_back(wrapped_scalar(*lo));
  if (hi) parts.push_back(wrapped_scalar(*hi));
  return compute_result_type(parts);
}
Tensor clamp_meta(const Tensor& a, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  EMBER_CHECK(lo || hi, "torch.clamp: At least one of 'min' or 'max' must not be None");
  Tensor out;
  return elementwise(out, {a}, {.op_name = "clamp", .compute_dtype = clamp_dtype(a, lo, hi)});
}
Tensor& clamp_inplace_meta(Tensor& a, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  EMBER_CHECK(lo || hi, "torch.clamp: At least one of 'min' or 'max' must not be None");
  return elementwise(a, {a}, {.op_name = "clamp_", .compute_dtype = clamp_dtype(a, lo, hi)});
}
Tensor clamp_tensor_meta(const Tensor& a, const std::optional<Tensor>& lo, const std::optional<Tensor>& hi) {
  std::vector<Tensor> inputs{a};
  if (lo) inputs.push_back(*lo);
  if (hi) inputs.push_back(*hi);
  Tensor out;
  return elementwise(out, inputs, {.op_name = "clamp"});
}
Tensor lerp_meta(const Tensor& start, const Tensor& end, const Tensor& weight) {
  Tensor out;
  return elementwise(out, {start, end, weight}, {.op_name = "lerp", .compute_dtype = start.dtype()});
}
Tensor nan_to_num_meta(const Tensor& a, std::optional<double>, std::optional<double>, std::optional<double>) {
  Tensor out;
  return elementwise(out, {a}, {.op_name = "nan_to_num"});
}
Tensor gelu_meta(const Tensor& a, const std::string&) { Tensor out; return elementwise(out, {a}, {.op_name = "gelu"}); }
Tensor leaky_relu_meta(const Tensor& a, const Scalar&) { Tensor out; return elementwise(out, {a}, {.op_name = "leaky_relu"}); }
Tensor gelu_backward_meta(const Tensor& g, const Tensor& x, const std::string&) {
  Tensor out;
  return elementwise(out, {g, x}, {.op_name = "gelu_backward"});
}
Tensor threshold_backward_meta(const Tensor& g, const Tensor& x, const Scalar&) {
  Tensor out;
  return elementwise(out, {g, x}, {.op_name = "threshold_backward"});
}
#define EMBER_META_GRAD2(n)                                                                                  \
  Tensor n##_meta(const Tensor& g, const Tensor& y) { Tensor out; return elementwise(out, {g, y}, {.op_name = #n}); } \
  EMBER_REGISTER_KERNEL(n, Meta, n##_meta);
EMBER_META_GRAD2(tanh_backward)
EMBER_META_GRAD2(sigmoid_backward)
EMBER_META_GRAD2(silu_backward)
#undef EMBER_META_GRAD2
Tensor bool_out(const Tensor& a, const char* name) { Tensor out; return elementwise(out, {a}, {.op_name = name, .output_dtype = kBool}); }
Tensor logical_not_meta(const Tensor& a) { return bool_out(a, "logical_not"); }
Tensor isnan_meta(const Tensor& a) { return bool_out(a, "isnan"); }
Tensor isinf_meta(const Tensor& a) { return bool_out(a, "isinf"); }
Tensor isfinite_meta(const Tensor& a) { return bool_out(a, "isfinite"); }
Tensor bitwise_not_meta(const Tensor& a) { Tensor out; return elementwise(out, {a}, {.op_name = "bitwise_not"}); }
Tensor& masked_fill_meta(Tensor& self, const Tensor& mask, const Scalar&) {
  EMBER_CHECK(mask.dtype() == kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              dtype_name(mask.dtype()));
  return elementwise(self, {self, mask},
                     {.op_name = "masked_fill_", .compute_dtype = self.dtype(), .output_dtype = self.dtype(), .cast_inputs = false});
}
Tensor round_decimals_meta(const Tensor& a, int64_t) { Tensor out; return elementwise(out, {a}, {.op_name = "round"}); }
Tensor& round_decimals_inplace_meta(Tensor& a, int64_t) { return elementwise(a, {a}, {.op_name = "round_"}); }

EMBER_REGISTER_KERNEL(add, Meta, add_meta);
EMBER_REGISTER_KERNEL(add_, Meta, add_inplace_meta);
EMBER_REGISTER_KERNEL(sub, Meta, sub_meta);
EMBER_REGISTER_KERNEL(sub_, Meta, sub_inplace_meta);
EMBER_REGISTER_KERNEL(div, Meta, div_meta);
EMBER_REGISTER_KERNEL(div_, Meta, div_inplace_meta);
EMBER_REGISTER_KERNEL(where, Meta, where_meta);
EMBER_REGISTER_KERNEL(clamp, Meta, clamp_meta);
EMBER_REGISTER_KERNEL(clamp_, Meta, clamp_inplace_meta);
EMBER_REGISTER_KERNEL(clamp_tensor, Meta, clamp_tensor_meta);
EMBER_REGISTER_KERNEL(lerp, Meta, lerp_meta);
EMBER_REGISTER_KERNEL(nan_to_num, Meta, nan_to_num_meta);
EMBER_REGISTER_KERNEL(gelu, Meta, gelu_meta);
EMBER_REGISTER_KERNEL(gelu_backward, Meta, gelu_backward_meta);
EMBER_REGISTER_KERNEL(threshold_backward, Meta, threshold_backward_meta);
EMBER_REGISTER_KERNEL(leaky_relu, Meta, leaky_relu_meta);
EMBER_REGISTER_KERNEL(logical_not, Meta, logical_not_meta);
EMBER_REGISTER_KERNEL(bitwise_not, Meta, bitwise_not_meta);
EMBER_REGISTER_KERNEL(isnan, Meta, isnan_meta);
EMBER_REGISTER_KERNEL(isinf, Meta, isinf_meta);
EMBER_REGISTER_KERNEL(isfinite, Meta, isfinite_meta);
EMBER_REGISTER_KERNEL(masked_fill_, Meta, masked_fill_meta);
EMBER_REGISTER_KERNEL(round_decimals, Meta, round_decimals_meta);
EMBER_REGISTER_KERNEL(round_decimals_, Meta, round_decimals_inplace_meta);

// ---------------------------------------------------------------- reductions
Tensor reduced(const Tensor& a, IntArrayRef dims, bool keepdim, DType dt) {
  check_on_meta(a);
  return new_meta(reduce::reduced_shape(a.sizes(), reduce::dim_mask(dims, a.dim()), keepdim), dt);
}
Tensor sum_meta(const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  return reduced(a, dims, keepdim, dtype ? *dtype : (is_integral(a.dtype(), true) ? kInt64 : a.dtype()));
}
Tensor mean_meta(const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  const DType dt = dtype ? *dtype : a.dtype();
  EMBER_CHECK(is_floating_or_complex(dt), "mean(): could not infer output dtype. Input dtype must be either a floating "
              "point or complex dtype. Got: ", reduce::torch_type_name(dt));
  return reduced(a, dims, keepdim, dt);
}
Tensor amax_meta(const Tensor& a, IntArrayRef dims, bool keepdim) { return reduced(a, dims, keepdim, a.dtype()); }
std::tuple<Tensor, Tensor> max_dim_meta(const Tensor& a, int64_t dim, bool keepdim) {
  const int64_t d[1] = {dim};
  return {reduced(a, IntArrayRef(d, 1), keepdim, a.dtype()), reduced(a, IntArrayRef(d, 1), keepdim, kInt64)};
}
Tensor argmax_meta(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) return reduced(a, {}, keepdim, kInt64);
  const int64_t d[1] = {*dim};
  return reduced(a, IntArrayRef(d, 1), keepdim, kInt64);
}
Tensor var_meta(const Tensor& a, IntArrayRef dims, int64_t, bool keepdim) {
  return reduced(a, dims, keepdim, is_complex(a.dtype()) ? complex_to_real(a.dtype()) : a.dtype());
}
Tensor norm_meta(const Tensor& a, const Scalar&, IntArrayRef dims, bool keepdim) {
  EMBER_CHECK(is_floating_or_complex(a.dtype()), "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
              reduce::torch_type_name(a.dtype()));
  return reduced(a, dims, keepdim, is_complex(a.dtype()) ? complex_to_real(a.dtype()) : a.dtype());
}
Tensor any_meta(const Tensor& a, IntArrayRef dims, bool keepdim) {
  return reduced(a, dims, keepdim, a.dtype() == kUInt8 ? kUInt8 : kBool);
}
Tensor scan_meta(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  check_on_meta(a);
  (void)wrap_dim(dim, a.dim());
  return new_meta(a.sizes(), dtype ? *dtype : (is_integral(a.dtype(), true) ? kInt64 : a.dtype()));
}
Tensor softmax_meta(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  check_on_meta(a);
  (void)wrap_dim(dim, a.dim());
  const DType dt = dtype ? *dtype : a.dtype();
  EMBER_CHECK(is_floating(dt), "softmax: expected a floating point input, got ", dtype_name(dt));
  return new_meta(a.sizes(), dt);
}

EMBER_REGISTER_KERNEL(sum, Meta, sum_meta);
EMBER_REGISTER_KERNEL(prod, Meta, sum_meta);
EMBER_REGISTER_KERNEL(mean, Meta, mean_meta);
EMBER_REGISTER_KERNEL(amax, Meta, amax_meta);
EMBER_REGISTER_KERNEL(amin, Meta, amax_meta);
EMBER_REGISTER_KERNEL(max_dim, Meta, max_dim_meta);
EMBER_REGISTER_KERNEL(min_dim, Meta, max_dim_meta);
EMBER_REGISTER_KERNEL(argmax, Meta, argmax_meta);
EMBER_REGISTER_KERNEL(argmin, Meta, argmax_meta);
EMBER_REGISTER_KERNEL(var, Meta, var_meta);
EMBER_REGISTER_KERNEL(norm, Meta, norm_meta);
EMBER_REGISTER_KERNEL(any, Meta, any_meta);
EMBER_REGISTER_KERNEL(all, Meta, any_meta);
EMBER_REGISTER_KERNEL(cumsum, Meta, scan_meta);
EMBER_REGISTER_KERNEL(cumprod, Meta, scan_meta);
EMBER_REGISTER_KERNEL(softmax, Meta, softmax_meta);
EMBER_REGISTER_KERNEL(log_softmax, Meta, softmax_meta);

// ---------------------------------------------------------------- products, shapes that copy
void check_same_dtype(const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.dtype() == b.dtype(), "expected m1 and m2 to have the same dtype, but got: ", dtype_name(a.dtype()),
              " != ", dtype_name(b.dtype()));
}
Tensor mm_meta(const Tensor& a, const Tensor& b) {
  check_on_meta(a);
  check_on_meta(b);
  EMBER_CHECK(a.dim() == 2, "self must be a matrix");
  EMBER_CHECK(b.dim() == 2, "mat2 must be a matrix");
  EMBER_CHECK(a.sizes()[1] == b.sizes()[0], "mat1 and mat2 shapes cannot be multiplied (", a.sizes()[0], "x",
              a.sizes()[1], " and ", b.sizes()[0], "x", b.sizes()[1], ")");
  check_same_dtype(a, b);
  return new_meta({a.sizes()[0], b.sizes()[1]}, a.dtype());
}
Tensor bmm_meta(const Tensor& a, const Tensor& b) {
  check_on_meta(a);
  check_on_meta(b);
  EMBER_CHECK(a.dim() == 3, "batch1 must be a 3D tensor");
  EMBER_CHECK(b.dim() == 3, "batch2 must be a 3D tensor");
  EMBER_CHECK(a.sizes()[0] == b.sizes()[0] && a.sizes()[2] == b.sizes()[1], "Expected size for first two dimensions of "
              "batch2 tensor to be: [", a.sizes()[0], ", ", a.sizes()[2], "] but got: [", b.sizes()[0], ", ",
              b.sizes()[1], "].");
  check_same_dtype(a, b);
  return new_meta({a.sizes()[0], a.sizes()[1], b.sizes()[2]}, a.dtype());
}
Tensor addmm_meta(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar&, const Scalar&) {
  check_on_meta(self);
  Tensor out = mm_meta(a, b);
  Shape s = broadcast_shapes(self.sizes(), out.sizes());
  EMBER_CHECK(IntArrayRef(s) == IntArrayRef(out.sizes()), "The expanded size of the tensor (", out.sizes(),
              ") must match the existing size (", self.sizes(), ")");
  return out;
}
Tensor dot_meta(const Tensor& a, const Tensor& b) {
  check_on_meta(a);
  check_on_meta(b);
  EMBER_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ", b.dim(), "D tensors");
  EMBER_CHECK(a.numel() == b.numel(), "inconsistent tensor size, expected tensor [", a.numel(),
              "] and src [", b.numel(), "] to have the same number of elements, but got ", a.numel(), " and ",
              b.numel(), " elements respectively");
  return new_meta({}, a.dtype());
}

Tensor cat_meta(TensorList tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  // torch's legacy rule: 1-d empty tensors are skipped.
  const Tensor* ref = nullptr;
  for (const auto& t : tensors) {
    check_on_meta(t);
    if (!(t.dim() == 1 && t.numel() == 0) && !ref) ref = &t;
  }
  const DType dt = compute_result_type(std::vector<Tensor>(tensors.begin(), tensors.end()));
  if (!ref) return new_meta({0}, dt);
  const int64_t d = wrap_dim(dim, ref->dim());
  Shape out = ref->sizes();
  out[d] = 0;
  for (const auto& t : tensors) {
    if (t.dim() == 1 && t.numel() == 0) continue;
    EMBER_CHECK(t.dim() == ref->dim(), "Tensors must have same number of dimensions: got ", ref->dim(), " and ", t.dim());
    for (int64_t i = 0; i < t.dim(); ++i)
      EMBER_CHECK(i == d || t.sizes()[i] == ref->sizes()[i], "Sizes of tensors must match except in dimension ", d,
                  ". Expected size ", ref->sizes()[i], " but got size ", t.sizes()[i], " for tensor number in the list.");
    out[d] += t.sizes()[d];
  }
  return new_meta(out, dt);
}
Tensor flip_meta(const Tensor& a, IntArrayRef) { return same_shape_meta(a); }
Tensor roll_meta(const Tensor& a, IntArrayRef, IntArrayRef) { return same_shape_meta(a); }
Tensor triangle_meta(const Tensor& a, int64_t) {
  EMBER_CHECK(a.dim() >= 2, "tril/triu: input tensor must have at least 2 dimensions");
  return same_shape_meta(a);
}
Tensor repeat_meta(const Tensor& a, IntArrayRef repeats) {
  check_on_meta(a);
  EMBER_CHECK(int64_t(repeats.size()) >= a.dim(), "Number of dimensions of repeat dims can not be smaller than "
              "number of dimensions of tensor");
  Shape out(repeats.begin(), repeats.end());
  const int64_t lead = int64_t(repeats.size()) - a.dim();
  for (int64_t i = 0; i < a.dim(); ++i) out[lead + i] *= a.sizes()[i];
  return new_meta(out, a.dtype());
}

// ---------------------------------------------------------------- selection, indexing, scans
// (values, int64 indices) of values_shape.
std::tuple<Tensor, Tensor> values_indices(const Tensor& a, IntArrayRef values_shape) {
  return {new_meta(values_shape, a.dtype()), new_meta(values_shape, kInt64)};
}
std::tuple<Tensor, Tensor> sort_meta(const Tensor& a, int64_t dim, bool, bool) {
  check_on_meta(a);
  (void)wrap_dim(dim, std::max<int64_t>(a.dim(), 1));
  return values_indices(a, a.sizes());
}
std::tuple<Tensor, Tensor> topk_meta(const Tensor& a, int64_t k, int64_t dim, bool, bool) {
  check_on_meta(a);
  Shape out = a.sizes();
  if (a.dim() > 0) {
    const int64_t d = wrap_dim(dim, a.dim());
    EMBER_CHECK(k >= 0 && k <= a.sizes()[d], "selected index k out of range");
    out[d] = k;
  }
  return values_indices(a, out);
}
std::tuple<Tensor, Tensor> cummax_meta(const Tensor& a, int64_t dim) {
  check_on_meta(a);
  (void)wrap_dim(dim, std::max<int64_t>(a.dim(), 1));
  return values_indices(a, a.sizes());
}
Tensor logcumsumexp_meta(const Tensor& a, int64_t dim) {
  check_on_meta(a);
  (void)wrap_dim(dim, std::max<int64_t>(a.dim(), 1));
  return new_meta(a.sizes(), a.dtype());
}
Tensor gather_meta(const Tensor& a, int64_t dim, const Tensor& index) {
  check_on_meta(a);
  check_on_meta(index);
  EMBER_CHECK(index.dtype() == kInt64, "gather(): Expected dtype int64 for index");
  EMBER_CHECK(index.dim() == a.dim() || (a.dim() == 0 && index.dim() <= 1), "Index tensor must have the same number of "
              "dimensions as input tensor");
  (void)wrap_dim(dim, std::max<int64_t>(a.dim(), 1));
  return new_meta(index.sizes(), a.dtype());
}
// The scatters write self in place: checks only.
Tensor& scatter_meta(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  for (const Tensor* t : {static_cast<const Tensor*>(&self), &index, &src}) check_on_meta(*t);
  (void)wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  return self;
}
Tensor& scatter_value_meta(Tensor& self, int64_t dim, const Tensor& index, const Scalar&) {
  return scatter_meta(self, dim, index, index);
}
Tensor polygamma_meta(int64_t, const Tensor& a) { Tensor out; return elementwise(out, {a}, {.op_name = "polygamma", .int_to_float = true}); }
Tensor igamma_meta(const Tensor& a, const Tensor& x) { Tensor out; return elementwise(out, {a, x}, {.op_name = "igamma", .int_to_float = true}); }

// Advanced indexing: the geometry every backend shares. Integer indices only: a mask's result
// size depends on its values (torch refuses it on meta too; here its nonzero() has no meta kernel).
AdvancedIndexGeometry index_geometry(const Tensor& self, ArrayRef<std::optional<Tensor>> indices) {
  check_on_meta(self);
  for (const auto& i : indices) check_on_meta(i);
  return advanced_index_geometry(self, indices, [](const Tensor& t) { return t; });
}
Tensor index_meta(const Tensor& self, ArrayRef<std::optional<Tensor>> indices) {
  return new_meta(index_geometry(self, indices).result_shape, self.dtype());
}
Tensor& index_put_meta(Tensor& self, ArrayRef<std::optional<Tensor>> indices, const Tensor& values, bool) {
  check_on_meta(values);
  EMBER_CHECK(values.dtype() == self.dtype(), "Index put requires the source and destination dtypes match, got ",
              dtype_name(self.dtype()), " for the destination and ", dtype_name(values.dtype()), " for the source.");
  const Shape result = index_geometry(self, indices).result_shape;
  Shape b;
  try { b = broadcast_shapes(values.sizes(), result); } catch (const Error&) { b.clear(); }
  EMBER_CHECK(IntArrayRef(b) == IntArrayRef(result), "shape mismatch: value tensor of shape ", values.sizes(),
              " cannot be broadcast to indexing result of shape ", result);
  return self;
}

EMBER_REGISTER_KERNEL(index, Meta, index_meta);
EMBER_REGISTER_KERNEL(index_put_, Meta, index_put_meta);
EMBER_REGISTER_KERNEL(sort, Meta, sort_meta);
EMBER_REGISTER_KERNEL(topk, Meta, topk_meta);
EMBER_REGISTER_KERNEL(cummax, Meta, cummax_meta);
EMBER_REGISTER_KERNEL(cummin, Meta, cummax_meta);
EMBER_REGISTER_KERNEL(logcumsumexp, Meta, logcumsumexp_meta);
EMBER_REGISTER_KERNEL(gather, Meta, gather_meta);
EMBER_REGISTER_KERNEL(scatter_, Meta, scatter_meta);
EMBER_REGISTER_KERNEL(scatter_add_, Meta, scatter_meta);
EMBER_REGISTER_KERNEL(scatter_value_, Meta, scatter_value_meta);
EMBER_REGISTER_KERNEL(polygamma, Meta, polygamma_meta);
EMBER_REGISTER_KERNEL(igamma, Meta, igamma_meta);
EMBER_REGISTER_KERNEL(igammac, Meta, igamma_meta);

// ---------------------------------------------------------------- optimizer and gradient steps
// The fused optimizer updates, gradient clipping's scaling and GradScaler's unscale write their
// tensors in place: on meta there is nothing to write, so a whole training step (model, loss,
// backward, clip, step) runs as a dry run. The lists are still checked to be on meta.
void check_lists(std::initializer_list<TensorList> lists) {
  for (TensorList l : lists)
    for (const Tensor& t : l) check_on_meta(t);
}
void fused_adam_meta(TensorList p, TensorList g, TensorList m, TensorList v, TensorList vmax, TensorList steps, double,
                     double, double, double, double, bool, bool) {
  check_lists({p, g, m, v, vmax, steps});
}
void fused_sgd_meta(TensorList p, TensorList g, TensorList buf, double, double, double, double, bool, bool, bool) {
  check_lists({p, g, buf});
}
void fused_adagrad_meta(TensorList p, TensorList g, TensorList sums, TensorList steps, double, double, double, double, bool) {
  check_lists({p, g, sums, steps});
}
void fused_rmsprop_meta(TensorList p, TensorList g, TensorList sq, TensorList mom, TensorList avg, double, double, double,
                        double, double, bool, bool) {
  check_lists({p, g, sq, mom, avg});
}
Tensor foreach_norm_stacked_meta(TensorList tensors, double) {
  check_lists({tensors});
  EMBER_CHECK(!tensors.empty(), "_foreach_norm: expected a non-empty list of tensors");
  return new_meta({int64_t(tensors.size())}, tensors[0].dtype());
}
void foreach_mul_meta(TensorList tensors, const Tensor& scale) {
  check_lists({tensors});
  check_on_meta(scale);
}
void amp_unscale_meta(TensorList grads, const Tensor& found_inf, const Tensor& inv_scale) {
  check_lists({grads});
  check_on_meta(found_inf);
  check_on_meta(inv_scale);
}

EMBER_REGISTER_KERNEL(_fused_adam_, Meta, fused_adam_meta);
EMBER_REGISTER_KERNEL(_fused_adamw_, Meta, fused_adam_meta);
EMBER_REGISTER_KERNEL(_fused_sgd_, Meta, fused_sgd_meta);
EMBER_REGISTER_KERNEL(_fused_adagrad_, Meta, fused_adagrad_meta);
EMBER_REGISTER_KERNEL(_fused_rmsprop_, Meta, fused_rmsprop_meta);
EMBER_REGISTER_KERNEL(_foreach_norm_stacked, Meta, foreach_norm_stacked_meta);
EMBER_REGISTER_KERNEL(_foreach_mul_, Meta, foreach_mul_meta);
EMBER_REGISTER_KERNEL(_amp_foreach_non_finite_check_and_unscale_, Meta, amp_unscale_meta);

// ---------------------------------------------------------------- FFT
// c2c keeps shape and dtype; r2c makes the real dtype's complex, the last of dims n/2+1 when
// onesided; c2r makes the real dtype, the last of dims last_dim_size.
int64_t last_fft_dim(const Tensor& a, IntArrayRef dims) {
  EMBER_CHECK(!dims.empty(), "fft: expected at least one dim");
  return wrap_dim(dims.back(), a.dim());
}
Tensor fft_c2c_meta(const Tensor& a, IntArrayRef, int64_t, bool) {
  check_on_meta(a);
  return new_meta(a.sizes(), a.dtype());
}
Tensor fft_r2c_meta(const Tensor& a, IntArrayRef dims, int64_t, bool onesided) {
  check_on_meta(a);
  Shape out = a.sizes();
  const int64_t d = last_fft_dim(a, dims);
  if (onesided) out[d] = out[d] / 2 + 1;
  return new_meta(out, real_to_complex(a.dtype()));
}
Tensor fft_c2r_meta(const Tensor& a, IntArrayRef dims, int64_t, int64_t last_dim_size) {
  check_on_meta(a);
  Shape out = a.sizes();
  out[last_fft_dim(a, dims)] = last_dim_size;
  return new_meta(out, complex_to_real(a.dtype()));
}

EMBER_REGISTER_KERNEL(fft_c2c, Meta, fft_c2c_meta);
EMBER_REGISTER_KERNEL(fft_r2c, Meta, fft_r2c_meta);
EMBER_REGISTER_KERNEL(fft_c2r, Meta, fft_c2r_meta);
EMBER_REGISTER_KERNEL(conj_physical, Meta, same_shape_meta);

EMBER_REGISTER_KERNEL(mm, Meta, mm_meta);
EMBER_REGISTER_KERNEL(bmm, Meta, bmm_meta);
EMBER_REGISTER_KERNEL(addmm, Meta, addmm_meta);
EMBER_REGISTER_KERNEL(dot, Meta, dot_meta);
EMBER_REGISTER_KERNEL(cat, Meta, cat_meta);
EMBER_REGISTER_KERNEL(flip, Meta, flip_meta);
EMBER_REGISTER_KERNEL(roll, Meta, roll_meta);
EMBER_REGISTER_KERNEL(tril, Meta, triangle_meta);
EMBER_REGISTER_KERNEL(triu, Meta, triangle_meta);
EMBER_REGISTER_KERNEL(repeat, Meta, repeat_meta);

}  // namespace
}  // namespace ember::meta
