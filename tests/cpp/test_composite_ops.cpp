// Ops composed of other ops (most once lived in the Python bindings): values against float64
// references, PyTorch's edge cases and messages, in-place forms, and gradients by gradcheck.
#include <algorithm>
#include <limits>

#include "gradcheck.h"

using namespace ember;
using namespace ember::testing;
using autograd::variable_list;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor f64(const TensorInit& v) { return tensor(v, {.dtype = kFloat64}); }
std::vector<double> values(const Tensor& t) { return t.tolist<double>(); }
bool same_nan(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }
::testing::AssertionResult same_values(const Tensor& t, const std::vector<double>& want) {
  auto got = values(t);
  if (got.size() != want.size()) return ::testing::AssertionFailure() << got.size() << " values, want " << want.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (!same_nan(got[i], want[i]))
      return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << " vs " << want[i];
  return ::testing::AssertionSuccess();
}

}  // namespace

// ---------------------------------------------------------------- elementwise
EMBER_DEVICE_TEST(CompositeElementwise, FmaxFminIgnoreNaN) {
  Tensor a = f64({1.0, kNaN, 3.0, kNaN, -0.0});
  Tensor b = f64({2.0, 5.0, kNaN, kNaN, 0.0});
  EXPECT_TRUE(same_values(fmax(a, b), {2, 5, 3, kNaN, -0.0}));
  EXPECT_TRUE(same_values(fmin(a, b), {1, 5, 3, kNaN, -0.0}));
  EXPECT_TRUE(same_values(a.fmax(f64({0.0})), {1, 0, 3, 0, -0.0}));  // broadcasts
  EXPECT_EQ(fmax(tensor({1, 5}), tensor({2.5})).dtype(), kFloat32);   // promotes
  // A tie's gradient goes to self; NaN positions pass it to the other operand.
  Tensor x = f64({1.0, 2.0, kNaN}).requires_grad_(), y = f64({1.0, 3.0, 4.0}).requires_grad_();
  fmax(x, y).sum().backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(values(y.grad()), (std::vector<double>{0, 1, 1}));
  Tensor p = grad_input(Layout::Contiguous), q = grad_input(Layout::Transposed, -2, 2, 5);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return fmin(v[0], v[1]); }, {p, q}));
}

EMBER_DEVICE_TEST(CompositeElementwise, HypotFloatPowerAddcmulAddcdivRsub) {
  Tensor a = f64({3.0, -5.0, 0.0, 1e-3}), b = f64({4.0, 12.0, 0.0, 2e-3});
  auto h = values(hypot(a, b));
  for (size_t i = 0; i < h.size(); ++i) EXPECT_NEAR(h[i], std::hypot(values(a)[i], values(b)[i]), 1e-15);
  EXPECT_THROW_MSG(hypot(tensor({1}), tensor({2})), Error, kernel_name(device(), "hypot_cpu", "hypot_cuda") + " not implemented for 'Long'");
  Tensor p = grad_input(Layout::Strided, 0.5, 2), q = grad_input(Layout::Contiguous, 0.5, 2, 9);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return hypot(v[0], v[1]); }, {p, q}));

  Tensor fp = float_power(tensor({2, 3}), 2);
  EXPECT_EQ(fp.dtype(), kFloat64);
  EXPECT_EQ(values(fp), (std::vector<double>{4, 9}));
  EXPECT_EQ(float_power(tensor({2.0f}), tensor({0.5f})).dtype(), kFloat64);
  EXPECT_EQ(float_power(2, tensor({1, 3})).tolist<double>(), (std::vector<double>{2, 8}));
  EXPECT_EQ(float_power(tensor({2}), -1).item<double>(), 0.5);  // no integer-power error: float64

  Tensor s = f64({1.0, 2.0}), t1 = f64({3.0, 4.0}), t2 = f64({2.0, 8.0});
  EXPECT_EQ(values(addcmul(s, t1, t2, 0.5)), (std::vector<double>{4, 18}));
  EXPECT_EQ(values(addcdiv(s, t1, t2, 2)), (std::vector<double>{4, 3}));
  EXPECT_THROW_MSG(addcdiv(s, tensor({1}), tensor({2})), Error, "Integer division with addcdiv is no longer supported");
  Tensor m = s.clone();
  EXPECT_TRUE(m.addcmul_(t1, t2).is_same(m));
  EXPECT_EQ(values(m), (std::vector<double>{7, 34}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return addcdiv(v[0], v[1], v[2], 0.3); },
                        {p, q, grad_input(Layout::Contiguous, 1, 2, 4)}));
  EXPECT_EQ(values(rsub(s, t1, 2)), (std::vector<double>{1, 0}));  // t1 - 2 * s
}

