// Special functions (torch.special and the matching torch.* names): the kernel-backed ops'
// public functions and gradients, and the composites (xlogy, logaddexp, heaviside, logit, ...)
// whose gradients come through the ops they are built from. Scans: cummax, cummin,
// logcumsumexp. Kernels: src/cpu/special_kernels.cpp; formulas: ops/special_formulas.h.
#include <cmath>

#include "autograd/record.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/reduce_utils.h"

namespace ember {

namespace {
Tensor& bumped(Tensor& t) { t.impl()->bump_version(); return t; }

// Integer and bool inputs of the composites compute in the default float dtype, as the
// kernel-backed floating ops do.
Tensor floating(const Tensor& a) { return is_floating(a.dtype()) ? a : a.to(default_dtype()); }
}  // namespace

#define EMBER_SPECIAL_PUBLIC(n)                                 \
  Tensor n(const Tensor& a) { return ops::n()(a); }             \
  Tensor& n##_(Tensor& a) { return bumped(ops::n##_()(a)); }
EMBER_UNARY_SPECIAL_OPS(EMBER_SPECIAL_PUBLIC)
#undef EMBER_SPECIAL_PUBLIC

Tensor polygamma(int64_t n, const Tensor& a) {
  EMBER_CHECK(n >= 0, "polygamma(n, x) does not support negative n.");
  return ops::polygamma()(n, a);
}

Tensor igamma(const Tensor& a, const Tensor& x) { return ops::igamma()(a, x); }
Tensor igammac(const Tensor& a, const Tensor& x) { return ops::igammac()(a, x); }

namespace {
// exp(-|x|) I_nu(|x|) for large |x| by the asymptotic series
// 1/sqrt(2 pi |x|) * sum_k (-1)^k prod_{j<=k} (4 nu^2 - (2j - 1)^2) / (k! (8 |x|)^k):
// past 50 its twelve terms are exact to double precision (the last is ~1e-17), and I_nu(x) itself overflows from
// |x| ~ 88 (float32) or ~ 713 (float64), so the product i0(x) * exp(-|x|) cannot be used there.
Tensor scaled_bessel_asymptotic(const Tensor& ax, double nu) {
  Tensor inv = 1.0 / (8.0 * ax);
  Tensor term = ones_like(ax), sum = ones_like(ax);
  for (int k = 1; k <= 12; ++k) {
    double odd = 2.0 * k - 1.0;
    term = term * inv * (-(4.0 * nu * nu - odd * odd) / k);
    sum = sum + term;
  }
  return sum / (2.0 * M_PI * ax).sqrt();
}

// Below the switch the direct product; above it the series. Each branch sees inputs only from
// its own range (the other replaced by a safe value), so neither overflows into the gradient.
Tensor scaled_bessel(const Tensor& a, bool order_one) {
  constexpr double kSwitch = 50.0;
  Tensor x = floating(a);
  Tensor ax = x.abs();
  Tensor big = gt(ax, kSwitch);
  Tensor near = where(big, zeros_like(x), x);
  Tensor far = where(big, ax, full_like(ax, 2 * kSwitch));
  Tensor direct = (order_one ? i1(near) : i0(near)) * (-near.abs()).exp();
  Tensor series = scaled_bessel_asymptotic(far, order_one ? 1.0 : 0.0);
  if (order_one) series = where(lt(x, 0), -series, series);  // I_1 is odd
  return where(big, series, direct);
}
}  // namespace

Tensor i0e(const Tensor& a) { return scaled_bessel(a, false); }
Tensor i1e(const Tensor& a) { return scaled_bessel(a, true); }

// x * log(y), 0 where x == 0 unless y is NaN: PyTorch's xlogy. y is replaced by 1 (xlog1py: 0)
// where x == 0, so no log(0) or log of a negative number enters the product. torch's gradient
// in x there is still log(y) (log1p(y)) where that is finite, 0 where y <= 0 (y <= -1): the
// product gives 0, so a term whose value is 0 (x itself where x == 0, times a constant) adds
// the difference. Gamma(concentration = 1).log_prob's gradient in the concentration needs it.
namespace {
Tensor with_gradient_at_zero(const Tensor& value, const Tensor& xf, const Tensor& neutral, const Tensor& log_y,
                             const Tensor& defined) {
  if (!autograd::GradMode::is_enabled() || !xf.requires_grad()) return value;
  Tensor missing = where(logical_and(neutral, defined), log_y, zeros_like(log_y)).detach();
  return value + where(eq(xf, 0), xf, zeros_like(xf)) * missing;
}
}  // namespace

Tensor xlogy(const Tensor& x, const Tensor& y) {
  Tensor xf = floating(x), yf = floating(y);
  Tensor neutral = logical_and(eq(xf, 0), logical_not(isnan(yf)));
  Tensor value = xf * where(neutral, ones_like(yf), yf).log();
  Tensor positive_finite = logical_and(gt(yf, 0), isfinite(yf));
  return with_gradient_at_zero(value, xf, neutral, where(positive_finite, yf, ones_like(yf)).log(), positive_finite);
}
Tensor xlog1py(const Tensor& x, const Tensor& y) {
  Tensor xf = floating(x), yf = floating(y);
  Tensor neutral = logical_and(eq(xf, 0), logical_not(isnan(yf)));
  Tensor value = xf * where(neutral, zeros_like(yf), yf).log1p();
  Tensor above_minus_one = logical_and(gt(yf, -1), isfinite(yf));
  return with_gradient_at_zero(value, xf, neutral, where(above_minus_one, yf, zeros_like(yf)).log1p(),
                               above_minus_one);
}

// m + log1p(exp(-|a - b|)) with m = max(a, b); equal infinities give themselves (a - b is NaN).
Tensor logaddexp(const Tensor& a, const Tensor& b) {
  Tensor af = floating(a), bf = floating(b);
  Tensor m = maximum(af, bf);
  Tensor sum = m + (-(af - bf).abs()).exp().log1p();
  return where(logical_and(isinf(af), eq(af, bf)), af + zeros_like(sum), sum);
}
Tensor logaddexp2(const Tensor& a, const Tensor& b) {
  Tensor af = floating(a), bf = floating(b);
  Tensor m = maximum(af, bf);
  Tensor sum = m + (-(af - bf).abs()).exp2().log1p() * (1.0 / M_LN2);
  return where(logical_and(isinf(af), eq(af, bf)), af + zeros_like(sum), sum);
}

Tensor heaviside(const Tensor& x, const Tensor& values) {
  EMBER_CHECK(x.dtype() == values.dtype(), "heaviside is not yet implemented for tensors with different dtypes.");
  Tensor zero = zeros_like(x), one = ones_like(x);
  return where(eq(x, 0), values + zero, where(gt(x, 0), one, zero));
}

Tensor logit(const Tensor& a, std::optional<double> eps) {
  Tensor p = floating(a);
  if (eps) p = p.clamp(*eps, 1.0 - *eps);
  return (p / (1 - p)).log();
}

// -x log x for x > 0, 0 at 0, -inf below 0 (NaN stays NaN).
Tensor entr(const Tensor& a) {
  Tensor x = floating(a);
  Tensor positive_part = -xlogy(x, x);
  Tensor rest = where(eq(x, 0), zeros_like(x), full_like(x, -INFINITY));
  return where(logical_or(gt(x, 0), isnan(x)), positive_part, rest);
}

Tensor deg2rad(const Tensor& a) { return floating(a) * (M_PI / 180.0); }
Tensor rad2deg(const Tensor& a) { return floating(a) * (180.0 / M_PI); }

std::tuple<Tensor, Tensor> cummax(const Tensor& a, int64_t dim) { return ops::cummax()(a, dim); }
std::tuple<Tensor, Tensor> cummin(const Tensor& a, int64_t dim) { return ops::cummin()(a, dim); }
Tensor logcumsumexp(const Tensor& a, int64_t dim) { return ops::logcumsumexp()(a, dim); }

}  // namespace ember

