// One-operand elementwise ops against float64 references, over every layout and dtype.
#include <cfloat>
#include <limits>

#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {

using UnaryOp = std::function<Tensor(const Tensor&)>;
using RefFn = std::function<double(double)>;

struct FloatCase {
  const char* name;
  UnaryOp op;
  Tensor& (*inplace)(Tensor&);
  RefFn ref;
  double lo, hi;
};

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }

std::vector<FloatCase> float_cases() {
  return {
      {"exp", [](const Tensor& x) { return exp(x); }, exp_, [](double x) { return std::exp(x); }, -3, 3},
      {"exp2", [](const Tensor& x) { return exp2(x); }, exp2_, [](double x) { return std::exp2(x); }, -3, 3},
      {"log", [](const Tensor& x) { return log(x); }, log_, [](double x) { return std::log(x); }, 0.05, 5},
      {"log1p", [](const Tensor& x) { return log1p(x); }, log1p_, [](double x) { return std::log1p(x); }, -0.9, 3},
      {"expm1", [](const Tensor& x) { return expm1(x); }, expm1_, [](double x) { return std::expm1(x); }, -2, 2},
      {"log2", [](const Tensor& x) { return log2(x); }, log2_, [](double x) { return std::log2(x); }, 0.05, 5},
      {"log10", [](const Tensor& x) { return log10(x); }, log10_, [](double x) { return std::log10(x); }, 0.05, 5},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, sqrt_, [](double x) { return std::sqrt(x); }, 0.0, 5},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, rsqrt_, [](double x) { return 1.0 / std::sqrt(x); }, 0.05, 5},
      {"sin", [](const Tensor& x) { return sin(x); }, sin_, [](double x) { return std::sin(x); }, -3, 3},
      {"cos", [](const Tensor& x) { return cos(x); }, cos_, [](double x) { return std::cos(x); }, -3, 3},
      {"tan", [](const Tensor& x) { return tan(x); }, tan_, [](double x) { return std::tan(x); }, -1.4, 1.4},
      {"asin", [](const Tensor& x) { return asin(x); }, asin_, [](double x) { return std::asin(x); }, -0.99, 0.99},
      {"acos", [](const Tensor& x) { return acos(x); }, acos_, [](double x) { return std::acos(x); }, -0.99, 0.99},
      {"atan", [](const Tensor& x) { return atan(x); }, atan_, [](double x) { return std::atan(x); }, -3, 3},
      {"sinh", [](const Tensor& x) { return sinh(x); }, sinh_, [](double x) { return std::sinh(x); }, -3, 3},
      {"cosh", [](const Tensor& x) { return cosh(x); }, cosh_, [](double x) { return std::cosh(x); }, -3, 3},
      {"tanh", [](const Tensor& x) { return tanh(x); }, tanh_, [](double x) { return std::tanh(x); }, -3, 3},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, sigmoid_, sigmoid_ref, -6, 6},
      {"silu", [](const Tensor& x) { return silu(x); }, silu_, [](double x) { return x * sigmoid_ref(x); }, -6, 6},
      {"erf", [](const Tensor& x) { return erf(x); }, erf_, [](double x) { return std::erf(x); }, -3, 3},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }, reciprocal_, [](double x) { return 1.0 / x; }, 0.1, 3},
  };
}

std::vector<DType> numeric_dtypes() {
  return {DType::UInt8, DType::Int8, DType::Int16, DType::Int32, DType::Int64,
          DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};
}

// uint8 cannot hold negative test values: its inputs start at 0.
Tensor input_for(DType dt, Layout l, double lo, double hi, uint64_t seed = 0) {
  if (dt == DType::UInt8 || dt == DType::Bool) lo = std::max(lo, 0.0);
  return make_input(dt, l, lo, hi, seed);
}

}  // namespace

