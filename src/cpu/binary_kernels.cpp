// CPU kernels for two-operand elementwise ops (and the three-operand where/clamp/lerp).
#include <atomic>
#include <cmath>
#include <string_view>

#include "cpu/tensor_iter.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

Tensor& add_into(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const char* name) {
  TensorIter it = TensorIter::binary_op(out, a, b, {.op_name = name});
  visit_dtype<kNumericAndBool>(it.compute_dtype(), name, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      bool al = alpha.to_bool();
      cpu_kernel(it, [al](bool x, bool y) -> bool { return x || (al && y); });
    } else {
      T al = alpha.to<T>();
      if (al == T(1)) cpu_kernel(it, [](T x, T y) -> T { return x + y; });
      else cpu_kernel(it, [al](T x, T y) -> T { return x + al * y; });
    }
  });
  out = it.output();
  return out;
}

Tensor add_cpu(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Tensor out;
  return add_into(out, a, b, alpha, "add");
}
Tensor& add_inplace_cpu(Tensor& self, const Tensor& b, const Scalar& alpha) {
  return add_into(self, self, b, alpha, "add_");
}
Tensor sub_cpu(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  Tensor out;
  return add_into(out, a, b, -alpha, "sub");
}
Tensor& sub_inplace_cpu(Tensor& self, const Tensor& b, const Scalar& alpha) {
  return add_into(self, self, b, -alpha, "sub_");
}

Tensor& mul_into(Tensor& out, const Tensor& a, const Tensor& b, const char* name) {
  TensorIter it = TensorIter::binary_op(out, a, b, {.op_name = name});
  visit_dtype<kNumericAndBool>(it.compute_dtype(), name, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) cpu_kernel(it, [](bool x, bool y) -> bool { return x && y; });
    else cpu_kernel(it, [](T x, T y) -> T { return x * y; });
  });
  out = it.output();
  return out;
}
Tensor mul_cpu(const Tensor& a, const Tensor& b) { Tensor out; return mul_into(out, a, b, "mul"); }
Tensor& mul_inplace_cpu(Tensor& self, const Tensor& b) { return mul_into(self, self, b, "mul_"); }

EMBER_REGISTER_KERNEL(add, CPU, add_cpu);
EMBER_REGISTER_KERNEL(add_, CPU, add_inplace_cpu);
EMBER_REGISTER_KERNEL(sub, CPU, sub_cpu);
EMBER_REGISTER_KERNEL(sub_, CPU, sub_inplace_cpu);
EMBER_REGISTER_KERNEL(mul, CPU, mul_cpu);
EMBER_REGISTER_KERNEL(mul_, CPU, mul_inplace_cpu);

// ---------------------------------------------------------------- helpers
template <class T> constexpr bool is_fp = std::is_floating_point_v<T>;

// Integer division by zero raises PyTorch's ZeroDivisionError. The loops run on several
// threads, where an exception must not escape: they raise a flag, checked afterwards.
struct ZeroDivFlag {
  mutable std::atomic<bool> hit{false};
  void set() const { hit.store(true, std::memory_order_relaxed); }
  void check() const { EMBER_CHECK(!hit.load(), "ZeroDivisionError"); }
};

// -x with two's complement wrap-around (x / -1 for the most negative integer).
template <class T> T wrap_neg(T x) {
  using U = std::make_unsigned_t<T>;
  return T(U(0) - U(x));
}