EMBER_DEVICE_TEST(CompositeElementwise, PredicatesAndPositive) {
  Tensor x = f64({kInf, -kInf, kNaN, -0.0, 0.0, -2.0, 3.0});
  EXPECT_EQ(isposinf(x).tolist<bool>(), (std::vector<bool>{true, false, false, false, false, false, false}));
  EXPECT_EQ(isneginf(x).tolist<bool>(), (std::vector<bool>{false, true, false, false, false, false, false}));
  EXPECT_EQ(signbit(x).tolist<bool>(), (std::vector<bool>{false, true, false, true, false, true, false}));
  EXPECT_EQ(signbit(tensor({-1, 0, 2})).tolist<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(isposinf(tensor({1, 2})).tolist<bool>(), (std::vector<bool>{false, false}));
  Tensor r = isreal(tensor({1.5, 2.0}));
  EXPECT_EQ(r.dtype(), kBool);
  EXPECT_EQ(r.tolist<bool>(), (std::vector<bool>{true, true}));
  EXPECT_TRUE(positive(x).is_same(x));
  EXPECT_THROW_MSG(positive(tensor({true})), Error, "The `+` operator, on a bool tensor is not supported.");
}

EMBER_DEVICE_TEST(CompositeElementwise, InPlaceFormsCheckCastAndShapeAndBumpVersion) {
  Tensor a = tensor({7, -7, 9});
  auto v0 = a._version();
  EXPECT_TRUE(remainder_(a, tensor({3})).is_same(a));
  EXPECT_EQ(a.tolist<int64_t>(), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_GT(a._version(), v0);
  Tensor b = tensor({7, -7});
  b.floor_divide_(tensor({2}));
  EXPECT_EQ(b.tolist<int64_t>(), (std::vector<int64_t>{3, -4}));
  Tensor c = tensor({7.5, -7.5});
  c.fmod_(tensor({2.0}));
  EXPECT_EQ(c.tolist<double>(), (std::vector<double>{1.5, -1.5}));
  Tensor d = tensor({1.0, -1.0});
  d.atan2_(tensor({1.0, 1.0}));
  EXPECT_NEAR(d.tolist<double>()[0], M_PI / 4, 1e-6);
  Tensor e = tensor({6, 5});
  e.bitwise_and_(tensor({3})).bitwise_or_(tensor({8})).bitwise_xor_(tensor({1})).bitwise_left_shift_(tensor({1}));
  EXPECT_EQ(e.tolist<int64_t>(), (std::vector<int64_t>{(((6 & 3) | 8) ^ 1) << 1, (((5 & 3) | 8) ^ 1) << 1}));
  e.bitwise_right_shift_(tensor({2}));
  e.bitwise_not_();
  EXPECT_EQ(e.tolist<int64_t>(), (std::vector<int64_t>{~((((6 & 3) | 8) ^ 1) << 1 >> 2), ~((((5 & 3) | 8) ^ 1) << 1 >> 2)}));
  Tensor f = tensor({1.0, 0.0, 2.0});
  f.logical_and_(tensor({1.0, 1.0, 0.0}));
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_EQ(f.tolist<double>(), (std::vector<double>{1, 0, 0}));
  f.logical_not_();
  EXPECT_EQ(f.tolist<double>(), (std::vector<double>{0, 1, 1}));
  f.logical_or_(tensor({1.0, 0.0, 0.0})).logical_xor_(tensor({1.0, 1.0, 0.0}));
  EXPECT_EQ(f.tolist<double>(), (std::vector<double>{0, 0, 1}));
  Tensor g = tensor({kNaN, kInf, 1.0});
  g.nan_to_num_(5.0, 6.0);
  EXPECT_EQ(g.tolist<double>(), (std::vector<double>{5, 6, 1}));
  Tensor h = tensor({0.0, 10.0});
  h.lerp_(tensor({10.0, 20.0}), 0.5);
  EXPECT_EQ(h.tolist<double>(), (std::vector<double>{5, 15}));
  Tensor k = tensor({-2.0, 0.5, 4.0});
  k.clamp_(std::optional<Tensor>(tensor({0.0})), std::optional<Tensor>(tensor({1.0, 1.0, 3.0})));
  EXPECT_EQ(k.tolist<double>(), (std::vector<double>{0, 0.5, 3}));
  Tensor m = ones({2, 2});
  m.tril_().triu_(1);
  EXPECT_EQ(m.tolist<double>(), (std::vector<double>{0, 0, 0, 0}));
  Tensor n = ones({2, 2});
  n.hypot_(tensor({0.0}));
  EXPECT_EQ(n.tolist<double>(), (std::vector<double>{1, 1, 1, 1}));
  Tensor am = zeros({2, 2});
  am.addmm_(eye(2), ones({2, 2}), 1, 2);
  EXPECT_EQ(am.tolist<double>(), (std::vector<double>{2, 2, 2, 2}));
  // The result must cast to self's dtype and have self's shape.
  Tensor i = tensor({1, 2});
  EXPECT_THROW_MSG(i.lerp_(tensor({1.5, 2.5}), 0.5), Error, "expected dtype");
  EXPECT_THROW_MSG(i.hypot_(tensor({1.0})), Error, "result type Float can't be cast to the desired output type Long");
  EXPECT_THROW_MSG(i.remainder_(tensor({1.5})), Error, "result type float32 can't be cast to the desired output type int64");
  EXPECT_THROW_MSG(tensor({1.0}).logical_and_(tensor({1.0, 0.0})), Error,
                   "output with shape [1] doesn't match the broadcast shape [2]");
  // Under autograd: the history of the out-of-place op follows the copy.
  Tensor leaf = f64({1.0, 2.0}).requires_grad_();
  Tensor w = leaf * 1.0;
  w.addcmul_(leaf, leaf, 0.5);
  w.sum().backward();
  EXPECT_EQ(values(leaf.grad()), (std::vector<double>{2, 3}));
}

EMBER_DEVICE_TEST(CompositeElementwise, ShiftsTakeNumbersOnEitherSide) {
  EXPECT_EQ(bitwise_left_shift(tensor({1, 2}), 3).tolist<int64_t>(), (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(bitwise_right_shift(tensor({16, -16}), 2).tolist<int64_t>(), (std::vector<int64_t>{4, -4}));
  EXPECT_EQ(bitwise_left_shift(1, tensor({0, 4})).tolist<int64_t>(), (std::vector<int64_t>{1, 16}));
  EXPECT_EQ(bitwise_right_shift(64, tensor({1, 3})).tolist<int64_t>(), (std::vector<int64_t>{32, 8}));
  EXPECT_EQ(bitwise_left_shift(tensor({1}, {.dtype = kInt8}), 2).dtype(), kInt8);
}

// ---------------------------------------------------------------- reductions
EMBER_DEVICE_TEST(CompositeReduce, NansumAminmaxAnyAllDims) {
  Tensor x = f64({{1.0, kNaN, 3.0}, {kNaN, kNaN, 2.0}});
  EXPECT_EQ(values(nansum(x)), (std::vector<double>{6}));
  EXPECT_EQ(values(nansum(x, {1})), (std::vector<double>{4, 2}));
  EXPECT_EQ(x.nansum({0}, true).sizes(), (Shape{1, 3}));
  EXPECT_EQ(nansum(tensor({1, 2}), kFloat64).dtype(), kFloat64);
  Tensor xg = x.detach().requires_grad_();
  nansum(xg).backward();
  EXPECT_EQ(values(xg.grad()), (std::vector<double>{1, 0, 1, 0, 0, 1}));

  Tensor y = tensor({{3, 1, 2}, {-1, 5, 0}});
  auto [lo, hi] = aminmax(y);
  EXPECT_EQ(lo.item<int64_t>(), -1);
  EXPECT_EQ(hi.item<int64_t>(), 5);
  auto [lo1, hi1] = y.aminmax(1, true);
  EXPECT_EQ(lo1.sizes(), (Shape{2, 1}));
  EXPECT_EQ(hi1.tolist<int64_t>(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(std::get<0>(aminmax(y, std::nullopt, true)).sizes(), (Shape{1, 1}));
  EXPECT_THROW_MSG(aminmax(zeros({0})), Error, "aminmax(): cannot compute aminmax over an empty dimension");
  EXPECT_THROW_MSG(aminmax(zeros({2, 0}), 1), IndexError, "aminmax: Expected reduction dim 1 to have non-zero size.");

  Tensor b = tensor({{{true, false}, {false, false}}, {{true, true}, {true, false}}});
  EXPECT_EQ(any(b, {1, 2}).tolist<bool>(), (std::vector<bool>{true, true}));
  EXPECT_EQ(all(b, {0, -1}).tolist<bool>(), (std::vector<bool>{false, false}));
  EXPECT_EQ(b.all({1, 2}, true).sizes(), (Shape{2, 1, 1}));
  EXPECT_EQ(any(b, IntArrayRef{}).dim(), 0);  // no dims: every dim
}

EMBER_DEVICE_TEST(CompositeReduce, VarStdCorrectionAndMeans) {
  Generator g(3);
  Tensor x = host_randn({4, 5}, g);
  auto ref = [&](int64_t row, double c) {
    auto v = values(x[row]);
    double m = 0, s = 0;
    for (double e : v) m += e;
    m /= double(v.size());
    for (double e : v) s += (e - m) * (e - m);
    return s / std::max(double(v.size()) - c, 0.0);
  };
  for (double c : {0.0, 1.0, 2.0, 0.5, 1.5, 7.0}) {
    SCOPED_TRACE(c);
    Tensor v = var(x, {1}, Scalar(c));
    Tensor s = x.std({1}, Scalar(c), true);
    EXPECT_EQ(s.sizes(), (Shape{4, 1}));
    for (int64_t r = 0; r < 4; ++r) {
      double want = ref(r, c);
      if (std::isinf(want)) {
        EXPECT_TRUE(std::isinf(values(v)[size_t(r)]));
        continue;
      }
      EXPECT_NEAR(values(v)[size_t(r)], want, 1e-12);
      EXPECT_NEAR(values(s)[size_t(r)], std::sqrt(want), 1e-12);
    }
  }
  EXPECT_TRUE(var(x, {}, std::nullopt).allclose(var(x)));  // default correction 1, every dim
  auto [vv, vm] = var_mean(x, {0}, Scalar(0));
  EXPECT_TRUE(vv.allclose(var(x, {0}, false)));
  EXPECT_TRUE(vm.allclose(mean(x, {0})));
  auto [sv, sm] = std_mean(x);
  EXPECT_TRUE(sv.allclose(x.std()));
  EXPECT_TRUE(sm.allclose(x.mean()));
  EXPECT_THROW_MSG(var(tensor({1, 2}), {}, Scalar(1)), Error, "std and var only support floating point");
  Tensor p = grad_input(Layout::Transposed);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return var(v[0], {0}, Scalar(0.5)); }, {p}));
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return std::get<0>(std_mean(v[0], {1}, Scalar(2), true)); }, {p}));
}