// ---------------------------------------------------------------- floating family
EMBER_DEVICE_TEST(UnaryFloat, ValuesEveryDtypeAndLayout) {
  for (const auto& c : float_cases()) {
    for (DType dt : all_dtypes()) {
      for (Layout l : all_layouts()) {
        Tensor x = input_for(dt, l, c.lo, c.hi);
        Tensor y = c.op(x);
        DType expect = is_floating(dt) ? dt : DType::Float32;  // integers and bool -> default float
        ASSERT_EQ(y.dtype(), expect) << c.name << " " << dtype_name(dt);
        EXPECT_TRUE(close_to(y, ref_unary(ref_of(x), c.ref)))
            << c.name << " dtype " << dtype_name(dt) << " layout " << layout_name(l);
      }
    }
  }
}

EMBER_DEVICE_TEST(UnaryFloat, InPlaceWritesSelfAndBumpsVersion) {
  for (const auto& c : float_cases()) {
    for (DType dt : float_dtypes()) {
      for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
        Tensor x = input_for(dt, l, c.lo, c.hi);
        Ref expected = ref_unary(ref_of(x), c.ref);
        uint32_t v = x._version();
        Tensor& r = c.inplace(x);
        EXPECT_TRUE(r.is_same(x)) << c.name;
        EXPECT_EQ(x._version(), v + 1) << c.name;
        EXPECT_TRUE(close_to(x, expected)) << c.name << " " << dtype_name(dt) << " " << layout_name(l);
      }
    }
  }
}

EMBER_DEVICE_TEST(UnaryFloat, InPlaceOnIntegerTensorFails) {
  Tensor x = arange(5);
  EXPECT_THROW_MSG(exp_(x), Error, "result type float32 can't be cast to the desired output type int64");
  EXPECT_THROW_MSG(x.sqrt_(), Error, "can't be cast to the desired output type int64");
}

// Long contiguous float32 runs take the vectorised loops: cover the whole domain, the
// vector remainder and the special values.
EMBER_DEVICE_TEST(UnaryFloat, Float32VectorisedPathsWideRange) {
  struct Wide { const char* name; UnaryOp op; RefFn ref; double lo, hi; };
  std::vector<Wide> cases = {
      {"exp", [](const Tensor& x) { return exp(x); }, [](double x) { return std::exp(x); }, -110, 90},
      {"exp2", [](const Tensor& x) { return exp2(x); }, [](double x) { return std::exp2(x); }, -155, 130},
      {"log", [](const Tensor& x) { return log(x); }, [](double x) { return std::log(x); }, 1e-30, 1e30},
      {"log", [](const Tensor& x) { return log(x); }, [](double x) { return std::log(x); }, 0.5, 2},
      {"log2", [](const Tensor& x) { return log2(x); }, [](double x) { return std::log2(x); }, 1e-30, 1e30},
      {"log10", [](const Tensor& x) { return log10(x); }, [](double x) { return std::log10(x); }, 1e-30, 1e30},
      {"log1p", [](const Tensor& x) { return log1p(x); }, [](double x) { return std::log1p(x); }, -0.999, 1e6},
      {"log1p", [](const Tensor& x) { return log1p(x); }, [](double x) { return std::log1p(x); }, -1e-4, 1e-4},
      {"expm1", [](const Tensor& x) { return expm1(x); }, [](double x) { return std::expm1(x); }, -1e-4, 1e-4},
      {"expm1", [](const Tensor& x) { return expm1(x); }, [](double x) { return std::expm1(x); }, -50, 80},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double x) { return std::tanh(x); }, -12, 12},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double x) { return std::tanh(x); }, -0.7, 0.7},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, sigmoid_ref, -80, 80},
      {"silu", [](const Tensor& x) { return silu(x); }, [](double x) { return x * sigmoid_ref(x); }, -80, 80},
      {"erf", [](const Tensor& x) { return erf(x); }, [](double x) { return std::erf(x); }, -5, 5},
      {"erf", [](const Tensor& x) { return erf(x); }, [](double x) { return std::erf(x); }, -0.01, 0.01},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); }, 0, 1e6},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); }, 1e-6, 1e6},
  };
  for (const auto& c : cases) {
    Generator g(7);
    Tensor x = host_uniform({10007}, c.lo, c.hi, g);
    x = x.to(DType::Float32);
    // Results beyond float32's range are inf in float32.
    auto ref = [&](double v) {
      double r = c.ref(v);
      return std::abs(r) > FLT_MAX ? std::copysign(std::numeric_limits<double>::infinity(), r) : r;
    };
    EXPECT_TRUE(close_to(c.op(x), ref_unary(ref_of(x), ref))) << c.name << " on [" << c.lo << ", " << c.hi << "]";
  }
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  Tensor s = tensor({0.0, -0.0, inf, -inf, nan, -1.0, 1e-45, 88.7, -103.0, 1.0}, {.dtype = DType::Float32});
  for (const auto& c : cases) {
    EXPECT_TRUE(close_to(c.op(s), ref_unary(ref_of(s), c.ref))) << c.name << " special values";
  }
}

