#pragma once
// The elementary functions the CPU kernels plug into the shared formulas
// (src/ops/elementwise_formulas.h): float32 uses the branch-free versions of vec_math.h, which
// GCC vectorises inside cpu_kernel's dense loops (libm calls keep a loop scalar); float64 and
// everything else use <cmath>, as StdMath does. Dense and strided runs call the same functor,
// so a result never depends on the layout (tests/cpp/test_elementwise_formulas.cpp).
#include "cpu/vec_math.h"
#include "cpu/vec_pow.h"
#include "ops/elementwise_formulas.h"

namespace ember::cpu {

struct CpuMath : formula::StdMath {
  using StdMath::exp;
  using StdMath::exp2;
  using StdMath::expm1;
  using StdMath::log;
  using StdMath::log1p;
  using StdMath::log2;
  using StdMath::log10;
  using StdMath::tanh;
  using StdMath::erf;
  using StdMath::nearbyint;
  using StdMath::pow;
  [[gnu::always_inline]] static float exp(float x) { return exp_f32(x); }
  [[gnu::always_inline]] static float exp2(float x) { return exp2_f32(x); }
  [[gnu::always_inline]] static float expm1(float x) { return expm1_f32(x); }
  [[gnu::always_inline]] static float log(float x) { return log_f32(x); }
  [[gnu::always_inline]] static float log1p(float x) { return log1p_f32(x); }
  [[gnu::always_inline]] static float log2(float x) { return log2_f32(x); }
  [[gnu::always_inline]] static float log10(float x) { return log10_f32(x); }
  [[gnu::always_inline]] static float tanh(float x) { return tanh_f32(x); }
  [[gnu::always_inline]] static float erf(float x) { return erf_f32(x); }
  [[gnu::always_inline]] static float pow(float x, float y) { return pow_f32(x, y); }
  // Exact either way; these forms vectorise where std::nearbyint does not.
  [[gnu::always_inline]] static float nearbyint(float x) { return round_even_f32(x); }
  [[gnu::always_inline]] static double nearbyint(double x) { return round_even_f64(x); }
};

// CpuMath for the formulas that use exp(-x) only inside 1 / (1 + e) or x / (1 + e): sigmoid,
// silu and silu's gradient, whose CPU kernels take it (CpuFormula below); results are CpuMath's, bit for bit.
struct LogisticCpuMath : CpuMath {
  using CpuMath::exp;
  [[gnu::always_inline]] static float exp(float x) { return exp_for_logistic_f32(x); }
};

// The math an op's formula runs with on the CPU.
template <template <class> class Formula> struct CpuFormula { using type = Formula<CpuMath>; };
template <> struct CpuFormula<formula::sigmoid_fn> { using type = formula::sigmoid_fn<LogisticCpuMath>; };
template <> struct CpuFormula<formula::silu_fn> { using type = formula::silu_fn<LogisticCpuMath>; };
template <> struct CpuFormula<formula::silu_backward_fn> { using type = formula::silu_backward_fn<LogisticCpuMath>; };

}  // namespace ember::cpu