template <class T> T div_trunc_int(T x, T y, const ZeroDivFlag& z) {
  if (y == 0) { z.set(); return T(0); }
  if constexpr (std::is_signed_v<T>) if (y == T(-1)) return wrap_neg(x);
  return T(x / y);
}
template <class T> T div_floor_int(T x, T y, const ZeroDivFlag& z) {
  if (y == 0) { z.set(); return T(0); }
  if constexpr (std::is_signed_v<T>) {
    if (y == T(-1)) return wrap_neg(x);
    T q = T(x / y), r = T(x % y);
    if (r != 0 && ((r < 0) != (y < 0))) --q;
    return q;
  } else {
    return T(x / y);
  }
}
// Floor division of floats, as PyTorch (and Python) compute it.
template <class T> T div_floor_fp(T a, T b) {
  if (b == T(0)) return a / b;
  T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
  T fl;
  if (div != T(0)) {
    fl = std::floor(div);
    if (div - fl > T(0.5)) fl += T(1);
  } else {
    fl = std::copysign(T(0), a / b);
  }
  return fl;
}
template <class T> T remainder_int(T x, T y, const ZeroDivFlag& z) {
  if (y == 0) { z.set(); return T(0); }
  if constexpr (std::is_signed_v<T>) {
    if (y == T(-1)) return T(0);
    T r = T(x % y);
    if (r != 0 && ((r < 0) != (y < 0))) r = T(r + y);
    return r;
  } else {
    return T(x % y);
  }
}
template <class T> T fmod_int(T x, T y, const ZeroDivFlag& z) {
  if (y == 0) { z.set(); return T(0); }
  if constexpr (std::is_signed_v<T>) if (y == T(-1)) return T(0);
  return T(x % y);
}

// Integer power by squaring; negative exponents give 0 except for bases 1 and -1.
template <class T> T powi(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      if (base == 1) return T(1);
      if (base == -1) return (exp % 2 == 0) ? T(1) : T(-1);
      return T(0);
    }
  }
  using U = std::make_unsigned_t<T>;
  U result = 1, b = U(base);
  for (U e = U(exp); e; e >>= 1) {
    if (e & 1) result = U(result * b);
    b = U(b * b);
  }
  return T(result);
}

// Builds the iterator, runs the kernel body, and hands back the (possibly in-place) result.
template <class Body>
Tensor& binary_into(Tensor& out, const Tensor& a, const Tensor& b, IterConfig cfg, const Body& body) {
  TensorIter it = TensorIter::binary_op(out, a, b, cfg);
  body(it);
  out = it.output();
  return out;
}

// ---------------------------------------------------------------- div and friends
void div_true_body(TensorIter& it) {
  visit_dtype<kFloatTypes>(it.compute_dtype(), "div_true_cpu", [&]<class T>() {
    cpu_kernel(it, [](T x, T y) -> T { return x / y; });
  });
}
void div_trunc_body(TensorIter& it) {
  visit_dtype<kNumericTypes>(it.compute_dtype(), "div_trunc_cpu", [&]<class T>() {
    if constexpr (is_fp<T>) {
      cpu_kernel(it, [](T x, T y) -> T { return std::trunc(x / y); });
    } else {
      ZeroDivFlag z;
      cpu_kernel(it, [&z](T x, T y) -> T { return div_trunc_int(x, y, z); });
      z.check();
    }
  });
}
void div_floor_body(TensorIter& it) {
  visit_dtype<kNumericTypes>(it.compute_dtype(), "div_floor_cpu", [&]<class T>() {
    if constexpr (is_fp<T>) {
      cpu_kernel(it, [](T x, T y) -> T { return div_floor_fp(x, y); });
    } else {
      ZeroDivFlag z;
      cpu_kernel(it, [&z](T x, T y) -> T { return div_floor_int(x, y, z); });
      z.check();
    }
  });
}

Tensor& div_into(Tensor& out, const Tensor& a, const Tensor& b, const std::optional<std::string>& mode,
                 const char* name) {
  if (!mode) return binary_into(out, a, b, {.op_name = name, .int_to_float = true}, div_true_body);
  if (*mode == "trunc") return binary_into(out, a, b, {.op_name = name}, div_trunc_body);
  return binary_into(out, a, b, {.op_name = name}, div_floor_body);
}
Tensor div_cpu(const Tensor& a, const Tensor& b, const std::optional<std::string>& mode) {
  Tensor out;
  return div_into(out, a, b, mode, "div");
}
Tensor& div_inplace_cpu(Tensor& self, const Tensor& b, const std::optional<std::string>& mode) {
  return div_into(self, self, b, mode, "div_");
}

