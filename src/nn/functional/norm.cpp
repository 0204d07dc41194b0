// Normalisation: layer_norm and rms_norm (fused ops native_layer_norm / native_rms_norm, CPU
// kernels in src/cpu/norm_kernels.cpp, gradient formulas below), group_norm (layer_norm over
// [N, G, C/G * spatial] plus a per-channel affine) and batch_norm (training: the fused
// native_batch_norm op; running statistics updated in place under no_grad;
// eval: a composite of differentiable ops with the running statistics).
// Input checks and messages follow PyTorch.
#include <limits>
#include <sstream>

#include "ember/dispatch/op_recording.h"
#include "amp/autocast.h"
#include "autograd/record.h"
#include "ember/nn/functional.h"
#include "ops/op_handles.h"

namespace ember::nn::functional {
namespace {

void check_normalized_shape(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                            const std::optional<Tensor>& bias) {
  const int64_t k = int64_t(normalized_shape.size());
  EMBER_CHECK(k >= 1, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
              "element, but got normalized_shape = ", normalized_shape);
  if (weight && weight->defined())
    EMBER_CHECK(IntArrayRef(weight->sizes()) == normalized_shape,
                "Expected weight to be of same shape as normalized_shape, but got weight of shape ",
                weight->sizes(), " and normalized_shape = ", normalized_shape);
  if (bias && bias->defined())
    EMBER_CHECK(IntArrayRef(bias->sizes()) == normalized_shape,
                "Expected bias to be of same shape as normalized_shape, but got bias of shape ", bias->sizes(),
                " and normalized_shape = ", normalized_shape);
  const int64_t nd = input.dim();
  bool ok = nd >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = input.sizes()[nd - k + i] == normalized_shape[i];
  if (!ok) {
    std::ostringstream ss;
    ss << "Given normalized_shape=" << normalized_shape << ", expected input with shape [*";
    for (int64_t s : normalized_shape) ss << ", " << s;
    ss << "], but got input of size" << input.sizes();
    EMBER_CHECK(false, ss.str());
  }
  EMBER_CHECK(is_floating(input.dtype()), "\"LayerNormKernelImpl\" not implemented for '",
              scalar_type_name(input.dtype()), "'");
}

std::vector<int64_t> trailing_dims(int64_t ndim, int64_t k) {
  std::vector<int64_t> d;
  for (int64_t i = ndim - k; i < ndim; ++i) d.push_back(i);
  return d;
}
std::vector<int64_t> leading_dims(int64_t ndim, int64_t k) {
  std::vector<int64_t> d;
  for (int64_t i = 0; i < ndim - k; ++i) d.push_back(i);
  return d;
}
// Statistics of shape [M...] viewed as [M..., 1, ..., 1] to broadcast against the input.
Tensor stat_view(const Tensor& s, int64_t k) {
  Shape sh(s.sizes().begin(), s.sizes().end());
  for (int64_t i = 0; i < k; ++i) sh.push_back(1);
  return s.reshape(sh);
}
Tensor sum_leading(const Tensor& t, int64_t k) {
  auto d = leading_dims(t.dim(), k);
  return d.empty() ? t : t.sum(d);
}
Tensor cast_to(const Tensor& t, DType dt) { return !t.defined() || t.dtype() == dt ? t : t.to(dt); }

using namespace autograd;

// Which of (input, weight, bias) the node needs gradients for: the fused backwards' output mask.
int64_t grad_mask(const LambdaNode& n) {
  return (n.needs_input_grad(0) ? 1 : 0) | (n.needs_input_grad(1) ? 2 : 0) | (n.needs_input_grad(2) ? 4 : 0);
}

// The normalisation backward in differentiable ember ops, for create_graph (double backward):
// statistics over `dims` recomputed from x, xhat = (x - mean) * rstd, gx = g * w,
//   dx = rstd * (gx - mean(gx) - xhat * mean(gx * xhat)), dw = sum(g * xhat), db = sum(g),
// where w_b is the weight viewed to broadcast against x (undefined when absent) and
// sum_params reduces to the parameters' shape.
template <class SumParams>
variable_list norm_backward_graph(LambdaNode& n, const Tensor& x, const Tensor& w_b, const Tensor& go,
                                  const std::vector<int64_t>& dims, double eps, SumParams sum_params) {
  Tensor mu = x.mean(dims, true), rs = rsqrt(x.var(dims, /*unbiased=*/false, true) + eps);
  Tensor xhat = (x - mu) * rs;
  Tensor dx = grad_for(n, 0, [&] {
    Tensor gx = w_b.defined() ? go * w_b : go;
    return rs * (gx - gx.mean(dims, true) - xhat * (gx * xhat).mean(dims, true));
  });
  Tensor dw = grad_for(n, 1, [&] { return sum_params(go * xhat); });
  Tensor db = grad_for(n, 2, [&] { return sum_params(go); });
  return {dx, dw, db};
}

// PyTorch's layer_norm backward (native_layer_norm_backward):
//   xhat = (x - mean) * rstd, gx = g * w,
//   dx = rstd * (gx - mean(gx) - xhat * mean(gx * xhat)), dw = sum(g * xhat), db = sum(g).
// Without create_graph: the fused op native_layer_norm_backward with the saved statistics.
// Under create_graph: the same formula in ember ops, statistics recomputed from x with
// differentiable ops, so the gradient is itself differentiable (double backward).
std::tuple<Tensor, Tensor, Tensor> layer_norm_ag(const Tensor& x, IntArrayRef normalized_shape,
                                                 const std::optional<Tensor>& weight,
                                                 const std::optional<Tensor>& bias, double eps) {
  auto [out, mean, rstd] = below_autograd([&] { return ops::native_layer_norm()(x, normalized_shape, weight, bias, eps); });
  Tensor w = weight ? *weight : Tensor(), b = bias ? *bias : Tensor();
  const int64_t k = int64_t(normalized_shape.size());
  record("NativeLayerNormBackward0", {x, w, b}, {out},
         {saved_input(x), saved_input(w), saved_input(mean), saved_input(rstd)},
         [k, eps](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor x = n.unpack(0), w = n.unpack(1), go = g[0];
           if (!GradMode::is_enabled()) {  // no graph of the backward: one fused pass
             Shape ns(x.sizes().end() - k, x.sizes().end());
             auto [dx, dw, db] = ops::native_layer_norm_backward()(go, x, ns, n.unpack(2), n.unpack(3),
                                                                   w.defined() ? std::optional<Tensor>(w) : std::nullopt,
                                                                   grad_mask(n));
             return {dx, dw, db};
           }
           return norm_backward_graph(n, x, w, go, trailing_dims(x.dim(), k), eps,
                                      [k](const Tensor& t) { return sum_leading(t, k); });
         });
  return {out, mean, rstd};
}

// PyTorch's batch_norm backward with batch statistics: layer norm's formula per channel, over
// every dim but 1. The fused op without create_graph; under it norm_backward_graph.
std::tuple<Tensor, Tensor, Tensor> batch_norm_ag(const Tensor& x, const std::optional<Tensor>& weight,
                                                 const std::optional<Tensor>& bias, double eps) {
  auto [out, mean, invstd] = below_autograd([&] { return ops::native_batch_norm()(x, weight, bias, eps); });
  Tensor w = weight ? *weight : Tensor(), b = bias ? *bias : Tensor();
  record("NativeBatchNormBackward0", {x, w, b}, {out},
         {saved_input(x), saved_input(w), saved_input(mean), saved_input(invstd)},
         [eps](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor x = n.unpack(0), w = n.unpack(1), go = g[0];
           if (!GradMode::is_enabled()) {  // no graph of the backward: the fused op
             auto [dx, dw, db] = ops::native_batch_norm_backward()(
                 go, x, w.defined() ? std::optional<Tensor>(w) : std::nullopt, n.unpack(2), n.unpack(3),
                 grad_mask(n));
             return {dx, dw, db};
           }
           std::vector<int64_t> dims{0};
           for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
           Shape cs(x.dim(), 1);
           cs[1] = x.sizes()[1];
           return norm_backward_graph(n, x, w.defined() ? w.reshape(cs) : w, go, dims, eps,
                                      [&dims](const Tensor& t) { return t.sum(dims); });
         });
  return {out, mean, invstd};
}

// y = x * r * w with r = rsqrt(mean(x^2) + eps):
//   dx = r * (gw - x * r^2 * mean(gw * x)), gw = g * w;  dw = sum(g * x * r),
// in differentiable ops, with r broadcast over the last k dims (undefined results where not wanted).
std::tuple<Tensor, Tensor> rms_norm_grads(const Tensor& go, const Tensor& x, const Tensor& w, const Tensor& rs,
                                          int64_t k, bool need_dx, bool need_dw) {
  Tensor dx, dw;
  if (need_dx) {
    Tensor gw = w.defined() ? go * w : go;
    dx = rs * (gw - x * (rs * rs) * (gw * x).mean(trailing_dims(x.dim(), k), true));
  }
  if (need_dw && w.defined()) dw = sum_leading(go * x * rs, k);
  return {dx, dw};
}

// native_rms_norm_backward on a backend without a fused kernel: the formula from the saved rstd.
std::tuple<Tensor, Tensor> rms_norm_backward_composite(const Tensor& go, const Tensor& x, IntArrayRef normalized_shape,
                                                       const Tensor& rstd, const std::optional<Tensor>& weight,
                                                       int64_t mask) {
  const int64_t k = int64_t(normalized_shape.size());
  return rms_norm_grads(go, x, weight ? *weight : Tensor(), cast_to(stat_view(rstd, k), x.dtype()), k, mask & 1,
                        mask & 2);
}
EMBER_REGISTER_KERNEL(native_rms_norm_backward, CompositeBackend, rms_norm_backward_composite);

std::tuple<Tensor, Tensor> rms_norm_ag(const Tensor& x, IntArrayRef normalized_shape,
                                       const std::optional<Tensor>& weight, double eps) {
  auto [out, rstd] = below_autograd([&] { return ops::native_rms_norm()(x, normalized_shape, weight, eps); });
  Tensor w = weight ? *weight : Tensor();
  const int64_t k = int64_t(normalized_shape.size());
  record("RmsNormBackward0", {x, w}, {out}, {saved_input(x), saved_input(w), saved_input(rstd)},
         [k, eps](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor x = n.unpack(0), w = n.unpack(1), go = g[0];
           if (!GradMode::is_enabled()) {  // no graph of the backward: the fused op
             Shape ns(x.sizes().end() - k, x.sizes().end());
             auto [dx, dw] = ops::native_rms_norm_backward()(go, x, ns, n.unpack(2),
                                                           w.defined() ? std::optional<Tensor>(w) : std::nullopt,
                                                           grad_mask(n));
             return {dx, dw};
           }
           // create_graph: r recomputed from x, so the gradients are differentiable in x too
           Tensor rs = rsqrt((x * x).mean(trailing_dims(x.dim(), k), true) + eps);
           auto [dx, dw] = rms_norm_grads(go, x, w, rs, k, n.needs_input_grad(0), n.needs_input_grad(1));
           return {dx, dw};
         });
  return {out, rstd};
}

// y = x * s[c] + t[c]: dx = g * s[c], ds = sum(g * x), dt = sum(g) over every dim but 1.
Tensor channel_affine_ag(const Tensor& x, const Tensor& s, const Tensor& t) {
  Tensor out = below_autograd([&] { return ops::channel_affine()(x, s, t); });
  record("ChannelAffineBackward", {x, s, t}, {out}, {saved_input(s.requires_grad() ? x : Tensor()), saved_input(s)},
         [nd = x.dim()](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor s = n.unpack(1), go = g[0];
           Shape cs(nd, 1);
           cs[1] = s.numel();
           std::vector<int64_t> dims{0};
           for (int64_t d = 2; d < nd; ++d) dims.push_back(d);
           return {grad_for(n, 0, [&] { return go * s.reshape(cs); }),
                   grad_for(n, 1, [&] { return (go * n.unpack(0)).sum(dims); }),
                   grad_for(n, 2, [&] { return go.sum(dims); })};
         });
  return out;
}

EMBER_REGISTER_KERNEL(native_layer_norm, Autograd, layer_norm_ag);
EMBER_REGISTER_KERNEL(channel_affine, Autograd, channel_affine_ag);
EMBER_REGISTER_KERNEL(native_rms_norm, Autograd, rms_norm_ag);
EMBER_REGISTER_KERNEL(native_batch_norm, Autograd, batch_norm_ag);

// y * w[c] + b[c] in one pass (either may be absent).
Tensor affine(const Tensor& y, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, int64_t c) {
  const bool hw = weight && weight->defined(), hb = bias && bias->defined();
  if (!hw && !hb) return y;
  TensorOptions o{.dtype = hw ? weight->dtype() : bias->dtype(), .device = y.device()};
  return ops::channel_affine()(y, hw ? weight->reshape({c}) : ones({c}, o), hb ? bias->reshape({c}) : zeros({c}, o));
}

}  // namespace

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps) {
  EMBER_RECORD_COMPOSITE("layer_norm", input, normalized_shape, weight, bias, eps);
  EMBER_AUTOCAST(layer_norm, input, normalized_shape, weight, bias, eps);
  check_normalized_shape(input, normalized_shape, weight, bias);
  return std::get<0>(ops::native_layer_norm()(input, normalized_shape, weight, bias, eps));
}

