#pragma once
// The scalar formula of every elementwise op, written once for every backend: the CPU kernels
// (src/cpu/*_kernels.cpp) call these functors in their loops, and a CUDA kernel calls the same
// ones from device code. Each is PyTorch's scalar formula, edge cases included (integer
// division by zero, the sign rules of remainder and fmod, floor division of floats, integer
// powers, NaN in maximum/minimum/clamp, round half to even, sign of NaN, gelu's two forms).
//
// Types: T is the type an op computes in: float, double, an integer type or bool (float16 and
// bfloat16 compute in float, as PyTorch's opmath). Only what <cmath> and the arithmetic
// operators offer is used, so the header compiles under nvcc as well as g++; it includes
// nothing from a backend.
//
// The elementary functions (exp, log, tanh, erf, nearbyint, ...) come from the policy M: the
// formula stays one definition while a backend picks how exp itself is computed. StdMath is the
// reference (<cmath> on the host, CUDA's overloads on the device); the CPU passes branch-free
// float32 versions its loops vectorise (src/cpu/elementwise_math.h).
//
// A formula is evaluated as written: the CPU kernels calling these are compiled without
// floating-point contraction (CMakeLists.txt), so every loop of a kernel (vectorised dense runs,
// runs against a broadcast operand, strided runs) computes the same bits, which
// tests/cpp/test_elementwise_formulas.cpp checks. Where a multiply-add is fused, the formula
// says so with M::fma. (A CUDA build would compile with --fmad=false for the same bits.)
//
// Functor names are the op names with _fn, and every functor takes the policy M whether it
// calls an elementary function or not, so the op-family X-macros of op_list.h map onto them
// alike (X(exp) -> formula::exp_fn<M>). Ops with parameters (add's alpha, leaky_relu's slope,
// ...) hold them as members of the compute type T.
#include <cmath>
#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define EMBER_HOST_DEVICE __host__ __device__
#else
#define EMBER_HOST_DEVICE
#endif
// A formula vectorises only once inlined into the kernel's loop; the functors' calls are forced
// inline so the compiler's inlining budget never decides a loop's speed.
#if defined(__CUDACC__)
#define EMBER_FORMULA_INLINE __forceinline__
#elif defined(__GNUC__)
#define EMBER_FORMULA_INLINE [[gnu::always_inline]] inline
#else
#define EMBER_FORMULA_INLINE inline
#endif

