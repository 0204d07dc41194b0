// CPU kernels for two-operand elementwise ops (and the three-operand where/clamp/lerp). Each
// loop calls the op's formula (src/ops/elementwise_formulas.h) with the CPU's elementary
// functions (cpu/elementwise_math.h); the kernels here pick dtypes, the fast forms of a
// scalar operand, and report integer division by zero.
#include <atomic>
#include <cmath>
#include <string_view>

#include "cpu/elementwise_math.h"
#include "cpu/tensor_iter.h"
#include "ember/ops.h"
#include "ops/arith_config.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

namespace f = formula;

template <class T> constexpr bool is_fp = std::is_floating_point_v<T>;

// Runs the two-operand formula fn in the compute type T.
template <class T, class Fn> void run2(TensorIter& it, Fn fn) {
  cpu_kernel(it, [fn](T x, T y) -> T { return fn(x, y); });
}

// a + alpha * b; with alpha 1 the formula is instantiated with a constant alpha, which the
// compiler folds to a + b (fma(1, b, a) is a + b exactly).
Tensor& add_into(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const char* name) {
  TensorIter it = TensorIter::binary_op(out, a, b, {.op_name = name});
  visit_dtype<kNumericAndBool | kComplexTypes>(it.compute_dtype(), name, [&]<class T>() {
    const T al = alpha.to<T>();
    if (al == T(1)) cpu_kernel(it, [](T x, T y) -> T { return f::add_fn<T, CpuMath>{T(1)}(x, y); });
    else run2<T>(it, f::add_fn<T, CpuMath>{al});
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
  visit_dtype<kNumericAndBool | kComplexTypes>(it.compute_dtype(), name, [&]<class T>() {
    run2<T>(it, f::mul_fn<CpuMath>{});
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
// Integer division by zero raises PyTorch's ZeroDivisionError. The loops run on several
// threads, where an exception must not escape: the formulas report it through this, and the
// flag is checked after the loop.
struct ZeroDivFlag {
  mutable std::atomic<bool> hit{false};
  void check() const { EMBER_CHECK(!hit.load(), "ZeroDivisionError"); }
};
struct ReportZeroDiv {
  const ZeroDivFlag* flag;
  void operator()() const { flag->hit.store(true, std::memory_order_relaxed); }
};

// A division-family formula Fn<M, OnZeroDiv> over the iterator: floating types as they are,
// integers reporting division by zero.
template <template <class, class> class Fn> void division_loop(TensorIter& it, const char* name) {
  visit_dtype<kNumericTypes>(it.compute_dtype(), name, [&]<class T>() {
    if constexpr (is_fp<T>) {
      run2<T>(it, Fn<CpuMath, f::IgnoreZeroDiv>{});
    } else {
      ZeroDivFlag z;
      run2<T>(it, Fn<CpuMath, ReportZeroDiv>{ReportZeroDiv{&z}});
      z.check();
    }
  });
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
  visit_dtype<kFloatAndComplex>(it.compute_dtype(), "div_true_cpu", [&]<class T>() {
    run2<T>(it, f::div_true_fn<CpuMath>{});
  });
}
void div_trunc_body(TensorIter& it) { division_loop<f::div_trunc_fn>(it, "div_trunc_cpu"); }
void div_floor_body(TensorIter& it) { division_loop<f::div_floor_fn>(it, "div_floor_cpu"); }

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
void remainder_body(TensorIter& it) { division_loop<f::remainder_fn>(it, "remainder_cpu"); }
void fmod_body(TensorIter& it) { division_loop<f::fmod_fn>(it, "fmod_cpu"); }

// pow: a 0-dim exponent (a Python number, usually) takes the special forms PyTorch uses for
// 2, 3, -2, 0.5, -0.5 and -1, the identity for 1 and a fill for 0; other exponents and tensor
// exponents use pow_fn.
void pow_body(TensorIter& it) {
  const Tensor& exponent = it.operand(2);
  bool scalar_exp = exponent.dim() == 0;
  visit_dtype<kNumericTypes>(it.compute_dtype(), "pow", [&]<class T>() {
    auto one = [&](auto fn) { cpu_kernel(it, [fn](T x, T) -> T { return fn(x); }); };
    // Forced inline: float pow is long enough (vec_pow.h) that GCC's inliner, out of budget in
    // this file, left the two-tensor loop calling it per element, scalar (48 ms for 1M, not 2.8).
    auto general = [&] { cpu_kernel(it, [](T x, T y) __attribute__((always_inline)) -> T { return f::pow_fn<CpuMath>{}(x, y); }); };
    if (!scalar_exp) return general();
    const T e = exponent.item().to<T>();
    if (e == T(2)) return one(f::square_fn<CpuMath>{});
    if (e == T(3)) return one(f::cube_fn<CpuMath>{});
    if constexpr (is_fp<T>) {
      if (e == T(1)) return one([](T x) { return x; });
      if (e == T(0)) return one([](T) { return T(1); });
      if (e == T(-1)) return one(f::reciprocal_fn<CpuMath>{});
      if (e == T(-2)) return one(f::inverse_square_fn<CpuMath>{});
      if (e == T(0.5)) return one(f::sqrt_fn<CpuMath>{});
      if (e == T(-0.5)) return one(f::rsqrt_fn<CpuMath>{});
    }
    // The exponent read as the broadcast operand: the dense loop hoists it and vectorises
    // (a captured copy was reloaded every element and kept the loop scalar).
    general();
  });
}

void maximum_body(TensorIter& it) {
  visit_dtype<kNumericAndBool>(it.compute_dtype(), "maximum_cpu", [&]<class T>() {
    run2<T>(it, f::maximum_fn<CpuMath>{});
  });
}
void minimum_body(TensorIter& it) {
  visit_dtype<kNumericAndBool>(it.compute_dtype(), "minimum_cpu", [&]<class T>() {
    run2<T>(it, f::minimum_fn<CpuMath>{});
  });
}
void atan2_body(TensorIter& it) {
  visit_dtype<kFloatTypes>(it.compute_dtype(), "atan2_cpu", [&]<class T>() { run2<T>(it, f::atan2_fn<CpuMath>{}); });
}

void bitwise_and_body(TensorIter& it) {
  visit_dtype<kIntAndBool>(it.compute_dtype(), "bitwise_and_cpu", [&]<class T>() {
    run2<T>(it, f::bitwise_and_fn<CpuMath>{});
  });
}
void bitwise_or_body(TensorIter& it) {
  visit_dtype<kIntAndBool>(it.compute_dtype(), "bitwise_or_cpu", [&]<class T>() {
    run2<T>(it, f::bitwise_or_fn<CpuMath>{});
  });
}
void bitwise_xor_body(TensorIter& it) {
  visit_dtype<kIntAndBool>(it.compute_dtype(), "bitwise_xor_cpu", [&]<class T>() {
    run2<T>(it, f::bitwise_xor_fn<CpuMath>{});
  });
}
void bitwise_left_shift_body(TensorIter& it) {
  visit_dtype<kIntTypes>(it.compute_dtype(), "lshift_cpu", [&]<class T>() {
    run2<T>(it, f::bitwise_left_shift_fn<CpuMath>{});
  });
}
void bitwise_right_shift_body(TensorIter& it) {
  visit_dtype<kIntTypes>(it.compute_dtype(), "rshift_cpu", [&]<class T>() {
    run2<T>(it, f::bitwise_right_shift_fn<CpuMath>{});
  });
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
    case 8: return where_typed<uint64_t>(cond, ac, bc, dt);
    default:  // complex128: the (re, im) pair as two float64 lanes under one condition (16-byte
              // elements read as 8 once left every imaginary part uninitialised)
      return view_as_complex(where_typed<uint64_t>(cond.unsqueeze(-1), view_as_real(ac), view_as_real(bc), kFloat64));
  }
}
EMBER_REGISTER_KERNEL(where, CPU, where_cpu);

// ---------------------------------------------------------------- clamp
// Both bounds: clamp_fn (a NaN bound gives NaN); one bound: maximum_fn (min) or minimum_fn
// (max), as PyTorch's clamp_min/clamp_max. NaN in the input propagates.
Tensor& clamp_into(Tensor& out, const Tensor& a, const std::optional<Scalar>& lo,
                   const std::optional<Scalar>& hi, const char* name) {
  std::vector<Tensor> parts{a};
  if (lo) parts.push_back(wrapped_scalar(*lo));
  if (hi) parts.push_back(wrapped_scalar(*hi));
  DType dt = compute_result_type(parts);
  TensorIter it = TensorIter::unary_op(out, a, {.op_name = name, .compute_dtype = dt});
  visit_dtype<kNumericTypes>(it.compute_dtype(), "clamp_cpu", [&]<class T>() {
    T l = lo ? lo->to<T>() : T(0), h = hi ? hi->to<T>() : T(0);
    if (lo && hi && (l != l || h != h)) {  // a NaN bound: NaN everywhere (clamp_fn's rule)
      cpu_kernel(it, [l, h](T x) -> T { return f::clamp_fn<CpuMath>{}(x, l, h); });
    } else if (lo && hi) {
      // clamp_fn without its per-element NaN-bound test, which kept the loop from vectorising
      // (1024 x 1024 float32: 60-96 us against torch 2.15's 52-63)
      cpu_kernel(it, [l, h](T x) -> T {
        const T m = x < l ? l : x;
        return h < m ? h : m;
      });
    }
    else if (lo) cpu_kernel(it, [l](T x) -> T { return f::maximum_fn<CpuMath>{}(x, l); });
    else cpu_kernel(it, [h](T x) -> T { return f::minimum_fn<CpuMath>{}(x, h); });
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
    if (lo && hi) cpu_kernel(it, [](T x, T l, T h) -> T { return f::clamp_fn<CpuMath>{}(x, l, h); });
    else if (lo) run2<T>(it, f::maximum_fn<CpuMath>{});
    else run2<T>(it, f::minimum_fn<CpuMath>{});
  });
  return it.output();
}
EMBER_REGISTER_KERNEL(clamp, CPU, clamp_cpu);
EMBER_REGISTER_KERNEL(clamp_, CPU, clamp_inplace_cpu);
EMBER_REGISTER_KERNEL(clamp_tensor, CPU, clamp_tensor_cpu);

// ---------------------------------------------------------------- lerp
Tensor lerp_cpu(const Tensor& start, const Tensor& end, const Tensor& weight) {
  Tensor out;
  DType dt = start.dtype();
  if (weight.dim() == 0) {
    double wv = weight.item().to_double();
    TensorIter it({out}, {start, end}, {.op_name = "lerp", .compute_dtype = dt});
    visit_dtype<kFloatTypes>(it.compute_dtype(), "lerp_kernel_scalar", [&]<class T>() {
      const T w = T(wv);
      cpu_kernel(it, [w](T s, T e) -> T { return f::lerp_fn<CpuMath>{}(s, e, w); });
    });
    return it.output();
  }
  TensorIter it({out}, {start, end, weight}, {.op_name = "lerp", .compute_dtype = dt});
  visit_dtype<kFloatTypes>(it.compute_dtype(), "lerp_kernel_tensor", [&]<class T>() {
    cpu_kernel(it, [](T s, T e, T w) -> T { return f::lerp_fn<CpuMath>{}(s, e, w); });
  });
  return it.output();
}
EMBER_REGISTER_KERNEL(lerp, CPU, lerp_cpu);

}  // namespace
}  // namespace ember::cpu