EMBER_DEVICE_TEST(UnaryFloat, PromotesIntegersToDefaultDtype) {
  Tensor i = tensor({0, 1, 2});
  EXPECT_EQ(exp(i).dtype(), DType::Float32);
  EXPECT_EQ(sigmoid(tensor({true, false})).dtype(), DType::Float32);
  set_default_dtype(DType::Float64);
  EXPECT_EQ(exp(i).dtype(), DType::Float64);
  EXPECT_EQ(sqrt(tensor({4})).item<double>(), 2.0);
  set_default_dtype(DType::Float32);
}

// ---------------------------------------------------------------- dtype-keeping family
namespace {
struct KeepCase {
  const char* name;
  UnaryOp op;
  Tensor& (*inplace)(Tensor&);
  RefFn ref;
  std::vector<DType> dtypes;
};
std::vector<KeepCase> keep_cases() {
  auto numeric = numeric_dtypes();
  auto floats = float_dtypes();
  return {
      {"neg", [](const Tensor& x) { return neg(x); }, neg_, [](double x) { return -x; },
       {DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}},
      {"abs", [](const Tensor& x) { return abs(x); }, abs_, [](double x) { return std::abs(x); }, all_dtypes()},
      {"sign", [](const Tensor& x) { return sign(x); }, sign_, [](double x) { return double((0 < x) - (x < 0)); }, all_dtypes()},
      {"square", [](const Tensor& x) { return square(x); }, square_, [](double x) { return x * x; }, numeric},
      {"relu", [](const Tensor& x) { return relu(x); }, relu_, [](double x) { return x < 0 ? 0.0 : x; }, numeric},
      {"floor", [](const Tensor& x) { return floor(x); }, floor_, [](double x) { return std::floor(x); }, numeric},
      {"ceil", [](const Tensor& x) { return ceil(x); }, ceil_, [](double x) { return std::ceil(x); }, numeric},
      {"round", [](const Tensor& x) { return round(x); }, round_, [](double x) { return std::nearbyint(x); }, numeric},
      {"trunc", [](const Tensor& x) { return trunc(x); }, trunc_, [](double x) { return std::trunc(x); }, numeric},
      {"frac", [](const Tensor& x) { return frac(x); }, frac_, [](double x) { return x - std::trunc(x); }, floats},
  };
}
}  // namespace

EMBER_DEVICE_TEST(UnaryKeep, ValuesKeepDtype) {
  for (const auto& c : keep_cases()) {
    for (DType dt : c.dtypes) {
      for (Layout l : all_layouts()) {
        Tensor x = input_for(dt, l, -5, 5);
        Tensor y = c.op(x);
        ASSERT_EQ(y.dtype(), dt) << c.name << " " << dtype_name(dt);
        EXPECT_TRUE(close_to(y, ref_unary(ref_of(x), c.ref)))
            << c.name << " dtype " << dtype_name(dt) << " layout " << layout_name(l);
        if (dt == DType::Bool) continue;
        Tensor z = x.clone();
        uint32_t v = z._version();
        c.inplace(z);
        EXPECT_EQ(z._version(), v + 1) << c.name;
        EXPECT_TRUE(close_to(z, ref_unary(ref_of(x), c.ref))) << c.name << " in place, " << dtype_name(dt);
      }
    }
  }
}