namespace ember::formula {

// ---------------------------------------------------------------- elementary functions
// Device code calls CUDA's global overloads (::exp(float) is expf there); host code <cmath>'s.
#if defined(__CUDA_ARCH__)
#define EMBER_FORMULA_MATH(f) ::f
#else
#define EMBER_FORMULA_MATH(f) std::f
#endif
struct StdMath {
#define EMBER_FORMULA_UNARY(f) \
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE static T f(T x) { return EMBER_FORMULA_MATH(f)(x); }
  EMBER_FORMULA_UNARY(exp) EMBER_FORMULA_UNARY(exp2) EMBER_FORMULA_UNARY(expm1) EMBER_FORMULA_UNARY(log)
  EMBER_FORMULA_UNARY(log1p) EMBER_FORMULA_UNARY(log2) EMBER_FORMULA_UNARY(log10) EMBER_FORMULA_UNARY(sqrt)
  EMBER_FORMULA_UNARY(sin) EMBER_FORMULA_UNARY(cos) EMBER_FORMULA_UNARY(tan) EMBER_FORMULA_UNARY(asin)
  EMBER_FORMULA_UNARY(acos) EMBER_FORMULA_UNARY(atan) EMBER_FORMULA_UNARY(sinh) EMBER_FORMULA_UNARY(cosh)
  EMBER_FORMULA_UNARY(tanh) EMBER_FORMULA_UNARY(erf) EMBER_FORMULA_UNARY(floor) EMBER_FORMULA_UNARY(ceil)
  EMBER_FORMULA_UNARY(trunc) EMBER_FORMULA_UNARY(fabs)
  // Round to nearest, ties to even (the default rounding mode), as PyTorch's std::nearbyint.
  EMBER_FORMULA_UNARY(nearbyint)
#undef EMBER_FORMULA_UNARY
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE static T fmod(T x, T y) { return EMBER_FORMULA_MATH(fmod)(x, y); }
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE static T pow(T x, T y) { return EMBER_FORMULA_MATH(pow)(x, y); }
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE static T atan2(T y, T x) { return EMBER_FORMULA_MATH(atan2)(y, x); }
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE static T copysign(T x, T y) { return EMBER_FORMULA_MATH(copysign)(x, y); }
  // x * y + z rounded once.
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE static T fma(T x, T y, T z) { return EMBER_FORMULA_MATH(fma)(x, y, z); }
};
#undef EMBER_FORMULA_MATH

// ---------------------------------------------------------------- helpers
template <class T> inline constexpr bool is_float_v = std::is_floating_point_v<T>;
template <class T> inline constexpr bool is_bool_v = std::is_same_v<T, bool>;
template <class T> inline constexpr bool is_signed_int_v = std::is_integral_v<T> && std::is_signed_v<T>;

template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE constexpr T quiet_nan() { return T(NAN); }
template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE constexpr T infinity() { return T(INFINITY); }

// Integer arithmetic wraps around (two's complement) instead of overflowing, as the hardware
// does and as PyTorch's results show; computed in the unsigned type so it is defined C++.
template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE constexpr T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && !is_bool_v<T>) {
    using U = std::make_unsigned_t<T>;
    return T(U(U(a) + U(b)));
  } else {
    return T(a + b);
  }
}
// Unsigned product modulo 2^bits. Types narrower than int are widened to unsigned int first:
// promoted to (signed) int, 65535 * 65535 would overflow.
template <class U> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE constexpr U umul(U a, U b) {
  using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
  return U(W(a) * W(b));
}
template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE constexpr T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !is_bool_v<T>) {
    using U = std::make_unsigned_t<T>;
    return T(umul(U(a), U(b)));
  } else {
    return T(a * b);
  }
}
template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE constexpr T wrap_neg(T a) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return T(U(U(0) - U(a)));
  } else {
    return -a;
  }
}

// How integer division by zero is reported. PyTorch's CPU raises ZeroDivisionError: the CPU
// passes a callable that raises a flag it checks after the loop (a kernel cannot throw from
// its threads). The result is 0 either way.
struct IgnoreZeroDiv {
  EMBER_FORMULA_INLINE EMBER_HOST_DEVICE void operator()() const {}
};

// ---------------------------------------------------------------- one-operand, floating
// Integer inputs compute these in the default float dtype (the kernel converts first).
#define EMBER_FORMULA_ELEMENTARY(name)                                    \
  template <class M = StdMath> struct name##_fn {                         \
    template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const { return M::name(x); } \
  };
EMBER_FORMULA_ELEMENTARY(exp) EMBER_FORMULA_ELEMENTARY(exp2) EMBER_FORMULA_ELEMENTARY(log)
EMBER_FORMULA_ELEMENTARY(log1p) EMBER_FORMULA_ELEMENTARY(expm1) EMBER_FORMULA_ELEMENTARY(log2)
EMBER_FORMULA_ELEMENTARY(log10) EMBER_FORMULA_ELEMENTARY(sqrt) EMBER_FORMULA_ELEMENTARY(sin)
EMBER_FORMULA_ELEMENTARY(cos) EMBER_FORMULA_ELEMENTARY(tan) EMBER_FORMULA_ELEMENTARY(asin)
EMBER_FORMULA_ELEMENTARY(acos) EMBER_FORMULA_ELEMENTARY(atan) EMBER_FORMULA_ELEMENTARY(sinh)
EMBER_FORMULA_ELEMENTARY(cosh) EMBER_FORMULA_ELEMENTARY(tanh) EMBER_FORMULA_ELEMENTARY(erf)
#undef EMBER_FORMULA_ELEMENTARY