Tensor rms_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                std::optional<double> eps) {
  EMBER_RECORD_COMPOSITE("rms_norm", input, normalized_shape, weight, eps);
  EMBER_AUTOCAST(rms_norm, input, normalized_shape, weight, eps);
  check_normalized_shape(input, normalized_shape, weight, std::nullopt);
  double e = eps ? *eps
                 : input.dtype() == kFloat64 ? std::numeric_limits<double>::epsilon()
                 : input.dtype() == kFloat16 ? 0.0009765625
                 : input.dtype() == kBFloat16 ? 0.0078125
                                              : double(std::numeric_limits<float>::epsilon());
  return std::get<0>(ops::native_rms_norm()(input, normalized_shape, weight, e));
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps) {
  EMBER_RECORD_COMPOSITE("group_norm", input, num_groups, weight, bias, eps);
  EMBER_AUTOCAST(group_norm, input, num_groups, weight, bias, eps);
  EMBER_CHECK(input.dim() >= 2, "Expected at least 2 dimensions for input tensor but received ", input.dim());
  const int64_t n = input.sizes()[0], c = input.sizes()[1];
  EMBER_CHECK(num_groups > 0 && c % num_groups == 0,
              "Expected number of channels in input to be divisible by num_groups, but got input of shape ",
              input.sizes(), " and num_groups=", num_groups);
  if (weight && weight->defined())
    EMBER_CHECK(weight->dim() == 1 && weight->numel() == c,
                "Expected weight to be a vector of size equal to the number of channels in input, but got "
                "weight of shape ", weight->sizes(), " and input of shape ", input.sizes());
  if (bias && bias->defined())
    EMBER_CHECK(bias->dim() == 1 && bias->numel() == c,
                "Expected bias to be a vector of size equal to the number of channels in input, but got "
                "bias of shape ", bias->sizes(), " and input of shape ", input.sizes());
  int64_t per_group = input.numel() / std::max<int64_t>(1, n * num_groups);
  if (n == 0) {
    per_group = c / num_groups;
    for (int64_t d = 2; d < input.dim(); ++d) per_group *= input.sizes()[d];
  }
  Tensor xr = input.reshape({n, num_groups, per_group});
  Tensor y = layer_norm(xr, {per_group}, std::nullopt, std::nullopt, eps).reshape(input.sizes());
  return affine(y, weight, bias, c);
}

Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& running_mean,
                  const std::optional<Tensor>& running_var, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, bool training, double momentum, double eps) {
  EMBER_RECORD_COMPOSITE("batch_norm", input, running_mean, running_var, weight, bias, training, momentum, eps);
  EMBER_CHECK(input.dim() >= 2, "batch_norm: expected input with at least 2 dimensions (N, C, ...), but got input of size",
              input.sizes());
  const int64_t c = input.sizes()[1];
  auto check_numel = [c](const char* what, const std::optional<Tensor>& t) {
    if (t && t->defined())
      EMBER_CHECK(t->numel() == c, what, " should contain ", c, " elements not ", t->numel());
  };
  check_numel("weight", weight);
  check_numel("bias", bias);
  check_numel("running_mean", running_mean);
  check_numel("running_var", running_var);
  const bool have_running = running_mean && running_mean->defined() && running_var && running_var->defined();
  const bool use_batch_stats = training || !have_running;
  const int64_t count = c == 0 ? 0 : input.numel() / c;
  if (training)
    EMBER_CHECK(count > 1, "Expected more than 1 value per channel when training, got input size ", input.sizes());
  if (use_batch_stats) {
    // One fused op: statistics, normalisation and the affine step in two passes over the input.
    auto [y, mean, invstd] = ops::native_batch_norm()(input, weight, bias, eps);
    if (training && have_running) {
      NoGradGuard no_grad;
      Tensor rm = *running_mean, rv = *running_var;
      Tensor var = (invstd.to(kFloat64).pow(-2.0) - eps) * (double(count) / double(count - 1));
      rm.copy_(rm * (1.0 - momentum) + mean.to(kFloat64) * momentum);
      rv.copy_(rv * (1.0 - momentum) + var * momentum);
    }
    return y;
  }
  // eval: y = x * scale + shift, scale = w / sqrt(running_var + eps), shift = b - running_mean * scale
  Tensor scale = rsqrt(running_var->to(input.dtype()) + eps);
  if (weight && weight->defined()) scale = scale * (*weight);
  Tensor shift = -(running_mean->to(input.dtype())) * scale;
  if (bias && bias->defined()) shift = shift + *bias;
  return ops::channel_affine()(input, scale, shift);
}

}  // namespace ember::nn::functional