EMBER_DEVICE_TEST(UnaryKeep, RoundHalfToEven) {
  Tensor x = tensor({0.5, 1.5, 2.5, -0.5, -2.5, 3.7, -3.2, 1e10 + 0.5, 8388609.0}, {.dtype = DType::Float32});
  EXPECT_EQ(round(x).tolist<double>(),
            (std::vector<double>{0, 2, 2, -0.0, -2, 4, -3, double(float(1e10 + 0.5)), 8388609.0}));
  Tensor d = tensor({0.5, 1.5, 2.5, -2.5, 4503599627370497.0}, {.dtype = DType::Float64});
  EXPECT_EQ(round(d).tolist<double>(), (std::vector<double>{0, 2, 2, -2, 4503599627370497.0}));
  EXPECT_TRUE(std::signbit(round(tensor({-0.3})).item<double>()));
}

// round(decimals): PyTorch's formula, nearbyint(x * 10^d) / 10^d (d < 0: nearbyint(x / 10^-d) *
// 10^-d), computed in the compute type (float for float32/float16/bfloat16, double for float64).
EMBER_DEVICE_TEST(UnaryKeep, RoundDecimals) {
  auto ref = [](double x, int64_t d, bool in_float) {
    double p = std::pow(10.0, std::fabs(double(d)));
    if (in_float) {
      float pf = float(p), xf = float(x);
      return double(d < 0 ? std::nearbyint(xf / pf) * pf : std::nearbyint(xf * pf) / pf);
    }
    return d < 0 ? std::nearbyint(x / p) * p : std::nearbyint(x * p) / p;
  };
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  std::vector<double> v{1.2345, -2.5678, 0.125, 0.135, 1250.0, -1350.0, 2.5e-3, 1e30, nan, inf, -inf, -0.0, 0.0049};
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16})
    for (int64_t d : {1, 2, 3, -1, -2, 40})
      for (Layout layout : {Layout::Contiguous, Layout::Strided}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " decimals " + std::to_string(d));
        Tensor x = tensor(v, {.dtype = DType::Float64}).to(dt);
        if (layout == Layout::Strided) x = x.repeat_interleave(2).slice(0, 0, std::nullopt, 2);
        Tensor r = round(x, d);
        EXPECT_EQ(r.dtype(), dt);
        EXPECT_TRUE(close_to(r, ref_unary(ref_of(x), [&](double e) { return ref(e, d, dt != DType::Float64); })));
        EXPECT_TRUE(r.allclose(x.round(d), 0.0, 0.0, /*equal_nan=*/true));  // the method forwards
      }
  // Halves go to even at the scaled position; decimals 0 is round() and also takes integers.
  EXPECT_EQ(round(tensor({0.25, 0.35, -0.25}, {.dtype = DType::Float64}), 1).tolist<double>(),
            (std::vector<double>{0.2, 0.4, -0.2}));
  EXPECT_EQ(round(tensor({150.0, 250.0, -149.0}), -2).tolist<double>(), (std::vector<double>{200, 200, -100}));
  EXPECT_TRUE(round(tensor({3, -7}), 0).equal(tensor({3, -7})));
  EXPECT_THROW_MSG(round(tensor({3, -7}), 1), Error, kernel_name(device(), "round_cpu", "round_cuda") + " not implemented for 'Long'");
  // In place keeps self and bumps its version.
  Tensor y = tensor({1.26, -0.04});
  auto v0 = y._version();
  Tensor& same = y.round_(1);
  EXPECT_TRUE(same.is_same(y));
  EXPECT_EQ(y._version(), v0 + 1);
  EXPECT_TRUE(y.equal(tensor({1.3, -0.0})));
  EXPECT_THROW_MSG(tensor({1, 2}).round_(2), Error, "not implemented for 'Long'");
  // Piecewise constant: zero gradient, RoundBackward1.
  Tensor g = tensor({0.123, 4.56}, {.dtype = DType::Float64}).requires_grad_();
  Tensor out = round(g, 1);
  EXPECT_EQ(out.grad_fn()->name(), "RoundBackward1");
  (out * 3.0).sum().backward();
  EXPECT_EQ(g.grad().tolist<double>(), (std::vector<double>{0, 0}));
}

