// Factory functions: zeros, ones, full, tensor, arange, linspace, eye, random tensors,
// the *_like forms and from_blob.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype_dispatch.h"
#include "ember/autograd/grad_mode.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember {

Tensor zeros(IntArrayRef size, TensorOptions opts) {
  NoGradGuard no_grad;
  Tensor t = empty(size, opts);
  return zero_(t);
}
Tensor ones(IntArrayRef size, TensorOptions opts) {
  NoGradGuard no_grad;
  Tensor t = empty(size, opts);
  return fill_(t, 1);
}
Tensor full(IntArrayRef size, const Scalar& v, TensorOptions opts) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  if (!opts.dtype) opts.dtype = v.dtype();
  Tensor t = empty(size, opts);
  return fill_(t, v);
}

namespace {
// Walks nested braces: checks they form a rectangle, records the shape, and finds the dtype.
void infer_init(const TensorInit& node, size_t depth, Shape& shape, bool& shape_set, std::optional<DType>& dt,
                std::vector<Scalar>& flat) {
  if (node.is_scalar()) {
    EMBER_CHECK_VALUE(!shape_set || shape.size() == depth, "tensor(): expected sequence of length ",
                      shape_set && depth < shape.size() ? shape[depth] : 0, " at dim ", depth, " (got a number)");
    if (!shape_set) { shape.resize(depth); shape_set = true; }
    DType t = node.scalar().dtype();
    dt = dt ? promote_types(*dt, t) : t;
    flat.push_back(node.scalar());
    return;
  }
  int64_t n = int64_t(node.children().size());
  if (!shape_set) {
    if (shape.size() <= depth) shape.push_back(n);
    if (n == 0) { shape.resize(depth + 1); shape_set = true; }
  }
  EMBER_CHECK_VALUE(depth < shape.size() && shape[depth] == n, "tensor(): expected sequence of length ",
                    depth < shape.size() ? shape[depth] : 0, " at dim ", depth, " (got ", n, ")");
  for (const auto& c : node.children()) infer_init(c, depth + 1, shape, shape_set, dt, flat);
}
}  // namespace

Tensor tensor(const TensorInit& values, TensorOptions opts) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  Shape shape;
  bool shape_set = false;
  std::optional<DType> inferred;
  std::vector<Scalar> flat;
  infer_init(values, 0, shape, shape_set, inferred, flat);
  if (!shape_set) shape_set = true;
  DType dt = opts.dtype_or(inferred.value_or(default_dtype()));
  // Fill on the CPU in float64/int64 (exact for every source value), then convert once.
  bool floating = std::any_of(flat.begin(), flat.end(), [](const Scalar& s) { return s.is_floating(); });
  Tensor staging = empty(shape, {.dtype = floating ? kFloat64 : kInt64, .device = kCPU});
  if (floating) {
    double* p = staging.data_ptr<double>();
    for (size_t i = 0; i < flat.size(); ++i) p[i] = flat[i].to_double();
  } else {
    int64_t* p = staging.data_ptr<int64_t>();
    for (size_t i = 0; i < flat.size(); ++i) p[i] = flat[i].to_int();
  }
  Tensor out = empty(shape, {.dtype = dt, .device = opts.device_or()});
  copy_(out, staging);
  return out.requires_grad_(opts.requires_grad);
}

template <class T> Tensor tensor(const std::vector<T>& values, TensorOptions opts) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  Tensor src = from_blob(const_cast<T*>(values.data()), {int64_t(values.size())}, TensorOptions{.dtype = dtype_of<T>});
  Tensor out = empty({int64_t(values.size())}, {.dtype = opts.dtype_or(dtype_of<T>), .device = opts.device_or()});
  copy_(out, src);
  return out;
}
template Tensor tensor(const std::vector<float>&, TensorOptions);
template Tensor tensor(const std::vector<double>&, TensorOptions);
template Tensor tensor(const std::vector<int64_t>&, TensorOptions);
template Tensor tensor(const std::vector<int32_t>&, TensorOptions);
template Tensor tensor(const std::vector<uint8_t>&, TensorOptions);
template Tensor tensor(const std::vector<int8_t>&, TensorOptions);
template Tensor tensor(const std::vector<int16_t>&, TensorOptions);