template <class M = StdMath> struct rsqrt_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const { return T(1) / M::sqrt(x); }
};
template <class M = StdMath> struct reciprocal_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const { return T(1) / x; }
};
template <class M = StdMath> struct sigmoid_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const { return T(1) / (T(1) + M::exp(-x)); }
};
template <class M = StdMath> struct silu_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const { return x / (T(1) + M::exp(-x)); }
};

// gelu: x * Phi(x) (the erf form) and its tanh approximation
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Two functors, not one with a flag: a runtime
// flag keeps the compiler from inlining the formula into the loop and vectorising it.
template <class M = StdMath> struct gelu_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    return x * T(0.5) * (T(1) + M::erf(x * T(M_SQRT1_2)));
  }
};
template <class M = StdMath> struct gelu_tanh_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    const T kBeta = T(M_SQRT2 * M_2_SQRTPI * 0.5), kKappa = T(0.044715);
    T x_cube = x * x * x;
    T inner = kBeta * (x + kKappa * x_cube);
    return T(0.5) * x * (T(1) + M::tanh(inner));
  }
};
// dy * gelu'(x), PyTorch's GeluBackward for each form.
template <class M = StdMath> struct gelu_backward_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T dy, T x) const {
    const T kAlpha = T(M_SQRT1_2), kBeta = T(M_2_SQRTPI * M_SQRT1_2 * 0.5);
    T cdf = T(0.5) * (T(1) + M::erf(x * kAlpha));
    T pdf = kBeta * M::exp(x * x * T(-0.5));
    return dy * (cdf + x * pdf);
  }
};
template <class M = StdMath> struct gelu_tanh_backward_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T dy, T x) const {
    const T kBeta = T(M_SQRT2 * M_2_SQRTPI * 0.5), kKappa = T(0.044715);
    T x_sq = x * x;
    T x_cube = x_sq * x;
    T inner = kBeta * (x + kKappa * x_cube);
    T tanh_inner = M::tanh(inner);
    T left = T(0.5) * x;
    T right = T(1) + tanh_inner;
    T left_derivative = T(0.5) * right;
    T tanh_derivative = T(1) - tanh_inner * tanh_inner;
    T inner_derivative = kBeta * (T(1) + T(3) * kKappa * x_sq);
    T right_derivative = left * tanh_derivative * inner_derivative;
    return dy * (left_derivative + right_derivative);
  }
};
// The gradients tanh, sigmoid, silu and relu's autograd formulas compose from several ops, as
// one formula each (torch's tanh_backward, sigmoid_backward, silu_backward, threshold_backward):
// the composite's operations in its order, so float32 and float64 keep its bits.
template <class M = StdMath> struct tanh_backward_fn {  // (g, tanh(x))
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T g, T y) const { return g * (T(1) - y * y); }
};
template <class M = StdMath> struct sigmoid_backward_fn {  // (g, sigmoid(x))
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T g, T y) const { return g * (T(1) - y) * y; }
};
template <class M = StdMath> struct silu_backward_fn {  // (g, x); s as sigmoid_fn computes it
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T g, T x) const {
    const T s = sigmoid_fn<M>{}(x);
    return g * s * (T(1) + x * (T(1) - s));
  }
};
template <class T> struct threshold_backward_fn {  // (g, x): a NaN x passes the gradient
  T threshold;
  EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T g, T x) const { return x <= threshold ? T(0) : g; }
};

