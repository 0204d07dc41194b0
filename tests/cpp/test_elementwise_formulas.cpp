// The shared elementwise formulas (src/ops/elementwise_formulas.h):
//   - PyTorch's scalar edge cases, checked on the functors themselves;
//   - the CPU kernels agree with the functor bit for bit: dense runs (the loop GCC vectorises,
//     body and tail) at lengths 1..67 and a few longer ones, and strided runs (the scalar loop),
//     over special values (zeros, infinities, NaN, subnormals, huge, halves);
//   - the CPU's float32 elementary functions (cpu/elementwise_math.h) stay within a few ulp of
//     <cmath> (StdMath) inside each formula.
// This file is compiled with the library's flags (-march=native, -fno-math-errno; see
// tests/cpp/CMakeLists.txt) so a functor called here rounds as the library's loops do.
#include <bit>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>

#include "cpu/elementwise_math.h"
#include "ops/op_handles.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;
namespace f = ember::formula;
using CpuMath = ember::cpu::CpuMath;

namespace {

template <class T> constexpr T kInf = std::numeric_limits<T>::infinity();
template <class T> constexpr T kNaN = std::numeric_limits<T>::quiet_NaN();

// Values that exercise the formulas' edges, then a spread of ordinary ones.
template <class T> std::vector<T> special_values() {
  using L = std::numeric_limits<T>;
  std::vector<T> v{T(0), -T(0), T(1), T(-1), T(0.5), T(-0.5), T(1.5), T(2.5), T(-2.5), T(3), T(-3),
                   kInf<T>, -kInf<T>, kNaN<T>, L::denorm_min(), -L::denorm_min(), L::min(), -L::min(),
                   L::max(), L::lowest(), L::epsilon(), T(1e-8), T(-1e-8), T(0.625), T(-0.625), T(20),
                   T(-20), T(88.7), T(89), T(-103), T(-104.5), T(710), T(-745.5), T(1e10), T(-1e10),
                   T(8388608.5), T(4503599627370497.0), T(0.1), T(-7.25), T(7.25), T(1e-3), T(4.0), T(-4.0)};
  uint64_t x = 12345;
  for (int i = 0; i < 64; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    double u = double(x >> 11) / double(1ull << 53);  // [0, 1)
    double scale = i < 16 ? 1 : i < 32 ? 10 : i < 48 ? 100 : 1e-3;
    v.push_back(T((u * 2 - 1) * scale));
  }
  return v;
}

// The first n values, cycling.
template <class T> std::vector<T> take_n(const std::vector<T>& v, size_t n, size_t offset = 0) {
  std::vector<T> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = v[(i + offset) % v.size()];
  return out;
}

const std::vector<size_t> kLengths = [] {
  std::vector<size_t> l;
  for (size_t n = 1; n <= 67; ++n) l.push_back(n);
  for (size_t n : {127, 128, 129, 255, 1000, 1027}) l.push_back(n);
  return l;
}();

template <class T> DType dtype_for() { return dtype_of<T>; }

template <class T> Tensor dense(const std::vector<T>& v) {
  return from_blob(const_cast<T*>(v.data()), {int64_t(v.size())}, {.dtype = dtype_for<T>()}).clone();
}
// The same values at stride 2 (every other element of a buffer twice as long): the scalar loop.
template <class T> Tensor strided(const std::vector<T>& v) {
  std::vector<T> wide(v.size() * 2, T(0));
  for (size_t i = 0; i < v.size(); ++i) wide[2 * i] = v[i];
  return dense(wide).slice(0, 0, std::nullopt, 2);
}

// Bit-for-bit equality, any NaN matching any NaN.
template <class T> bool same_bits(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a && b != b) return true;
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    return std::bit_cast<U>(a) == std::bit_cast<U>(b);
  } else {
    return a == b;
  }
}

template <class R, class... T> std::string describe(const std::vector<R>& got, size_t i, R want, T... in) {
  std::ostringstream os;
  os.precision(17);
  os << "element " << i << " of " << got.size() << ": inputs";
  ((os << ' ' << +in), ...);
  os << " -> kernel " << +got[i] << ", formula " << +want;
  return os.str();
}

// Runs `op` on dense and strided copies of the inputs for every length and compares each
// element with `fn` applied to it.
template <class T, class R = T>
::testing::AssertionResult unary_agrees(const std::function<Tensor(const Tensor&)>& op,
                                        const std::type_identity_t<std::function<R(T)>>& fn,
                                        const std::vector<std::type_identity_t<T>>& values) {
  for (size_t n : kLengths)
    for (int layout = 0; layout < 2; ++layout) {
      auto in = take_n(values, n, n % 7);
      Tensor x = layout == 0 ? dense(in) : strided(in);
      auto got = op(x).template tolist<R>();
      for (size_t i = 0; i < n; ++i)
        if (!same_bits<R>(got[i], fn(in[i])))
          return ::testing::AssertionFailure() << (layout ? "strided " : "dense ") << describe(got, i, fn(in[i]), in[i]);
    }
  return ::testing::AssertionSuccess();
}

