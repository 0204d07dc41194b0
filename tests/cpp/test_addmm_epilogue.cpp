// _addmm_epilogue (src/ops/addmm_epilogue.cpp, src/cpu/addmm_epilogue_kernels.cpp): a Linear
// with its activation and residual in one op, what ember.compile's matmul-epilogue pass makes
// of addmm -> relu/gelu/add. It must be the three eager ops exactly: on the CPU the same GEMM
// calls and the same elementwise formulas, so the same bits, forward and backward.
#include <optional>

#include "device_test.h"
#include "gradcheck.h"
#include "ops/addmm_epilogue.h"
#include "ops/op_handles.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {

// What eager runs for the same graph: addmm (or mm), the activation, then the residual add.
Tensor eager_reference(const std::optional<Tensor>& bias, const Tensor& m1, const Tensor& m2,
                       const std::optional<Tensor>& residual, int64_t act) {
  Tensor y = bias ? addmm(*bias, m1, m2) : mm(m1, m2);
  if (act == 1) y = relu(y);
  if (act == 2) y = gelu(y, "none");
  if (act == 3) y = gelu(y, "tanh");
  return residual ? add(*residual, y) : y;
}

Tensor fused(const std::optional<Tensor>& bias, const Tensor& m1, const Tensor& m2, const std::optional<Tensor>& residual,
             int64_t act) {
  return std::get<0>(ops::_addmm_epilogue()(bias, m1, m2, residual, act, false));
}

bool same(const Tensor& a, const Tensor& b, bool bitwise) {
  return bitwise ? a.equal(b) : allclose(a, b, 1e-5, 1e-5);
}

}  // namespace

EMBER_DEVICE_TEST(AddmmEpilogue, EqualsAddmmActivationAndAddWithTheirGradients) {
  manual_seed(11);
  const bool bitwise = device().is_cpu();
  // (M, K, N): tiny, split by rows, split by columns, one row, an empty product (K = 0)
  for (auto [M, K, N] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {5, 7, 3}, {160, 48, 40}, {20, 64, 300}, {1, 16, 129}, {6, 0, 4}}) {
    for (int64_t act = 0; act <= 3; ++act) {
      for (int variant = 0; variant < 3; ++variant) {
        const bool with_bias = variant != 1, with_residual = variant != 0;
        Tensor x = randn({M, K}).requires_grad_(true);
        Tensor w = (randn({N, K}) * 0.3).requires_grad_(true);  // mat2 is w.t(): column-major, as linear's
        std::optional<Tensor> b, r;
        if (with_bias) b = randn({N}).requires_grad_(true);
        if (with_residual) r = randn({M, N}).requires_grad_(true);
        Tensor out = fused(b, x, w.t(), r, act);
        Tensor ref = eager_reference(b, x, w.t(), r, act);
        SCOPED_TRACE(std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N) + " act " +
                     std::to_string(act) + " variant " + std::to_string(variant));
        EXPECT_TRUE(same(out, ref, bitwise));
        EXPECT_EQ(out.grad_fn()->name(), "AddmmEpilogueBackward0");
        Tensor g = randn({M, N});
        std::vector<Tensor> inputs = {x, w};
        if (b) inputs.push_back(*b);
        if (r) inputs.push_back(*r);
        auto grads = autograd::grad({out}, inputs, {g});
        auto grads_ref = autograd::grad({ref}, inputs, {g});
        for (size_t k = 0; k < inputs.size(); ++k) EXPECT_TRUE(same(grads[k], grads_ref[k], bitwise)) << "input " << k;
      }
    }
  }
}

EMBER_DEVICE_TEST(AddmmEpilogue, StridedOperandsAndSavedPre) {
  manual_seed(12);
  Tensor x = randn({9, 13}).t();  // (13, 9) column-major mat1
  Tensor w = randn({9, 6});       // row-major mat2
  Tensor b = randn({6}), r = randn({13, 6});
  auto [out, pre] = ops::_addmm_epilogue()(b, x, w, r, 3, true);
  EXPECT_TRUE(same(pre, addmm(b, x, w), device().is_cpu()));
  EXPECT_TRUE(same(out, add(r, gelu(pre, "tanh")), device().is_cpu()));
  auto [out2, none] = ops::_addmm_epilogue()(b, x, w, r, 3, false);
  EXPECT_FALSE(none.defined());
  EXPECT_TRUE(out2.equal(out));
}

TEST(AddmmEpilogue, GradcheckAndDoubleBackward) {
  manual_seed(13);
  auto f64 = [](Shape s) { return randn(s, {.dtype = kFloat64}).requires_grad_(true); };
  Tensor x = f64({4, 5}), w = f64({3, 5}), b = f64({3}), r = f64({4, 3});
  for (int64_t act = 0; act <= 3; ++act) {
    auto fn = [act](const autograd::variable_list& v) {
      return fused(v[2], v[0], v[1].t(), v[3], act).pow(2);
    };
    EXPECT_TRUE(gradcheck(fn, {x, w, b, r})) << act;
    EXPECT_TRUE(gradgradcheck(fn, {x, w, b, r})) << act;
  }
  // relu without a residual differentiates through its saved output
  auto relu_only = [](const autograd::variable_list& v) { return fused(v[2], v[0], v[1].t(), std::nullopt, 1) * 3.0; };
  EXPECT_TRUE(gradcheck(relu_only, {x, w, b}));
}

TEST(AddmmEpilogue, OtherDtypesComposeAndBadArgumentsAreNamed) {
  Tensor x = randn({3, 4}).to(kBFloat16), w = randn({4, 2}).to(kBFloat16), b = randn({2}).to(kBFloat16);
  EXPECT_TRUE(fused(b, x, w, std::nullopt, 1).equal(relu(addmm(b, x, w))));
  EXPECT_THROW_MSG(fused(std::nullopt, randn({3, 4}), randn({5, 2}), std::nullopt, 0), Error,
                   "_addmm_epilogue: expected mat1 (M, K) and mat2 (K, N), got [3, 4] and [5, 2]");
  EXPECT_THROW_MSG(fused(randn({3}), randn({3, 4}), randn({4, 2}), std::nullopt, 0), Error,
                   "_addmm_epilogue: expected a bias of shape (2), got [3]");
  EXPECT_THROW_MSG(fused(std::nullopt, randn({3, 4}), randn({4, 2}), randn({2, 3}), 0), Error,
                   "_addmm_epilogue: expected a residual of shape (3, 2), got [2, 3]");
  EXPECT_THROW_MSG(fused(std::nullopt, randn({3, 4}), randn({4, 2}), std::nullopt, 7), Error,
                   "_addmm_epilogue: activation must be 0 (none), 1 (relu), 2 (gelu) or 3 (gelu tanh), got 7");
  EXPECT_THROW_MSG(fused(std::nullopt, randn({3, 4}), randn({4, 2}, {.dtype = kFloat64}), std::nullopt, 0), Error,
                   "_addmm_epilogue: expected tensors of one dtype, got float32 and float64");
}
