// Two-operand elementwise ops (and where/clamp/lerp) against float64 references: every
// layout, broadcasting, dtypes, promotion results and PyTorch's error messages.
#include <limits>

#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {

using BinOp = std::function<Tensor(const Tensor&, const Tensor&)>;
using Ref2 = std::function<double(double, double)>;

std::vector<DType> numeric_dtypes() {
  return {DType::UInt8, DType::Int8, DType::Int16, DType::Int32, DType::Int64,
          DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};
}
std::vector<DType> signed_and_float() {
  return {DType::Int8, DType::Int16, DType::Int32, DType::Int64,
          DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};
}

// Pairs of operands: the same layout on both sides, plus broadcasting against a row, a
// column and a 0-dim tensor.
std::vector<std::pair<Tensor, Tensor>> operand_pairs(DType dt, double alo, double ahi, double blo, double bhi) {
  std::vector<std::pair<Tensor, Tensor>> out;
  for (Layout l : all_layouts())
    out.emplace_back(make_input(dt, l, alo, ahi, 1), make_input(dt, l, blo, bhi, 2));
  Tensor a = make_input(dt, Layout::Transposed, alo, ahi, 3);
  Tensor b = make_input(dt, Layout::Contiguous, blo, bhi, 4);
  out.emplace_back(a, b.select(0, 1));                 // [3,4] with [4]
  out.emplace_back(a, b.slice(1, 0, 1));               // [3,4] with [3,1]
  out.emplace_back(a.slice(1, 0, 1), b.select(0, 2));  // [3,1] with [4] -> [3,4]
  out.emplace_back(a, make_input(dt, Layout::ZeroDim, blo, bhi, 5));
  return out;
}

void check_binary(const char* name, const BinOp& op, const Ref2& ref, DType dt, double alo, double ahi,
                  double blo, double bhi, std::optional<DType> expect = std::nullopt) {
  for (auto& [a, b] : operand_pairs(dt, alo, ahi, blo, bhi)) {
    Tensor y = op(a, b);
    ASSERT_EQ(y.dtype(), expect.value_or(dt)) << name << " " << dtype_name(dt);
    EXPECT_TRUE(close_to(y, ref_binary(ref_of(a), ref_of(b), ref)))
        << name << " dtype " << dtype_name(dt) << " shapes " << Tensor(a).sizes().size() << "d/"
        << Tensor(b).sizes().size() << "d";
  }
}

double py_floordiv(double a, double b) { return std::floor(a / b); }
double py_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((b < 0) != (m < 0))) m += b;
  return m;
}

}  // namespace

// ---------------------------------------------------------------- division
EMBER_DEVICE_TEST(Div, TrueDivisionAllDtypes) {
  for (DType dt : numeric_dtypes()) {
    double lo = dt == DType::UInt8 ? 0 : -5;
    DType expect = is_floating(dt) ? dt : DType::Float32;  // integer / integer -> default float
    check_binary("div", [](const Tensor& a, const Tensor& b) { return div(a, b); },
                 [](double a, double b) { return a / b; }, dt, lo, 5, 1, 4, expect);
  }
  // Division by zero in floats is IEEE.
  Tensor z = div(tensor({1.0, -1.0, 0.0}), tensor({0.0, 0.0, 0.0}));
  auto v = z.tolist<double>();
  EXPECT_TRUE(std::isinf(v[0]) && v[0] > 0);
  EXPECT_TRUE(std::isinf(v[1]) && v[1] < 0);
  EXPECT_TRUE(std::isnan(v[2]));
  EXPECT_EQ(div(tensor({1, 2}), tensor({0, 1})).tolist<double>()[0], std::numeric_limits<double>::infinity());
}