Tensor arange(const Scalar& end, TensorOptions opts) { return arange(0, end, 1, opts); }
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions opts) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  if (!opts.dtype) {
    bool floating = start.is_floating() || end.is_floating() || step.is_floating();
    opts.dtype = floating ? default_dtype() : kInt64;
  }
  Tensor t = ops::arange()(start, end, step, opts);
  return t.requires_grad_(opts.requires_grad);
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions opts) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  EMBER_CHECK(steps >= 0, "number of steps must be non-negative");
  Tensor t = ops::linspace()(start, end, steps, opts);
  return t.requires_grad_(opts.requires_grad);
}

Tensor logspace(const Scalar& start, const Scalar& end, int64_t steps, double base, TensorOptions opts) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  DType dt = opts.dtype_or_default();
  Tensor exps = linspace(start, end, steps, {.dtype = kFloat64, .device = opts.device});
  Tensor out = pow(scalar_tensor(base, {.dtype = kFloat64, .device = opts.device}), exps);
  out = out.to(dt);
  return out.requires_grad_(opts.requires_grad);
}

Tensor eye(int64_t n, std::optional<int64_t> m, TensorOptions opts) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  EMBER_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  int64_t cols = m.value_or(n);
  EMBER_CHECK(cols >= 0, "m must be greater or equal to 0, got ", cols);
  Tensor t = zeros({n, cols}, opts);
  if (n > 0 && cols > 0) {
    Tensor d = diagonal(t);
    fill_(d, 1);
  }
  return t;
}

// ---- random
Tensor& uniform_(Tensor& self, double from, double to, Generator* gen) {
  EMBER_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  if (self.is_complex()) {  // torch: real and imaginary parts each uniform, one real stream
    Tensor parts = view_as_real(self);
    ops::uniform_()(parts, from, to, gen);
  } else {
    ops::uniform_()(self, from, to, gen);
  }
  self.impl()->bump_version();
  return self;
}
Tensor& normal_(Tensor& self, double mean, double std, Generator* gen) {
  EMBER_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  if (self.is_complex()) {  // torch: parts normal with std / sqrt(2), so E|z|^2 = std^2
    Tensor parts = view_as_real(self);
    ops::normal_()(parts, mean, std / std::sqrt(2.0), gen);
  } else {
    ops::normal_()(self, mean, std, gen);
  }
  self.impl()->bump_version();
  return self;
}
namespace {
// torch's check_from_to_in_range: the bounds must be values of self's dtype (for floating
// dtypes: finite ones; torch only warns beyond +-2^digits, where integers stop being exact).
void check_random_bounds(const Tensor& self, int64_t from, int64_t to_inc) {
  DType dt = self.dtype();
  const char* name = scalar_type_name(dt);
  if (is_floating(dt)) {
    if (dt == kFloat16) {  // the only floating dtype whose largest value is below int64's
      EMBER_CHECK_VALUE(from >= -65504 && from <= 65504, "from is out of bounds for ", name);
      EMBER_CHECK_VALUE(to_inc >= -65504 && to_inc <= 65504, "to - 1 is out of bounds for ", name);
    }
    return;
  }
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  switch (dt) {
    case kBool: lo = 0; hi = 1; break;
    case kUInt8: lo = 0; hi = 255; break;
    case kInt8: lo = -128; hi = 127; break;
    case kInt16: lo = -32768; hi = 32767; break;
    case kInt32: lo = INT32_MIN; hi = INT32_MAX; break;
    default: break;
  }
  EMBER_CHECK_VALUE(from >= lo && from <= hi, "from is out of bounds for ", name);
  EMBER_CHECK_VALUE(to_inc >= lo && to_inc <= hi, "to - 1 is out of bounds for ", name);
}
}  // namespace