// ---------------------------------------------------------------- one-operand, dtype-keeping
template <class M = StdMath> struct neg_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const { return wrap_neg(x); }
};
template <class M = StdMath> struct abs_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    if constexpr (is_float_v<T>) return M::fabs(x);
    else if constexpr (is_signed_int_v<T>) return x < T(0) ? wrap_neg(x) : x;  // abs(INT_MIN) wraps to INT_MIN
    else return x;
  }
};
// (0 < x) - (x < 0): 0 for +-0 and for NaN, as PyTorch.
template <class M = StdMath> struct sign_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    if constexpr (is_bool_v<T>) return x;
    else if constexpr (std::is_unsigned_v<T>) return T(x != T(0));
    else return T(int(T(0) < x) - int(x < T(0)));
  }
};
// pow(x, 2): wraps for integers.
template <class M = StdMath> struct square_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const { return wrap_mul(x, x); }
};
// NaN stays NaN (x < 0 is false).
template <class M = StdMath> struct relu_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) return x;
    else return x < T(0) ? T(0) : x;
  }
};
// Rounding ops are the identity on integers (PyTorch copies).
#define EMBER_FORMULA_ROUNDING(name, fn)                                                       \
  template <class M = StdMath> struct name##_fn {                                               \
    template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const {                              \
      if constexpr (is_float_v<T>) return M::fn(x); else return x;                              \
    }                                                                                           \
  };
EMBER_FORMULA_ROUNDING(floor, floor) EMBER_FORMULA_ROUNDING(ceil, ceil) EMBER_FORMULA_ROUNDING(trunc, trunc)
EMBER_FORMULA_ROUNDING(round, nearbyint)  // half to even
#undef EMBER_FORMULA_ROUNDING
// x - trunc(x): NaN for +-inf.
template <class M = StdMath> struct frac_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const { return x - M::trunc(x); }
};
// round(x, decimals != 0): scaled by ten_pow = 10^|decimals| (computed by the caller, in T),
// rounded half to even, scaled back; a negative `decimals` divides first.
template <class T, class M = StdMath> struct round_decimals_fn {
  T ten_pow;
  bool negative;
  EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    return negative ? M::nearbyint(x / ten_pow) * ten_pow : M::nearbyint(x * ten_pow) / ten_pow;
  }
};
template <class T> struct leaky_relu_fn {
  T negative_slope;
  EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const { return x > T(0) ? x : x * negative_slope; }
};
template <class T> struct nan_to_num_fn {
  T nan, posinf, neginf;
  EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    return x != x ? nan : (x == infinity<T>() ? posinf : (x == -infinity<T>() ? neginf : x));
  }
};
template <class M = StdMath> struct bitwise_not_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const {
    if constexpr (is_bool_v<T>) return !x;
    else return T(~x);
  }
};

// ---------------------------------------------------------------- predicates (bool results)
template <class M = StdMath> struct isnan_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE bool operator()(T x) const { return x != x; }
};
// |x| == inf, written without a libm call so loops vectorise.
template <class M = StdMath> struct isinf_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE bool operator()(T x) const { return x == infinity<T>() || x == -infinity<T>(); }
};
// x - x is 0 for finite x and NaN for inf and NaN.
template <class M = StdMath> struct isfinite_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE bool operator()(T x) const { return (x - x) == T(0); }
};
template <class M = StdMath> struct logical_not_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE bool operator()(T x) const { return x == T(0); }
};