EMBER_DEVICE_TEST(CompositeReduce, NormWithDtype) {
  Tensor x = tensor({3, 4});
  Tensor n = norm(x, 2, {}, false, kFloat64);
  EXPECT_EQ(n.dtype(), kFloat64);
  EXPECT_EQ(n.item<double>(), 5.0);
  Tensor m = tensor({{3.0f, 4.0f}, {6.0f, 8.0f}}).norm(1, {1}, true, kFloat64);
  EXPECT_EQ(m.sizes(), (Shape{2, 1}));
  EXPECT_EQ(values(m), (std::vector<double>{7, 14}));
}

// ---------------------------------------------------------------- shape
EMBER_DEVICE_TEST(CompositeShape, SqueezeDimsMovedimRavelTile) {
  Tensor x = zeros({1, 3, 1, 2});
  EXPECT_EQ(squeeze(x, {0, 2}).sizes(), (Shape{3, 2}));
  EXPECT_EQ(x.squeeze({-1, 0}).sizes(), (Shape{3, 1, 2}));  // size-2 dims stay
  EXPECT_THROW_MSG(squeeze(x, {0, -4}), Error, "dim 0 appears multiple times in the list of dims");
  EXPECT_THROW_MSG(squeeze(x, {4}), IndexError, "Dimension out of range");
  EXPECT_EQ(squeeze(tensor({1.0}).reshape({}), {0}).dim(), 0);

  Tensor y = arange(24).reshape({2, 3, 4});
  Tensor mv = movedim(y, {0, 1}, {2, 0});
  EXPECT_EQ(mv.sizes(), (Shape{3, 4, 2}));
  EXPECT_TRUE(mv.equal(y.permute({1, 2, 0})));
  EXPECT_TRUE(y.movedim({-1}, {0}).equal(y.permute({2, 0, 1})));
  EXPECT_THROW_MSG(movedim(y, {0, 1}, {2}), Error, "movedim: Invalid source or destination dims: source ([0, 1] dims) "
                   "should contain the same number of dims as destination ([2] dims)");
  EXPECT_THROW_MSG(movedim(y, {0, 0}, {1, 2}), Error, "movedim: repeated dim in `source` ([0, 0])");
  EXPECT_THROW_MSG(movedim(y, {0, 1}, {2, -1}), Error, "movedim: repeated dim in `destination` ([2, -1])");
  EXPECT_EQ(movedim(tensor({1.0}).reshape({}), {0}, {-1}).dim(), 0);

  Tensor t = y.transpose(0, 2);
  EXPECT_EQ(ravel(t).tolist<int64_t>(), t.contiguous().reshape({-1}).tolist<int64_t>());
  Tensor r = tensor({1, 2});
  EXPECT_EQ(tile(r, {2}).tolist<int64_t>(), (std::vector<int64_t>{1, 2, 1, 2}));
  EXPECT_EQ(tile(r, {2, 1}).sizes(), (Shape{2, 2}));
  EXPECT_EQ(tile(arange(6).reshape({2, 3}), {2}).sizes(), (Shape{2, 6}));  // reps padded with leading 1s
}