Tensor& random_(Tensor& self, int64_t from, int64_t to, Generator* gen) {
  EMBER_CHECK(from < to, "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=", to);
  check_random_bounds(self, from, to - 1);
  ops::random_()(self, from, to, gen);
  self.impl()->bump_version();
  return self;
}
Tensor& random_from_(Tensor& self, int64_t from, Generator* gen) {
  DType dt = self.dtype();
  EMBER_CHECK(from != INT64_MIN || dt == kInt64 || dt == kFloat64 || dt == kFloat32 || dt == kBFloat16,
              "random_from_to_kernel_cpu handles only int64, double, float and bfloat16 for the full 64-bit range, got ",
              scalar_type_name(dt));
  ops::random_()(self, from, std::nullopt, gen);
  self.impl()->bump_version();
  return self;
}
Tensor& bernoulli_(Tensor& self, double p, Generator* gen) {
  EMBER_CHECK(p >= 0 && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  ops::bernoulli_()(self, p, gen);
  self.impl()->bump_version();
  return self;
}

// random_() without bounds is torch's random_(0, None): [0, 2^digits] for floating dtypes
// (every integer in it is exact), [0, max] for integers.
// For int64, float64, float32 and bfloat16 that is what torch's random_() draws; for the other
// dtypes torch's random_() takes one 32-bit draw modulo the range (random_(0, None) takes 64 bits
// for int32 in 2.x), which the kernel gives for the lowest int64 without `to`, a combination
// torch rejects for these dtypes (random_from_ raises it first).
Tensor& random_(Tensor& self, Generator* gen) {
  DType dt = self.dtype();
  const bool full_range_dtype = dt == kInt64 || dt == kFloat64 || dt == kFloat32 || dt == kBFloat16;
  if (full_range_dtype) return random_from_(self, 0, gen);
  ops::random_()(self, INT64_MIN, std::nullopt, gen);
  self.impl()->bump_version();
  return self;
}
Tensor& random_(Tensor& self, int64_t to, Generator* gen) { return random_(self, 0, to, gen); }

// torch's empty_like (preserve_format): like's strides when they are non-overlapping and
// dense, so random fills, which visit memory in order, land where torch's do.
Tensor empty_like_layout(const Tensor& like, TensorOptions opts) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < like.dim(); ++d)
    if (like.size(d) > 1) dims.push_back(d);
  std::sort(dims.begin(), dims.end(), [&](int64_t a, int64_t b) { return like.stride(a) < like.stride(b); });
  int64_t expected = 1;
  bool dense = true;
  for (int64_t d : dims) {
    dense = dense && like.stride(d) == expected;
    expected *= like.size(d);
  }
  TensorOptions o{.dtype = opts.dtype_or(like.dtype()), .device = opts.device_or(like.device())};
  return dense ? empty_strided(like.sizes(), like.strides(), o) : empty(like.sizes(), o);
}

// One uniform per element of self (visited in self's memory order), 53 bits when p is float64
// and 24 otherwise, compared with p broadcast to self's shape (torch's bernoulli_(Tensor)).
Tensor& bernoulli_(Tensor& self, const Tensor& p, Generator* gen) {
  NoGradGuard no_grad;
  DType draw = p.dtype() == kFloat64 ? kFloat64 : kFloat32;
  Tensor u = empty_like_layout(self, {.dtype = draw});
  uniform_(u, 0.0, 1.0, gen);
  Tensor hit = lt(u, p.to(draw));
  return self.copy_(hit);
}
// torch's functional bernoulli forms draw into a contiguous result (LEGACY_CONTIGUOUS_MEMORY_FORMAT).
Tensor bernoulli(const Tensor& self, double p, Generator* gen) {
  Tensor out = empty_like(self);
  return bernoulli_(out, p, gen);
}