// ---------------------------------------------------------------- the EMBER_BINARY_ARITH_OPS family
void floor_divide_body(TensorIter& it) { div_floor_body(it); }

void remainder_body(TensorIter& it) {
  visit_dtype<kNumericTypes>(it.compute_dtype(), "remainder_cpu", [&]<class T>() {
    if constexpr (is_fp<T>) {
      cpu_kernel(it, [](T a, T b) -> T {
        T mod = std::fmod(a, b);
        if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) mod += b;
        return mod;
      });
    } else {
      ZeroDivFlag z;
      cpu_kernel(it, [&z](T x, T y) -> T { return remainder_int(x, y, z); });
      z.check();
    }
  });
}

void fmod_body(TensorIter& it) {
  visit_dtype<kNumericTypes>(it.compute_dtype(), "fmod_cpu", [&]<class T>() {
    if constexpr (is_fp<T>) {
      cpu_kernel(it, [](T x, T y) -> T { return std::fmod(x, y); });
    } else {
      ZeroDivFlag z;
      cpu_kernel(it, [&z](T x, T y) -> T { return fmod_int(x, y, z); });
      z.check();
    }
  });
}

// pow: a 0-dim exponent (a Python number, usually) takes the fast forms PyTorch uses.
void pow_body(TensorIter& it) {
  const Tensor& exponent = it.operand(2);
  bool scalar_exp = exponent.dim() == 0;
  visit_dtype<kNumericTypes>(it.compute_dtype(), "pow", [&]<class T>() {
    if constexpr (is_fp<T>) {
      if (scalar_exp) {
        T e = exponent.item().to<T>();
        if (e == T(2)) cpu_kernel(it, [](T x, T) -> T { return x * x; });
        else if (e == T(3)) cpu_kernel(it, [](T x, T) -> T { return x * x * x; });
        else if (e == T(1)) cpu_kernel(it, [](T x, T) -> T { return x; });
        else if (e == T(0)) cpu_kernel(it, [](T, T) -> T { return T(1); });
        else if (e == T(-1)) cpu_kernel(it, [](T x, T) -> T { return T(1) / x; });
        else if (e == T(-2)) cpu_kernel(it, [](T x, T) -> T { return T(1) / (x * x); });
        else if (e == T(0.5)) cpu_kernel(it, [](T x, T) -> T { return std::sqrt(x); });
        else if (e == T(-0.5)) cpu_kernel(it, [](T x, T) -> T { return T(1) / std::sqrt(x); });
        else cpu_kernel(it, [e](T x, T) -> T { return std::pow(x, e); });
      } else {
        cpu_kernel(it, [](T x, T y) -> T { return std::pow(x, y); });
      }
    } else {
      if (scalar_exp) {
        T e = exponent.item().to<T>();
        if (e == T(2)) cpu_kernel(it, [](T x, T) -> T { return T(x * x); });
        else if (e == T(3)) cpu_kernel(it, [](T x, T) -> T { return T(x * x * x); });
        else cpu_kernel(it, [e](T x, T) -> T { return powi(x, e); });
      } else {
        cpu_kernel(it, [](T x, T y) -> T { return powi(x, y); });
      }
    }
  });
}

// maximum/minimum: NaN in either operand propagates.
void maximum_body(TensorIter& it) {
  visit_dtype<kNumericAndBool>(it.compute_dtype(), "maximum_cpu", [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) cpu_kernel(it, [](bool x, bool y) -> bool { return x || y; });
    else if constexpr (is_fp<T>) cpu_kernel(it, [](T x, T y) -> T { return (x > y || x != x) ? x : y; });
    else cpu_kernel(it, [](T x, T y) -> T { return x > y ? x : y; });
  });
}
void minimum_body(TensorIter& it) {
  visit_dtype<kNumericAndBool>(it.compute_dtype(), "minimum_cpu", [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) cpu_kernel(it, [](bool x, bool y) -> bool { return x && y; });
    else if constexpr (is_fp<T>) cpu_kernel(it, [](T x, T y) -> T { return (x < y || x != x) ? x : y; });
    else cpu_kernel(it, [](T x, T y) -> T { return x < y ? x : y; });
  });
}