EMBER_DEVICE_TEST(CompositeShape, UnfoldIsAWindowView) {
  Tensor x = arange(7.0);
  Tensor w = x.unfold(0, 3, 2);
  EXPECT_EQ(w.sizes(), (Shape{3, 3}));
  EXPECT_EQ(w.tolist<double>(), (std::vector<double>{0, 1, 2, 2, 3, 4, 4, 5, 6}));
  EXPECT_TRUE(w.is_alias_of(x));
  Tensor m = arange(12.0).reshape({3, 4}).t();  // non-contiguous source
  Tensor u = unfold(m, 1, 2, 1);
  EXPECT_EQ(u.sizes(), (Shape{4, 2, 2}));
  EXPECT_EQ(u[1][1].tolist<double>(), (std::vector<double>{5, 9}));
  Tensor s = unfold(tensor({5.0}).reshape({}), 0, 1, 1);
  EXPECT_EQ(s.sizes(), (Shape{1}));
  EXPECT_THROW_MSG(unfold(x, 0, 8, 1), Error, "maximum size for tensor at dimension 0 is 7 but size is 8");
  EXPECT_THROW_MSG(unfold(x, 0, 2, 0), Error, "step is 0 but must be > 0");
  EXPECT_THROW_MSG(unfold(x, 0, -1, 1), Error, "size is -1 but must be >= 0");
  Tensor p = grad_input(Layout::Strided);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return v[0].unfold(1, 2, 1) * 1.5; }, {p}));
}

