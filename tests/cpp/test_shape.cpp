// Shape ops that copy or may copy: reshape, flatten/unflatten, movedim, split/chunk/unbind,
// cat/stack, repeat, repeat_interleave, flip, roll, tril/triu, diag. Each is checked against a
// naive reference computed here from the input's logical values, over several dtypes and
// contiguous / transposed / strided / 0-dim / empty inputs.
#include <functional>

#include "ops/op_handles.h"
#include "test_utils.h"

using namespace ember;
using namespace ember::testing;

namespace {

std::vector<DType> test_dtypes() { return {kFloat32, kFloat64, kInt64, kBool, kFloat16, kInt32}; }

// Values 0, 4, -3, 1, ... (a few zeros, so bool tensors get both values), shaped `shape`.
Tensor pattern(IntArrayRef shape, DType dt, int64_t seed = 0) {
  int64_t n = shape_numel(shape);
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = double(((i + seed) * 7) % 11) - 3.0;
  return tensor(v).reshape(shape).to(dt);
}

// A logical 3x4 tensor laid out in several ways (non-contiguous ones are real views).
Tensor make(DType dt, Layout layout, int64_t seed = 0) {
  switch (layout) {
    case Layout::Contiguous: return pattern({3, 4}, dt, seed);
    case Layout::Transposed: return pattern({4, 3}, dt, seed).t();
    case Layout::Strided: return pattern({3, 8}, dt, seed).slice(1, 0, std::nullopt, 2);
    case Layout::ZeroDim: return pattern({}, dt, seed + 2);
    case Layout::Empty: return pattern({0, 4}, dt, seed);
  }
  return {};
}

// Value of a row-major Ref at a multi-index.
double at(const Ref& r, const std::vector<int64_t>& idx) {
  int64_t flat = 0;
  for (size_t d = 0; d < r.shape.size(); ++d) flat = flat * r.shape[d] + idx[d];
  return r.v[flat];
}
// A Ref of `shape` whose element at idx is f(idx).
Ref build(const Shape& shape, const std::function<double(const std::vector<int64_t>&)>& f) {
  Ref out{shape, {}};
  int64_t n = shape_numel(shape);
  for (int64_t i = 0; i < n; ++i) out.v.push_back(f(unravel(i, shape)));
  return out;
}
// Bool tensors compare as 0/1; everything else exactly (copies never round).
::testing::AssertionResult same(const Tensor& actual, const Ref& expected, DType dt) {
  if (actual.dtype() != dt)
    return ::testing::AssertionFailure() << "dtype " << dtype_name(actual.dtype()) << " != " << dtype_name(dt);
  return close_to(actual, expected, kInt64);
}
Ref as_bool_ref(Ref r) {
  for (auto& x : r.v) x = x != 0 ? 1.0 : 0.0;
  return r;
}

}  // namespace

// ---------------------------------------------------------------- reshape

EMBER_DEVICE_TEST(Reshape, ViewWhenStridesAllowCopyOtherwise) {
  for (DType dt : test_dtypes()) {
    Tensor a = pattern({3, 4}, dt);
    Tensor v = a.reshape({2, 6});
    EXPECT_TRUE(v.is_alias_of(a)) << dtype_name(dt);
    EXPECT_EQ(v.storage_offset(), a.storage_offset());
    EXPECT_TRUE(same(v, Ref{{2, 6}, ref_of(a).v}, dt));

    Tensor t = pattern({4, 3}, dt).t();  // (3, 4) with strides (1, 3): flattening needs a copy
    Tensor c = t.reshape({12});
    EXPECT_FALSE(c.is_alias_of(t));
    EXPECT_TRUE(c.is_contiguous());
    EXPECT_TRUE(same(c, Ref{{12}, ref_of(t).v}, dt));
    // Splitting / adding unit dims of a transposed tensor is still a view.
    Tensor t2 = t.reshape({3, 2, 2});
    EXPECT_TRUE(t2.is_alias_of(t));
    EXPECT_TRUE(same(t2, Ref{{3, 2, 2}, ref_of(t).v}, dt));
    Tensor t3 = t.reshape({1, 3, 4, 1});
    EXPECT_TRUE(t3.is_alias_of(t));

    Tensor s = make(dt, Layout::Strided);  // (3, 4) with strides (8, 2)
    Tensor s1 = s.reshape({3, 2, 2});
    EXPECT_TRUE(s1.is_alias_of(s));
    EXPECT_TRUE(same(s1, Ref{{3, 2, 2}, ref_of(s).v}, dt));
    Tensor s2 = s.reshape({-1});  // evenly strided: a view with stride 2
    EXPECT_TRUE(s2.is_alias_of(s));
    EXPECT_EQ(s2.strides(), (Shape{2}));
    EXPECT_TRUE(same(s2, Ref{{12}, ref_of(s).v}, dt));
    Tensor st = s.t();  // (4, 3) with strides (2, 8): no view
    Tensor s3 = st.reshape({-1});
    EXPECT_FALSE(s3.is_alias_of(st));
    EXPECT_TRUE(same(s3, Ref{{12}, ref_of(st).v}, dt));
  }
}

