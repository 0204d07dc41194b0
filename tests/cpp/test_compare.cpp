// Comparisons, logical ops, equal/isclose/allclose against references over layouts and dtypes.
#include <limits>

#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {
using BinOp = std::function<Tensor(const Tensor&, const Tensor&)>;
using Ref2 = std::function<double(double, double)>;

void check_bool_binary(const char* name, const BinOp& op, const Ref2& ref, DType da, DType db) {
  std::vector<std::pair<Tensor, Tensor>> pairs;
  for (Layout l : all_layouts()) pairs.emplace_back(make_input(da, l, 0, 3, 1), make_input(db, l, 0, 3, 2));
  Tensor a = make_input(da, Layout::Transposed, 0, 3, 3);
  pairs.emplace_back(a, make_input(db, Layout::Contiguous, 0, 3, 4).select(0, 0));  // [3,4] vs [4]
  pairs.emplace_back(a, make_input(db, Layout::ZeroDim, 0, 3, 5));                   // vs 0-dim
  for (auto& [x, y] : pairs) {
    Tensor r = op(x, y);
    ASSERT_EQ(r.dtype(), DType::Bool) << name;
    EXPECT_TRUE(close_to(r, ref_binary(ref_of(x), ref_of(y), ref)))
        << name << " " << dtype_name(da) << " vs " << dtype_name(db);
  }
}
}  // namespace

EMBER_DEVICE_TEST(Compare, AllOpsAllDtypes) {
  struct C { const char* name; BinOp op; Ref2 ref; };
  std::vector<C> cases = {
      {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }, [](double a, double b) { return double(a == b); }},
      {"ne", [](const Tensor& a, const Tensor& b) { return a != b; }, [](double a, double b) { return double(a != b); }},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }, [](double a, double b) { return double(a < b); }},
      {"le", [](const Tensor& a, const Tensor& b) { return a <= b; }, [](double a, double b) { return double(a <= b); }},
      {"gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); }, [](double a, double b) { return double(a > b); }},
      {"ge", [](const Tensor& a, const Tensor& b) { return a >= b; }, [](double a, double b) { return double(a >= b); }},
  };
  for (const auto& c : cases) {
    for (DType dt : all_dtypes()) check_bool_binary(c.name, c.op, c.ref, dt, dt);
    check_bool_binary(c.name, c.op, c.ref, DType::Int32, DType::Float32);  // mixed: promoted compare
    check_bool_binary(c.name, c.op, c.ref, DType::UInt8, DType::Int8);
  }
}