// Two operands: dense-dense, dense with a broadcast 0-dim second operand (unless
// `broadcast` is false: pow picks special forms for a 0-dim exponent), and strided-strided.
template <class T, class R = T>
::testing::AssertionResult binary_agrees(const std::function<Tensor(const Tensor&, const Tensor&)>& op,
                                         const std::type_identity_t<std::function<R(T, T)>>& fn,
                                         const std::vector<std::type_identity_t<T>>& a_values,
                                         const std::vector<std::type_identity_t<T>>& b_values, bool broadcast = true) {
  for (size_t n : kLengths)
    for (int layout = 0; layout < 3; ++layout) {
      if (layout == 1 && !broadcast) continue;
      auto a = take_n(a_values, n, n % 5);
      auto b = take_n(b_values, n, n % 11 + 3);
      if (layout == 1) std::fill(b.begin(), b.end(), b[0]);
      Tensor x = layout == 2 ? strided(a) : dense(a);
      Tensor y = layout == 2 ? strided(b) : layout == 1 ? dense(std::vector<T>{b[0]}).reshape({}) : dense(b);
      auto got = op(x, y).template tolist<R>();
      for (size_t i = 0; i < n; ++i)
        if (!same_bits<R>(got[i], fn(a[i], b[i])))
          return ::testing::AssertionFailure() << (layout == 0 ? "dense " : layout == 1 ? "broadcast " : "strided ")
                                               << describe(got, i, fn(a[i], b[i]), a[i], b[i]);
    }
  return ::testing::AssertionSuccess();
}

template <class T> std::vector<T> int_values() {
  using L = std::numeric_limits<T>;
  std::vector<T> v{T(0), T(1), T(2), T(3), T(7), L::max(), L::min(), T(L::max() - 1), T(100), T(5)};
  if constexpr (std::is_signed_v<T>) {
    for (T e : {T(-1), T(-2), T(-3), T(-7), T(-100), T(L::min() + 1)}) v.push_back(e);
  }
  return v;
}
template <class T> std::vector<T> nonzero(std::vector<T> v) {
  v.erase(std::remove(v.begin(), v.end(), T(0)), v.end());
  return v;
}

}  // namespace

