// diff: n-th forward differences against a float64 reference, with prepend/append, bool
// (logical_xor), every layout, 0-dim/empty inputs, PyTorch's errors and gradients.
#include "gradcheck.h"

using namespace ember;
using namespace ember::testing;
using autograd::variable_list;

namespace {

// n-th difference of x's values along dim (row-major reference), each difference rounded to
// dtype as the op's result is.
Ref ref_diff(const Ref& x, int64_t n, int64_t dim, DType dt = kFloat64) {
  Ref cur = x;
  int64_t d = dim < 0 ? dim + int64_t(x.shape.size()) : dim;
  for (int64_t step = 0; step < n && cur.shape[size_t(d)] > 0; ++step) {
    Shape s = cur.shape;
    int64_t len = s[size_t(d)], outer = 1, inner = 1;
    for (int64_t i = 0; i < d; ++i) outer *= s[size_t(i)];
    for (size_t i = size_t(d) + 1; i < s.size(); ++i) inner *= s[i];
    Ref next;
    next.shape = s;
    next.shape[size_t(d)] = len - 1;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j + 1 < len; ++j)
        for (int64_t i = 0; i < inner; ++i)
          next.v.push_back(cur.v[size_t((o * len + j + 1) * inner + i)] - cur.v[size_t((o * len + j) * inner + i)]);
    next.v = tensor(next.v, {.dtype = kFloat64}).to(dt).tolist<double>();
    cur = next;
  }
  return cur;
}

}  // namespace

EMBER_DEVICE_TEST(Diff, MatchesReferenceEveryLayoutOrderAndDim) {
  for (DType dt : {kFloat32, kFloat64, kInt64, kInt16, kFloat16})
    for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided, Layout::Empty})
      for (int64_t dim : {0, 1, -1})
        for (int64_t n : {0, 1, 2, 3, 4, 7}) {
          SCOPED_TRACE(std::string(dtype_name(dt)) + " " + layout_name(layout) + " dim " + std::to_string(dim) +
                       " n " + std::to_string(n));
          Tensor x = make_input(dt, layout, -5, 5);
          Tensor out = diff(x, n, dim);
          EXPECT_EQ(out.dtype(), dt);
          EXPECT_TRUE(close_to(out, ref_diff(ref_of(x), n, dim, dt), dt));
        }
}

EMBER_DEVICE_TEST(Diff, PrependAndAppendJoinAlongDim) {
  Tensor x = tensor({{1.0, 4.0, 9.0}, {2.0, 3.0, 5.0}});
  Tensor pre = tensor({{0.0}, {10.0}}), app = tensor({{20.0, 30.0}, {0.0, 1.0}});
  EXPECT_TRUE(diff(x, 1, 1, pre).equal(tensor({{1.0, 3.0, 5.0}, {-8.0, 1.0, 2.0}})));
  EXPECT_TRUE(diff(x, 1, 1, std::nullopt, app).equal(tensor({{3.0, 5.0, 11.0, 10.0}, {1.0, 2.0, -5.0, 1.0}})));
  EXPECT_TRUE(diff(x, 2, -1, pre, app).equal(diff(cat({pre, x, app}, 1), 2, 1)));
  // Along dim 0 the operands must match in dim 1.
  EXPECT_TRUE(diff(x, 1, 0, tensor({{0.0, 0.0, 0.0}})).equal(tensor({{1.0, 4.0, 9.0}, {1.0, -1.0, -4.0}})));
  // n = 0 copies the input and ignores prepend/append.
  Tensor same = diff(x, 0, 1, pre, app);
  EXPECT_TRUE(same.equal(x));
  EXPECT_FALSE(same.is_alias_of(x));
  // Dtypes promote through the join.
  EXPECT_EQ(diff(tensor({1, 2, 4}), 1, 0, tensor({0.5})).dtype(), kFloat32);
}

EMBER_DEVICE_TEST(Diff, OrderBeyondTheLengthLeavesAnEmptyDim) {
  Tensor x = tensor({1.0, 2.0, 4.0});
  EXPECT_EQ(diff(x, 3).sizes(), (Shape{0}));
  EXPECT_EQ(diff(x, 10).sizes(), (Shape{0}));
  EXPECT_EQ(diff(zeros({2, 3}), 5, 1).sizes(), (Shape{2, 0}));
  EXPECT_EQ(diff(zeros({0}), 2).sizes(), (Shape{0}));
}

EMBER_DEVICE_TEST(Diff, BoolUsesLogicalXor) {
  Tensor b = tensor({true, true, false, true, false, false});
  Tensor d1 = diff(b);
  EXPECT_EQ(d1.dtype(), kBool);
  EXPECT_TRUE(d1.equal(tensor({false, true, true, true, false})));
  EXPECT_TRUE(diff(b, 2).equal(tensor({true, false, false, true})));
}

EMBER_DEVICE_TEST(Diff, ErrorsAsPyTorch) {
  Tensor x = zeros({2, 3});
  EXPECT_THROW_MSG(diff(tensor({1.0}).reshape({})), Error, "diff expects input to be at least one-dimensional");
  EXPECT_THROW_MSG(diff(x, -1), Error, "order must be non-negative but got -1");
  EXPECT_THROW_MSG(diff(x, 1, 1, zeros({3})), Error, "diff expects prepend or append to be the same dimension as input");
  EXPECT_THROW_MSG(diff(x, 1, 1, std::nullopt, zeros({3, 1})), Error,
                   "diff expects the shape of tensor to prepend or append to match that of input except along the "
                   "differencing dimension; input.size(0) = 2, but got tensor.size(0) = 3");
  EXPECT_THROW_MSG(diff(x, 1, 2), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

EMBER_DEVICE_TEST(Diff, Gradients) {
  for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided})
    for (int64_t dim : {0, 1})
      for (int64_t n : {1, 2}) {
        SCOPED_TRACE(std::string(layout_name(layout)) + " dim " + std::to_string(dim) + " n " + std::to_string(n));
        Tensor x = grad_input(layout);
        EXPECT_TRUE(gradcheck([=](const variable_list& v) { return diff(v[0], n, dim); }, {x}));
      }
  Tensor x = grad_input(Layout::Contiguous);
  Tensor pre = grad_input(Layout::Contiguous, -1, 1, 3).narrow(1, 0, 1).detach().requires_grad_();
  Tensor app = grad_input(Layout::Transposed, -1, 1, 4).narrow(1, 0, 2);
  app = app.detach().requires_grad_();
  EXPECT_TRUE(gradcheck([](const variable_list& v) { return diff(v[0], 2, 1, v[1], v[2]); }, {x, pre, app}));
  EXPECT_TRUE(gradgradcheck([](const variable_list& v) { return diff(v[0] * v[0], 1, 0); }, {x}));
  EXPECT_TRUE(x.diff(1, 0).equal(diff(x, 1, 0)));
}