EMBER_DEVICE_TEST(Compare, ScalarFormsPromote) {
  Tensor i = tensor({1, 2, 3});
  EXPECT_EQ(lt(i, 2.5).tolist<bool>(), (std::vector<bool>{true, true, false}));  // compares in float
  EXPECT_EQ((i == 2).tolist<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(ge(i, 2).dtype(), DType::Bool);
  EXPECT_EQ(gt(tensor({0.1}, {.dtype = kFloat16}), 0.1).item<bool>(), false);  // 0.1 rounds in half
  Tensor u = tensor({200}, {.dtype = kUInt8});
  EXPECT_EQ(gt(u, tensor({-1}, {.dtype = kInt8})).item<bool>(), true);  // uint8 vs int8 compares in int16
  const double nan = std::nan("");
  Tensor n = tensor({nan, 1.0});
  EXPECT_EQ(eq(n, n).tolist<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(ne(n, n).tolist<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(lt(n, 5).tolist<bool>(), (std::vector<bool>{false, true}));
  EXPECT_THROW_MSG(eq(zeros({2, 3}), zeros({3, 2})), Error, "must match the size of tensor b");
}

EMBER_DEVICE_TEST(Logical, AndOrXorNot) {
  auto truth = [](double v) { return v != 0; };
  for (DType dt : all_dtypes()) {
    check_bool_binary("logical_and", [](const Tensor& a, const Tensor& b) { return logical_and(a, b); },
                      [&](double a, double b) { return double(truth(a) && truth(b)); }, dt, dt);
    check_bool_binary("logical_or", [](const Tensor& a, const Tensor& b) { return logical_or(a, b); },
                      [&](double a, double b) { return double(truth(a) || truth(b)); }, dt, dt);
    check_bool_binary("logical_xor", [](const Tensor& a, const Tensor& b) { return a.logical_xor(b); },
                      [&](double a, double b) { return double(truth(a) != truth(b)); }, dt, DType::Bool);
    for (Layout l : all_layouts()) {
      Tensor x = make_input(dt, l, 0, 2);
      Tensor r = logical_not(x);
      EXPECT_EQ(r.dtype(), DType::Bool);
      EXPECT_TRUE(close_to(r, ref_unary(ref_of(x), [](double v) { return double(v == 0); }))) << dtype_name(dt);
    }
  }
  Tensor n = tensor({std::nan(""), 0.0});
  EXPECT_EQ(logical_not(n).tolist<bool>(), (std::vector<bool>{false, true}));  // NaN is true
  EXPECT_EQ(logical_and(n, tensor({1, 1})).tolist<bool>(), (std::vector<bool>{true, false}));
}

EMBER_DEVICE_TEST(Equal, ShapesAndValues) {
  Tensor a = tensor({{1.0, 2.0}, {3.0, 4.0}});
  EXPECT_TRUE(equal(a, a.clone()));
  EXPECT_TRUE(equal(a.t(), tensor({{1.0, 3.0}, {2.0, 4.0}})));  // non-contiguous
  EXPECT_FALSE(equal(a, tensor({{1.0, 2.0}, {3.0, 5.0}})));
  EXPECT_FALSE(equal(a, tensor({1.0, 2.0})));  // shapes differ, no broadcasting
  EXPECT_FALSE(equal(tensor({std::nan("")}), tensor({std::nan("")})));
  EXPECT_TRUE(a.equal(a));
  EXPECT_TRUE(equal(make_input(kFloat32, Layout::Empty), make_input(kFloat32, Layout::Empty)));
  EXPECT_TRUE(equal(tensor({1, 2}), tensor({1, 2})));
}

EMBER_DEVICE_TEST(IsClose, Tolerances) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  Tensor a = tensor({1.0, 1.0, inf, -inf, nan, 1e-9});
  Tensor b = tensor({1.0 + 1e-6, 1.1, inf, inf, nan, 0.0});
  EXPECT_EQ(isclose(a, b).tolist<bool>(), (std::vector<bool>{true, false, true, false, false, true}));
  EXPECT_EQ(isclose(a, b, 1e-5, 1e-8, true).tolist<bool>(), (std::vector<bool>{true, false, true, false, true, true}));
  EXPECT_EQ(isclose(a, b, 0.2).tolist<bool>()[1], true);
  EXPECT_EQ(isclose(a, b, 0.0, 0.0).tolist<bool>(), (std::vector<bool>{false, false, true, false, false, false}));
  EXPECT_EQ(isclose(tensor({1, 5}), tensor({2, 5}), 0, 1).tolist<bool>(), (std::vector<bool>{true, true}));
  EXPECT_EQ(isclose(tensor({1, 5}), tensor({3, 5})).tolist<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(isclose(tensor({true}), tensor({false}), 0, 1).item<bool>(), true);
  EXPECT_EQ(isclose(a.slice(0, 0, 2), b.slice(0, 0, 2)).sizes(), (Shape{2}));
  // Broadcasting and every float dtype, against a reference.
  for (DType dt : float_dtypes()) {
    Tensor x = make_input(dt, Layout::Transposed, -1, 1, 1);
    Tensor y = x.add(make_input(dt, Layout::Contiguous, -1e-3, 1e-3, 2).select(0, 0));
    auto [rtol, atol] = std::pair{1e-3, 1e-4};
    Ref expected = ref_binary(ref_of(x), ref_of(y), [&](double p, double q) {
      return double(std::abs(p - q) <= atol + rtol * std::abs(q));
    });
    EXPECT_TRUE(close_to(isclose(x, y, rtol, atol), expected)) << dtype_name(dt);
  }
  EXPECT_THROW_MSG(isclose(tensor({1.0}), tensor({1.0}, {.dtype = kFloat64})), Error, "float32 did not match float64");
  EXPECT_THROW_MSG(isclose(a, b, -1.0), Error, "rtol must be greater than or equal to zero, but got -1");
  EXPECT_THROW_MSG(isclose(a, b, 0.0, -1.0), Error, "atol must be greater than or equal to zero, but got -1");
}

EMBER_DEVICE_TEST(AllClose, WholeTensor) {
  Tensor a = tensor({1.0, 2.0, 3.0});
  EXPECT_TRUE(allclose(a, a.add(1e-7)));
  EXPECT_FALSE(allclose(a, a.add(1e-3)));
  EXPECT_TRUE(allclose(a, a.add(1e-3), 1e-3));
  EXPECT_FALSE(allclose(tensor({std::nan("")}), tensor({std::nan("")})));
  EXPECT_TRUE(allclose(tensor({std::nan("")}), tensor({std::nan("")}), 1e-5, 1e-8, true));
  EXPECT_TRUE(a.allclose(a.t().contiguous()));
  EXPECT_TRUE(allclose(make_input(kFloat32, Layout::Empty), make_input(kFloat32, Layout::Empty)));
}