// ---------------------------------------------------------------- two operands: arithmetic
// a + alpha * b (sub is add with -alpha); bool: a || (alpha && b). For floating types the
// product and sum are one fused multiply-add, rounded once, as PyTorch's vectorised add: left
// to the compiler, whether alpha * b is rounded first would depend on the loop (it hoists the
// product when b is a broadcast scalar), and the result on the layout. With alpha 1 it is a + b.
template <class T, class M = StdMath> struct add_fn {
  T alpha;
  EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (is_bool_v<T>) return a || (alpha && b);
    else if constexpr (is_float_v<T>) return M::fma(alpha, b, a);
    else return wrap_add(a, wrap_mul(alpha, b));
  }
};
template <class M = StdMath> struct mul_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (is_bool_v<T>) return a && b;
    else return wrap_mul(a, b);
  }
};
// True division (floating types only; integers are converted first).
template <class M = StdMath> struct div_true_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const { return a / b; }
};
// Division rounded toward zero. Integer x / -1 wraps for the most negative x.
template <class M = StdMath, class OnZeroDiv = IgnoreZeroDiv> struct div_trunc_fn {
  OnZeroDiv on_zero_div{};
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (is_float_v<T>) {
      return M::trunc(a / b);
    } else {
      if (b == T(0)) { on_zero_div(); return T(0); }
      if constexpr (is_signed_int_v<T>) if (b == T(-1)) return wrap_neg(a);
      return T(a / b);
    }
  }
};
// Division rounded toward -inf: PyTorch's div_floor_floating / div_floor_integer. For floats
// the quotient comes from fmod (exact) and is corrected to the nearest integer; division by
// zero gives the IEEE result; a zero quotient takes the sign of a / b.
template <class M = StdMath, class OnZeroDiv = IgnoreZeroDiv> struct div_floor_fn {
  OnZeroDiv on_zero_div{};
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (is_float_v<T>) {
      if (b == T(0)) return a / b;
      T mod = M::fmod(a, b);
      T div = (a - mod) / b;
      if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
      if (div == T(0)) return M::copysign(T(0), a / b);
      T floordiv = M::floor(div);
      if (div - floordiv > T(0.5)) floordiv += T(1);
      return floordiv;
    } else {
      if (b == T(0)) { on_zero_div(); return T(0); }
      if constexpr (is_signed_int_v<T>) {
        if (b == T(-1)) return wrap_neg(a);
        T q = T(a / b), r = T(a % b);
        return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? T(q - 1) : q;
      } else {
        return T(a / b);
      }
    }
  }
};
// floor_divide is div(rounding_mode="floor").
template <class M = StdMath, class OnZeroDiv = IgnoreZeroDiv> using floor_divide_fn = div_floor_fn<M, OnZeroDiv>;

// Python's %: the result takes the sign of the divisor.
template <class M = StdMath, class OnZeroDiv = IgnoreZeroDiv> struct remainder_fn {
  OnZeroDiv on_zero_div{};
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (is_float_v<T>) {
      T mod = M::fmod(a, b);
      if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) mod += b;
      return mod;
    } else {
      if (b == T(0)) { on_zero_div(); return T(0); }
      if constexpr (is_signed_int_v<T>) {
        if (b == T(-1)) return T(0);  // INT_MIN % -1 is 0, without the hardware trap
        T r = T(a % b);
        return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? T(r + b) : r;
      } else {
        return T(a % b);
      }
    }
  }
};
// C's fmod: the result takes the sign of the dividend.
template <class M = StdMath, class OnZeroDiv = IgnoreZeroDiv> struct fmod_fn {
  OnZeroDiv on_zero_div{};
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (is_float_v<T>) {
      return M::fmod(a, b);
    } else {
      if (b == T(0)) { on_zero_div(); return T(0); }
      if constexpr (is_signed_int_v<T>) if (b == T(-1)) return T(0);
      return T(a % b);
    }
  }
};

// Integer power by squaring (wrapping); a negative exponent gives 0 except for bases 1 and -1.
template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE constexpr T powi(T base, T exp) {
  if constexpr (is_signed_int_v<T>) {
    if (exp < T(0)) {
      if (base == T(1)) return T(1);
      if (base == T(-1)) return (exp % T(2) == T(0)) ? T(1) : T(-1);
      return T(0);
    }
  }
  using U = std::make_unsigned_t<T>;
  U result = 1, b = U(base);
  for (U e = U(exp); e; e >>= 1) {
    if (e & U(1)) result = umul(result, b);
    b = umul(b, b);
  }
  return T(result);
}
template <class M = StdMath> struct pow_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T base, T exp) const {
    if constexpr (is_float_v<T>) return M::pow(base, exp);
    else return powi(base, exp);
  }
};
// pow with a 0-dim exponent: PyTorch's special forms for exponents 2, 3, -2, 0.5, -0.5 and
// -1 (pow_tensor_scalar_optimized_kernel); other exponents use pow_fn. The kernel picks the
// form once per call (square_fn, rsqrt_fn, sqrt_fn and reciprocal_fn serve 2, -0.5, 0.5, -1).
template <class M = StdMath> struct cube_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const { return wrap_mul(wrap_mul(x, x), x); }
};
template <class M = StdMath> struct inverse_square_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x) const { return T(1) / (x * x); }
};