// ---------------------------------------------------------------- PyTorch's scalar edge cases
TEST(Formulas, DivisionFamilySignRules) {
  f::remainder_fn<> rem;
  f::fmod_fn<> fm;
  f::div_floor_fn<> fl;
  f::div_trunc_fn<> tr;
  // Python's %: the sign of the divisor; C's fmod: the sign of the dividend.
  EXPECT_EQ(rem(-7.0, 3.0), 2.0);
  EXPECT_EQ(rem(7.0, -3.0), -2.0);
  EXPECT_EQ(fm(-7.0, 3.0), -1.0);
  EXPECT_EQ(fm(7.0, -3.0), 1.0);
  EXPECT_EQ(rem(-7, 3), 2);
  EXPECT_EQ(rem(7, -3), -2);
  EXPECT_EQ(fm(-7, 3), -1);
  EXPECT_TRUE(std::isnan(rem(1.0, 0.0)));
  EXPECT_TRUE(std::isnan(rem(kInf<double>, 2.0)));
  EXPECT_EQ(rem(5.0, kInf<double>), 5.0);  // fmod(5, inf) = 5, same signs: no correction
  EXPECT_EQ(rem(-5.0, kInf<double>), kInf<double>);  // the correction adds the divisor, as PyTorch
  // Floor division of floats: exact via fmod, the sign of a zero quotient from a / b.
  EXPECT_EQ(fl(7.0, 2.0), 3.0);
  EXPECT_EQ(fl(-7.0, 2.0), -4.0);
  EXPECT_EQ(fl(-0.5, 2.0), -1.0);
  EXPECT_TRUE(std::signbit(fl(0.0, -3.0)));
  EXPECT_EQ(fl(1.0, 0.0), kInf<double>);
  EXPECT_EQ(fl(-1.0, 0.0), -kInf<double>);
  EXPECT_TRUE(std::isnan(fl(0.0, 0.0)));
  EXPECT_EQ(fl(0.3, 0.1), 2.0);  // fmod(0.3, 0.1) ~ 0.1: the quotient is 2, not 3
  EXPECT_EQ(fl(-7, 2), -4);
  EXPECT_EQ(fl(7, -2), -4);
  EXPECT_EQ(tr(-7.0, 2.0), -3.0);
  EXPECT_EQ(tr(-7, 2), -3);
  // The most negative integer over -1 wraps instead of trapping.
  EXPECT_EQ(tr(std::numeric_limits<int32_t>::min(), -1), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(fl(std::numeric_limits<int64_t>::min(), int64_t(-1)), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(rem(std::numeric_limits<int8_t>::min(), int8_t(-1)), 0);
  EXPECT_EQ(rem(uint8_t(200), uint8_t(7)), 200 % 7);
}

TEST(Formulas, IntegerDivisionByZeroIsReportedAndYieldsZero) {
  int hits = 0;
  auto report = [&hits] { ++hits; };
  EXPECT_EQ((f::div_trunc_fn<f::StdMath, decltype(report)>{report}(5, 0)), 0);
  EXPECT_EQ((f::div_floor_fn<f::StdMath, decltype(report)>{report}(-5, 0)), 0);
  EXPECT_EQ((f::remainder_fn<f::StdMath, decltype(report)>{report}(5, 0)), 0);
  EXPECT_EQ((f::fmod_fn<f::StdMath, decltype(report)>{report}(uint8_t(5), uint8_t(0))), 0);
  EXPECT_EQ(hits, 4);
  EXPECT_EQ((f::div_trunc_fn<f::StdMath, decltype(report)>{report}(5.0, 0.0)), kInf<double>);  // floats: IEEE
  EXPECT_EQ(hits, 4);
  // Through the kernels: PyTorch's ZeroDivisionError, on every thread count and layout.
  EXPECT_THROW_MSG(div(tensor({1, 2}), tensor({1, 0}), std::string("trunc")), Error, "ZeroDivisionError");
  EXPECT_THROW_MSG(remainder(arange(100000), 0), Error, "ZeroDivisionError");
  EXPECT_THROW_MSG(fmod(tensor({1, 2}, {.dtype = kUInt8}), tensor({0}, {.dtype = kUInt8})), Error, "ZeroDivisionError");
}

TEST(Formulas, IntegerPowers) {
  EXPECT_EQ(f::powi(3, 4), 81);
  EXPECT_EQ(f::powi(-2, 3), -8);
  EXPECT_EQ(f::powi(2, -1), 0);
  EXPECT_EQ(f::powi(1, -5), 1);
  EXPECT_EQ(f::powi(-1, -5), -1);
  EXPECT_EQ(f::powi(-1, -4), 1);
  EXPECT_EQ(f::powi(0, 0), 1);
  EXPECT_EQ(f::powi(int8_t(3), int8_t(5)), int8_t(243 - 256));   // wraps
  EXPECT_EQ(f::powi(uint16_t(65535), uint16_t(2)), uint16_t(1));  // no int overflow inside
  EXPECT_EQ(f::powi(int64_t(2), int64_t(63)), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f::pow_fn<>{}(2.0, -1.0), 0.5);
  EXPECT_EQ(f::square_fn<>{}(int32_t(65536)), 0);  // 2^32 wraps to 0
  EXPECT_EQ(f::cube_fn<>{}(int16_t(-32)), int16_t(-32768));
}

TEST(Formulas, NaNSignsAndRounding) {
  f::maximum_fn<> mx;
  f::minimum_fn<> mn;
  EXPECT_TRUE(std::isnan(mx(kNaN<float>, 1.0f)));
  EXPECT_TRUE(std::isnan(mx(1.0f, kNaN<float>)));
  EXPECT_TRUE(std::isnan(mn(kNaN<double>, -kInf<double>)));
  EXPECT_TRUE(std::signbit(mx(-0.0, 0.0)));   // std::max returns the first of equals
  EXPECT_FALSE(std::signbit(mx(0.0, -0.0)));
  EXPECT_EQ(mx(true, false), true);
  EXPECT_EQ(mn(int8_t(-128), int8_t(127)), -128);
  EXPECT_EQ(f::sign_fn<>{}(kNaN<double>), 0.0);  // (0 < x) - (x < 0)
  EXPECT_FALSE(std::signbit(f::sign_fn<>{}(-0.0)));
  EXPECT_EQ(f::sign_fn<>{}(-kInf<float>), -1.0f);
  EXPECT_EQ(f::sign_fn<>{}(uint8_t(200)), 1);
  EXPECT_EQ(f::abs_fn<>{}(std::numeric_limits<int32_t>::min()), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(f::neg_fn<>{}(uint8_t(3)), uint8_t(253));
  f::round_fn<> rd;
  EXPECT_EQ(rd(0.5), 0.0);
  EXPECT_EQ(rd(1.5), 2.0);
  EXPECT_EQ(rd(2.5), 2.0);
  EXPECT_EQ(rd(-2.5), -2.0);
  EXPECT_TRUE(std::signbit(rd(-0.4)));
  EXPECT_EQ((f::round_decimals_fn<double>{100.0, false}(1.005)), 1.0);  // 100.49999... rounds down, as torch
  EXPECT_EQ((f::round_decimals_fn<double>{100.0, true}(250.0)), 200.0);
  EXPECT_TRUE(std::isnan(f::relu_fn<>{}(kNaN<double>)));
  EXPECT_TRUE(std::isnan(f::frac_fn<>{}(kInf<double>)));
  EXPECT_EQ(f::frac_fn<>{}(-2.75), -0.75);
  // clamp: a NaN bound gives NaN; min above max gives max.
  EXPECT_TRUE(std::isnan(f::clamp_fn<>{}(1.0, kNaN<double>, 2.0)));
  EXPECT_EQ(f::clamp_fn<>{}(5.0, 3.0, 1.0), 1.0);
  EXPECT_EQ(f::clamp_fn<>{}(int8_t(-100), int8_t(-10), int8_t(10)), -10);
  EXPECT_TRUE(std::isnan(f::clamp_fn<>{}(kNaN<float>, 0.0f, 1.0f)));
  // lerp from the nearer end.
  EXPECT_EQ(f::lerp_fn<>{}(1.0, 3.0, 0.25), 1.5);
  EXPECT_EQ(f::lerp_fn<>{}(1.0, 3.0, 1.0), 3.0);  // exact at the end
  // Shifts past the width.
  EXPECT_EQ(f::bitwise_left_shift_fn<>{}(int32_t(1), int32_t(32)), 0);
  EXPECT_EQ(f::bitwise_left_shift_fn<>{}(int32_t(1), int32_t(-1)), 0);
  EXPECT_EQ(f::bitwise_right_shift_fn<>{}(int32_t(-8), int32_t(40)), -1);
  EXPECT_EQ(f::bitwise_right_shift_fn<>{}(uint8_t(200), uint8_t(9)), 0);
  EXPECT_EQ((f::add_fn<uint8_t>{uint8_t(2)}(uint8_t(250), uint8_t(5))), uint8_t(4));  // 250 + 10 wraps
  EXPECT_EQ((f::add_fn<bool>{true}(false, true)), true);
}

TEST(Formulas, GeluBothFormsAndBackward) {
  for (double x : {-3.0, -0.5, 0.0, 0.7, 2.0}) {
    EXPECT_NEAR(f::gelu_fn<>{}(x), 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))), 1e-15);
    EXPECT_NEAR(f::gelu_tanh_fn<>{}(x), 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))), 1e-15);
    double h = 1e-6;
    EXPECT_NEAR(f::gelu_backward_fn<>{}(1.0, x), (f::gelu_fn<>{}(x + h) - f::gelu_fn<>{}(x - h)) / (2 * h), 1e-8);
    EXPECT_NEAR(f::gelu_tanh_backward_fn<>{}(1.0, x), (f::gelu_tanh_fn<>{}(x + h) - f::gelu_tanh_fn<>{}(x - h)) / (2 * h), 1e-8);
  }
}