// ---------------------------------------------------------------- gradients
namespace ember {
namespace {
using namespace autograd;

enum class Uses { Self, Result };
using Formula = Tensor (*)(const Tensor& grad, const Tensor& saved);

Tensor special_autograd(const char* name, const Tensor& a, Tensor out, Uses uses, Formula f) {
  record(name, {a}, {out}, {uses == Uses::Self ? saved_input(a) : saved_output(out)},
         [f](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return f(g[0], n.unpack(0)); })};
         });
  return out;
}

#define EMBER_SPECIAL_GRAD(op, name, uses, ...)                                                        \
  Tensor op##_autograd(const Tensor& a) {                                                              \
    return special_autograd(name, a, below_autograd([&] { return ops::op()(a); }), Uses::uses,         \
                            [](const Tensor& g, const Tensor& s) -> Tensor { return __VA_ARGS__; });   \
  }                                                                                                    \
  Tensor& op##_inplace_autograd(Tensor& a) {                                                           \
    return record_inplace(a, Uses::uses == Uses::Self, [](const Tensor& s) { return op##_autograd(s); }); \
  }                                                                                                    \
  EMBER_REGISTER_KERNEL(op, Autograd, op##_autograd);                                                  \
  EMBER_REGISTER_KERNEL(op##_, Autograd, op##_inplace_autograd);

EMBER_SPECIAL_GRAD(lgamma, "LgammaBackward0", Self, g * digamma(s))
EMBER_SPECIAL_GRAD(digamma, "DigammaBackward0", Self, g * polygamma(1, s))
// d/dy erfinv(y) = sqrt(pi) / 2 * exp(erfinv(y)^2)
EMBER_SPECIAL_GRAD(erfinv, "ErfinvBackward0", Result, g * (s * s).exp() * (0.5 * std::sqrt(M_PI)))
EMBER_SPECIAL_GRAD(erfc, "ErfcBackward0", Self, g * (-(s * s)).exp() * -M_2_SQRTPI)
EMBER_SPECIAL_GRAD(i0, "I0Backward0", Self, g * i1(s))
// I1'(x) = I0(x) - I1(x) / x, 1/2 at 0
EMBER_SPECIAL_GRAD(i1, "SpecialI1Backward0", Self, g * where(eq(s, 0), full_like(s, 0.5), i0(s) - i1(s) / s))
// (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 at 0
EMBER_SPECIAL_GRAD(sinc, "SincBackward0", Self, [&] {
  Tensor px = s * M_PI;
  Tensor d = (px * px.cos() - px.sin()) / (px * s);
  return g * where(eq(s, 0), zeros_like(d), d);
}())
#undef EMBER_SPECIAL_GRAD

Tensor polygamma_autograd(int64_t n, const Tensor& a) {
  Tensor out = below_autograd([&] { return ops::polygamma()(n, a); });
  record("PolygammaBackward0", {a}, {out}, {saved_input(a)}, [n](const variable_list& g, LambdaNode& node) -> variable_list {
    return {grad_for(node, 0, [&] { return g[0] * polygamma(n + 1, node.unpack(0)); })};
  });
  return out;
}

// d P(a, x) / dx = x^(a-1) e^-x / Gamma(a) (Q: its negative); in a: not implemented, as torch.
Tensor incomplete_gamma_autograd(bool upper, const Tensor& a, const Tensor& x) {
  Tensor out = below_autograd([&] { return upper ? ops::igammac()(a, x) : ops::igamma()(a, x); });
  record(upper ? "IgammacBackward0" : "IgammaBackward0", {a, x}, {out}, {saved_input(a), saved_input(x)},
         [upper](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor ga = grad_for(n, 0, [&]() -> Tensor {
             EMBER_CHECK(false, "the derivative for '", upper ? "igammac" : "igamma",
                         "' with respect to 'self' (a) is not implemented.");
             return {};
           });
           Tensor gx = grad_for(n, 1, [&] {
             Tensor av = n.unpack(0), xv = n.unpack(1);
             Tensor density = ((av - 1) * xv.log() - xv - lgamma(av)).exp();
             return upper ? -g[0] * density : g[0] * density;
           });
           return {ga, gx};
         });
  return out;
}
Tensor igamma_autograd(const Tensor& a, const Tensor& x) { return incomplete_gamma_autograd(false, a, x); }
Tensor igammac_autograd(const Tensor& a, const Tensor& x) { return incomplete_gamma_autograd(true, a, x); }

// The gradient of a running max/min goes to the position each output took its value from.
std::tuple<Tensor, Tensor> cum_extreme_autograd(bool is_max, const Tensor& a, int64_t dim) {
  auto [values, indices] = below_autograd([&] { return is_max ? ops::cummax()(a, dim) : ops::cummin()(a, dim); });
  int64_t d = reduce::wrap_dim(dim, a.dim());
  record(is_max ? "CummaxBackward0" : "CumminBackward0", {a}, {values, indices}, {saved_output(indices)},
         [d, sizes = a.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] {
             Tensor z = zeros(sizes, {.dtype = g[0].dtype(), .device = g[0].device()});
             return g[0].dim() == 0 ? g[0].clone() : scatter_add(z, d, n.unpack(0), g[0]);
           })};
         });
  return {values, indices};
}
std::tuple<Tensor, Tensor> cummax_autograd(const Tensor& a, int64_t dim) { return cum_extreme_autograd(true, a, dim); }
std::tuple<Tensor, Tensor> cummin_autograd(const Tensor& a, int64_t dim) { return cum_extreme_autograd(false, a, dim); }