// maximum/minimum: NaN in either operand gives NaN; otherwise std::max/std::min (which return
// the first operand when the two compare equal, so maximum(-0.0, 0.0) is -0.0).
template <class M = StdMath> struct maximum_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (is_bool_v<T>) return a || b;
    else if constexpr (is_float_v<T>) return (a != a || b != b) ? quiet_nan<T>() : (a < b ? b : a);
    else return a < b ? b : a;
  }
};
template <class M = StdMath> struct minimum_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (is_bool_v<T>) return a && b;
    else if constexpr (is_float_v<T>) return (a != a || b != b) ? quiet_nan<T>() : (b < a ? b : a);
    else return b < a ? b : a;
  }
};
template <class M = StdMath> struct atan2_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T y, T x) const { return M::atan2(y, x); }
};

// clamp with both bounds: a NaN bound gives NaN, else min(max(x, lo), hi) (when lo > hi every
// element becomes hi). With one bound clamp is maximum_fn (min) or minimum_fn (max).
template <class M = StdMath> struct clamp_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T x, T lo, T hi) const {
    if constexpr (is_float_v<T>) {
      if (lo != lo || hi != hi) return quiet_nan<T>();
    }
    T m = x < lo ? lo : x;
    return hi < m ? hi : m;
  }
};

// start + weight * (end - start), from the nearer end for accuracy (PyTorch's lerp).
template <class M = StdMath> struct lerp_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T start, T end, T weight) const {
    return M::fabs(weight) < T(0.5) ? start + weight * (end - start) : end - (end - start) * (T(1) - weight);
  }
};

// ---------------------------------------------------------------- two operands: bits
template <class M = StdMath> struct bitwise_and_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const { return T(a & b); }
};
template <class M = StdMath> struct bitwise_or_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const { return T(a | b); }
};
template <class M = StdMath> struct bitwise_xor_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const { return T(a ^ b); }
};
// Shifting by a negative amount or by the width or more gives 0.
template <class M = StdMath> struct bitwise_left_shift_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    using U = std::make_unsigned_t<T>;
    constexpr T bits = T(sizeof(T) * 8);
    if (std::make_signed_t<T>(b) < 0 || b >= bits) return T(0);
    return T(U(a) << b);
  }
};
// ... and for a right shift the sign fill (0 for unsigned types).
template <class M = StdMath> struct bitwise_right_shift_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE T operator()(T a, T b) const {
    constexpr T max_shift = T(sizeof(T) * 8 - std::is_signed_v<T>);
    if (std::make_signed_t<T>(b) < 0 || b >= max_shift) return T(a >> max_shift);
    return T(a >> b);
  }
};

// ---------------------------------------------------------------- comparisons (bool results)
template <class M = StdMath> struct eq_fn { template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a == b; } };
template <class M = StdMath> struct ne_fn { template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a != b; } };
template <class M = StdMath> struct lt_fn { template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a < b; } };
template <class M = StdMath> struct le_fn { template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a <= b; } };
template <class M = StdMath> struct gt_fn { template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a > b; } };
template <class M = StdMath> struct ge_fn { template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const { return a >= b; } };
// Nonzero (NaN included) is true.
template <class M = StdMath> struct logical_and_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const { return (a != T(0)) & (b != T(0)); }
};
template <class M = StdMath> struct logical_or_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const { return (a != T(0)) | (b != T(0)); }
};
template <class M = StdMath> struct logical_xor_fn {
  template <class T> EMBER_FORMULA_INLINE EMBER_HOST_DEVICE bool operator()(T a, T b) const { return (a != T(0)) != (b != T(0)); }
};

}  // namespace ember::formula
