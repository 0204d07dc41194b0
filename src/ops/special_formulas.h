#pragma once
// Scalar formulas of the special functions (lgamma, digamma, polygamma, erfinv, erfc, i0, i1,
// sinc): one definition for every backend, as src/ops/elementwise_formulas.h (kept apart from
// that header so the family can grow without touching the shared one). Each computes in double
// and the kernel rounds to the output type once, so float32 results are correctly rounded
// double results (within the 1e-6 PyTorch's float32 kernels reach). Algorithms:
//   digamma: reflection for x < 0, recurrence up to x >= 10, then the asymptotic series
//            log x - 1/(2x) - sum B_2k / (2k x^2k).
//   polygamma(n >= 1): (-1)^(n+1) n! zeta(n+1, x), Hurwitz zeta by direct sum up to a >= 10 + s
//            and the Euler-Maclaurin tail.
//   erfinv:  Giles' single-precision polynomial as the first guess, then Newton steps on erf
//            (or erfc beyond 0.5, where 1 - y is exact and erf(x) - y would cancel).
//   i0, i1:  power series for |x| <= 15, the asymptotic expansion e^x / sqrt(2 pi x) beyond.
#include <cmath>

#include "ops/elementwise_formulas.h"

namespace ember::formula {

#if defined(__CUDA_ARCH__)
#define EMBER_SPECIAL_MATH(f) ::f
#else
#define EMBER_SPECIAL_MATH(f) std::f
#endif

EMBER_FORMULA_INLINE EMBER_HOST_DEVICE double digamma_f64(double x) {
  constexpr double kPi = 3.14159265358979323846;
  if (x == 0) return EMBER_SPECIAL_MATH(copysign)(INFINITY, -x);  // as C++'s gamma functions and SciPy
  double result = 0;
  if (x < 0) {
    if (x == EMBER_SPECIAL_MATH(trunc)(x)) return NAN;  // poles
    // psi(x) = psi(1 - x) - pi / tan(pi x); the fractional part keeps tan accurate.
    double frac = x - EMBER_SPECIAL_MATH(trunc)(x);
    result = -kPi / EMBER_SPECIAL_MATH(tan)(kPi * frac);
    x = 1 - x;
  }
  if (EMBER_SPECIAL_MATH(isinf)(x)) return x;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  // Bernoulli numbers B_2k / (2k) for k = 1..7.
  constexpr double kCoef[] = {1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132, -691.0 / 32760, 1.0 / 12};
  double inv2 = 1 / (x * x), term = inv2, series = 0;
  for (double c : kCoef) {
    series += c * term;
    term *= inv2;
  }
  return result + EMBER_SPECIAL_MATH(log)(x) - 0.5 / x - series;
}

// Hurwitz zeta(s, q) for integer s >= 2 (polygamma's orders); inf at the poles q = 0, -1, ...
EMBER_FORMULA_INLINE EMBER_HOST_DEVICE double hurwitz_zeta_int(double s, double q) {
  if (q <= 0 && q == EMBER_SPECIAL_MATH(floor)(q)) return INFINITY;
  double sum = 0, a = q;
  while (a < 10 + s) {
    sum += EMBER_SPECIAL_MATH(pow)(a, -s);
    a += 1;
  }
  // Euler-Maclaurin tail: a^(1-s)/(s-1) + a^-s/2 + sum_j B_2j/(2j)! s(s+1)..(s+2j-2) a^(-s-2j+1)
  constexpr double kB2j[] = {1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6, -3617.0 / 510};
  sum += EMBER_SPECIAL_MATH(pow)(a, 1 - s) / (s - 1) + 0.5 * EMBER_SPECIAL_MATH(pow)(a, -s);
  double rising = s, factorial = 2, apow = EMBER_SPECIAL_MATH(pow)(a, -s - 1);
  for (int j = 1; j <= 8; ++j) {
    sum += kB2j[j - 1] / factorial * rising * apow;
    rising *= (s + 2 * j - 1) * (s + 2 * j);
    factorial *= (2 * j + 1) * (2 * j + 2);
    apow /= a * a;
  }
  return sum;
}

EMBER_FORMULA_INLINE EMBER_HOST_DEVICE double polygamma_f64(int64_t n, double x) {
  if (n == 0) return digamma_f64(x);
  double sign = (n % 2 == 1) ? 1.0 : -1.0;
  return sign * EMBER_SPECIAL_MATH(tgamma)(double(n) + 1) * hurwitz_zeta_int(double(n) + 1, x);
}

EMBER_FORMULA_INLINE EMBER_HOST_DEVICE double erfinv_f64(double y) {
  if (!(y >= -1 && y <= 1)) return NAN;  // |y| > 1 and NaN
  if (y == 1 || y == -1) return EMBER_SPECIAL_MATH(copysign)(INFINITY, y);
  const bool negative = y < 0;
  y = EMBER_SPECIAL_MATH(fabs)(y);
  double w = -EMBER_SPECIAL_MATH(log)((1 - y) * (1 + y)), p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;  p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;    p = 1.50140941 + p * w;
  } else {
    w = EMBER_SPECIAL_MATH(sqrt)(w) - 3;
    p = -0.000200214257;
    p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;  p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;     p = 2.83297682 + p * w;
  }
  double x = p * y;
  constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
  for (int i = 0; i < 3; ++i) {
    double deriv = kTwoOverSqrtPi * EMBER_SPECIAL_MATH(exp)(-x * x);
    if (deriv == 0) break;
    double residual = y <= 0.5 ? EMBER_SPECIAL_MATH(erf)(x) - y : (1 - y) - EMBER_SPECIAL_MATH(erfc)(x);
    x -= residual / deriv;
  }
  return negative ? -x : x;
}