EMBER_DEVICE_TEST(Div, RoundingModes) {
  for (DType dt : signed_and_float()) {
    check_binary("div trunc", [](const Tensor& a, const Tensor& b) { return div(a, b, "trunc"); },
                 [](double a, double b) { return std::trunc(a / b); }, dt, -9, 9, 1, 4);
    check_binary("div trunc neg", [](const Tensor& a, const Tensor& b) { return div(a, neg(b), "trunc"); },
                 [](double a, double b) { return std::trunc(a / -b); }, dt, -9, 9, 1, 4);
    check_binary("div floor", [](const Tensor& a, const Tensor& b) { return div(a, b, "floor"); },
                 py_floordiv, dt, -9, 9, 1, 4);
    check_binary("div floor neg", [](const Tensor& a, const Tensor& b) { return div(a, neg(b), "floor"); },
                 [](double a, double b) { return std::floor(a / -b); }, dt, -9, 9, 1, 4);
    check_binary("floor_divide", [](const Tensor& a, const Tensor& b) { return floor_divide(a, b); },
                 py_floordiv, dt, -9, 9, 1, 4);
  }
  check_binary("div floor u8", [](const Tensor& a, const Tensor& b) { return div(a, b, "floor"); }, py_floordiv,
               DType::UInt8, 0, 9, 1, 4);
  EXPECT_EQ(div(tensor({-7, 7}), 2, "floor").tolist<int64_t>(), (std::vector<int64_t>{-4, 3}));
  EXPECT_EQ(div(tensor({-7, 7}), 2, "trunc").tolist<int64_t>(), (std::vector<int64_t>{-3, 3}));
  EXPECT_EQ(div(tensor({-7.5, 7.5}), 2, "floor").tolist<double>(), (std::vector<double>{-4, 3}));
  EXPECT_EQ(div(tensor({-7, 7}), 2, "floor").dtype(), DType::Int64);
  // The most negative integer divided by -1 wraps instead of trapping.
  EXPECT_EQ(div(tensor({-128}, {.dtype = kInt8}), tensor({-1}, {.dtype = kInt8}), "trunc").item<int64_t>(), -128);
}

EMBER_DEVICE_TEST(Div, ScalarFormsAndPromotion) {
  Tensor i = tensor({1, 2, 3});
  EXPECT_EQ(div(i, 2).dtype(), DType::Float32);
  EXPECT_EQ(div(i, 2).tolist<double>(), (std::vector<double>{0.5, 1.0, 1.5}));
  EXPECT_EQ(div(6, i).dtype(), DType::Float32);
  EXPECT_EQ(div(6, i).tolist<double>(), (std::vector<double>{6, 3, 2}));
  EXPECT_EQ((6.0 / i).tolist<double>(), (std::vector<double>{6, 3, 2}));
  EXPECT_EQ(div(tensor({true, false}), tensor({true, true})).dtype(), DType::Float32);
  EXPECT_EQ(div(tensor({1.0}, {.dtype = kFloat16}), 3).dtype(), DType::Float16);
  EXPECT_EQ(div(i, scalar_tensor(2.0, {.dtype = kFloat64})).dtype(), DType::Float64);  // 0-dim float beats int
}

EMBER_DEVICE_TEST(Div, InPlace) {
  Tensor x = tensor({2.0, 4.0, 6.0});
  uint32_t v = x._version();
  div_(x, tensor({2.0}));
  EXPECT_EQ(x._version(), v + 1);
  EXPECT_EQ(x.tolist<double>(), (std::vector<double>{1, 2, 3}));
  x /= 2;
  EXPECT_EQ(x.tolist<double>(), (std::vector<double>{0.5, 1, 1.5}));
  Tensor m = tensor({{8.0, 9.0}, {10.0, 11.0}});
  Tensor mt = m.t();
  div_(mt, tensor({2.0, 4.0}), "floor");  // in place through a transposed view
  EXPECT_EQ(m.tolist<double>(), (std::vector<double>{4, 4, 2, 2}));
  Tensor i = tensor({7, 8});
  div_(i, tensor({2, 2}), "trunc");
  EXPECT_EQ(i.tolist<int64_t>(), (std::vector<int64_t>{3, 4}));
  EXPECT_THROW_MSG(div_(i, tensor({2, 2})), Error, "result type float32 can't be cast to the desired output type int64");
}