Tensor& exponential_(Tensor& self, double lambd, Generator* gen) {
  EMBER_CHECK(lambd > 0, "exponential_ expects lambda > 0.0, but found lambda=", lambd);
  ops::exponential_()(self, lambd, gen);
  self.impl()->bump_version();
  return self;
}
Tensor& log_normal_(Tensor& self, double mean, double std, Generator* gen) {
  EMBER_CHECK(std > 0.0, "log_normal_ expects std > 0.0, but found std=", std);
  ops::log_normal_()(self, mean, std, gen);
  self.impl()->bump_version();
  return self;
}

namespace {
void check_float(const char* op, DType t) {
  EMBER_CHECK(is_floating_or_complex(t), '"', op, "\" not implemented for '", scalar_type_name(t), "'");
}
}  // namespace

Tensor rand(IntArrayRef size, TensorOptions opts, Generator* gen) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  check_float("rand", opts.dtype_or_default());
  Tensor t = empty(size, opts);
  return uniform_(t, 0.0, 1.0, gen);
}
Tensor randn(IntArrayRef size, TensorOptions opts, Generator* gen) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  check_float("randn", opts.dtype_or_default());
  Tensor t = empty(size, opts);
  return normal_(t, 0.0, 1.0, gen);
}
Tensor normal(double mean, double std, IntArrayRef size, TensorOptions opts, Generator* gen) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  Tensor t = empty(size, opts);
  return normal_(t, mean, std, gen);
}
// torch.normal with tensors, in torch's order: standard normals of the broadcast shape (in
// mean's dtype), times std, plus mean; with a number std, normal_(0, std) plus mean. Composites
// of differentiable ops, so gradients reach mean and std.
Tensor normal(const Tensor& mean, const Tensor& std, Generator* gen) {
  EMBER_CHECK(is_floating(mean.dtype()), "\"normal_kernel", backend_kernel_suffix(mean.device()), "\" not implemented for '",
              scalar_type_name(mean.dtype()), "'");
  Tensor noise;
  {
    NoGradGuard no_grad;
    noise = empty(broadcast_shapes(mean.sizes(), std.sizes()), {.dtype = mean.dtype(), .device = mean.device()});
    normal_(noise, 0.0, 1.0, gen);
  }
  return add(mul(noise, std), mean);
}
Tensor normal(const Tensor& mean, double std, Generator* gen) {
  EMBER_CHECK(is_floating(mean.dtype()), "\"normal_kernel", backend_kernel_suffix(mean.device()), "\" not implemented for '",
              scalar_type_name(mean.dtype()), "'");
  Tensor noise;
  {
    NoGradGuard no_grad;
    noise = empty(mean.sizes(), {.dtype = mean.dtype(), .device = mean.device()});
    normal_(noise, 0.0, std, gen);
  }
  return add(noise, mean);
}
Tensor normal(double mean, const Tensor& std, Generator* gen) {
  EMBER_CHECK(is_floating(std.dtype()), "\"normal_kernel", backend_kernel_suffix(std.device()), "\" not implemented for '",
              scalar_type_name(std.dtype()), "'");
  Tensor noise;
  {
    NoGradGuard no_grad;
    noise = empty(std.sizes(), {.dtype = std.dtype(), .device = std.device()});
    normal_(noise, 0.0, 1.0, gen);
  }
  return add(mul(noise, std), Scalar(mean));
}
Tensor randint(int64_t low, int64_t high, IntArrayRef size, TensorOptions opts, Generator* gen) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  if (!opts.dtype) opts.dtype = kInt64;
  Tensor t = empty(size, opts);
  return random_(t, low, high, gen);
}
Tensor randint(int64_t high, IntArrayRef size, TensorOptions opts, Generator* gen) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  return randint(0, high, size, opts, gen);
}
Tensor randperm(int64_t n, TensorOptions opts, Generator* gen) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  EMBER_CHECK(n >= 0, "n must be non-negative, got", n);
  if (!opts.dtype) opts.dtype = kInt64;
  return ops::randperm()(n, opts, gen);
}
// torch.bernoulli(p): draws of p's shape and dtype into a contiguous result, in its order.
Tensor bernoulli(const Tensor& p, Generator* gen) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  EMBER_CHECK(is_floating(p.dtype()), "bernoulli expects a floating-point probability tensor, got ",
              scalar_type_name(p.dtype()));
  Tensor out = empty_like(p);
  return bernoulli_(out, p, gen);
}
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
  NoGradGuard no_grad;  // sampling is not differentiable
  EMBER_CHECK(probs.dim() == 1 || probs.dim() == 2, "prob_dist must be 1 or 2 dim");
  EMBER_CHECK(is_floating(probs.dtype()), "multinomial only supports floating-point dtypes for input, got: ",
              scalar_type_name(probs.dtype()));
  EMBER_CHECK(num_samples > 0, "cannot sample n_sample <= 0 samples");
  EMBER_CHECK(replacement || num_samples <= probs.size(-1),
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  return ops::multinomial()(probs, num_samples, replacement, gen);
}