void atan2_body(TensorIter& it) {
  visit_dtype<kFloatTypes>(it.compute_dtype(), "atan2_cpu", [&]<class T>() {
    cpu_kernel(it, [](T y, T x) -> T { return std::atan2(y, x); });
  });
}

void bitwise_and_body(TensorIter& it) {
  visit_dtype<kIntAndBool>(it.compute_dtype(), "bitwise_and_cpu", [&]<class T>() {
    cpu_kernel(it, [](T x, T y) -> T { return T(x & y); });
  });
}
void bitwise_or_body(TensorIter& it) {
  visit_dtype<kIntAndBool>(it.compute_dtype(), "bitwise_or_cpu", [&]<class T>() {
    cpu_kernel(it, [](T x, T y) -> T { return T(x | y); });
  });
}
void bitwise_xor_body(TensorIter& it) {
  visit_dtype<kIntAndBool>(it.compute_dtype(), "bitwise_xor_cpu", [&]<class T>() {
    cpu_kernel(it, [](T x, T y) -> T { return T(x ^ y); });
  });
}
// Shifts by a negative amount or by the width or more give 0 (left) or the sign fill (right).
void bitwise_left_shift_body(TensorIter& it) {
  visit_dtype<kIntTypes>(it.compute_dtype(), "lshift_cpu", [&]<class T>() {
    cpu_kernel(it, [](T a, T b) -> T {
      using U = std::make_unsigned_t<T>;
      constexpr T bits = T(sizeof(T) * 8);
      if (std::make_signed_t<T>(b) < 0 || b >= bits) return T(0);
      return T(U(a) << b);
    });
  });
}
void bitwise_right_shift_body(TensorIter& it) {
  visit_dtype<kIntTypes>(it.compute_dtype(), "rshift_cpu", [&]<class T>() {
    cpu_kernel(it, [](T a, T b) -> T {
      constexpr T max_shift = T(sizeof(T) * 8 - std::is_signed_v<T>);
      if (std::make_signed_t<T>(b) < 0 || b >= max_shift) return T(a >> max_shift);
      return T(a >> b);
    });
  });
}

IterConfig arith_config(const char* name) {
  if (std::string_view(name).starts_with("atan2")) return {.op_name = name, .int_to_float = true};
  return {.op_name = name};
}

