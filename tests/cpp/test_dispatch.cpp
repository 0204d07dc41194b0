// The dispatcher: a backend is added by registration alone, layers see every op.
#include <atomic>
#include <map>

#include "ops/op_handles.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {

// A fake accelerator living in host memory, registered into the PrivateUse1 slot.
std::atomic<int> g_allocs{0};
std::map<std::string, int> g_calls;

class FakeAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device) override {
    ++g_allocs;
    void* p = std::malloc(nbytes ? nbytes : 1);
    return {p, [](void* ptr, void*) { std::free(ptr); }, nullptr};
  }
};

// Sees a fake-device tensor's memory as a CPU tensor, so the fake kernels can reuse CPU math.
Tensor as_cpu(const Tensor& t) {
  return from_blob(t.data_ptr(), t.sizes(), t.strides(), {.dtype = t.dtype()});
}

Tensor fake_empty(IntArrayRef size, TensorOptions opts) {
  ++g_calls["empty"];
  DType dt = opts.dtype_or_default();
  auto storage = std::make_shared<Storage>(size_t(shape_numel(size) * element_size(dt)), opts.device_or());
  return Tensor(std::make_shared<TensorImpl>(storage, dt, size.vec(), contiguous_strides(size), 0));
}
Tensor& fake_fill(Tensor& self, const Scalar& v) {
  ++g_calls["fill_"];
  Tensor c = as_cpu(self);
  fill_(c, v);
  return self;
}
Tensor& fake_copy(Tensor& self, const Tensor& src, bool) {
  ++g_calls["copy_"];
  Tensor dst = as_cpu(self);
  copy_(dst, src.device().type == DeviceType::PrivateUse1 ? as_cpu(src) : src);
  return self;
}
Tensor fake_add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  ++g_calls["add"];
  Tensor r = add(as_cpu(a), as_cpu(b), alpha);
  Tensor out = fake_empty(r.sizes(), {.dtype = r.dtype(), .device = a.device()});
  Tensor oc = as_cpu(out);
  copy_(oc, r);
  return out;
}

struct RegisterFakeBackend {
  RegisterFakeBackend() {
    static FakeAllocator alloc;
    set_allocator(DeviceType::PrivateUse1, &alloc);
    ops::empty().set_kernel(DispatchKey::PrivateUse1, fake_empty);
    ops::fill_().set_kernel(DispatchKey::PrivateUse1, fake_fill);
    ops::copy_().set_kernel(DispatchKey::PrivateUse1, fake_copy);
    ops::add().set_kernel(DispatchKey::PrivateUse1, fake_add);
  }
} register_fake_backend;

}  // namespace

TEST(Dispatch, NewDeviceByRegistrationOnly) {
  Device fake(DeviceType::PrivateUse1, 0);
  EXPECT_EQ(fake.str(), "privateuseone:0");
  g_calls.clear();
  int allocs_before = g_allocs;
  Tensor a = ones({2, 3}, {.device = fake});
  Tensor b = full({2, 3}, 2.5, {.device = fake});
  EXPECT_EQ(a.device(), fake);
  Tensor c = a + b;
  EXPECT_EQ(c.device(), fake);
  EXPECT_EQ(g_calls["add"], 1);
  EXPECT_EQ(g_calls["empty"], 3);
  EXPECT_EQ(g_calls["fill_"], 2);
  EXPECT_GE(g_allocs - allocs_before, 3);
  // Back to the CPU through the fake backend's copy_.
  Tensor host = c.to(Device("cpu"));
  EXPECT_EQ(host.tolist<float>(), std::vector<float>(6, 3.5f));
  EXPECT_EQ(g_calls["copy_"], 1);
}

TEST(Dispatch, ViewOpsAreDeviceAgnostic) {
  Device fake(DeviceType::PrivateUse1, 0);
  Tensor a = zeros({2, 3}, {.device = fake});
  Tensor v = a.t().unsqueeze(0).slice(2, 1);
  EXPECT_EQ(v.device(), fake);
  EXPECT_EQ(v.sizes(), (Shape{1, 3, 1}));
  EXPECT_TRUE(v.is_alias_of(a));
}

TEST(Dispatch, MissingKernelIsAClearError) {
  Tensor a = zeros({2}, {.device = Device(DeviceType::PrivateUse1, 0)});
  EXPECT_THROW_MSG(mul(a, a), NotImplementedError,
                   "Could not run 'mul' with arguments from the 'PrivateUse1' backend");
}

TEST(Dispatch, ObserversSeeEveryOpIncludingNested) {
  std::vector<std::string> seen;
  int id = add_op_observer({.on_begin = [&](const char* n) { seen.emplace_back(n); }, .on_end = nullptr});
  Tensor a = zeros({4});
  Tensor b = a + 1;  // add; the wrapped scalar's empty/fill_ and the cast are nested ops
  remove_op_observer(id);
  Tensor c = a + 1;  // not observed any more
  EXPECT_NE(std::find(seen.begin(), seen.end(), "add"), seen.end());
  EXPECT_NE(std::find(seen.begin(), seen.end(), "empty"), seen.end());
  size_t n = seen.size();
  (void)c;
  EXPECT_EQ(seen.size(), n);
}

TEST(Dispatch, LayerKernelWrapsAnOpWithoutTouchingIt) {
  // A layer (as autograd/autocast will be) registered for one op, switched on per thread.
  static int layer_calls = 0;
  ops::mul().set_kernel(DispatchKey::Autocast, [](const Tensor& x, const Tensor& y) -> Tensor {
    ++layer_calls;
    ExcludeDispatchKeyGuard below(DispatchKey::Autocast);
    return ops::mul()(x.to(kFloat64), y.to(kFloat64));  // e.g. a precision policy
  });
  Tensor x = ones({3});
  EXPECT_EQ(mul(x, x).dtype(), kFloat32);  // layer off
  {
    IncludeDispatchKeyGuard on(DispatchKey::Autocast);
    Tensor r = mul(x, x);
    EXPECT_EQ(r.dtype(), kFloat64);
    EXPECT_EQ(layer_calls, 1);
  }
  EXPECT_EQ(mul(x, x).dtype(), kFloat32);
  ops::mul().set_kernel(DispatchKey::Autocast, nullptr);
}