EMBER_DEVICE_TEST(CompositeShape, FlipsAndRot90) {
  Tensor x = arange(6).reshape({2, 3});
  EXPECT_EQ(fliplr(x).tolist<int64_t>(), (std::vector<int64_t>{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(flipud(x).tolist<int64_t>(), (std::vector<int64_t>{3, 4, 5, 0, 1, 2}));
  EXPECT_THROW_MSG(fliplr(arange(3)), Error, "Input must be >= 2-d.");
  EXPECT_THROW_MSG(flipud(tensor({1}).reshape({})), Error, "Input must be >= 1-d.");
  // numpy.rot90([[0,1,2],[3,4,5]]) = [[2,5],[1,4],[0,3]]
  EXPECT_EQ(rot90(x).sizes(), (Shape{3, 2}));
  EXPECT_EQ(rot90(x).tolist<int64_t>(), (std::vector<int64_t>{2, 5, 1, 4, 0, 3}));
  EXPECT_EQ(rot90(x, 2).tolist<int64_t>(), (std::vector<int64_t>{5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(rot90(x, 3).tolist<int64_t>(), (std::vector<int64_t>{3, 0, 4, 1, 5, 2}));
  EXPECT_TRUE(rot90(x, -1).equal(rot90(x, 3)));
  EXPECT_TRUE(rot90(x, 4).equal(x));
  EXPECT_TRUE(x.rot90(1, {1, 0}).equal(rot90(x, 3)));
  EXPECT_THROW_MSG(rot90(x, 1, {0}), Error, "expected total rotation dims == 2, but got dims = 1");
  EXPECT_THROW_MSG(rot90(arange(3)), Error, "expected total dims >= 2, but got total dims = 1");
  EXPECT_THROW_MSG(rot90(x, 1, {0, -2}), Error, "expected rotation dims to be different, but got dim0 = 0 and dim1 = -2");
  EXPECT_THROW_MSG(rot90(x, 1, {0, 3}), Error, "Rotation dim1 out of range, dim1 = 3");
  Tensor p = grad_input(Layout::Transposed);
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return rot90(v[0], 1); }, {p}));
}

EMBER_DEVICE_TEST(CompositeShape, StacksAtleastMeshgrid) {
  Tensor a = tensor({1, 2}), b = tensor({3, 4});
  EXPECT_EQ(hstack({a, b}).tolist<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(vstack({a, b}).sizes(), (Shape{2, 2}));
  EXPECT_EQ(dstack({a, b}).sizes(), (Shape{1, 2, 2}));
  EXPECT_EQ(column_stack({a, b}).tolist<int64_t>(), (std::vector<int64_t>{1, 3, 2, 4}));
  EXPECT_EQ(hstack({zeros({2, 1}), ones({2, 2})}).sizes(), (Shape{2, 3}));
  EXPECT_THROW_MSG(vstack({}), Error, "vstack expects a non-empty TensorList");
  Tensor s = tensor({5}).reshape({});
  EXPECT_EQ(atleast_1d(s).sizes(), (Shape{1}));
  EXPECT_EQ(atleast_2d(a).sizes(), (Shape{1, 2}));
  EXPECT_EQ(atleast_3d(a).sizes(), (Shape{1, 2, 1}));
  EXPECT_EQ(atleast_3d(zeros({2, 3})).sizes(), (Shape{2, 3, 1}));
  EXPECT_EQ(atleast_3d(s).sizes(), (Shape{1, 1, 1}));
  EXPECT_EQ(atleast_2d(std::vector<Tensor>{s, zeros({2, 2, 2})})[1].sizes(), (Shape{2, 2, 2}));

  Tensor x = tensor({1, 2, 3}), y = tensor({4, 5});
  auto ij = meshgrid({x, y});
  EXPECT_EQ(ij[0].sizes(), (Shape{3, 2}));
  EXPECT_EQ(ij[0].tolist<int64_t>(), (std::vector<int64_t>{1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(ij[1].tolist<int64_t>(), (std::vector<int64_t>{4, 5, 4, 5, 4, 5}));
  auto xy = meshgrid({x, y}, "xy");
  EXPECT_EQ(xy[0].sizes(), (Shape{2, 3}));
  EXPECT_EQ(xy[0].tolist<int64_t>(), (std::vector<int64_t>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(xy[1].tolist<int64_t>(), (std::vector<int64_t>{4, 4, 4, 5, 5, 5}));
  EXPECT_THROW_MSG(meshgrid({x, y}, "ji"), Error,
                   "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: ji");
  EXPECT_THROW_MSG(meshgrid({x, tensor({1.0})}), Error, "meshgrid expects all tensors to have the same dtype");
  EXPECT_THROW_MSG(meshgrid({zeros({2, 2})}), Error, "Expected 0D or 1D tensor in the tensor list");
  EXPECT_EQ(broadcast_shapes(std::vector<Shape>{{2, 1}, {3}, {1, 1, 1}}), (Shape{1, 2, 3}));
}

// ---------------------------------------------------------------- indexing, sorting, linalg
EMBER_DEVICE_TEST(CompositeIndex, TakeTakeAlongDimNonzeroNumpy) {
  Tensor x = arange(12).reshape({3, 4}).t();
  Tensor idx = tensor({{0, 11}, {5, 6}});
  EXPECT_EQ(take(x, idx).sizes(), (Shape{2, 2}));
  EXPECT_EQ(take(x, idx).tolist<int64_t>(), (std::vector<int64_t>{0, 11, 9, 2}));  // x read in logical order
  EXPECT_THROW_MSG(take(x, tensor({1.0})), Error, "take(): Expected a long tensor for index, but got Float");

  Tensor a = tensor({{10, 30, 20}, {60, 40, 50}});
  Tensor order = argsort(a, 1);
  EXPECT_TRUE(take_along_dim(a, order, 1).equal(std::get<0>(sort(a, 1))));
  EXPECT_EQ(take_along_dim(a, tensor({{1}}), 0).tolist<int64_t>(), (std::vector<int64_t>{60, 40, 50}));  // broadcasts
  EXPECT_EQ(take_along_dim(a, tensor({5, 0})).tolist<int64_t>(), (std::vector<int64_t>{50, 10}));
  EXPECT_THROW_MSG(take_along_dim(a, tensor({1}), 0), Error,
                   "torch.take_along_dim(): input and indices should have the same number of dimensions");
  Tensor p = grad_input(Layout::Contiguous);
  EXPECT_TRUE(gradcheck([](const variable_list& v) {
    return take_along_dim(v[0], tensor({{2, 0, 0, 1}}), 0);
  }, {p}));

  auto nz = nonzero_numpy(tensor({{0, 1}, {2, 0}}));
  ASSERT_EQ(nz.size(), 2u);
  EXPECT_EQ(nz[0].tolist<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(nz[1].tolist<int64_t>(), (std::vector<int64_t>{1, 0}));
  auto nz0 = nonzero_numpy(tensor({3}).reshape({}));
  ASSERT_EQ(nz0.size(), 1u);
  EXPECT_EQ(nz0[0].tolist<int64_t>(), (std::vector<int64_t>{0}));
  EXPECT_TRUE(argwhere(a.gt(25)).equal(nonzero(a.gt(25))));
  EXPECT_TRUE(msort(a).equal(std::get<0>(sort(a, 0))));
}

EMBER_DEVICE_TEST(CompositeIndex, IndexFillWithTensorValueScatterReduce) {
  Tensor x = zeros({2, 3});
  EXPECT_EQ(index_fill(x, 1, tensor({0, 2}), tensor({7.0}).reshape({})).tolist<double>(),
            (std::vector<double>{7, 0, 7, 7, 0, 7}));
  EXPECT_THROW_MSG(index_fill(x, 1, tensor({0}), tensor({7.0})), Error,
                   "index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s).");
  x.index_fill_(0, tensor({1}), 2.5);
  EXPECT_EQ(x.tolist<double>(), (std::vector<double>{0, 0, 0, 2.5, 2.5, 2.5}));
  Tensor y = zeros({3});
  y.masked_fill_(tensor({true, false, true}), tensor({4.0}).reshape({}));
  EXPECT_EQ(y.tolist<double>(), (std::vector<double>{4, 0, 4}));
  Tensor z = ones({3});
  EXPECT_EQ(scatter(z, 0, tensor({0, 0}), tensor({1.0, 2.0}), "add").tolist<double>(), (std::vector<double>{4, 1, 1}));
  EXPECT_THROW_MSG(scatter(z, 0, tensor({0}), tensor({1.0}), "max"), Error, "reduce argument must be either add or multiply.");
  EXPECT_THROW_MSG(scatter(z, 0, tensor({0}), tensor({1.0}), "multiply"), Error, "not supported by ember");
  EXPECT_THROW_MSG(scatter(z, 0, tensor({0}), Scalar(1.0), "add"), Error, "with a scalar value is not supported");
  z.scatter_(0, tensor({2}), tensor({5.0}), "add");
  EXPECT_EQ(z.tolist<double>(), (std::vector<double>{1, 1, 6}));
}

EMBER_DEVICE_TEST(CompositeLinalg, InnerAddmvTrace) {
  Generator g(1);
  Tensor a = host_randn({2, 3}, g), b = host_randn({4, 5, 3}, g);
  Tensor r = inner(a, b);
  EXPECT_EQ(r.sizes(), (Shape{2, 4, 5}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 5; ++k) {
        double s = 0;
        for (int64_t l = 0; l < 3; ++l) s += a[i][l].item<double>() * b[j][k][l].item<double>();
        EXPECT_NEAR(r[i][j][k].item<double>(), s, 1e-12);
      }
  EXPECT_EQ(inner(f64({1.0, 2.0}), f64({3.0, 4.0})).item<double>(), 11.0);
  EXPECT_EQ(inner(f64({1.0, 2.0}), f64({3.0}).reshape({})).tolist<double>(), (std::vector<double>{3, 6}));
  EXPECT_THROW_MSG(inner(zeros({2, 3}), zeros({4, 4})), Error,
                   "inner() the last dimension must match on both input tensors but got shapes [2, 3] and [4, 4]");
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return inner(v[0], v[1]); },
                        {grad_input(Layout::Contiguous), grad_input(Layout::Transposed, -1, 1, 2)}));

  Tensor m = f64({{1.0, 2.0}, {3.0, 4.0}}), v = f64({1.0, 1.0});
  EXPECT_EQ(values(addmv(f64({1.0, 1.0}), m, v, 2, 3)), (std::vector<double>{11, 23}));
  EXPECT_EQ(values(addmv(f64({kNaN, kInf}), m, v, 0)), (std::vector<double>{3, 7}));  // beta 0 ignores self
  EXPECT_EQ(values(addmv(f64({1.0}).reshape({}), m, v)), (std::vector<double>{4, 8}));
  EXPECT_THROW_MSG(addmv(zeros({2, 2}), m, v), Error, "vector + matrix @ vector expected, got 2, 2, 1");

  EXPECT_EQ(trace(arange(9).reshape({3, 3})).item<int64_t>(), 12);
  EXPECT_EQ(trace(arange(6.0).reshape({2, 3})).item<double>(), 4.0);
  EXPECT_THROW_MSG(trace(arange(3)), Error, "trace: expected a matrix, but got tensor with dim 1");
}

// ---------------------------------------------------------------- random
EMBER_DEVICE_TEST(CompositeRandom, DefaultRangesAndDistributions) {
  Generator g(device(), 11);
  Tensor u8 = empty({4096}, {.dtype = kUInt8});
  u8.random_(&g);
  auto v = u8.tolist<int64_t>();
  EXPECT_EQ(*std::max_element(v.begin(), v.end()), 255);
  Tensor f = empty({4096}, {.dtype = kFloat32});
  f.random_(&g);
  auto fv = f.tolist<double>();
  EXPECT_GT(*std::max_element(fv.begin(), fv.end()), 1e6);  // up to 2^24
  for (double e : fv) EXPECT_EQ(e, std::floor(e));
  Tensor b = empty({1000}, {.dtype = kBool});
  b.random_(&g);
  EXPECT_GT(b.sum().item<int64_t>(), 0);
  Tensor t = empty({1000}, {.dtype = kInt64});
  t.random_(3, &g);
  auto tv = t.tolist<int64_t>();
  EXPECT_EQ(*std::min_element(tv.begin(), tv.end()), 0);
  EXPECT_EQ(*std::max_element(tv.begin(), tv.end()), 2);

  Tensor e = empty({100000}, {.dtype = kFloat64});
  e.exponential_(4.0, &g);
  EXPECT_NEAR(e.mean().item<double>(), 0.25, 0.01);
  EXPECT_GE(e.min().item<double>(), 0.0);
  EXPECT_THROW_MSG(e.exponential_(0.0), Error, "exponential_ expects lambda > 0.0, but found lambda=0");
  Tensor ln = empty({100000}, {.dtype = kFloat64});
  ln.log_normal_(0.5, 0.25, &g);
  EXPECT_NEAR(log(ln).mean().item<double>(), 0.5, 0.01);

  Tensor p = tensor({0.0, 1.0, 0.0, 1.0});
  Tensor bd = empty({3, 4});
  bd.bernoulli_(p, &g);
  EXPECT_EQ(bd.tolist<double>(), (std::vector<double>{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
  Tensor half = zeros({10000}, {.dtype = kFloat64}).bernoulli(0.5, &g);
  EXPECT_EQ(half.dtype(), kFloat64);
  EXPECT_NEAR(half.mean().item<double>(), 0.5, 0.03);

  Tensor mean_t = f64({0.0, 100.0}), std_t = f64({1.0, 0.0});
  Tensor n = normal(mean_t, std_t, &g);
  EXPECT_EQ(n.sizes(), (Shape{2}));
  EXPECT_EQ(n.tolist<double>()[1], 100.0);
  EXPECT_EQ(normal(mean_t, 0.0, &g).tolist<double>(), (std::vector<double>{0, 100}));
  EXPECT_EQ(normal(3.0, zeros({2, 2}, {.dtype = kFloat64}), &g).sizes(), (Shape{2, 2}));
  EXPECT_THROW_MSG(normal(tensor({1}), tensor({1})), Error, kernel_name(device(), "normal_kernel_cpu", "normal_kernel_cuda") + " not implemented for 'Long'");
  Tensor mg = f64({1.0, 2.0}).requires_grad_();
  normal(mg, 0.5, &g).sum().backward();
  EXPECT_EQ(values(mg.grad()), (std::vector<double>{1, 1}));
}
