// The CUDA kernels of the elementwise ops, registered with the dispatcher: each builds the
// shared plan with the op's dtype rules (the CPU kernels' IterConfigs) and calls its launcher
// (unary_kernels.cu, binary_kernels.cu, compare_kernels.cu, copy_kernels.cu).
#include <cmath>

#include "cuda/elementwise_host.h"
#include "cuda/elementwise_launchers.h"
#include "ember/ops.h"
#include "ops/arith_config.h"
#include "ops/op_handles.h"
#include "ops/promotion.h"

namespace ember::cuda {
namespace {

// ---------------------------------------------------------------- one operand
EMBER_UNARY_FLOAT_OPS(EMBER_CUDA_UNARY_FLOAT_KERNELS)

#define EMBER_CUDA_KEEP_KERNELS(n)                                                                        \
  Tensor n##_cuda(const Tensor& a) {                                                                      \
    Tensor out;                                                                                           \
    return run_elementwise(out, {a}, {.op_name = #n}, launch_##n);                                        \
  }                                                                                                       \
  Tensor& n##_inplace_cuda(Tensor& a) { return run_elementwise(a, {a}, {.op_name = #n "_"}, launch_##n); } \
  EMBER_REGISTER_KERNEL(n, CUDA, n##_cuda);                                                               \
  EMBER_REGISTER_KERNEL(n##_, CUDA, n##_inplace_cuda);
EMBER_UNARY_KEEP_OPS(EMBER_CUDA_KEEP_KERNELS)
#undef EMBER_CUDA_KEEP_KERNELS

Tensor& round_decimals_into(Tensor& out, const Tensor& a, int64_t decimals, const char* name) {
  return run_elementwise(out, {a}, {.op_name = name}, launch_round_decimals, [&](ElementwiseArgs& args) {
    args.param_f[0] = std::pow(10.0, std::fabs(double(decimals)));
    args.param_i[0] = decimals < 0;
  });
}
Tensor round_decimals_cuda(const Tensor& a, int64_t d) {
  Tensor out;
  return round_decimals_into(out, a, d, "round");
}
Tensor& round_decimals_inplace_cuda(Tensor& a, int64_t d) { return round_decimals_into(a, a, d, "round_"); }

Tensor gelu_cuda(const Tensor& a, const std::string& approximate) {
  Tensor out;
  return run_elementwise(out, {a}, {.op_name = "gelu"}, approximate == "tanh" ? launch_gelu_tanh : launch_gelu);
}
Tensor gelu_backward_cuda(const Tensor& grad, const Tensor& x, const std::string& approximate) {
  Tensor out;
  return run_elementwise(out, {grad, x}, {.op_name = "gelu_backward"},
                         approximate == "tanh" ? launch_gelu_tanh_backward : launch_gelu_backward);
}
// The fused activation gradients (the CompositeBackend formulas in src/ops/unary.cpp otherwise).
Tensor tanh_backward_cuda(const Tensor& g, const Tensor& y) {
  Tensor out;
  return run_elementwise(out, {g, y}, {.op_name = "tanh_backward"}, launch_tanh_backward);
}
Tensor sigmoid_backward_cuda(const Tensor& g, const Tensor& y) {
  Tensor out;
  return run_elementwise(out, {g, y}, {.op_name = "sigmoid_backward"}, launch_sigmoid_backward);
}
Tensor silu_backward_cuda(const Tensor& g, const Tensor& x) {
  Tensor out;
  return run_elementwise(out, {g, x}, {.op_name = "silu_backward"}, launch_silu_backward);
}
Tensor threshold_backward_cuda(const Tensor& g, const Tensor& x, const Scalar& threshold) {
  Tensor out;
  return run_elementwise(out, {g, x}, {.op_name = "threshold_backward"}, launch_threshold_backward,
                         [&](ElementwiseArgs& args) { args.param_f[0] = threshold.to_double(); });
}
Tensor leaky_relu_cuda(const Tensor& a, const Scalar& slope) {
  Tensor out;
  return run_elementwise(out, {a}, {.op_name = "leaky_relu"}, launch_leaky_relu,
                         [&](ElementwiseArgs& args) { args.param_f[0] = slope.to_double(); });
}

// The three values arrive resolved (src/ops/unary.cpp fills the dtype's defaults).
Tensor nan_to_num_cuda(const Tensor& a, std::optional<double> nan, std::optional<double> posinf,
                       std::optional<double> neginf) {
  if (!is_floating(a.dtype())) return ops::clone()(a);
  Tensor out;
  return run_elementwise(out, {a}, {.op_name = "nan_to_num"}, launch_nan_to_num, [&](ElementwiseArgs& args) {
    args.param_f[0] = nan.value();
    args.param_f[1] = posinf.value();
    args.param_f[2] = neginf.value();
  });
}

// Integers and bools are never NaN or infinite: the answer is a fill.
Tensor predicate(const Tensor& a, const char* name, Launcher launcher, bool int_value) {
  Tensor out;
  if (!is_floating(a.dtype())) {
    out = empty(a.sizes(), {.dtype = DType::Bool, .device = a.device()});
    ops::fill_()(out, int_value);
    return out;
  }
  return run_elementwise(out, {a}, {.op_name = name, .output_dtype = DType::Bool}, launcher);
}
Tensor isnan_cuda(const Tensor& a) { return predicate(a, "isnan", launch_isnan, false); }
Tensor isinf_cuda(const Tensor& a) { return predicate(a, "isinf", launch_isinf, false); }
Tensor isfinite_cuda(const Tensor& a) { return predicate(a, "isfinite", launch_isfinite, true); }
Tensor logical_not_cuda(const Tensor& a) {
  Tensor out;
  return run_elementwise(out, {a}, {.op_name = "logical_not", .output_dtype = DType::Bool}, launch_logical_not);
}
Tensor bitwise_not_cuda(const Tensor& a) {
  Tensor out;
  return run_elementwise(out, {a}, {.op_name = "bitwise_not"}, launch_bitwise_not);
}

EMBER_REGISTER_KERNEL(round_decimals, CUDA, round_decimals_cuda);
EMBER_REGISTER_KERNEL(round_decimals_, CUDA, round_decimals_inplace_cuda);
EMBER_REGISTER_KERNEL(gelu, CUDA, gelu_cuda);
EMBER_REGISTER_KERNEL(gelu_backward, CUDA, gelu_backward_cuda);
EMBER_REGISTER_KERNEL(tanh_backward, CUDA, tanh_backward_cuda);
EMBER_REGISTER_KERNEL(sigmoid_backward, CUDA, sigmoid_backward_cuda);
EMBER_REGISTER_KERNEL(silu_backward, CUDA, silu_backward_cuda);
EMBER_REGISTER_KERNEL(threshold_backward, CUDA, threshold_backward_cuda);
EMBER_REGISTER_KERNEL(leaky_relu, CUDA, leaky_relu_cuda);
EMBER_REGISTER_KERNEL(nan_to_num, CUDA, nan_to_num_cuda);
EMBER_REGISTER_KERNEL(isnan, CUDA, isnan_cuda);
EMBER_REGISTER_KERNEL(isinf, CUDA, isinf_cuda);
EMBER_REGISTER_KERNEL(isfinite, CUDA, isfinite_cuda);
EMBER_REGISTER_KERNEL(logical_not, CUDA, logical_not_cuda);
EMBER_REGISTER_KERNEL(bitwise_not, CUDA, bitwise_not_cuda);

// ---------------------------------------------------------------- two operands
Tensor& add_into(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const char* name) {
  return run_elementwise(out, {a, b}, {.op_name = name}, launch_add, [&](ElementwiseArgs& args) { set_param(args, 0, alpha); });
}
Tensor add_cuda(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Tensor out;
  return add_into(out, a, b, alpha, "add");
}
Tensor& add_inplace_cuda(Tensor& self, const Tensor& b, const Scalar& alpha) { return add_into(self, self, b, alpha, "add_"); }
Tensor sub_cuda(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Tensor out;
  return add_into(out, a, b, -alpha, "sub");
}
Tensor& sub_inplace_cuda(Tensor& self, const Tensor& b, const Scalar& alpha) { return add_into(self, self, b, -alpha, "sub_"); }

Tensor& div_into(Tensor& out, const Tensor& a, const Tensor& b, const std::optional<std::string>& mode, const char* name) {
  if (!mode) return run_elementwise(out, {a, b}, {.op_name = name, .int_to_float = true}, launch_div_true);
  return run_elementwise(out, {a, b}, {.op_name = name}, *mode == "trunc" ? launch_div_trunc : launch_div_floor);
}
Tensor div_cuda(const Tensor& a, const Tensor& b, const std::optional<std::string>& mode) {
  Tensor out;
  return div_into(out, a, b, mode, "div");
}
Tensor& div_inplace_cuda(Tensor& self, const Tensor& b, const std::optional<std::string>& mode) {
  return div_into(self, self, b, mode, "div_");
}
EMBER_REGISTER_KERNEL(add, CUDA, add_cuda);
EMBER_REGISTER_KERNEL(add_, CUDA, add_inplace_cuda);
EMBER_REGISTER_KERNEL(sub, CUDA, sub_cuda);
EMBER_REGISTER_KERNEL(sub_, CUDA, sub_inplace_cuda);
EMBER_REGISTER_KERNEL(div, CUDA, div_cuda);
EMBER_REGISTER_KERNEL(div_, CUDA, div_inplace_cuda);

#define EMBER_CUDA_ARITH_KERNELS(n)                                                                     \
  Tensor n##_cuda(const Tensor& a, const Tensor& b) {                                                   \
    Tensor out;                                                                                         \
    return run_elementwise(out, {a, b}, arith_config(#n), launch_##n);                                  \
  }                                                                                                     \
  Tensor& n##_inplace_cuda(Tensor& self, const Tensor& b) {                                             \
    return run_elementwise(self, {self, b}, arith_config(#n "_"), launch_##n);                          \
  }                                                                                                     \
  EMBER_REGISTER_KERNEL(n, CUDA, n##_cuda);                                                             \
  EMBER_REGISTER_KERNEL(n##_, CUDA, n##_inplace_cuda);
EMBER_BINARY_ARITH_OPS(EMBER_CUDA_ARITH_KERNELS)
#undef EMBER_CUDA_ARITH_KERNELS

#define EMBER_CUDA_COMPARE_KERNELS(n)                                                                     \
  Tensor n##_cuda(const Tensor& a, const Tensor& b) {                                                     \
    Tensor out;                                                                                           \
    return run_elementwise(out, {a, b}, {.op_name = #n, .output_dtype = DType::Bool}, launch_##n);        \
  }                                                                                                       \
  EMBER_REGISTER_KERNEL(n, CUDA, n##_cuda);
EMBER_COMPARE_OPS(EMBER_CUDA_COMPARE_KERNELS)
#undef EMBER_CUDA_COMPARE_KERNELS

// ---------------------------------------------------------------- clamp, lerp, where, masked_fill_
Tensor& clamp_into(Tensor& out, const Tensor& a, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi,
                   const char* name) {
  std::vector<Tensor> parts{a};
  if (lo) parts.push_back(wrapped_scalar(*lo));
  if (hi) parts.push_back(wrapped_scalar(*hi));
  DType dt = compute_result_type(parts);
  return run_elementwise(out, {a}, {.op_name = name, .compute_dtype = dt}, launch_clamp, [&](ElementwiseArgs& args) {
    args.param_i[0] = (lo ? 1 : 0) | (hi ? 2 : 0);
    if (lo) set_param(args, 1, *lo);
    if (hi) set_param(args, 2, *hi);
  });
}
Tensor clamp_cuda(const Tensor& a, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  Tensor out;
  return clamp_into(out, a, lo, hi, "clamp");
}
Tensor& clamp_inplace_cuda(Tensor& self, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  return clamp_into(self, self, lo, hi, "clamp_");
}
Tensor clamp_tensor_cuda(const Tensor& a, const std::optional<Tensor>& lo, const std::optional<Tensor>& hi) {
  std::vector<Tensor> inputs{a};
  if (lo) inputs.push_back(*lo);
  if (hi) inputs.push_back(*hi);
  Tensor out;
  return run_elementwise(out, inputs, {.op_name = "clamp"}, launch_clamp_tensor,
                         [&](ElementwiseArgs& args) { args.param_i[0] = lo ? 1 : 2; });
}
Tensor lerp_cuda(const Tensor& start, const Tensor& end, const Tensor& weight) {
  Tensor out;
  DType dt = start.dtype();
  if (weight.dim() == 0) {
    double w = weight.item().to_double();
    return run_elementwise(out, {start, end}, {.op_name = "lerp", .compute_dtype = dt}, launch_lerp_scalar,
                           [&](ElementwiseArgs& args) { args.param_f[0] = w; });
  }
  return run_elementwise(out, {start, end, weight}, {.op_name = "lerp", .compute_dtype = dt}, launch_lerp);
}

Tensor where_cuda(const Tensor& cond, const Tensor& a, const Tensor& b) {
  EMBER_CHECK(cond.dtype() == DType::Bool, "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              dtype_name(cond.dtype()));
  DType dt = compute_result_type({a, b});
  // Device operands take the result dtype first; host 0-dim ones travel by value.
  auto as_dt = [&](const Tensor& t) { return (t.is_cpu() && t.dim() == 0) || t.dtype() == dt ? t : t.to(dt); };
  Tensor out;
  return run_elementwise(out, {cond, as_dt(a), as_dt(b)},
                         {.op_name = "where", .compute_dtype = dt, .output_dtype = dt, .cast_inputs = false,
                          .upcast_reduced_float = false},
                         launch_where);
}
Tensor& masked_fill_cuda(Tensor& self, const Tensor& mask, const Scalar& value) {
  EMBER_CHECK(mask.dtype() == kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              dtype_name(mask.dtype()));
  if (self.numel() == 0) return self;
  return run_elementwise(self, {self, mask},
                         {.op_name = "masked_fill_", .compute_dtype = self.dtype(), .output_dtype = self.dtype(),
                          .cast_inputs = false, .upcast_reduced_float = false},
                         launch_masked_fill, [&](ElementwiseArgs& args) { set_param(args, 0, value); });
}
EMBER_REGISTER_KERNEL(clamp, CUDA, clamp_cuda);
EMBER_REGISTER_KERNEL(clamp_, CUDA, clamp_inplace_cuda);
EMBER_REGISTER_KERNEL(clamp_tensor, CUDA, clamp_tensor_cuda);
EMBER_REGISTER_KERNEL(lerp, CUDA, lerp_cuda);
EMBER_REGISTER_KERNEL(where, CUDA, where_cuda);
EMBER_REGISTER_KERNEL(masked_fill_, CUDA, masked_fill_cuda);

}  // namespace
}  // namespace ember::cuda