// Modified Bessel functions of the first kind, orders 0 and 1.
EMBER_FORMULA_INLINE EMBER_HOST_DEVICE double bessel_i_f64(int order, double x) {
  double ax = EMBER_SPECIAL_MATH(fabs)(x);
  double value;
  if (ax <= 15) {
    double quarter_x2 = x * x / 4, term = order == 0 ? 1.0 : ax / 2, sum = term;
    for (int k = 1; k < 200; ++k) {
      term *= quarter_x2 / (double(k) * double(k + order));
      sum += term;
      if (term < sum * 1e-17) break;
    }
    value = sum;
  } else {
    const double mu = 4.0 * order * order;
    double term = 1, sum = 1;
    for (int k = 1; k < 30; ++k) {
      double odd = 2.0 * k - 1;
      double next = term * (odd * odd - mu) / (8.0 * k * ax);
      if (EMBER_SPECIAL_MATH(fabs)(next) >= EMBER_SPECIAL_MATH(fabs)(term)) break;  // the series diverges from here
      term = next;
      sum += term;
    }
    value = EMBER_SPECIAL_MATH(exp)(ax) / EMBER_SPECIAL_MATH(sqrt)(2 * 3.14159265358979323846 * ax) * sum;
  }
  return (order == 1 && x < 0) ? -value : value;  // I1 is odd, I0 even
}

EMBER_FORMULA_INLINE EMBER_HOST_DEVICE double sinc_f64(double x) {
  if (x == 0) return 1;
  double px = 3.14159265358979323846 * x;
  return EMBER_SPECIAL_MATH(sin)(px) / px;
}

EMBER_FORMULA_INLINE EMBER_HOST_DEVICE double lgamma_f64(double x) { return EMBER_SPECIAL_MATH(lgamma)(x); }