EMBER_DEVICE_TEST(Reshape, InferenceZeroDimAndEmpty) {
  Tensor a = arange(24);
  EXPECT_EQ(a.reshape({2, -1, 4}).sizes(), (Shape{2, 3, 4}));
  EXPECT_EQ(a.reshape({-1}).sizes(), (Shape{24}));
  Tensor z = scalar_tensor(5.0);
  EXPECT_EQ(z.reshape({1, 1}).sizes(), (Shape{1, 1}));
  EXPECT_EQ(z.reshape({-1}).sizes(), (Shape{1}));
  EXPECT_EQ(z.reshape({1}).reshape({}).dim(), 0);
  EXPECT_EQ(z.reshape({}).item<double>(), 5.0);
  Tensor e = zeros({0, 4});
  EXPECT_EQ(e.reshape({4, 0}).sizes(), (Shape{4, 0}));
  EXPECT_EQ(e.reshape({-1}).sizes(), (Shape{0}));
}

EMBER_DEVICE_TEST(Reshape, Errors) {
  Tensor x = arange(6);
  EXPECT_THROW_MSG(x.reshape({2, 5}), Error, "shape '[2, 5]' is invalid for input of size 6");
  EXPECT_THROW_MSG(x.reshape({-1, -1}), Error, "only one dimension can be inferred");
  EXPECT_THROW_MSG(x.reshape({-2, 3}), Error, "invalid shape dimension -2");
  EXPECT_THROW_MSG(x.reshape({4, -1}), Error, "shape '[4, -1]' is invalid for input of size 6");
  EXPECT_THROW_MSG(zeros({0}).reshape({0, -1}), Error,
                   "cannot reshape tensor of 0 elements into shape [0, -1] because the unspecified dimension "
                   "size -1 can be any value and is ambiguous");
}