EMBER_DEVICE_TEST(UnaryKeep, SpecialValues) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  Tensor x = tensor({nan, inf, -inf, -0.0});
  EXPECT_TRUE(std::isnan(relu(x).tolist<double>()[0]));  // NaN propagates through relu
  EXPECT_EQ(sign(x).tolist<double>()[1], 1.0);
  EXPECT_EQ(sign(x).tolist<double>()[0], 0.0);  // sign(nan) = 0, as torch.sign
  EXPECT_EQ(abs(tensor({-128}, {.dtype = DType::Int8})).item<int64_t>(), -128);  // wraps as in C
  EXPECT_EQ(neg(tensor({3}, {.dtype = DType::UInt8})).item<int64_t>(), 253);
}

EMBER_DEVICE_TEST(UnaryKeep, Errors) {
  Tensor b = tensor({true, false});
  EXPECT_THROW_MSG(neg(b), Error, "Negation, the `-` operator, on a bool tensor is not supported.");
  EXPECT_THROW_MSG(-b, Error, "use the `~` or `logical_not()` operator instead");
  EXPECT_THROW_MSG(frac(tensor({1, 2})), Error, kernel_name(device(), "frac", "frac_cuda") + " not implemented for 'Long'");
  EXPECT_THROW_MSG(floor(b), Error, "not implemented for 'Bool'");
  // square(bool) squares in int64, as torch.square (pow(x, 2)) does.
  Tensor sq = square(b);
  EXPECT_EQ(sq.dtype(), DType::Int64);
  EXPECT_EQ(sq.tolist<int64_t>(), (std::vector<int64_t>{1, 0}));
}

// ---------------------------------------------------------------- activations
EMBER_DEVICE_TEST(Activations, GeluBothForms) {
  auto erf_ref = [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); };
  auto tanh_ref = [](double x) {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  };
  for (DType dt : float_dtypes()) {
    for (Layout l : all_layouts()) {
      Tensor x = make_input(dt, l, -4, 4);
      EXPECT_TRUE(close_to(gelu(x), ref_unary(ref_of(x), erf_ref))) << dtype_name(dt) << layout_name(l);
      EXPECT_TRUE(close_to(gelu(x, "tanh"), ref_unary(ref_of(x), tanh_ref))) << dtype_name(dt) << layout_name(l);
      EXPECT_EQ(x.gelu().dtype(), dt);
    }
  }
  Generator g(3);
  Tensor big = host_uniform({4099}, -10, 10, g);
  big = big.to(DType::Float32);
  EXPECT_TRUE(close_to(gelu(big), ref_unary(ref_of(big), erf_ref)));
  EXPECT_TRUE(close_to(gelu(big, "tanh"), ref_unary(ref_of(big), tanh_ref)));
  EXPECT_THROW_MSG(gelu(big, "sigmoid"), Error, "approximate argument must be either none or tanh.");
  EXPECT_THROW_MSG(gelu(tensor({1, 2})), Error, "not implemented for 'Long'");
}

EMBER_DEVICE_TEST(Activations, LeakyRelu) {
  for (DType dt : float_dtypes()) {
    for (Layout l : all_layouts()) {
      Tensor x = make_input(dt, l);
      EXPECT_TRUE(close_to(leaky_relu(x), ref_unary(ref_of(x), [](double v) { return v > 0 ? v : v * 0.01; })));
      EXPECT_TRUE(close_to(leaky_relu(x, 0.2), ref_unary(ref_of(x), [](double v) { return v > 0 ? v : v * 0.2; })));
    }
  }
  EXPECT_THROW_MSG(leaky_relu(tensor({1, 2})), Error, "not implemented for 'Long'");
}