// mul is registered above with add/sub; the rest of the family registers here.
#define EMBER_ARITH_KERNELS(n)                                                                  \
  Tensor n##_cpu(const Tensor& a, const Tensor& b) {                                            \
    Tensor out;                                                                                 \
    return binary_into(out, a, b, arith_config(#n), n##_body);                                 \
  }                                                                                             \
  Tensor& n##_inplace_cpu(Tensor& self, const Tensor& b) {                                      \
    return binary_into(self, self, b, arith_config(#n "_"), n##_body);                         \
  }                                                                                             \
  EMBER_REGISTER_KERNEL(n, CPU, n##_cpu);                                                       \
  EMBER_REGISTER_KERNEL(n##_, CPU, n##_inplace_cpu);
EMBER_ARITH_KERNELS(remainder) EMBER_ARITH_KERNELS(fmod) EMBER_ARITH_KERNELS(pow)
EMBER_ARITH_KERNELS(maximum) EMBER_ARITH_KERNELS(minimum) EMBER_ARITH_KERNELS(atan2)
EMBER_ARITH_KERNELS(floor_divide) EMBER_ARITH_KERNELS(bitwise_and) EMBER_ARITH_KERNELS(bitwise_or)
EMBER_ARITH_KERNELS(bitwise_xor) EMBER_ARITH_KERNELS(bitwise_left_shift)
EMBER_ARITH_KERNELS(bitwise_right_shift)
#undef EMBER_ARITH_KERNELS

EMBER_REGISTER_KERNEL(div, CPU, div_cpu);
EMBER_REGISTER_KERNEL(div_, CPU, div_inplace_cpu);

// ---------------------------------------------------------------- where
// A select copies bits, so one instantiation per element size serves every dtype.
template <int N> struct uint_of;
template <> struct uint_of<1> { using type = uint8_t; };
template <> struct uint_of<2> { using type = uint16_t; };
template <> struct uint_of<4> { using type = uint32_t; };
template <> struct uint_of<8> { using type = uint64_t; };

// Branch-free select (a mask from the bool, read as its byte): a data-dependent branch mispredicts half the time
// on random masks, and this form vectorises.
template <class U> inline U select_bits(uint8_t c, U x, U y) {
  U m = U(U(0) - U(c));
  return U((x & m) | (y & U(~m)));
}
template <class U> Tensor where_typed(const Tensor& cond, const Tensor& a, const Tensor& b, DType dt) {
  IterConfig cfg{.op_name = "where", .compute_dtype = dt, .output_dtype = dt, .cast_inputs = false,
                 .upcast_reduced_float = false};
  Tensor out;
  bool a0 = a.dim() == 0, b0 = b.dim() == 0;
  if (a0 && b0) {
    const U av = *static_cast<const U*>(a.data_ptr()), bv = *static_cast<const U*>(b.data_ptr());
    TensorIter it({out}, {cond}, cfg);
    cpu_kernel(it, [av, bv](uint8_t c) -> U { return select_bits(c, av, bv); });
    return it.output();
  }
  if (b0) {
    const U bv = *static_cast<const U*>(b.data_ptr());
    TensorIter it({out}, {cond, a}, cfg);
    cpu_kernel(it, [bv](uint8_t c, U x) -> U { return select_bits(c, x, bv); });
    return it.output();
  }
  if (a0) {
    const U av = *static_cast<const U*>(a.data_ptr());
    TensorIter it({out}, {cond, b}, cfg);
    cpu_kernel(it, [av](uint8_t c, U y) -> U { return select_bits(c, av, y); });
    return it.output();
  }
  TensorIter it({out}, {cond, a, b}, cfg);
  cpu_kernel(it, [](uint8_t c, U x, U y) -> U { return select_bits(c, x, y); });
  return it.output();
}

Tensor where_cpu(const Tensor& cond, const Tensor& a, const Tensor& b) {
  EMBER_CHECK(cond.dtype() == DType::Bool,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              dtype_name(cond.dtype()));
  DType dt = compute_result_type({a, b});
  Tensor ac = a.to(dt), bc = b.to(dt);
  switch (element_size(dt)) {
    case 1: return where_typed<uint8_t>(cond, ac, bc, dt);
    case 2: return where_typed<uint16_t>(cond, ac, bc, dt);
    case 4: return where_typed<uint32_t>(cond, ac, bc, dt);
    default: return where_typed<uint64_t>(cond, ac, bc, dt);
  }
}
EMBER_REGISTER_KERNEL(where, CPU, where_cpu);

// ---------------------------------------------------------------- clamp
// min then max, as torch.clamp: when min > max every element becomes max. NaN propagates
// (from the input and from a NaN bound).
template <class T> inline T clamp_lo(T x, T lo) {
  if constexpr (is_fp<T>) return (x > lo || x != x) ? x : lo;
  else return x < lo ? lo : x;
}
template <class T> inline T clamp_hi(T x, T hi) {
  if constexpr (is_fp<T>) return (x < hi || x != x) ? x : hi;
  else return x > hi ? hi : x;
}

Tensor& clamp_into(Tensor& out, const Tensor& a, const std::optional<Scalar>& lo,
                   const std::optional<Scalar>& hi, const char* name) {
  std::vector<Tensor> parts{a};
  if (lo) parts.push_back(wrapped_scalar(*lo, a.device()));
  if (hi) parts.push_back(wrapped_scalar(*hi, a.device()));
  DType dt = compute_result_type(parts);
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = name, .compute_dtype = dt});
  visit_dtype<kNumericTypes>(it.compute_dtype(), "clamp_cpu", [&]<class T>() {
    T l = lo ? lo->to<T>() : T(0), h = hi ? hi->to<T>() : T(0);
    if (lo && hi) cpu_kernel(it, [l, h](T x) -> T { return clamp_hi(clamp_lo(x, l), h); });
    else if (lo) cpu_kernel(it, [l](T x) -> T { return clamp_lo(x, l); });
    else cpu_kernel(it, [h](T x) -> T { return clamp_hi(x, h); });
  });
  out = it.output();
  return out;
}
Tensor clamp_cpu(const Tensor& a, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  Tensor out;
  return clamp_into(out, a, lo, hi, "clamp");
}
Tensor& clamp_inplace_cpu(Tensor& self, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  return clamp_into(self, self, lo, hi, "clamp_");
}

Tensor clamp_tensor_cpu(const Tensor& a, const std::optional<Tensor>& lo, const std::optional<Tensor>& hi) {
  std::vector<Tensor> inputs{a};
  if (lo) inputs.push_back(*lo);
  if (hi) inputs.push_back(*hi);
  Tensor out;
  TensorIter it({out}, inputs, {.op_name = "clamp"});
  visit_dtype<kNumericTypes>(it.compute_dtype(), "clamp_cpu", [&]<class T>() {
    if (lo && hi) cpu_kernel(it, [](T x, T l, T h) -> T { return clamp_hi(clamp_lo(x, l), h); });
    else if (lo) cpu_kernel(it, [](T x, T l) -> T { return clamp_lo(x, l); });
    else cpu_kernel(it, [](T x, T h) -> T { return clamp_hi(x, h); });
  });
  return it.output();
}
EMBER_REGISTER_KERNEL(clamp, CPU, clamp_cpu);
EMBER_REGISTER_KERNEL(clamp_, CPU, clamp_inplace_cpu);
EMBER_REGISTER_KERNEL(clamp_tensor, CPU, clamp_tensor_cpu);

// ---------------------------------------------------------------- lerp
// start + weight * (end - start), written from the nearer end for accuracy (as PyTorch).
template <class T> inline T lerp_fn(T s, T e, T w) {
  return std::abs(w) < T(0.5) ? s + w * (e - s) : e - (e - s) * (T(1) - w);
}
Tensor lerp_cpu(const Tensor& start, const Tensor& end, const Tensor& weight) {
  Tensor out;
  DType dt = start.dtype();
  if (weight.dim() == 0) {
    double wv = weight.item().to_double();
    TensorIter it({out}, {start, end}, {.op_name = "lerp", .compute_dtype = dt});
    visit_dtype<kFloatTypes>(it.compute_dtype(), "lerp_kernel_scalar", [&]<class T>() {
      const T w = T(wv);
      if (std::abs(w) < T(0.5)) cpu_kernel(it, [w](T s, T e) -> T { return s + w * (e - s); });
      else cpu_kernel(it, [w](T s, T e) -> T { return e - (e - s) * (T(1) - w); });
    });
    return it.output();
  }
  TensorIter it({out}, {start, end, weight}, {.op_name = "lerp", .compute_dtype = dt});
  visit_dtype<kFloatTypes>(it.compute_dtype(), "lerp_kernel_tensor", [&]<class T>() {
    cpu_kernel(it, [](T s, T e, T w) -> T { return lerp_fn(s, e, w); });
  });
  return it.output();
}
EMBER_REGISTER_KERNEL(lerp, CPU, lerp_cpu);

}  // namespace
}  // namespace ember::cpu