Tensor zeros_like(const Tensor& like, TensorOptions opts) {
  NoGradGuard no_grad;
  Tensor t = empty_like(like, opts);
  return zero_(t);
}
Tensor ones_like(const Tensor& like, TensorOptions opts) {
  NoGradGuard no_grad;
  Tensor t = empty_like(like, opts);
  return fill_(t, 1);
}
Tensor full_like(const Tensor& like, const Scalar& v, TensorOptions opts) {
  NoGradGuard no_grad;
  Tensor t = empty_like(like, opts);
  return fill_(t, v);
}
Tensor rand_like(const Tensor& like, TensorOptions opts, Generator* gen) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  Tensor t = empty_like_layout(like, opts);
  check_float("rand_like", t.dtype());
  return uniform_(t, 0.0, 1.0, gen);
}
Tensor randn_like(const Tensor& like, TensorOptions opts, Generator* gen) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  Tensor t = empty_like_layout(like, opts);
  check_float("randn_like", t.dtype());
  return normal_(t, 0.0, 1.0, gen);
}
Tensor randint_like(const Tensor& like, int64_t low, int64_t high, TensorOptions opts, Generator* gen) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  Tensor t = empty_like_layout(like, opts);
  return random_(t, low, high, gen);
}

// ---- from_blob: wrap memory the caller owns
namespace {
struct BlobDeleter { std::function<void(void*)> fn; };
Tensor wrap_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions opts,
                 void (*deleter)(void*, void*), void* ctx) {
  EMBER_CHECK(sizes.size() == strides.size(), "from_blob: sizes and strides differ in length");
  DType dt = opts.dtype_or_default();
  int64_t extent = 0;
  bool empty_tensor = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK(sizes[i] >= 0 && strides[i] >= 0, "from_blob: negative size or stride");
    if (sizes[i] == 0) empty_tensor = true;
    extent += (sizes[i] - 1) * strides[i];
  }
  size_t nbytes = empty_tensor ? 0 : size_t(extent + 1) * element_size(dt);
  // The caller's memory is wherever the caller says, the host unless told (never the default device).
  auto storage = std::make_shared<Storage>(data, nbytes, opts.device_or(kCPU), deleter, ctx);
  Tensor t(std::make_shared<TensorImpl>(std::move(storage), dt, sizes.vec(), strides.vec(), 0));
  return t.requires_grad_(opts.requires_grad);
}
}  // namespace

Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions opts) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  return wrap_blob(data, sizes, contiguous_strides(sizes), opts, nullptr, nullptr);
}
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions opts) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  return wrap_blob(data, sizes, strides, opts, nullptr, nullptr);
}
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter, TensorOptions opts) {
  NoGradGuard no_grad;  // factories are not differentiable; requires_grad is set at the end
  auto* ctx = new BlobDeleter{std::move(deleter)};
  return wrap_blob(data, sizes, contiguous_strides(sizes), opts,
                   [](void* p, void* c) {
                     auto* d = static_cast<BlobDeleter*>(c);
                     if (d->fn) d->fn(p);
                     delete d;
                   },
                   ctx);
}

}  // namespace ember
