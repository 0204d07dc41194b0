// Storage, TensorImpl, dtype promotion, devices and the TensorIter engine.
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

TEST(DType, PromoteTypesTable) {
  EXPECT_EQ(promote_types(kUInt8, kInt8), kInt16);
  EXPECT_EQ(promote_types(kUInt8, kInt32), kInt32);
  EXPECT_EQ(promote_types(kBool, kUInt8), kUInt8);
  EXPECT_EQ(promote_types(kInt64, kFloat16), kFloat16);
  EXPECT_EQ(promote_types(kFloat16, kBFloat16), kFloat32);
  EXPECT_EQ(promote_types(kFloat32, kFloat64), kFloat64);
  EXPECT_EQ(promote_types(kBFloat16, kFloat32), kFloat32);
  EXPECT_EQ(promote_types(kInt8, kInt16), kInt16);
  // Symmetric over every pair.
  for (DType a : all_dtypes())
    for (DType b : all_dtypes()) EXPECT_EQ(promote_types(a, b), promote_types(b, a));
}

// The full tables, generated with torch 1.13 (torch.promote_types; x + True / 1 / 1.5 for a
// 1-D x; torch.result_type(x, 0-dim tensor)). Row: x's dtype, in all_dtypes() order.
TEST(DType, PromotionTablesMatchTorch) {
  const DType pairs[10][10] = {
      {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kUInt8, kUInt8, kInt16, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kInt8, kInt16, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kInt16, kInt16, kInt16, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kInt32, kInt32, kInt32, kInt32, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kInt64, kInt64, kInt64, kInt64, kInt64, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kFloat16, kFloat16, kFloat16, kFloat16, kFloat16, kFloat16, kFloat16, kFloat32, kFloat32, kFloat64},
      {kBFloat16, kBFloat16, kBFloat16, kBFloat16, kBFloat16, kBFloat16, kFloat32, kBFloat16, kFloat32, kFloat64},
      {kFloat32, kFloat32, kFloat32, kFloat32, kFloat32, kFloat32, kFloat32, kFloat32, kFloat32, kFloat64},
      {kFloat64, kFloat64, kFloat64, kFloat64, kFloat64, kFloat64, kFloat64, kFloat64, kFloat64, kFloat64}
  };
  const DType with_scalar[10][3] = {
      {kBool, kInt64, kFloat32},
      {kUInt8, kUInt8, kFloat32},
      {kInt8, kInt8, kFloat32},
      {kInt16, kInt16, kFloat32},
      {kInt32, kInt32, kFloat32},
      {kInt64, kInt64, kFloat32},
      {kFloat16, kFloat16, kFloat16},
      {kBFloat16, kBFloat16, kBFloat16},
      {kFloat32, kFloat32, kFloat32},
      {kFloat64, kFloat64, kFloat64}
  };
  const DType with_zero_dim[10][10] = {
      {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kUInt8, kUInt8, kUInt8, kUInt8, kUInt8, kUInt8, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kInt8, kInt8, kInt8, kInt8, kInt8, kInt8, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kInt16, kInt16, kInt16, kInt16, kInt16, kInt16, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kInt32, kInt32, kInt32, kInt32, kInt32, kInt32, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kInt64, kInt64, kInt64, kInt64, kInt64, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64},
      {kFloat16, kFloat16, kFloat16, kFloat16, kFloat16, kFloat16, kFloat16, kFloat16, kFloat16, kFloat16},
      {kBFloat16, kBFloat16, kBFloat16, kBFloat16, kBFloat16, kBFloat16, kBFloat16, kBFloat16, kBFloat16, kBFloat16},
      {kFloat32, kFloat32, kFloat32, kFloat32, kFloat32, kFloat32, kFloat32, kFloat32, kFloat32, kFloat32},
      {kFloat64, kFloat64, kFloat64, kFloat64, kFloat64, kFloat64, kFloat64, kFloat64, kFloat64, kFloat64}
  };
  auto dts = all_dtypes();
  for (int i = 0; i < 10; ++i) {
    Tensor x = zeros({2}, {.dtype = dts[i]});
    for (int j = 0; j < 10; ++j) {
      EXPECT_EQ(promote_types(dts[i], dts[j]), pairs[i][j]) << dtype_name(dts[i]) << " " << dtype_name(dts[j]);
      EXPECT_EQ(result_type(x, zeros({}, {.dtype = dts[j]})), with_zero_dim[i][j])
          << dtype_name(dts[i]) << " with 0-dim " << dtype_name(dts[j]);
    }
    EXPECT_EQ(result_type(x, Scalar(true)), with_scalar[i][0]) << dtype_name(dts[i]);
    EXPECT_EQ(result_type(x, Scalar(1)), with_scalar[i][1]) << dtype_name(dts[i]);
    EXPECT_EQ(result_type(x, Scalar(1.5)), with_scalar[i][2]) << dtype_name(dts[i]);
    // The ops agree with result_type.
    if (dts[i] != kBool) EXPECT_EQ((x + 1).dtype(), with_scalar[i][1]);
    EXPECT_EQ((x * 1.5).dtype(), with_scalar[i][2]);
  }
}