EMBER_DEVICE_TEST(Div, Errors) {
  Tensor i = tensor({1, 2});
  EXPECT_THROW_MSG(div(i, i, "round"), Error,
                   "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'");
  // torch raises ZeroDivisionError for integer division by zero on the CPU only: a CUDA kernel
  // cannot stop, and torch's CUDA returns a value without a sync.
  if (!device().is_cuda()) {
    EXPECT_THROW_MSG(div(i, tensor({1, 0}), "trunc"), Error, "ZeroDivisionError");
    EXPECT_THROW_MSG(div(i, tensor({0, 1}), "floor"), Error, "ZeroDivisionError");
    EXPECT_THROW_MSG(floor_divide(i, 0), Error, "ZeroDivisionError");
    EXPECT_THROW_MSG(remainder(i, 0), Error, "ZeroDivisionError");
    EXPECT_THROW_MSG(fmod(i, 0), Error, "ZeroDivisionError");
  }
  EXPECT_THROW_MSG(div(zeros({2, 3}), zeros({4})), Error, "The size of tensor a (3) must match the size of tensor b (4)");
}

// ---------------------------------------------------------------- remainder, fmod
EMBER_DEVICE_TEST(Remainder, SignOfDivisor) {
  for (DType dt : signed_and_float()) {
    check_binary("remainder", [](const Tensor& a, const Tensor& b) { return remainder(a, b); }, py_mod, dt, -9, 9, 1, 4);
    check_binary("remainder neg", [](const Tensor& a, const Tensor& b) { return remainder(a, neg(b)); },
                 [](double a, double b) { return py_mod(a, -b); }, dt, -9, 9, 1, 4);
    check_binary("fmod", [](const Tensor& a, const Tensor& b) { return fmod(a, b); },
                 [](double a, double b) { return std::fmod(a, b); }, dt, -9, 9, 1, 4);
    check_binary("fmod neg", [](const Tensor& a, const Tensor& b) { return fmod(a, neg(b)); },
                 [](double a, double b) { return std::fmod(a, -b); }, dt, -9, 9, 1, 4);
  }
  EXPECT_EQ(remainder(tensor({-3, 3}), 2).tolist<int64_t>(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(remainder(tensor({-3, 3}), -2).tolist<int64_t>(), (std::vector<int64_t>{-1, -1}));
  EXPECT_EQ(fmod(tensor({-3, 3}), 2).tolist<int64_t>(), (std::vector<int64_t>{-1, 1}));
  EXPECT_EQ((tensor({-3.5, 3.5}) % 2).tolist<double>(), (std::vector<double>{0.5, 1.5}));
  EXPECT_EQ(remainder(tensor({5}), 2.5).dtype(), DType::Float32);
}

// ---------------------------------------------------------------- pow
EMBER_DEVICE_TEST(Pow, TensorTensor) {
  for (DType dt : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64})
    check_binary("pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); },
                 [](double a, double b) { return std::pow(a, b); }, dt, 0.1, 3, -2, 2);
  for (DType dt : {DType::UInt8, DType::Int8, DType::Int16, DType::Int32, DType::Int64})
    check_binary("pow int", [](const Tensor& a, const Tensor& b) { return pow(a, b); },
                 [](double a, double b) { return std::pow(a, b); }, dt, 0, 4, 0, 3);
  // Integer tensors to negative tensor powers: 0 except for bases 1 and -1 (no error).
  EXPECT_EQ(pow(tensor({2, 1, -1, -1}), tensor({-1, -3, -3, -2})).tolist<int64_t>(),
            (std::vector<int64_t>{0, 1, -1, 1}));
}

EMBER_DEVICE_TEST(Pow, ScalarExponentFastForms) {
  for (double e : {0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 0.5, -0.5, 1.7, -2.3}) {
    for (DType dt : float_dtypes()) {
      for (Layout l : all_layouts()) {
        Tensor x = make_input(dt, l, 0.1, 3);
        Tensor y = pow(x, e);
        EXPECT_EQ(y.dtype(), dt);
        EXPECT_TRUE(close_to(y, ref_unary(ref_of(x), [e](double v) { return std::pow(v, e); })))
            << "exponent " << e << " " << dtype_name(dt) << " " << layout_name(l);
      }
    }
  }
  Tensor i = tensor({1, 2, 3});
  EXPECT_EQ(pow(i, 2).tolist<int64_t>(), (std::vector<int64_t>{1, 4, 9}));
  EXPECT_EQ(pow(i, 3).dtype(), DType::Int64);
  EXPECT_EQ(pow(i, 0.5).dtype(), DType::Float32);  // float exponent: default float
  EXPECT_EQ(pow(2, i).tolist<int64_t>(), (std::vector<int64_t>{2, 4, 8}));
  EXPECT_EQ(pow(2.0, i).dtype(), DType::Float32);
  EXPECT_TRUE(close_to(pow(2.5, tensor({1.0, 2.0})), Ref{{2}, {2.5, 6.25}}));
  Tensor x = tensor({1.0, 2.0, 4.0});
  uint32_t v = x._version();
  x.pow_(2);
  EXPECT_EQ(x._version(), v + 1);
  EXPECT_EQ(x.tolist<double>(), (std::vector<double>{1, 4, 16}));
  pow_(x, tensor({0.5}));
  EXPECT_EQ(x.tolist<double>(), (std::vector<double>{1, 2, 4}));
}

EMBER_DEVICE_TEST(Pow, Errors) {
  EXPECT_THROW_MSG(pow(tensor({1, 2}), -1), Error, "Integers to negative integer powers are not allowed.");
  Tensor i = tensor({1, 2});
  EXPECT_THROW_MSG(i.pow_(-2), Error, "Integers to negative integer powers are not allowed.");
  EXPECT_THROW_MSG(i.pow_(0.5), Error, "result type float32 can't be cast to the desired output type int64");
  EXPECT_NO_THROW(pow(tensor({1.0, 2.0}), -1));
}

// ---------------------------------------------------------------- maximum, minimum, atan2
EMBER_DEVICE_TEST(MaxMin, ValuesAndNaN) {
  for (DType dt : numeric_dtypes()) {
    double lo = dt == DType::UInt8 ? 0 : -5;
    check_binary("maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
                 [](double a, double b) { return std::max(a, b); }, dt, lo, 5, lo, 5);
    check_binary("minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
                 [](double a, double b) { return std::min(a, b); }, dt, lo, 5, lo, 5);
  }
  const double nan = std::nan("");
  Tensor a = tensor({nan, 1.0, 2.0}), b = tensor({0.0, nan, 1.0});
  auto mx = maximum(a, b).tolist<double>(), mn = minimum(a, b).tolist<double>();
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]));
  EXPECT_TRUE(std::isnan(mn[0]) && std::isnan(mn[1]));
  EXPECT_EQ(mx[2], 2.0);
  EXPECT_EQ(mn[2], 1.0);
  EXPECT_EQ(maximum(tensor({true, false}), tensor({false, false})).tolist<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(maximum(tensor({1}, {.dtype = kUInt8}), tensor({-1}, {.dtype = kInt8})).dtype(), DType::Int16);
}