// ---------------------------------------------------------------- kernels agree with the functors
#define EMBER_UNARY_CASE(n) {#n, [](const Tensor& t) { return n(t); }, \
    [](float x) { return f::n##_fn<CpuMath>{}(x); }, [](double x) { return f::n##_fn<CpuMath>{}(x); }}
struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<float(float)> f32;
  std::function<double(double)> f64;
};

TEST(FormulasAgree, UnaryFloatAndKeepOpsDenseTailAndStrided) {
  std::vector<UnaryCase> cases = {
      EMBER_UNARY_CASE(exp), EMBER_UNARY_CASE(exp2), EMBER_UNARY_CASE(log), EMBER_UNARY_CASE(log1p),
      EMBER_UNARY_CASE(expm1), EMBER_UNARY_CASE(log2), EMBER_UNARY_CASE(log10), EMBER_UNARY_CASE(sqrt),
      EMBER_UNARY_CASE(rsqrt), EMBER_UNARY_CASE(sin), EMBER_UNARY_CASE(cos), EMBER_UNARY_CASE(tan),
      EMBER_UNARY_CASE(asin), EMBER_UNARY_CASE(acos), EMBER_UNARY_CASE(atan), EMBER_UNARY_CASE(sinh),
      EMBER_UNARY_CASE(cosh), EMBER_UNARY_CASE(tanh), EMBER_UNARY_CASE(sigmoid), EMBER_UNARY_CASE(silu),
      EMBER_UNARY_CASE(erf), EMBER_UNARY_CASE(reciprocal), EMBER_UNARY_CASE(neg), EMBER_UNARY_CASE(abs),
      EMBER_UNARY_CASE(sign), EMBER_UNARY_CASE(square), EMBER_UNARY_CASE(relu), EMBER_UNARY_CASE(floor),
      EMBER_UNARY_CASE(ceil), EMBER_UNARY_CASE(round), EMBER_UNARY_CASE(trunc), EMBER_UNARY_CASE(frac),
      {"gelu", [](const Tensor& t) { return gelu(t); }, [](float x) { return f::gelu_fn<CpuMath>{}(x); },
       [](double x) { return f::gelu_fn<CpuMath>{}(x); }},
      {"gelu tanh", [](const Tensor& t) { return gelu(t, "tanh"); }, [](float x) { return f::gelu_tanh_fn<CpuMath>{}(x); },
       [](double x) { return f::gelu_tanh_fn<CpuMath>{}(x); }},
      {"leaky_relu", [](const Tensor& t) { return leaky_relu(t, 0.2); },
       [](float x) { return f::leaky_relu_fn<float>{0.2f}(x); }, [](double x) { return f::leaky_relu_fn<double>{0.2}(x); }},
      {"nan_to_num", [](const Tensor& t) { return nan_to_num(t, 1.5, 2.5, -3.5); },
       [](float x) { return f::nan_to_num_fn<float>{1.5f, 2.5f, -3.5f}(x); },
       [](double x) { return f::nan_to_num_fn<double>{1.5, 2.5, -3.5}(x); }},
      {"round decimals 2", [](const Tensor& t) { return round(t, 2); },
       [](float x) { return f::round_decimals_fn<float, CpuMath>{100.0f, false}(x); },
       [](double x) { return f::round_decimals_fn<double, CpuMath>{100.0, false}(x); }},
      {"round decimals -1", [](const Tensor& t) { return round(t, -1); },
       [](float x) { return f::round_decimals_fn<float, CpuMath>{10.0f, true}(x); },
       [](double x) { return f::round_decimals_fn<double, CpuMath>{10.0, true}(x); }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(unary_agrees<float>(c.op, c.f32, special_values<float>()));
    EXPECT_TRUE(unary_agrees<double>(c.op, c.f64, special_values<double>()));
  }
}

TEST(FormulasAgree, PredicatesAndGeluBackward) {
  auto v32 = special_values<float>();
  EXPECT_TRUE((unary_agrees<float, bool>([](const Tensor& t) { return isnan(t); },
                                         [](float x) { return f::isnan_fn<CpuMath>{}(x); }, v32)));
  EXPECT_TRUE((unary_agrees<float, bool>([](const Tensor& t) { return isinf(t); },
                                         [](float x) { return f::isinf_fn<CpuMath>{}(x); }, v32)));
  EXPECT_TRUE((unary_agrees<double, bool>([](const Tensor& t) { return isfinite(t); },
                                          [](double x) { return f::isfinite_fn<CpuMath>{}(x); }, special_values<double>())));
  EXPECT_TRUE((unary_agrees<float, bool>([](const Tensor& t) { return logical_not(t); },
                                         [](float x) { return f::logical_not_fn<CpuMath>{}(x); }, v32)));
  for (bool t : {false, true}) {
    SCOPED_TRACE(t ? "tanh" : "none");
    std::string approx = t ? "tanh" : "none";
    EXPECT_TRUE((binary_agrees<float>([approx](const Tensor& g, const Tensor& x) { return ops::gelu_backward()(g, x, approx); },
                                      [t](float g, float x) {
                                        return t ? f::gelu_tanh_backward_fn<CpuMath>{}(g, x) : f::gelu_backward_fn<CpuMath>{}(g, x);
                                      },
                                      take_n(v32, 17), v32)));
  }
}

#define EMBER_BINARY_CASE(expr, fn) \
  {#expr, [](const Tensor& a, const Tensor& b) { return expr; }, [](auto x, auto y) { return fn(x, y); }}

template <class T> void check_binary_float_ops() {
  auto a = special_values<T>(), b = special_values<T>();
  std::reverse(b.begin(), b.end());
  using Op = std::function<Tensor(const Tensor&, const Tensor&)>;
  using Fn = std::function<T(T, T)>;
  EXPECT_TRUE((binary_agrees<T>([](const Tensor& x, const Tensor& y) { return pow(x, y); },
                                [](T x, T y) { return f::pow_fn<CpuMath>{}(x, y); }, a, b, /*broadcast=*/false)))
      << "pow";
  std::vector<std::tuple<const char*, Op, Fn>> cases = {
      {"add", [](const Tensor& x, const Tensor& y) { return add(x, y); }, [](T x, T y) { return f::add_fn<T>{T(1)}(x, y); }},
      {"add alpha", [](const Tensor& x, const Tensor& y) { return add(x, y, 2.5); },
       [](T x, T y) { return f::add_fn<T>{T(2.5)}(x, y); }},
      {"sub alpha", [](const Tensor& x, const Tensor& y) { return sub(x, y, 3); },
       [](T x, T y) { return f::add_fn<T>{T(-3)}(x, y); }},
      {"mul", [](const Tensor& x, const Tensor& y) { return mul(x, y); }, [](T x, T y) { return f::mul_fn<CpuMath>{}(x, y); }},
      {"div", [](const Tensor& x, const Tensor& y) { return div(x, y); }, [](T x, T y) { return f::div_true_fn<CpuMath>{}(x, y); }},
      {"div trunc", [](const Tensor& x, const Tensor& y) { return div(x, y, std::string("trunc")); },
       [](T x, T y) { return f::div_trunc_fn<CpuMath>{}(x, y); }},
      {"floor_divide", [](const Tensor& x, const Tensor& y) { return floor_divide(x, y); },
       [](T x, T y) { return f::div_floor_fn<CpuMath>{}(x, y); }},
      {"remainder", [](const Tensor& x, const Tensor& y) { return remainder(x, y); },
       [](T x, T y) { return f::remainder_fn<CpuMath>{}(x, y); }},
      {"fmod", [](const Tensor& x, const Tensor& y) { return fmod(x, y); }, [](T x, T y) { return f::fmod_fn<CpuMath>{}(x, y); }},
      {"maximum", [](const Tensor& x, const Tensor& y) { return maximum(x, y); },
       [](T x, T y) { return f::maximum_fn<CpuMath>{}(x, y); }},
      {"minimum", [](const Tensor& x, const Tensor& y) { return minimum(x, y); },
       [](T x, T y) { return f::minimum_fn<CpuMath>{}(x, y); }},
      {"atan2", [](const Tensor& x, const Tensor& y) { return atan2(x, y); }, [](T x, T y) { return f::atan2_fn<CpuMath>{}(x, y); }},
      {"clamp min", [](const Tensor& x, const Tensor& y) { return clamp(x, std::optional<Tensor>(y), std::nullopt); },
       [](T x, T y) { return f::maximum_fn<CpuMath>{}(x, y); }},
      {"lerp 0.3", [](const Tensor& x, const Tensor& y) { return lerp(x, y, 0.3); },
       [](T x, T y) { return f::lerp_fn<CpuMath>{}(x, y, T(0.3)); }},
      {"lerp 0.75", [](const Tensor& x, const Tensor& y) { return lerp(x, y, 0.75); },
       [](T x, T y) { return f::lerp_fn<CpuMath>{}(x, y, T(0.75)); }},
  };
  for (auto& [name, op, fn] : cases) {
    SCOPED_TRACE(name);
    EXPECT_TRUE((binary_agrees<T>(op, fn, a, b)));
  }
  using Cmp = std::function<bool(T, T)>;
  std::vector<std::tuple<const char*, Op, Cmp>> compares = {
      {"eq", [](const Tensor& x, const Tensor& y) { return eq(x, y); }, [](T x, T y) { return f::eq_fn<CpuMath>{}(x, y); }},
      {"ne", [](const Tensor& x, const Tensor& y) { return ne(x, y); }, [](T x, T y) { return f::ne_fn<CpuMath>{}(x, y); }},
      {"lt", [](const Tensor& x, const Tensor& y) { return lt(x, y); }, [](T x, T y) { return f::lt_fn<CpuMath>{}(x, y); }},
      {"ge", [](const Tensor& x, const Tensor& y) { return ge(x, y); }, [](T x, T y) { return f::ge_fn<CpuMath>{}(x, y); }},
      {"logical_xor", [](const Tensor& x, const Tensor& y) { return logical_xor(x, y); },
       [](T x, T y) { return f::logical_xor_fn<CpuMath>{}(x, y); }},
  };
  for (auto& [name, op, fn] : compares) {
    SCOPED_TRACE(name);
    EXPECT_TRUE((binary_agrees<T, bool>(op, fn, a, b)));
  }
}

TEST(FormulasAgree, BinaryFloatOpsDenseBroadcastAndStrided) {
  check_binary_float_ops<float>();
  check_binary_float_ops<double>();
}

// pow with a 0-dim exponent takes PyTorch's special forms (x * x for 2, sqrt for 0.5, ...):
// each must equal its functor, and stay within an ulp or so of pow itself.
TEST(FormulasAgree, PowScalarExponentForms) {
  auto v = special_values<float>();
  std::vector<std::pair<double, std::function<float(float)>>> forms = {
      {2.0, [](float x) { return f::square_fn<CpuMath>{}(x); }},
      {3.0, [](float x) { return f::cube_fn<CpuMath>{}(x); }},
      {-1.0, [](float x) { return f::reciprocal_fn<CpuMath>{}(x); }},
      {-2.0, [](float x) { return f::inverse_square_fn<CpuMath>{}(x); }},
      {0.5, [](float x) { return f::sqrt_fn<CpuMath>{}(x); }},
      {-0.5, [](float x) { return f::rsqrt_fn<CpuMath>{}(x); }},
      {1.7, [](float x) { return f::pow_fn<CpuMath>{}(x, 1.7f); }},
  };
  for (auto& [e, fn] : forms) {
    SCOPED_TRACE(e);
    EXPECT_TRUE(unary_agrees<float>([e](const Tensor& t) { return pow(t, e); }, fn, v));
  }
  EXPECT_TRUE(unary_agrees<float>([](const Tensor& t) { return pow(t, 1); }, [](float x) { return x; }, v));
  EXPECT_TRUE(unary_agrees<float>([](const Tensor& t) { return pow(t, 0); }, [](float) { return 1.0f; }, v));
}

template <class T> void check_integer_ops() {
  auto a = int_values<T>(), b = int_values<T>();
  std::reverse(b.begin(), b.end());
  auto nz = nonzero(b);
  using Op = std::function<Tensor(const Tensor&, const Tensor&)>;
  using Fn = std::function<T(T, T)>;
  std::vector<std::tuple<const char*, Op, Fn, bool>> cases = {
      {"add", [](const Tensor& x, const Tensor& y) { return add(x, y, 3); }, [](T x, T y) { return f::add_fn<T>{T(3)}(x, y); }, false},
      {"mul", [](const Tensor& x, const Tensor& y) { return mul(x, y); }, [](T x, T y) { return f::mul_fn<CpuMath>{}(x, y); }, false},
      {"div trunc", [](const Tensor& x, const Tensor& y) { return div(x, y, std::string("trunc")); },
       [](T x, T y) { return f::div_trunc_fn<CpuMath>{}(x, y); }, true},
      {"floor_divide", [](const Tensor& x, const Tensor& y) { return floor_divide(x, y); },
       [](T x, T y) { return f::div_floor_fn<CpuMath>{}(x, y); }, true},
      {"remainder", [](const Tensor& x, const Tensor& y) { return remainder(x, y); },
       [](T x, T y) { return f::remainder_fn<CpuMath>{}(x, y); }, true},
      {"fmod", [](const Tensor& x, const Tensor& y) { return fmod(x, y); }, [](T x, T y) { return f::fmod_fn<CpuMath>{}(x, y); }, true},
      {"maximum", [](const Tensor& x, const Tensor& y) { return maximum(x, y); },
       [](T x, T y) { return f::maximum_fn<CpuMath>{}(x, y); }, false},
      {"minimum", [](const Tensor& x, const Tensor& y) { return minimum(x, y); },
       [](T x, T y) { return f::minimum_fn<CpuMath>{}(x, y); }, false},
      {"bitwise_xor", [](const Tensor& x, const Tensor& y) { return bitwise_xor(x, y); },
       [](T x, T y) { return f::bitwise_xor_fn<CpuMath>{}(x, y); }, false},
      {"lshift", [](const Tensor& x, const Tensor& y) { return bitwise_left_shift(x, y); },
       [](T x, T y) { return f::bitwise_left_shift_fn<CpuMath>{}(x, y); }, false},
      {"rshift", [](const Tensor& x, const Tensor& y) { return bitwise_right_shift(x, y); },
       [](T x, T y) { return f::bitwise_right_shift_fn<CpuMath>{}(x, y); }, false},
  };
  for (auto& [name, op, fn, needs_nonzero] : cases) {
    SCOPED_TRACE(name);
    EXPECT_TRUE((binary_agrees<T>(op, fn, a, needs_nonzero ? nz : b)));
  }
  // Integer pow: non-negative exponents (negative ones are refused for integer tensors).
  std::vector<T> small{T(0), T(1), T(2), T(3), T(5), T(9), T(31), T(64)};
  EXPECT_TRUE((binary_agrees<T>([](const Tensor& x, const Tensor& y) { return pow(x, y); },
                                [](T x, T y) { return f::pow_fn<CpuMath>{}(x, y); }, a, small)));
  std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> unary = {
      {"abs", [](const Tensor& t) { return abs(t); }}, {"sign", [](const Tensor& t) { return sign(t); }},
      {"square", [](const Tensor& t) { return square(t); }}, {"relu", [](const Tensor& t) { return relu(t); }}};
  std::vector<std::function<T(T)>> unary_fn = {[](T x) { return f::abs_fn<CpuMath>{}(x); },
                                               [](T x) { return f::sign_fn<CpuMath>{}(x); },
                                               [](T x) { return f::square_fn<CpuMath>{}(x); },
                                               [](T x) { return f::relu_fn<CpuMath>{}(x); }};
  for (size_t i = 0; i < unary.size(); ++i) {
    SCOPED_TRACE(unary[i].first);
    EXPECT_TRUE(unary_agrees<T>(unary[i].second, unary_fn[i], a));
  }
  if constexpr (std::is_signed_v<T>) {
    EXPECT_TRUE(unary_agrees<T>([](const Tensor& t) { return neg(t); }, [](T x) { return f::neg_fn<CpuMath>{}(x); }, a));
  }
}

TEST(FormulasAgree, IntegerOpsEveryWidth) {
  check_integer_ops<int8_t>();
  check_integer_ops<uint8_t>();
  check_integer_ops<int16_t>();
  check_integer_ops<int32_t>();
  check_integer_ops<int64_t>();
}

// ---------------------------------------------------------------- CpuMath against <cmath>
// The CPU's float32 elementary functions inside each formula, against the same formula on
// libm: equal at the special values (inf, NaN, 0 and the saturation points) and within a few
// float ulp elsewhere.
TEST(FormulasAgree, CpuFloat32MathStaysCloseToLibm) {
  auto ulps = [](float a, float b) -> double {
    if (a == b) return 0;
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) return 1e30;
    double scale = std::max(std::abs(double(b)), double(std::numeric_limits<float>::min()));
    return std::abs(double(a) - double(b)) / (scale * std::numeric_limits<float>::epsilon());
  };
  struct Case {
    const char* name;
    std::function<float(float)> cpu, std;
    double max_ulps;
  };
#define EMBER_MATH_CASE(n, tol) \
  {#n, [](float x) { return f::n##_fn<CpuMath>{}(x); }, [](float x) { return f::n##_fn<f::StdMath>{}(x); }, tol}
  std::vector<Case> cases = {EMBER_MATH_CASE(exp, 4),   EMBER_MATH_CASE(exp2, 4),  EMBER_MATH_CASE(expm1, 4),
                             EMBER_MATH_CASE(log, 4),   EMBER_MATH_CASE(log1p, 4), EMBER_MATH_CASE(log2, 4),
                             EMBER_MATH_CASE(log10, 4), EMBER_MATH_CASE(tanh, 4),  EMBER_MATH_CASE(erf, 4),
                             EMBER_MATH_CASE(sigmoid, 4), EMBER_MATH_CASE(silu, 4), EMBER_MATH_CASE(round, 0)};
#undef EMBER_MATH_CASE
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    double worst = 0;
    float worst_x = 0;
    for (float x : special_values<float>()) {
      float a = c.cpu(x), b = c.std(x);
      if (std::isnan(b)) {
        EXPECT_TRUE(std::isnan(a)) << x;
        continue;
      }
      // Results below the smallest normal lose relative precision in any implementation.
      if (std::abs(b) < std::numeric_limits<float>::min() && std::abs(a) < std::numeric_limits<float>::min()) continue;
      double u = ulps(a, b);
      if (u > worst) worst = u, worst_x = x;
    }
    EXPECT_LE(worst, c.max_ulps) << "at x = " << worst_x;
  }
}

// sigmoid and silu run on the CPU with exp_for_logistic_f32 (exp_f32 without its NaN and
// underflow guards, which cannot change 1 / (1 + e) or x / (1 + e)); ember.compile's fused
// kernels use CpuMath's exp_f32. Both must give the same bits, for every float.
TEST(Formulas, LogisticMathGivesCpuMathsBits) {
  const cpu::CpuFormula<formula::sigmoid_fn>::type sigmoid_fast;
  const cpu::CpuFormula<formula::silu_fn>::type silu_fast;
  const formula::sigmoid_fn<cpu::CpuMath> sigmoid;
  const formula::silu_fn<cpu::CpuMath> silu;
  auto same = [](float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (a != a && b != b); };
  int64_t checked = 0;
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 61) {  // every 61st bit pattern: all exponents, NaNs, infs
    const float x = std::bit_cast<float>(uint32_t(u));
    ASSERT_TRUE(same(sigmoid_fast(x), sigmoid(x))) << "sigmoid(" << x << ")";
    ASSERT_TRUE(same(silu_fast(x), silu(x))) << "silu(" << x << ")";
    ++checked;
  }
  for (float x : {0.0f, -0.0f, 88.7f, -88.7f, 89.0f, -89.0f, 103.9f, 104.0f, -104.0f, 200.0f, -200.0f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()}) {
    EXPECT_TRUE(same(sigmoid_fast(x), sigmoid(x))) << x;
    EXPECT_TRUE(same(silu_fast(x), silu(x))) << x;
  }
  EXPECT_GT(checked, 70000000);
}