TEST(DType, WrappedNumbersAndZeroDim) {
  Tensor i32 = zeros({2}, {.dtype = kInt32});
  Tensor u8 = zeros({2}, {.dtype = kUInt8});
  Tensor f16 = zeros({2}, {.dtype = kFloat16});
  Tensor b = zeros({2}, {.dtype = kBool});
  EXPECT_EQ(result_type(i32, Scalar(5)), kInt32);        // int scalar keeps the tensor's int type
  EXPECT_EQ(result_type(i32, Scalar(2.5)), kFloat32);    // float scalar: the default dtype
  EXPECT_EQ(result_type(u8, Scalar(300)), kUInt8);
  EXPECT_EQ(result_type(f16, Scalar(2.5)), kFloat16);    // never widens within a category
  EXPECT_EQ(result_type(b, Scalar(1)), kInt64);          // bool + int -> int64
  EXPECT_EQ(result_type(b, Scalar(true)), kBool);
  // A 0-dim tensor of a higher category wins; of the same category it does not widen.
  EXPECT_EQ(result_type(i32, scalar_tensor(2.5, {.dtype = kFloat64})), kFloat64);
  EXPECT_EQ(result_type(i32, scalar_tensor(2, {.dtype = kInt64})), kInt32);
  EXPECT_EQ(result_type(scalar_tensor(2, {.dtype = kInt64}), scalar_tensor(1, {.dtype = kInt8})), kInt64);
}

TEST(Device, SpelledAsPyTorch) {
  EXPECT_EQ(Device("cpu").str(), "cpu");
  EXPECT_EQ(Device("cuda:1").str(), "cuda:1");
  EXPECT_EQ(Device("cuda").index, -1);
  EXPECT_TRUE(Device("cuda:0").is_cuda());
  EXPECT_THROW_MSG(Device("tpu:0"), Error, "device type at start of device string: tpu:0");
  EXPECT_THROW_MSG(Device("cuda:x"), Error, "Invalid device string: 'cuda:x'");
}

TEST(Storage, AlignedAndShared) {
  Tensor t = empty({1000});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u);
  Tensor v = t.view({10, 100});
  EXPECT_TRUE(v.is_alias_of(t));
  EXPECT_EQ(v.impl()->version_counter(), t.impl()->version_counter());
  uint32_t before = t._version();
  v.add_(1.0);
  EXPECT_EQ(t._version(), before + 1);
}

TEST(TensorIter, CopyConvertsAndBroadcasts) {
  Tensor dst = zeros({2, 3}, {.dtype = kInt32});
  Tensor src = tensor({1.9, -2.7, 3.2});
  dst.copy_(src);
  EXPECT_EQ(dst.tolist<int32_t>(), (std::vector<int32_t>{1, -2, 3, 1, -2, 3}));
  Tensor h = tensor({0.1, 1000.0, -3.5}).to(kFloat16);
  EXPECT_EQ(h.to(kFloat32).tolist<float>(), (std::vector<float>{0.0999755859375f, 1000.0f, -3.5f}));
  Tensor bf = tensor({1.0 / 3.0}).to(kBFloat16);
  EXPECT_EQ(bf.item<double>(), 0.333984375);
}

TEST(TensorIter, AddAllLayoutsAllDtypes) {
  for (DType dt : all_dtypes()) {
    for (Layout la : all_layouts()) {
      for (Layout lb : {Layout::Contiguous, Layout::Transposed, Layout::ZeroDim}) {
        if (la == Layout::Empty && lb != Layout::ZeroDim) continue;
        Tensor a = make_input(dt, la, -5, 5, 1), b = make_input(dt, lb, -5, 5, 2);
        Tensor c = a + b;
        DType expect = promote_types(dt, dt);
        EXPECT_EQ(c.dtype(), expect);
        Ref r = ref_binary(ref_of(a), ref_of(b), [&](double x, double y) {
          if (dt == kBool) return double(x || y);
          return x + y;
        });
        // Integer overflow wraps for int8/uint8: compare through the dtype.
        Tensor rt = tensor(0.0);
        Ref wrapped = r;
        if (!is_floating(dt) && dt != kBool) {
          Tensor tmp = empty({int64_t(r.v.size())}, {.dtype = kInt64});
          for (size_t i = 0; i < r.v.size(); ++i) tmp[int64_t(i)].fill_(int64_t(r.v[i]));
          wrapped.v = tmp.to(dt).tolist<double>();
        }
        EXPECT_TRUE(close_to(c, wrapped)) << dtype_name(dt) << " " << layout_name(la) << " + " << layout_name(lb);
      }
    }
  }
}

TEST(TensorIter, InPlaceRules) {
  Tensor i = zeros({3}, {.dtype = kInt64});
  EXPECT_THROW_MSG(i.add_(tensor({1.5, 2.5, 3.5})), Error,
                   "result type float32 can't be cast to the desired output type int64");
  Tensor small = zeros({3});
  EXPECT_THROW_MSG(small.add_(ones({2, 3})), Error, "output with shape [3] doesn't match the broadcast shape [2, 3]");
  Tensor big = zeros({2, 3});
  big.add_(tensor({1.0, 2.0, 3.0}));
  EXPECT_EQ(big.tolist<float>(), (std::vector<float>{1, 2, 3, 1, 2, 3}));
}

TEST(TensorIter, BroadcastErrorNamesShapes) {
  EXPECT_THROW_MSG(ones({2, 3}) + ones({4}), Error,
                   "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
}

TEST(Storage, LargeBlocksAreCachedAndReused) {
  empty_cpu_cache();
  EXPECT_EQ(cpu_cached_bytes(), 0u);
  void* first;
  {
    Tensor big = empty({1 << 20});  // 4 MiB
    first = big.data_ptr();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % (2 << 20), 0u);  // huge-page aligned
  }
  EXPECT_EQ(cpu_cached_bytes(), size_t(4) << 20);
  Tensor again = empty({1 << 20});
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_EQ(cpu_cached_bytes(), 0u);
  again = Tensor();
  empty_cpu_cache();
  EXPECT_EQ(cpu_cached_bytes(), 0u);
  Tensor small = empty({10});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data_ptr()) % 64, 0u);
}