EMBER_DEVICE_TEST(Atan2, Values) {
  for (DType dt : {DType::Int32, DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    DType expect = is_floating(dt) ? dt : DType::Float32;
    check_binary("atan2", [](const Tensor& a, const Tensor& b) { return atan2(a, b); },
                 [](double a, double b) { return std::atan2(a, b); }, dt, -3, 3, -3, 3, expect);
  }
}

// ---------------------------------------------------------------- bitwise
EMBER_DEVICE_TEST(Bitwise, IntegersAndBool) {
  auto as_int = [](double v) { return int64_t(v); };
  for (DType dt : {DType::UInt8, DType::Int8, DType::Int16, DType::Int32, DType::Int64}) {
    double lo = dt == DType::UInt8 ? 0 : -20;
    check_binary("and", [](const Tensor& a, const Tensor& b) { return bitwise_and(a, b); },
                 [&](double a, double b) { return double(as_int(a) & as_int(b)); }, dt, lo, 20, 0, 20);
    check_binary("or", [](const Tensor& a, const Tensor& b) { return a | b; },
                 [&](double a, double b) { return double(as_int(a) | as_int(b)); }, dt, lo, 20, 0, 20);
    check_binary("xor", [](const Tensor& a, const Tensor& b) { return a ^ b; },
                 [&](double a, double b) { return double(as_int(a) ^ as_int(b)); }, dt, lo, 20, 0, 20);
    check_binary("lshift", [](const Tensor& a, const Tensor& b) { return bitwise_left_shift(a, b); },
                 [&](double a, double b) { return double(as_int(a) * (int64_t(1) << as_int(b))); }, dt, 0, 7, 0, 3);
    check_binary("rshift", [](const Tensor& a, const Tensor& b) { return bitwise_right_shift(a, b); },
                 [&](double a, double b) { return double(as_int(a) >> as_int(b)); }, dt, lo, 20, 0, 3);
  }
  Tensor t = tensor({true, true, false}), f = tensor({true, false, false});
  EXPECT_EQ((t & f).tolist<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ((t | f).tolist<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ((t ^ f).dtype(), DType::Bool);
  EXPECT_EQ((~t).tolist<bool>(), (std::vector<bool>{false, false, true}));
  EXPECT_EQ((~tensor({0, 5})).tolist<int64_t>(), (std::vector<int64_t>{-1, -6}));
  EXPECT_EQ(bitwise_not(tensor({0}, {.dtype = kUInt8})).item<int64_t>(), 255);
  EXPECT_EQ(bitwise_and(tensor({12, 10}), 6).tolist<int64_t>(), (std::vector<int64_t>{4, 2}));
  // Shifts past the width: 0 to the left, the sign to the right.
  Tensor x = tensor({-8, 8}, {.dtype = kInt8});
  EXPECT_EQ(bitwise_right_shift(x, tensor({9, 9}, {.dtype = kInt8})).tolist<int64_t>(), (std::vector<int64_t>{-1, 0}));
  EXPECT_EQ(bitwise_left_shift(x, tensor({8, -1}, {.dtype = kInt8})).tolist<int64_t>(), (std::vector<int64_t>{0, 0}));
}

EMBER_DEVICE_TEST(Bitwise, FloatErrors) {
  Tensor f = tensor({1.0});
  EXPECT_THROW_MSG(bitwise_and(f, f), Error, kernel_name(device(), "bitwise_and_cpu", "bitwise_and_cuda") + " not implemented for 'Float'");
  EXPECT_THROW_MSG(f | f, Error, kernel_name(device(), "bitwise_or_cpu", "bitwise_or_cuda") + " not implemented for 'Float'");
  EXPECT_THROW_MSG(bitwise_xor(tensor({1}), 1.5), Error, "not implemented for 'Float'");
  EXPECT_THROW_MSG(~f, Error, kernel_name(device(), "bitwise_not_cpu", "bitwise_not_cuda") + " not implemented for 'Float'");
  EXPECT_THROW_MSG(bitwise_left_shift(f, f), Error, kernel_name(device(), "lshift_cpu", "lshift_cuda") + " not implemented for 'Float'");
}

// ---------------------------------------------------------------- where
EMBER_DEVICE_TEST(Where, AllFormsAndBroadcasting) {
  for (DType dt : all_dtypes()) {
    for (Layout l : all_layouts()) {
      Tensor c = make_input(DType::Bool, l, -1, 1, 9);
      Tensor a = make_input(dt, l, 0, 5, 1), b = make_input(dt, l, 0, 5, 2);
      Ref rc = ref_of(c), ra = ref_of(a), rb = ref_of(b);
      Ref expected{rc.shape, {}};
      for (size_t k = 0; k < rc.v.size(); ++k) expected.v.push_back(rc.v[k] != 0 ? ra.v[k] : rb.v[k]);
      Tensor y = where(c, a, b);
      EXPECT_EQ(y.dtype(), dt);
      EXPECT_TRUE(close_to(y, expected)) << dtype_name(dt) << " " << layout_name(l);
      EXPECT_TRUE(close_to(a.where(c, b), expected));
    }
  }
  Tensor c = tensor({{true, false, true}, {false, true, false}});
  Tensor a = tensor({1.0, 2.0, 3.0});
  Tensor col = tensor({{10.0}, {20.0}});
  EXPECT_EQ(where(c, a, col).tolist<double>(), (std::vector<double>{1, 10, 3, 20, 2, 20}));
  EXPECT_EQ(where(c, a, 0.0).tolist<double>(), (std::vector<double>{1, 0, 3, 0, 2, 0}));
  EXPECT_EQ(where(c, -1.0, a).tolist<double>(), (std::vector<double>{-1, 2, -1, 1, -1, 3}));
  Tensor s = where(c, 1.0, 0);
  EXPECT_EQ(s.dtype(), DType::Float32);
  EXPECT_EQ(s.tolist<double>(), (std::vector<double>{1, 0, 1, 0, 1, 0}));
  EXPECT_EQ(where(c, 1, 0).dtype(), DType::Int64);
  EXPECT_EQ(where(c.select(0, 0), tensor({1, 2, 3}, {.dtype = kInt32}), 2.5).dtype(), DType::Float32);
  EXPECT_EQ(where(c.select(0, 0), tensor({1, 2, 3}, {.dtype = kUInt8}), tensor({1, 2, 3}, {.dtype = kInt8})).dtype(),
            DType::Int16);
  EXPECT_THROW_MSG(where(tensor({1.0}), a, a), Error,
                   "where expected condition to be a boolean tensor, but got a tensor with dtype float32");
}

// ---------------------------------------------------------------- clamp
EMBER_DEVICE_TEST(Clamp, ScalarBounds) {
  for (DType dt : numeric_dtypes()) {
    for (Layout l : all_layouts()) {
      double lo = dt == DType::UInt8 ? 0 : -5;
      Tensor x = make_input(dt, l, lo, 5);
      Ref r = ref_of(x);
      // (uint8 would read a -1 bound as 255, as PyTorch does: keep the bound in range.)
      int lb = dt == DType::UInt8 ? 0 : -1;
      EXPECT_TRUE(close_to(clamp(x, lb, 2), ref_unary(r, [lb](double v) { return std::min(std::max(v, double(lb)), 2.0); })))
          << dtype_name(dt) << layout_name(l);
      EXPECT_TRUE(close_to(clamp(x, 1), ref_unary(r, [](double v) { return std::max(v, 1.0); })));
      EXPECT_TRUE(close_to(x.clamp_max(1), ref_unary(r, [](double v) { return std::min(v, 1.0); })));
      EXPECT_EQ(clamp(x, -1, 2).dtype(), dt);
    }
  }
  Tensor x = tensor({-3.0, 0.5, 3.0, std::nan("")});
  auto v = clamp(x, 2, -1).tolist<double>();  // min > max: everything becomes max
  EXPECT_EQ(v[0], -1.0);
  EXPECT_EQ(v[1], -1.0);
  EXPECT_EQ(v[2], -1.0);
  EXPECT_TRUE(std::isnan(clamp(x, -1, 1).tolist<double>()[3]));  // NaN propagates
  EXPECT_EQ(clamp(tensor({1, 5}), 0.5, 2.5).dtype(), DType::Float32);  // float bounds promote
  EXPECT_EQ(clamp(tensor({1, 5}), 0.5, 2.5).tolist<double>(), (std::vector<double>{1, 2.5}));
  Tensor y = tensor({-3.0, 0.5, 3.0});
  uint32_t ver = y._version();
  clamp_(y, -1, 1);
  EXPECT_EQ(y._version(), ver + 1);
  EXPECT_EQ(y.tolist<double>(), (std::vector<double>{-1, 0.5, 1}));
  Tensor i = tensor({1, 5});
  EXPECT_THROW_MSG(clamp_(i, 0.5), Error, "result type float32 can't be cast to the desired output type int64");
  EXPECT_THROW_MSG(clamp(y, std::optional<Scalar>(), std::optional<Scalar>()), Error,
                   "torch.clamp: At least one of 'min' or 'max' must not be None");
}

EMBER_DEVICE_TEST(Clamp, TensorBounds) {
  Tensor x = tensor({{-3.0, 0.5, 3.0}, {1.0, 2.0, -2.0}});
  Tensor lo = tensor({-1.0, 1.0, 0.0}), hi = tensor({{0.0}, {1.5}});
  EXPECT_EQ(clamp(x, std::optional<Tensor>(lo), std::optional<Tensor>(hi)).tolist<double>(),
            (std::vector<double>{-1, 0, 0, 1, 1.5, 0}));
  EXPECT_EQ(clamp(x, std::optional<Tensor>(lo), std::nullopt).tolist<double>(),
            (std::vector<double>{-1, 1, 3, 1, 2, 0}));
  EXPECT_EQ(x.clamp(std::nullopt, std::optional<Tensor>(hi)).tolist<double>(),
            (std::vector<double>{-3, 0, 0, 1, 1.5, -2}));
  EXPECT_EQ(clamp(tensor({1, 5}), std::optional<Tensor>(tensor({2.5})), std::nullopt).dtype(), DType::Float32);
  EXPECT_THROW_MSG(clamp(x, std::optional<Tensor>(), std::optional<Tensor>()), Error,
                   "At least one of 'min' or 'max' must not be None");
}

// ---------------------------------------------------------------- lerp
EMBER_DEVICE_TEST(Lerp, ScalarAndTensorWeight) {
  for (DType dt : float_dtypes()) {
    for (auto& [a, b] : operand_pairs(dt, -3, 3, -3, 3)) {
      for (double w : {0.25, 0.75}) {
        EXPECT_TRUE(close_to(lerp(a, b, w), ref_binary(ref_of(a), ref_of(b), [w](double s, double e) { return s + w * (e - s); })))
            << dtype_name(dt) << " w=" << w;
      }
      Tensor w = make_input(dt, Layout::Contiguous, 0, 1, 7);
      if (IntArrayRef(broadcast_shapes(a.sizes(), b.sizes())) == IntArrayRef(Shape{3, 4})) {
        Ref rw = ref_of(w), ra = ref_of(a), rb = ref_of(b);
        Shape shape = broadcast_shapes(broadcast_shapes(ra.shape, rb.shape), rw.shape);
        Ref expected{shape, {}};
        for (int64_t k = 0; k < shape_numel(shape); ++k) {
          auto idx = unravel(k, shape);
          double s = broadcast_at(ra, idx), e = broadcast_at(rb, idx), ww = broadcast_at(rw, idx);
          expected.v.push_back(s + ww * (e - s));
        }
        EXPECT_TRUE(close_to(lerp(a, b, w), expected)) << dtype_name(dt);
      }
    }
  }
  EXPECT_EQ(lerp(tensor({0.0}), tensor({10.0}), 1.0).item<double>(), 10.0);  // exact at the ends
  EXPECT_THROW_MSG(lerp(tensor({0.0}), tensor({1.0}, {.dtype = kFloat64}), 0.5), Error,
                   "expected dtype float32 for `end` but got dtype float64");
  EXPECT_THROW_MSG(lerp(tensor({0.0}), tensor({1.0}), tensor({0.5}, {.dtype = kFloat64})), Error,
                   "expected dtype float32 for `weight` but got dtype float64");
  EXPECT_THROW_MSG(lerp(tensor({0}), tensor({1}), 0.5), Error, "not implemented for 'Long'");
}

// ---------------------------------------------------------------- promotion (add/sub/mul included)
EMBER_DEVICE_TEST(Promotion, ResultDtypes) {
  Tensor i = tensor({1, 2});
  EXPECT_EQ(add(i, 2.5).dtype(), DType::Float32);
  EXPECT_EQ((i * 2).dtype(), DType::Int64);
  EXPECT_EQ(add(tensor({1}, {.dtype = kUInt8}), tensor({1}, {.dtype = kInt8})).dtype(), DType::Int16);
  EXPECT_EQ(add(tensor({true}), tensor({true})).dtype(), DType::Bool);
  EXPECT_EQ(add(tensor({true}), tensor({true})).item<bool>(), true);
  EXPECT_EQ(mul(tensor({1.0}, {.dtype = kFloat16}), tensor({1.0}, {.dtype = kBFloat16})).dtype(), DType::Float32);
  EXPECT_EQ(fmod(tensor({5}, {.dtype = kInt32}), scalar_tensor(2, {.dtype = kInt64})).dtype(), DType::Int32);
  EXPECT_EQ(maximum(tensor({1}, {.dtype = kInt32}), tensor({1.0}, {.dtype = kFloat16})).dtype(), DType::Float16);
}
