// The meta device: tensors with sizes, strides and a dtype but no memory. Shapes and dtypes are
// checked against the CPU's results for the same ops (the meta kernels must agree with them).
#include "ember/nn.h"
#include "test_utils.h"

using namespace ember;

namespace {
const Device kMetaDevice(DeviceType::Meta);

// The meta result of fn has the CPU result's sizes and dtype.
template <class Fn> void expect_like_cpu(Fn fn, std::vector<Tensor> cpu_inputs) {
  std::vector<Tensor> meta_inputs;
  for (const auto& t : cpu_inputs) meta_inputs.push_back(t.dim() == 0 ? t : t.to(kMetaDevice));
  Tensor want = fn(cpu_inputs), got = fn(meta_inputs);
  EXPECT_TRUE(got.is_meta());
  EXPECT_EQ(got.sizes(), want.sizes());
  EXPECT_EQ(got.dtype(), want.dtype()) << dtype_name(got.dtype()) << " vs " << dtype_name(want.dtype());
}
}  // namespace

TEST(MetaDevice, FactoriesTakeNoMemory) {
  // 4 TiB of float32: only possible because nothing is allocated.
  Tensor huge = empty({int64_t(1) << 20, int64_t(1) << 20}, {.device = kMetaDevice});
  EXPECT_TRUE(huge.is_meta());
  EXPECT_EQ(huge.device().str(), "meta");
  EXPECT_EQ(huge.numel(), int64_t(1) << 40);
  EXPECT_EQ(huge.strides(), (Shape{int64_t(1) << 20, 1}));
  Tensor r = randn({1 << 20, 1 << 12}, {.device = kMetaDevice});
  EXPECT_EQ(r.sizes(), (Shape{1 << 20, 1 << 12}));
  EXPECT_EQ(zeros({3}, {.dtype = kInt32, .device = kMetaDevice}).dtype(), kInt32);
  EXPECT_EQ(arange(0, 10, 3, {.device = kMetaDevice}).sizes(), (Shape{4}));
  EXPECT_EQ(arange(0.0, 1.0, 0.25, {.device = kMetaDevice}).sizes(), (Shape{4}));
  EXPECT_THROW_MSG(arange(0, 10, 0, {.device = kMetaDevice}), Error, "step must be nonzero");
  EXPECT_EQ(linspace(0, 1, 7, {.device = kMetaDevice}).sizes(), (Shape{7}));
  // Views and in-place fills keep working on the empty storage.
  Tensor w = empty({6, 4}, {.device = kMetaDevice});
  EXPECT_EQ(w.t().sizes(), (Shape{4, 6}));
  EXPECT_EQ(w.view({2, 12}).sizes(), (Shape{2, 12}));
  EXPECT_EQ(w.slice(0, 1, 5).sizes(), (Shape{4, 4}));
  EXPECT_TRUE(w.uniform_(-1, 1).is_same(w));
  EXPECT_TRUE(fill_(w, 3).is_meta());
  EXPECT_THROW_MSG(w.uniform_(1, 0), Error, "from=1 > to=0");
}

TEST(MetaDevice, DefaultDeviceBuildsAModuleWithoutMemory) {
  DefaultDeviceGuard guard(kMetaDevice);
  nn::Linear big(1 << 16, 1 << 16);  // 16 GiB of weights on the CPU
  EXPECT_TRUE(big.weight.is_meta());
  EXPECT_EQ(big.weight.sizes(), (Shape{1 << 16, 1 << 16}));
  Tensor y = big.forward(empty({8, 1 << 16}));
  EXPECT_TRUE(y.is_meta());
  EXPECT_EQ(y.sizes(), (Shape{8, 1 << 16}));
}

TEST(MetaDevice, ElementwiseShapesAndDtypesMatchTheCpu) {
  Tensor f = randn({2, 1, 3}), i = arange(4).view({4, 1}), b = lt(randn({3}), 0.0), d = randn({3}, {.dtype = kFloat64});
  auto v = [](std::vector<Tensor> x) { return x; };
  expect_like_cpu([](auto x) { return add(x[0], x[1]); }, v({f, i}));
  expect_like_cpu([](auto x) { return mul(x[0], x[1]); }, v({i, b}));
  expect_like_cpu([](auto x) { return div(x[0], x[1]); }, v({i, i}));
  expect_like_cpu([](auto x) { return sqrt(x[0]); }, v({i}));
  expect_like_cpu([](auto x) { return abs(x[0]); }, v({i}));
  expect_like_cpu([](auto x) { return lt(x[0], x[1]); }, v({f, d}));
  expect_like_cpu([](auto x) { return add(x[0], x[1]); }, v({f, d}));
  expect_like_cpu([](auto x) { return where(x[0], x[1], x[2]); }, v({b, i, d}));
  expect_like_cpu([](auto x) { return add(x[0], x[1]); }, v({i, tensor(2.5)}));  // a host number keeps meta
  expect_like_cpu([](auto x) { return clamp(x[0], std::optional<Scalar>(0.5), std::optional<Scalar>()); }, v({i}));
  expect_like_cpu([](auto x) { return gelu(x[0]); }, v({f}));
  expect_like_cpu([](auto x) { return relu(x[0]); }, v({f}));
  // An in-place op checks that the result fits.
  Tensor mi = i.to(kMetaDevice);
  EXPECT_THROW_MSG(mi.add_(randn({4, 1}, {.device = kMetaDevice})), Error, "can't be cast to the desired output type");
  EXPECT_THROW_MSG(add(randn({2}, {.device = kMetaDevice}), randn({3}, {.device = kMetaDevice})), Error,
                   "must match the size");
  EXPECT_THROW_MSG(add(randn({2}, {.device = kMetaDevice}), randn({2})), Error,
                   "Tensor on device cpu is not on the expected device meta!");
}

