// ember::nn::init (torch.nn.init): in-place initialisers under no_grad with PyTorch's formulas,
// gains, fan computation and error messages. trunc_normal_ uses PyTorch's inverse-CDF method;
// orthogonal_ is torch's: LAPACK's QR of a normal matrix, Q * sign(diag(R)).
#include <cmath>
#include <vector>

#include "ember/autograd/grad_mode.h"
#include "ember/linalg.h"
#include "ember/nn/functional.h"

namespace ember::nn::init {
namespace {

double correct_fan(const Tensor& t, const std::string& mode) {
  EMBER_CHECK_VALUE(mode == "fan_in" || mode == "fan_out", "Mode ", mode,
                    " not supported, please use one of fan_in, fan_out");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return double(mode == "fan_in" ? fan_in : fan_out);
}


}  // namespace

double calculate_gain(const std::string& nl, std::optional<double> param) {
  if (nl == "linear" || nl == "conv1d" || nl == "conv2d" || nl == "conv3d" || nl == "conv_transpose1d" ||
      nl == "conv_transpose2d" || nl == "conv_transpose3d" || nl == "sigmoid")
    return 1.0;
  if (nl == "tanh") return 5.0 / 3.0;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") {
    double a = param ? *param : 0.01;
    EMBER_CHECK_VALUE(std::isfinite(a), "negative_slope ", a, " not a valid number");
    return std::sqrt(2.0 / (1.0 + a * a));
  }
  if (nl == "selu") return 3.0 / 4.0;
  EMBER_CHECK_VALUE(false, "Unsupported nonlinearity ", nl);
  return 0.0;
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  EMBER_CHECK_VALUE(t.dim() >= 2, "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

Tensor& uniform_(Tensor& t, double a, double b, Generator* gen) {
  NoGradGuard ng;
  ember::uniform_(t, a, b, gen);
  return t;
}

Tensor& normal_(Tensor& t, double mean, double std, Generator* gen) {
  NoGradGuard ng;
  ember::normal_(t, mean, std, gen);
  return t;
}

Tensor& constant_(Tensor& t, double value) {
  NoGradGuard ng;
  t.fill_(value);
  return t;
}
Tensor& zeros_(Tensor& t) { return constant_(t, 0.0); }
Tensor& ones_(Tensor& t) { return constant_(t, 1.0); }

Tensor& eye_(Tensor& t) {
  EMBER_CHECK_VALUE(t.dim() == 2, "Only tensors with 2 dimensions are supported");
  NoGradGuard ng;
  t.copy_(eye(t.size(0), t.size(1), {.dtype = t.dtype()}));
  return t;
}

Tensor& xavier_uniform_(Tensor& t, double gain, Generator* gen) {
  auto [fi, fo] = calculate_fan_in_and_fan_out(t);
  double std = gain * std::sqrt(2.0 / double(fi + fo));
  double a = std::sqrt(3.0) * std;
  return init::uniform_(t, -a, a, gen);
}

Tensor& xavier_normal_(Tensor& t, double gain, Generator* gen) {
  auto [fi, fo] = calculate_fan_in_and_fan_out(t);
  double std = gain * std::sqrt(2.0 / double(fi + fo));
  return init::normal_(t, 0.0, std, gen);
}

Tensor& kaiming_uniform_(Tensor& t, double a, const std::string& mode, const std::string& nonlinearity,
                         Generator* gen) {
  if (t.numel() == 0) return t;  // PyTorch warns "Initializing zero-element tensors is a no-op"
  double fan = correct_fan(t, mode);
  double std = calculate_gain(nonlinearity, a) / std::sqrt(fan);
  double bound = std::sqrt(3.0) * std;
  return init::uniform_(t, -bound, bound, gen);
}

Tensor& kaiming_normal_(Tensor& t, double a, const std::string& mode, const std::string& nonlinearity,
                        Generator* gen) {
  if (t.numel() == 0) return t;
  double fan = correct_fan(t, mode);
  double std = calculate_gain(nonlinearity, a) / std::sqrt(fan);
  return init::normal_(t, 0.0, std, gen);
}

// torch 2.15's rejection sampler, step for step, so a seed gives its values. When [a, b] holds
// more than 30% of the mass: normal_(mean, std) and, while any value lies outside [a, b] (bounds
// rounded to the tensor's dtype), a fresh full normal_ draw replaces exactly those. Otherwise:
// uniform_(a, b) candidates accepted where log(U) <= -((x - mean) / std)^2 / 2 - log_peak,
// redrawing all candidates and acceptance uniforms for the pending ones each round. (Before
// 2.15 torch used the inverse-CDF method: uniform, erfinv, scale.)
Tensor& trunc_normal_(Tensor& t, double mean, double std, double a, double b, Generator* gen) {
  NoGradGuard ng;
  auto cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  const double p = cdf((b - mean) / std) - cdf((a - mean) / std);
  if (p > 0.3) {
    const double lo = full({}, a, {.dtype = t.dtype(), .device = Device(DeviceType::CPU)}).item<double>();
    const double hi = full({}, b, {.dtype = t.dtype(), .device = Device(DeviceType::CPU)}).item<double>();
    ember::normal_(t, mean, std, gen);
    Tensor result = t;
    while (true) {
      Tensor mask = logical_or(result.lt(lo), result.gt(hi));
      if (!any(mask).item<bool>()) break;
      Tensor fresh = empty_like_layout(t);  // torch's where keeps t's layout, so empty_like(result) has it
      ember::normal_(fresh, mean, std, gen);
      result = where(mask, fresh, result);
    }
    if (!result.is_same(t)) t.copy_(result);
    return t;
  }
  const double mode = std::max(a, std::min(mean, b));
  const double log_peak = -0.5 * std::pow((mode - mean) / std, 2);
  Tensor candidates = empty_like_layout(t), accept_buf = empty_like_layout(t);
  // log-density of the candidates relative to the peak, in the tensor's dtype as torch's chain
  auto log_pdf = [&](Tensor& c) { c.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak); };
  auto accept_draw = [&]() {
    ember::uniform_(accept_buf, 0.0, 1.0, gen);
    return accept_buf.log_().gt(candidates);
  };
  ember::uniform_(t, a, b, gen);
  candidates.copy_(t);
  log_pdf(candidates);
  Tensor pending = accept_draw();
  if (!any(pending).item<bool>()) return t;
  Tensor result = t;
  while (true) {
    ember::uniform_(candidates, a, b, gen);
    result = where(pending, candidates, result);
    log_pdf(candidates);
    pending = where(pending, accept_draw(), pending);
    if (!any(pending).item<bool>()) break;
  }
  t.copy_(result);
  return t;
}

Tensor& orthogonal_(Tensor& t, double gain, Generator* gen) {
  EMBER_CHECK_VALUE(t.dim() >= 2, "Only tensors with 2 or more dimensions are supported");
  if (t.numel() == 0) return t;
  NoGradGuard ng;
  int64_t rows = t.size(0), cols = t.numel() / rows;
  // torch's draws (new_empty((rows, cols)).normal_() in the tensor's dtype), so the stream
  // consumed is torch's; the orthogonalisation below is ember's own (Q can differ from
  // LAPACK's in the last bits).
  Tensor flat = empty({rows, cols}, {.dtype = is_floating(t.dtype()) ? t.dtype() : kFloat32, .device = t.device()});
  ember::normal_(flat, 0.0, 1.0, gen);
  bool trans = rows < cols;
  if (trans) flat = flat.t();
  // torch: Q of LAPACK's QR of the draws, columns signed so diag(R) is positive, in the draws'
  // dtype, so the values are torch's to the last bit where LAPACK rounds alike.
  auto [q, r] = linalg::qr(flat);
  q = q * ember::diagonal(r).sign();
  if (trans) q = q.t();
  t.copy_(q.reshape(t.sizes()));
  if (gain != 1.0) t.mul_(gain);
  return t;
}

}  // namespace ember::nn::init