EMBER_DEVICE_TEST(Reshape, FlattenUnflatten) {
  for (DType dt : test_dtypes()) {
    Tensor a = pattern({2, 3, 4}, dt);
    Ref r = ref_of(a);
    EXPECT_TRUE(same(a.flatten(), Ref{{24}, r.v}, dt));
    EXPECT_TRUE(same(a.flatten(1), Ref{{2, 12}, r.v}, dt));
    EXPECT_TRUE(same(a.flatten(0, 1), Ref{{6, 4}, r.v}, dt));
    EXPECT_TRUE(same(a.flatten(-2, -1), Ref{{2, 12}, r.v}, dt));
    EXPECT_TRUE(a.flatten(1, 1).is_same(a));
    EXPECT_TRUE(a.flatten().is_alias_of(a));
    Tensor t = a.transpose(0, 2);  // (4, 3, 2), non-contiguous
    EXPECT_TRUE(same(t.flatten(), Ref{{24}, ref_of(t).v}, dt));
    EXPECT_TRUE(same(a.unflatten(2, {2, 2}), Ref{{2, 3, 2, 2}, r.v}, dt));
    EXPECT_TRUE(same(a.unflatten(-1, {-1, 1}), Ref{{2, 3, 4, 1}, r.v}, dt));
    EXPECT_TRUE(same(t.unflatten(0, {2, 2}), Ref{{2, 2, 3, 2}, ref_of(t).v}, dt));
    EXPECT_TRUE(t.unflatten(0, {2, 2}).is_alias_of(t));
  }
  Tensor z = scalar_tensor(int64_t(7));
  EXPECT_EQ(z.flatten().sizes(), (Shape{1}));
  EXPECT_EQ(zeros({0, 3}).flatten().sizes(), (Shape{0}));
  Tensor x = arange(6);
  EXPECT_THROW_MSG(x.unflatten(0, {4, 2}), Error,
                   "unflatten: Provided sizes [4, 2] don't multiply up to the size of dim 0 (6) in the input tensor");
  EXPECT_THROW_MSG(x.unflatten(0, IntArrayRef{}), Error, "unflatten: sizes must be non-empty");
  EXPECT_THROW_MSG(zeros({2, 3, 4}).flatten(2, 1), Error,
                   "flatten() has invalid args: start_dim cannot come after end_dim");
  EXPECT_THROW_MSG(x.flatten(1, 0), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}

EMBER_DEVICE_TEST(Reshape, Movedim) {
  for (DType dt : {kFloat32, kInt64, kBool}) {
    Tensor a = pattern({2, 3, 4}, dt);
    Ref r = ref_of(a);
    Tensor m = a.movedim(0, 2);  // (3, 4, 2): m[i, j, k] = a[k, i, j]
    EXPECT_TRUE(m.is_alias_of(a));
    EXPECT_TRUE(same(m, build({3, 4, 2}, [&](auto& i) { return at(r, {i[2], i[0], i[1]}); }), dt));
    Tensor m2 = a.movedim(-1, 0);  // (4, 2, 3): m2[i, j, k] = a[j, k, i]
    EXPECT_TRUE(same(m2, build({4, 2, 3}, [&](auto& i) { return at(r, {i[1], i[2], i[0]}); }), dt));
    EXPECT_TRUE(a.movedim(1, 1).is_same(a));
  }
  EXPECT_THROW_MSG(zeros({2, 3}).movedim(2, 0), IndexError,
                   "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

// ---------------------------------------------------------------- split / chunk / unbind

EMBER_DEVICE_TEST(Split, SizeSizesChunkUnbind) {
  for (DType dt : test_dtypes()) {
    for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
      Tensor a = make(dt, l);  // 3 x 4
      Ref r = ref_of(a);
      auto parts = a.split(3, 1);
      ASSERT_EQ(parts.size(), 2u);
      EXPECT_TRUE(same(parts[0], build({3, 3}, [&](auto& i) { return at(r, {i[0], i[1]}); }), dt));
      EXPECT_TRUE(same(parts[1], build({3, 1}, [&](auto& i) { return at(r, {i[0], i[1] + 3}); }), dt));
      for (auto& p : parts) EXPECT_TRUE(p.is_alias_of(a));

      auto ps = a.split({1, 0, 3}, -1);
      ASSERT_EQ(ps.size(), 3u);
      EXPECT_EQ(ps[1].sizes(), (Shape{3, 0}));
      EXPECT_TRUE(same(ps[2], build({3, 3}, [&](auto& i) { return at(r, {i[0], i[1] + 1}); }), dt));

      auto ch = a.chunk(2, 0);  // sizes 2, 1
      ASSERT_EQ(ch.size(), 2u);
      EXPECT_TRUE(same(ch[1], build({1, 4}, [&](auto& i) { return at(r, {2, i[1]}); }), dt));

      auto ub = a.unbind(1);
      ASSERT_EQ(ub.size(), 4u);
      for (int64_t j = 0; j < 4; ++j)
        EXPECT_TRUE(same(ub[j], build({3}, [&](auto& i) { return at(r, {i[0], j}); }), dt));
      auto ub0 = a.unbind(-2);
      ASSERT_EQ(ub0.size(), 3u);
      EXPECT_TRUE(same(ub0[2], build({4}, [&](auto& i) { return at(r, {2, i[0]}); }), dt));
    }
  }
  // chunk sizes follow ceil(n / chunks), possibly giving fewer chunks.
  auto c = arange(6).chunk(4);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[2].sizes(), (Shape{2}));
  auto c5 = arange(5).chunk(3);
  ASSERT_EQ(c5.size(), 3u);
  EXPECT_EQ(c5[2].sizes(), (Shape{1}));
  // Empty dims: chunk keeps the requested count; split(0) of an empty dim gives one piece.
  auto ce = zeros({0, 2}).chunk(3);
  ASSERT_EQ(ce.size(), 3u);
  EXPECT_EQ(ce[0].sizes(), (Shape{0, 2}));
  EXPECT_EQ(zeros({0}).split(0).size(), 1u);
  EXPECT_EQ(zeros({0, 4}).unbind(0).size(), 0u);
}

EMBER_DEVICE_TEST(Split, Errors) {
  Tensor x = arange(6);
  EXPECT_THROW_MSG(x.split({2, 3}), Error,
                   "split_with_sizes expects split_sizes to sum exactly to 6 (input tensor's size at dimension 0), "
                   "but got split_sizes=[2, 3]");
  EXPECT_THROW_MSG(x.split(-1), Error, "split expects split_size be non-negative, but got split_size=-1");
  EXPECT_THROW_MSG(x.split(0), Error, "split_size can only be 0 if dimension size is 0, but got dimension size of 6");
  EXPECT_THROW_MSG(x.chunk(0), Error, "chunk expects `chunks` to be greater than 0, got: 0");
  EXPECT_THROW_MSG(scalar_tensor(1).chunk(2), Error, "chunk expects at least a 1-dimensional tensor");
  EXPECT_THROW_MSG(scalar_tensor(1).split(1), Error, "split expects at least a 1-dimensional tensor");
  EXPECT_THROW_MSG(scalar_tensor(1).unbind(0), IndexError, "Dimension specified as 0 but tensor has no dimensions");
  EXPECT_THROW_MSG(x.unbind(1), IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}

// ---------------------------------------------------------------- cat / stack

EMBER_DEVICE_TEST(Cat, AgainstReferenceAllLayouts) {
  for (DType dt : test_dtypes()) {
    for (Layout la : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
      for (Layout lb : {Layout::Contiguous, Layout::Strided}) {
        Tensor a = make(dt, la), b = make(dt, lb, 5);
        Ref ra = ref_of(a), rb = ref_of(b);
        Tensor c0 = cat({a, b}, 0);
        EXPECT_TRUE(same(c0, build({6, 4}, [&](auto& i) {
          return i[0] < 3 ? at(ra, {i[0], i[1]}) : at(rb, {i[0] - 3, i[1]}); }), dt))
            << layout_name(la) << " " << layout_name(lb);
        Tensor c1 = cat({a, b, a}, -1);
        EXPECT_TRUE(same(c1, build({3, 12}, [&](auto& i) {
          int64_t j = i[1];
          return j < 4 ? at(ra, {i[0], j}) : j < 8 ? at(rb, {i[0], j - 4}) : at(ra, {i[0], j - 8}); }), dt));
      }
    }
  }
}

EMBER_DEVICE_TEST(Cat, ThreeDMiddleDimAndEmpty) {
  Tensor a = pattern({2, 3, 4}, kFloat32), b = pattern({2, 1, 4}, kFloat32, 3);
  Ref ra = ref_of(a), rb = ref_of(b);
  Tensor c = cat({a, b, zeros({2, 0, 4})}, 1);
  EXPECT_TRUE(same(c, build({2, 4, 4}, [&](auto& i) {
    return i[1] < 3 ? at(ra, {i[0], i[1], i[2]}) : at(rb, {i[0], i[1] - 3, i[2]}); }), kFloat32));
  // Empty 1-D tensors are skipped (legacy behaviour PyTorch keeps) but take part in promotion.
  Tensor m = tensor({{1, 2}});
  Tensor s = cat({zeros({0}, {.dtype = kFloat64}), m, zeros({0}, {.dtype = kFloat64})});
  EXPECT_TRUE(same(s, Ref{{1, 2}, {1, 2}}, kFloat64));
  EXPECT_EQ(cat({zeros({0}), zeros({0})}).sizes(), (Shape{0}));
  EXPECT_EQ(cat({zeros({0, 2}), zeros({0, 2})}).sizes(), (Shape{0, 2}));
  EXPECT_TRUE(same(cat({zeros({0, 2}), m.to(kFloat32)}), Ref{{1, 2}, {1, 2}}, kFloat32));
}

EMBER_DEVICE_TEST(Cat, DtypePromotion) {
  Tensor b = tensor({true}), u8 = tensor({1}, {.dtype = kUInt8}), i8 = tensor({-1}, {.dtype = kInt8});
  EXPECT_TRUE(same(cat({b, u8, i8}), Ref{{3}, {1, 1, -1}}, kInt16));
  Tensor h = tensor({1.5}, {.dtype = kFloat16}), bf = tensor({2.5}, {.dtype = kBFloat16});
  EXPECT_TRUE(same(cat({h, bf}), Ref{{2}, {1.5, 2.5}}, kFloat32));
  Tensor i = tensor({3}), d = tensor({0.25}, {.dtype = kFloat64});
  EXPECT_TRUE(same(cat({i, h}), Ref{{2}, {3, 1.5}}, kFloat16));
  EXPECT_TRUE(same(cat({i, d, b}), Ref{{3}, {3, 0.25, 1}}, kFloat64));
}

EMBER_DEVICE_TEST(Cat, Errors) {
  EXPECT_THROW_MSG(cat(std::vector<Tensor>{}), Error, "torch.cat(): expected a non-empty list of Tensors");
  EXPECT_THROW_MSG(cat({zeros({2, 2}), zeros({3, 3})}, 1), Error,
                   "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor "
                   "number 1 in the list.");
  EXPECT_THROW_MSG(cat({zeros({2, 2}), zeros({2})}, 1), Error, "Tensors must have same number of dimensions: got 2 and 1");
  EXPECT_THROW_MSG(cat({scalar_tensor(1.0), scalar_tensor(2.0)}), Error,
                   "zero-dimensional tensor (at position 0) cannot be concatenated");
  EXPECT_THROW_MSG(cat({zeros({2, 2}), zeros({2, 2})}, 2), IndexError,
                   "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

EMBER_DEVICE_TEST(Stack, AgainstReference) {
  for (DType dt : test_dtypes()) {
    Tensor a = make(dt, Layout::Contiguous), b = make(dt, Layout::Transposed, 4), c = make(dt, Layout::Strided, 9);
    Ref r[3] = {ref_of(a), ref_of(b), ref_of(c)};
    Tensor s0 = stack({a, b, c});
    EXPECT_TRUE(same(s0, build({3, 3, 4}, [&](auto& i) { return at(r[i[0]], {i[1], i[2]}); }), dt));
    Tensor s1 = stack({a, b, c}, 1);
    EXPECT_TRUE(same(s1, build({3, 3, 4}, [&](auto& i) { return at(r[i[1]], {i[0], i[2]}); }), dt));
    Tensor s2 = stack({a, b, c}, -1);
    EXPECT_TRUE(same(s2, build({3, 4, 3}, [&](auto& i) { return at(r[i[2]], {i[0], i[1]}); }), dt));
  }
  // 0-dim inputs stack into a vector; empty 1-D inputs are not skipped.
  EXPECT_TRUE(same(stack({scalar_tensor(1.0), scalar_tensor(2.0)}), Ref{{2}, {1, 2}}, kFloat32));
  EXPECT_EQ(stack({zeros({0}), zeros({0})}).sizes(), (Shape{2, 0}));
  EXPECT_THROW_MSG(stack({zeros({2, 3}), zeros({2, 4})}), Error,
                   "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 4] at entry 1");
  EXPECT_THROW_MSG(stack(std::vector<Tensor>{}), Error, "stack expects a non-empty TensorList");
  EXPECT_THROW_MSG(stack({zeros({2}), zeros({2})}, 3), IndexError,
                   "Dimension out of range (expected to be in range of [-2, 1], but got 3)");
}

// ---------------------------------------------------------------- repeat / repeat_interleave

EMBER_DEVICE_TEST(Repeat, AgainstReference) {
  auto ref_repeat = [](const Ref& r, IntArrayRef reps) {
    int64_t pad = int64_t(reps.size()) - int64_t(r.shape.size());
    Shape out(reps.size());
    for (size_t d = 0; d < reps.size(); ++d)
      out[d] = reps[d] * (int64_t(d) < pad ? 1 : r.shape[d - pad]);
    return build(out, [&](auto& i) {
      std::vector<int64_t> src;
      for (size_t d = pad; d < reps.size(); ++d) src.push_back(i[d] % r.shape[d - pad]);
      return at(r, src);
    });
  };
  for (DType dt : test_dtypes()) {
    for (Layout l : all_layouts()) {
      Tensor a = make(dt, l);
      Ref r = ref_of(a);
      std::vector<Shape> cases = {{2, 3}, {1, 1}, {3, 1}, {1, 2}, {2, 1, 2}, {2, 0}};
      if (l == Layout::ZeroDim) cases = {{}, {3}, {2, 3}};
      for (const Shape& reps : cases) {
        if (int64_t(reps.size()) < a.dim()) continue;
        Tensor out = a.repeat(reps);
        EXPECT_TRUE(same(out, ref_repeat(r, reps), dt)) << dtype_name(dt) << " " << layout_name(l) << " " << IntArrayRef(reps);
        EXPECT_FALSE(out.is_alias_of(a));
      }
    }
  }
  EXPECT_THROW_MSG(zeros({2, 3}).repeat({2}), Error,
                   "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  EXPECT_THROW_MSG(zeros({2, 3}).repeat({2, -1}), Error, "Trying to create tensor with negative dimension -3: [4, -3]");
}

EMBER_DEVICE_TEST(Repeat, InterleaveInt) {
  for (DType dt : test_dtypes()) {
    Tensor a = make(dt, Layout::Transposed);  // 3 x 4
    Ref r = ref_of(a);
    EXPECT_TRUE(same(a.repeat_interleave(2), build({24}, [&](auto& i) { return r.v[i[0] / 2]; }), dt));
    EXPECT_TRUE(same(a.repeat_interleave(3, 0), build({9, 4}, [&](auto& i) { return at(r, {i[0] / 3, i[1]}); }), dt));
    EXPECT_TRUE(same(a.repeat_interleave(2, -1), build({3, 8}, [&](auto& i) { return at(r, {i[0], i[1] / 2}); }), dt));
    EXPECT_EQ(a.repeat_interleave(0, 1).sizes(), (Shape{3, 0}));
  }
  EXPECT_TRUE(same(scalar_tensor(int64_t(3)).repeat_interleave(2), Ref{{2}, {3, 3}}, kInt64));
  EXPECT_THROW_MSG(arange(6).repeat_interleave(-1), Error, "repeats can not be negative");
}

EMBER_DEVICE_TEST(Repeat, InterleaveTensor) {
  for (DType dt : test_dtypes()) {
    Tensor a = make(dt, Layout::Strided);  // 3 x 4
    Ref r = ref_of(a);
    Tensor reps = tensor({2, 0, 1});
    std::vector<int64_t> rows = {0, 0, 2};
    EXPECT_TRUE(same(a.repeat_interleave(reps, 0), build({3, 4}, [&](auto& i) { return at(r, {rows[i[0]], i[1]}); }), dt));
    Tensor reps4 = tensor({1, 3, 0, 1});
    std::vector<int64_t> cols = {0, 1, 1, 1, 3};
    EXPECT_TRUE(same(a.repeat_interleave(reps4, 1), build({3, 5}, [&](auto& i) { return at(r, {i[0], cols[i[1]]}); }), dt));
    // A one-element repeats tensor broadcasts.
    EXPECT_TRUE(same(a.repeat_interleave(tensor({2}), 1), build({3, 8}, [&](auto& i) { return at(r, {i[0], i[1] / 2}); }), dt));
    // No dim: the flattened input.
    Tensor v = a.slice(0, 0, 1);  // 1 x 4
    EXPECT_TRUE(same(v.repeat_interleave(tensor({1, 0, 2, 1})),
                     Ref{{4}, {r.v[0], r.v[2], r.v[2], r.v[3]}}, dt));
  }
  Tensor x = arange(6);
  EXPECT_THROW_MSG(x.repeat_interleave(tensor({1, 2})), Error, "repeats must have the same size as input along dim");
  EXPECT_THROW_MSG(x.repeat_interleave(tensor({{1, 2}})), Error, "repeats must be 0-dim or 1-dim tensor");
  EXPECT_THROW_MSG(x.repeat_interleave(tensor({1, -1, 1, 1, 1, 1})), Error, "repeats can not be negative");
}

// ---------------------------------------------------------------- flip / roll

EMBER_DEVICE_TEST(Flip, AgainstReference) {
  for (DType dt : test_dtypes()) {
    for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Strided, Layout::Empty}) {
      Tensor a = make(dt, l);
      Ref r = ref_of(a);
      int64_t R = a.size(0), C = a.size(1);
      EXPECT_TRUE(same(a.flip({0}), build({R, C}, [&](auto& i) { return at(r, {R - 1 - i[0], i[1]}); }), dt));
      EXPECT_TRUE(same(a.flip({-1}), build({R, C}, [&](auto& i) { return at(r, {i[0], C - 1 - i[1]}); }), dt));
      EXPECT_TRUE(same(a.flip({1, 0}), build({R, C}, [&](auto& i) { return at(r, {R - 1 - i[0], C - 1 - i[1]}); }), dt));
      Tensor n = a.flip(IntArrayRef{});
      EXPECT_TRUE(same(n, r, dt));
      EXPECT_FALSE(n.is_alias_of(a));
    }
    Tensor b = pattern({2, 3, 5}, dt);
    Ref rb = ref_of(b);
    EXPECT_TRUE(same(b.flip({1}), build({2, 3, 5}, [&](auto& i) { return at(rb, {i[0], 2 - i[1], i[2]}); }), dt));
    EXPECT_TRUE(same(b.flip({0, 2}), build({2, 3, 5}, [&](auto& i) { return at(rb, {1 - i[0], i[1], 4 - i[2]}); }), dt));
    Tensor z = make(dt, Layout::ZeroDim);
    EXPECT_TRUE(same(z.flip({0}), ref_of(z), dt));
  }
  EXPECT_THROW_MSG(zeros({2, 3}).flip({0, -2}), Error, "dim 0 appears multiple times in the list of dims");
  EXPECT_THROW_MSG(zeros({2, 3}).flip({2}), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

// A copy whose last dim is short and strided in the source (pixel_shuffle's permute) walks the
// dim the source reads densely innermost instead; the values are the same, in every dtype.
EMBER_DEVICE_TEST(Copy, PermutedViewWithAShortStridedLastDim) {
  for (DType dt : test_dtypes()) {
    Tensor base = pattern({3, 2, 20}, dt);  // strides (40, 20, 1)
    Ref rb = ref_of(base);
    Tensor v = base.permute({0, 2, 1});     // [3, 20, 2], strides (40, 1, 20)
    EXPECT_TRUE(same(v.contiguous(), build({3, 20, 2}, [&](auto& i) { return at(rb, {i[0], i[2], i[1]}); }), dt));
    Tensor into = zeros({3, 20, 2}, {.dtype = kFloat64, .device = device()});
    into.copy_(v);  // with a dtype conversion
    EXPECT_TRUE(same(into, build({3, 20, 2}, [&](auto& i) { return at(rb, {i[0], i[2], i[1]}); }), kFloat64));
  }
}

EMBER_DEVICE_TEST(Roll, AgainstReference) {
  auto mod = [](int64_t a, int64_t n) { return ((a % n) + n) % n; };
  for (DType dt : test_dtypes()) {
    for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
      Tensor a = make(dt, l);
      Ref r = ref_of(a);
      for (int64_t s : {1, -1, 5, 0, -13}) {
        EXPECT_TRUE(same(a.roll({s}, {1}), build({3, 4}, [&](auto& i) { return at(r, {i[0], mod(i[1] - s, 4)}); }), dt));
        EXPECT_TRUE(same(a.roll({s}, {-2}), build({3, 4}, [&](auto& i) { return at(r, {mod(i[0] - s, 3), i[1]}); }), dt));
        // No dims: roll the flattened tensor.
        EXPECT_TRUE(same(a.roll({s}), build({3, 4}, [&](auto& i) { return r.v[mod(i[0] * 4 + i[1] - s, 12)]; }), dt));
      }
      EXPECT_TRUE(same(a.roll({1, -2}, {0, 1}),
                       build({3, 4}, [&](auto& i) { return at(r, {mod(i[0] - 1, 3), mod(i[1] + 2, 4)}); }), dt));
    }
  }
  EXPECT_TRUE(same(scalar_tensor(5.0).roll({1}), Ref{{}, {5}}, kFloat32));
  EXPECT_EQ(zeros({0, 3}).roll({1}, {0}).sizes(), (Shape{0, 3}));
  EXPECT_THROW_MSG(zeros({2, 3}).roll({1, 2}, {0}), Error, "shifts and dimensions must align. shifts: 2, dims:1");
  EXPECT_THROW_MSG(zeros({2, 3}).roll({1}, {0, 1}), Error, "shifts and dimensions must align. shifts: 1, dims:2");
}

// ---------------------------------------------------------------- tril / triu / diag

EMBER_DEVICE_TEST(Tri, AgainstReference) {
  for (DType dt : test_dtypes()) {
    for (Layout l : {Layout::Contiguous, Layout::Transposed, Layout::Strided, Layout::Empty}) {
      Tensor a = make(dt, l);
      Ref r = ref_of(a);
      Shape s = a.sizes();
      for (int64_t k : {-4, -2, -1, 0, 1, 3, 5}) {
        EXPECT_TRUE(same(a.tril(k), build(s, [&](auto& i) { return i[1] <= i[0] + k ? at(r, i) : 0.0; }), dt))
            << dtype_name(dt) << " " << layout_name(l) << " k=" << k;
        EXPECT_TRUE(same(a.triu(k), build(s, [&](auto& i) { return i[1] >= i[0] + k ? at(r, i) : 0.0; }), dt));
      }
    }
    // Batched, and a tall matrix.
    Tensor b = pattern({2, 4, 3}, dt).transpose(0, 1).transpose(0, 1);
    Ref rb = ref_of(b);
    EXPECT_TRUE(same(b.tril(-1), build({2, 4, 3}, [&](auto& i) { return i[2] <= i[1] - 1 ? at(rb, i) : 0.0; }), dt));
    EXPECT_TRUE(same(b.triu(1), build({2, 4, 3}, [&](auto& i) { return i[2] >= i[1] + 1 ? at(rb, i) : 0.0; }), dt));
    Tensor c = pattern({3, 2, 5}, dt).transpose(1, 2);  // (3, 5, 2), non-contiguous
    Ref rc = ref_of(c);
    EXPECT_TRUE(same(c.triu(), build({3, 5, 2}, [&](auto& i) { return i[2] >= i[1] ? at(rc, i) : 0.0; }), dt));
  }
  EXPECT_THROW_MSG(zeros({3}).tril(), Error, "tril: input tensor must have at least 2 dimensions");
  EXPECT_THROW_MSG(zeros({3}).triu(), Error, "triu: input tensor must have at least 2 dimensions");
}

EMBER_DEVICE_TEST(Diag, VectorToMatrixAndBack) {
  for (DType dt : test_dtypes()) {
    Tensor v = pattern({8}, dt).slice(0, 1, std::nullopt, 2);  // 4 elements, stride 2
    Ref rv = ref_of(v);
    for (int64_t k : {0, 1, 2, -1, -3}) {
      int64_t n = 4 + std::abs(k);
      Tensor m = v.diag(k);
      EXPECT_TRUE(same(m, build({n, n}, [&](auto& i) {
        return i[1] - i[0] == k ? rv.v[k >= 0 ? i[0] : i[1]] : 0.0; }), dt)) << dtype_name(dt) << " k=" << k;
    }
    Tensor a = make(dt, Layout::Transposed);  // 3 x 4
    Ref r = ref_of(a);
    for (int64_t k : {0, 1, 3, -1, -2, 4, -3}) {
      int64_t len = std::max<int64_t>(0, k >= 0 ? std::min<int64_t>(3, 4 - k) : std::min<int64_t>(3 + k, 4));
      Tensor d = a.diag(k);
      EXPECT_FALSE(d.is_alias_of(a));
      EXPECT_TRUE(same(d, build({len}, [&](auto& i) {
        return k >= 0 ? at(r, {i[0], i[0] + k}) : at(r, {i[0] - k, i[0]}); }), dt)) << "k=" << k;
    }
  }
  EXPECT_EQ(zeros({0}).diag().sizes(), (Shape{0, 0}));
  EXPECT_THROW_MSG(zeros({2, 2, 2}).diag(), Error, "diag(): Supports 1D or 2D tensors. Got 3D");
  EXPECT_THROW_MSG(scalar_tensor(1.0).diag(), Error, "diag(): Supports 1D or 2D tensors. Got 0D");
}

// The device-agnostic kernels (registered for CompositeBackend, used by backends without their
// own) give the same results as the CPU fast paths.
EMBER_DEVICE_TEST(Composite, CatRepeatRollKernelsMatchCpu) {
  for (DType dt : {kFloat32, kInt64, kBool, kFloat16}) {
    Tensor a = make(dt, Layout::Transposed), b = make(dt, Layout::Contiguous, 3);
    auto cat_generic = ops::cat().kernel(DispatchKey::CompositeBackend);
    auto repeat_generic = ops::repeat().kernel(DispatchKey::CompositeBackend);
    auto roll_generic = ops::roll().kernel(DispatchKey::CompositeBackend);
    ASSERT_NE(cat_generic, nullptr);
    ASSERT_NE(repeat_generic, nullptr);
    ASSERT_NE(roll_generic, nullptr);
    std::vector<Tensor> ab = {a, b};
    EXPECT_TRUE(cat_generic(ab, 1).equal(cat(ab, 1)));
    EXPECT_TRUE(repeat_generic(a, {2, 1, 3}).equal(a.repeat({2, 1, 3})));
    EXPECT_TRUE(roll_generic(a, {1, -1}, {0, 1}).equal(a.roll({1, -1}, {0, 1})));
  }
}