// Regularised incomplete gamma functions for a > 0, x > 0: the lower P(a, x) by its power series
// (fast for x < a + 1), the upper Q(a, x) = 1 - P by its continued fraction (modified Lentz;
// fast for x >= a + 1). Each is used where it converges and keeps its own precision.
EMBER_FORMULA_INLINE EMBER_HOST_DEVICE double gamma_p_series(double a, double x) {
  // P = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))
  double term = 1, sum = 1;
  for (int n = 1; n < 100000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return EMBER_SPECIAL_MATH(exp)(a * EMBER_SPECIAL_MATH(log)(x) - x - EMBER_SPECIAL_MATH(lgamma)(a + 1)) * sum;
}
EMBER_FORMULA_INLINE EMBER_HOST_DEVICE double gamma_q_fraction(double a, double x) {
  // Q = x^a e^-x / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...)))
  constexpr double kTiny = 1e-300;
  double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (EMBER_SPECIAL_MATH(fabs)(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (EMBER_SPECIAL_MATH(fabs)(c) < kTiny) c = kTiny;
    d = 1 / d;
    double delta = d * c;
    h *= delta;
    if (EMBER_SPECIAL_MATH(fabs)(delta - 1) < 1e-16) break;
  }
  return EMBER_SPECIAL_MATH(exp)(a * EMBER_SPECIAL_MATH(log)(x) - x - EMBER_SPECIAL_MATH(lgamma)(a)) * h;
}

// P(a, x) and Q(a, x) with PyTorch's edge cases (NaN for negative arguments, the limits at 0
// and infinity); the series below x = max(1, a), the continued fraction above.
EMBER_FORMULA_INLINE EMBER_HOST_DEVICE double igamma_f64(double a, double x, bool upper) {
  if (x < 0 || a < 0 || EMBER_SPECIAL_MATH(isnan)(a) || EMBER_SPECIAL_MATH(isnan)(x)) return NAN;
  if (a == 0) return x > 0 ? (upper ? 0.0 : 1.0) : NAN;
  if (x == 0) return upper ? 1.0 : 0.0;
  if (EMBER_SPECIAL_MATH(isinf)(a)) return EMBER_SPECIAL_MATH(isinf)(x) ? NAN : (upper ? 1.0 : 0.0);
  if (EMBER_SPECIAL_MATH(isinf)(x)) return upper ? 0.0 : 1.0;
  if (x > 1 && x > a) {
    double q = gamma_q_fraction(a, x);
    return upper ? q : 1 - q;
  }
  double p = gamma_p_series(a, x);
  return upper ? 1 - p : p;
}

// d x / d a for x ~ Gamma(a, 1) at fixed quantile u = P(a, x): -(dP/da) / (dP/dx) (implicit
// differentiation of P(a, x) = u). dP/dx is the density; dP/da is a central difference of
// whichever of P or Q = 1 - P the point computes accurately (step 1e-5 a: ~1e-10 relative).
EMBER_FORMULA_INLINE EMBER_HOST_DEVICE double standard_gamma_grad_f64(double a, double x) {
  if (!(a > 0) || !(x > 0)) return x == 0 ? 0.0 : NAN;
  if (EMBER_SPECIAL_MATH(isinf)(x) || EMBER_SPECIAL_MATH(isinf)(a)) return NAN;
  const double h = 1e-5 * a;
  double dp_da;
  if (x < a + 1) {
    dp_da = (gamma_p_series(a + h, x) - gamma_p_series(a - h, x)) / (2 * h);
  } else {
    dp_da = -(gamma_q_fraction(a + h, x) - gamma_q_fraction(a - h, x)) / (2 * h);
  }
  double log_density = (a - 1) * EMBER_SPECIAL_MATH(log)(x) - x - EMBER_SPECIAL_MATH(lgamma)(a);
  return -dp_da / EMBER_SPECIAL_MATH(exp)(log_density);
}
EMBER_FORMULA_INLINE EMBER_HOST_DEVICE double erfc_f64(double x) { return EMBER_SPECIAL_MATH(erfc)(x); }

#undef EMBER_SPECIAL_MATH

// Functors in the shape of elementwise_formulas.h's (op name + _fn, taking the policy M).
#define EMBER_SPECIAL_FUNCTOR(name, expr)                                                           \
  template <class M = StdMath> struct name##_fn {                                                   \
    template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const {            \
      const double v = double(x);                                                                   \
      return T(expr);                                                                               \
    }                                                                                               \
  };
EMBER_SPECIAL_FUNCTOR(lgamma, lgamma_f64(v))
EMBER_SPECIAL_FUNCTOR(digamma, digamma_f64(v))
EMBER_SPECIAL_FUNCTOR(erfinv, erfinv_f64(v))
EMBER_SPECIAL_FUNCTOR(erfc, erfc_f64(v))
EMBER_SPECIAL_FUNCTOR(i0, bessel_i_f64(0, v))
EMBER_SPECIAL_FUNCTOR(i1, bessel_i_f64(1, v))
EMBER_SPECIAL_FUNCTOR(sinc, sinc_f64(v))
#undef EMBER_SPECIAL_FUNCTOR

template <class M = StdMath> struct standard_gamma_grad_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T x) const {
    return T(standard_gamma_grad_f64(double(a), double(x)));
  }
};

template <class M = StdMath> struct igamma_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T x) const {
    return T(igamma_f64(double(a), double(x), false));
  }
};
template <class M = StdMath> struct igammac_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T x) const {
    return T(igamma_f64(double(a), double(x), true));
  }
};

template <class M = StdMath> struct polygamma_fn {
  int64_t n;
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const { return T(polygamma_f64(n, double(x))); }
};

}  // namespace ember::formula