// y_j = log sum_{i<=j} exp(x_i), so dL/dx_i = sum_{j>=i} g_j exp(x_i - y_j). Split g into its
// positive and negative parts and sum each in log space (a reversed logcumsumexp), as PyTorch,
// so neither exp(x_i) nor exp(-y_j) overflows.
Tensor logcumsumexp_grad(const Tensor& g, const Tensor& x, const Tensor& y, int64_t d) {
  auto reversed = [d](const Tensor& t) { return logcumsumexp(t.flip({d}), d).flip({d}); };
  Tensor log_pos = where(gt(g, 0), g, zeros_like(g)).log() - y;
  Tensor log_neg = where(lt(g, 0), -g, zeros_like(g)).log() - y;
  return (reversed(log_pos) + x).exp() - (reversed(log_neg) + x).exp();
}
Tensor logcumsumexp_autograd(const Tensor& a, int64_t dim) {
  Tensor out = below_autograd([&] { return ops::logcumsumexp()(a, dim); });
  int64_t d = std::max<int64_t>(0, reduce::wrap_dim(dim, a.dim()));
  record("LogcumsumexpBackward0", {a}, {out}, {saved_input(a), saved_output(out)},
         [d](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] {
             Tensor x = n.unpack(0);
             if (x.dim() == 0) return g[0].clone();
             return logcumsumexp_grad(g[0], x, n.unpack(1), d);
           })};
         });
  return out;
}

EMBER_REGISTER_KERNEL(polygamma, Autograd, polygamma_autograd);
EMBER_REGISTER_KERNEL(igamma, Autograd, igamma_autograd);
EMBER_REGISTER_KERNEL(igammac, Autograd, igammac_autograd);
EMBER_REGISTER_KERNEL(cummax, Autograd, cummax_autograd);
EMBER_REGISTER_KERNEL(cummin, Autograd, cummin_autograd);
EMBER_REGISTER_KERNEL(logcumsumexp, Autograd, logcumsumexp_autograd);

}  // namespace
}  // namespace ember