TEST(MetaDevice, ReductionsProductsAndShapeOps) {
  Tensor f = randn({4, 5, 6}), i = arange(24).view({4, 6});
  auto v = [](std::vector<Tensor> x) { return x; };
  expect_like_cpu([](auto x) { return sum(x[0], {1}, true); }, v({f}));
  expect_like_cpu([](auto x) { return sum(x[0]); }, v({i}));
  expect_like_cpu([](auto x) { return mean(x[0], {0, 2}); }, v({f}));
  expect_like_cpu([](auto x) { return amax(x[0], {-1}); }, v({f}));
  expect_like_cpu([](auto x) { return argmax(x[0], 1, false); }, v({f}));
  expect_like_cpu([](auto x) { return softmax(x[0], -1); }, v({f}));
  expect_like_cpu([](auto x) { return cumsum(x[0], 1); }, v({i}));
  expect_like_cpu([](auto x) { return matmul(x[0], x[1]); }, v({f, randn({6, 3})}));
  expect_like_cpu([](auto x) { return matmul(x[0], x[1]); }, v({f, randn({4, 6, 2})}));
  expect_like_cpu([](auto x) { return cat({x[0], x[1]}, 1); }, v({i, arange(8).view({4, 2})}));
  expect_like_cpu([](auto x) { return x[0].reshape({-1}); }, v({f}));
  EXPECT_THROW_MSG(mean(i.to(kMetaDevice)), Error, "mean(): could not infer output dtype");
  EXPECT_THROW_MSG(mm(randn({2, 3}, {.device = kMetaDevice}), randn({4, 5}, {.device = kMetaDevice})), Error,
                   "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
}

TEST(MetaDevice, AutogradRunsOnShapes) {
  Tensor x = randn({3, 4}, {.device = kMetaDevice}).requires_grad_();
  Tensor w = randn({4, 2}, {.device = kMetaDevice}).requires_grad_();
  Tensor loss = sum(tanh(matmul(x, w)));
  loss.backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(x.grad().is_meta());
  EXPECT_EQ(x.grad().sizes(), x.sizes());
  EXPECT_EQ(w.grad().sizes(), w.sizes());
}

TEST(MetaDevice, DataIsNeverRead) {
  Tensor m = empty({2, 3}, {.device = kMetaDevice});
  EXPECT_THROW_MSG(m.data_ptr(), NotImplementedError, "Cannot access data of a meta tensor");
  EXPECT_THROW_MSG(m.to(Device(kCPU)), NotImplementedError, "Cannot copy out of meta tensor; no data!");
  EXPECT_THROW_MSG(sum(m).item(), Error, "Tensor.item() cannot be called on meta tensors");
  Tensor into = empty({2, 3}, {.device = kMetaDevice});
  EXPECT_TRUE(copy_(into, randn({3})).is_meta());  // a copy into meta has nothing to move
  EXPECT_THROW_MSG(copy_(into, randn({4})), Error, "must match the size");
  EXPECT_EQ(m.str(), "tensor(..., device='meta', size=(2, 3))");
  EXPECT_EQ(empty({4}, {.dtype = kInt64, .device = kMetaDevice}).str(),
            "tensor(..., device='meta', size=(4,), dtype=ember.int64)");
  // An op with no meta kernel says so instead of running a CPU kernel on missing data.
  EXPECT_THROW_MSG(nonzero(m), NotImplementedError, "with arguments from the 'Meta' backend");
}

TEST(MetaDevice, ToEmptyGivesAMetaModuleMemoryAndKeepsTiedTensorsTied) {
  struct Tied : nn::Module {
    Tensor a, b, stat;
    Tied() {
      a = nn::make_parameter(randn({3, 4}));
      b = a;  // one tensor in two slots, as a tied LM head
      register_parameter("a", &a);
      register_parameter("b", &b);
      stat = register_buffer("stat", zeros({4}));
    }
  };
  std::shared_ptr<Tied> m;
  {
    DefaultDeviceGuard guard(kMetaDevice);
    m = std::make_shared<Tied>();
  }
  EXPECT_TRUE(m->named_parameters()[0].second.is_meta());
  m->to_empty(Device(kCPU));
  auto params = m->named_parameters();
  ASSERT_EQ(params.size(), 1u);  // still one tensor
  EXPECT_TRUE(m->a.is_same(m->b));
  EXPECT_TRUE(m->a.is_cpu());
  EXPECT_EQ(m->a.sizes(), (Shape{3, 4}));
  EXPECT_TRUE(m->a.requires_grad());
  auto buffers = m->named_buffers();
  ASSERT_EQ(buffers.size(), 1u);
  EXPECT_TRUE(buffers[0].second.is_cpu());
  EXPECT_FALSE(buffers[0].second.requires_grad());
}