// ---------------------------------------------------------------- nan_to_num and predicates
EMBER_DEVICE_TEST(NanToNum, DefaultsAndOverrides) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  Tensor x = tensor({nan, inf, -inf, 1.5});
  EXPECT_EQ(nan_to_num(x).tolist<double>(), (std::vector<double>{0, FLT_MAX, -FLT_MAX, 1.5}));
  EXPECT_EQ(nan_to_num(x.to(DType::Float64)).tolist<double>(), (std::vector<double>{0, DBL_MAX, -DBL_MAX, 1.5}));
  EXPECT_EQ(nan_to_num(x.to(DType::Float16)).tolist<double>(), (std::vector<double>{0, 65504, -65504, 1.5}));
  EXPECT_EQ(nan_to_num(x.to(DType::BFloat16)).tolist<double>(),
            (std::vector<double>{0, 3.3895313892515355e38, -3.3895313892515355e38, 1.5}));
  EXPECT_EQ(nan_to_num(x, 7.0, 8.0, -9.0).tolist<double>(), (std::vector<double>{7, 8, -9, 1.5}));
  EXPECT_EQ(x.nan_to_num(std::nullopt, 1.0).tolist<double>()[1], 1.0);
  Tensor i = tensor({1, 2});
  Tensor ic = nan_to_num(i);
  EXPECT_EQ(ic.dtype(), DType::Int64);
  EXPECT_FALSE(ic.is_alias_of(i));
  EXPECT_EQ(ic.tolist<int64_t>(), (std::vector<int64_t>{1, 2}));
  // Non-contiguous input.
  Tensor m = tensor({{nan, 1.0}, {inf, 2.0}}).t();
  EXPECT_EQ(nan_to_num(m).tolist<double>(), (std::vector<double>{0, FLT_MAX, 1, 2}));
}

EMBER_DEVICE_TEST(Predicates, IsNanIsInfIsFinite) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  for (DType dt : float_dtypes()) {
    Tensor x = tensor({nan, inf, -inf, 1.5, 0.0}).to(dt);
    EXPECT_EQ(isnan(x).dtype(), DType::Bool);
    EXPECT_EQ(isnan(x).tolist<bool>(), (std::vector<bool>{true, false, false, false, false})) << dtype_name(dt);
    EXPECT_EQ(isinf(x).tolist<bool>(), (std::vector<bool>{false, true, true, false, false})) << dtype_name(dt);
    EXPECT_EQ(isfinite(x).tolist<bool>(), (std::vector<bool>{false, false, false, true, true})) << dtype_name(dt);
    EXPECT_EQ(x.t().isnan().dim(), 1);
  }
  Tensor i = make_input(DType::Int32, Layout::Transposed);
  EXPECT_EQ(isnan(i).tolist<bool>(), std::vector<bool>(12, false));
  EXPECT_EQ(isinf(i).tolist<bool>(), std::vector<bool>(12, false));
  EXPECT_EQ(isfinite(i).tolist<bool>(), std::vector<bool>(12, true));
  EXPECT_EQ(isfinite(i).sizes(), (Shape{3, 4}));
  EXPECT_EQ(isnan(make_input(DType::Float32, Layout::Empty)).numel(), 0);
}

// exp's underflow is a plain +0 from ln(2^-150) down (as libm's expf): a subnormal left there by
// the polynomial's last bit would be wrong and would slow every later multiply (masked softmax).
EMBER_DEVICE_TEST(UnaryFloat, ExpUnderflowsToExactZero) {
  std::vector<float> xs{-std::numeric_limits<float>::infinity(), -1000.0f, -104.0f, -103.98f, -103.9f, -87.0f};
  Tensor y = tensor(xs).exp();
  auto got = y.tolist<float>();
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(got[i], std::exp(xs[i])) << "exp(" << xs[i] << ")";
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_FALSE(std::signbit(got[0]));
}
