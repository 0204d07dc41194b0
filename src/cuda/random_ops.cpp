// CUDA kernels of the random fills (uniform_, normal_, log_normal_, exponential_, bernoulli_,
// random_) and randperm, the twins of src/cpu/random_kernels.cpp: the same dtype checks,
// messages and range rules, on Philox4x32-10 (random_kernels.cu) instead of torch's CPU
// mt19937, so the numbers differ from the CPU's but a seed replays them on any GPU.
//
// Generator: the one passed (a CUDA generator; a CPU one raises torch's error), else the
// device's default (ember::default_generator(device); ember.manual_seed and
// ember.cuda.manual_seed seed it and reset its offset). Each fill reserves
// the Philox counters it uses (random_launchers.h) and gets (seed, offset) back, so consecutive
// fills continue the stream and never reuse numbers.
//
// Where values land: a tensor whose elements fill a dense block (contiguous, or any permutation
// of it: t(), channels-last, empty_like_layout's results) is written in memory order, element
// e being the e-th in memory (the CPU's order too); any other layout (a strided slice, an
// overlapping view) is filled as a contiguous temporary and copied in.
#include <algorithm>
#include <climits>
#include <tuple>
#include <utility>
#include <vector>

#include "core/dtype_dispatch.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_memory.h"  // stream_is_capturing
#include "cuda/cuda_state.h"
#include "cuda/random_launchers.h"
#include "ember/core/backend.h"
#include "ember/core/generator.h"
#include "ember/core/half.h"
#include "ember/dispatch/op.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cuda {
namespace {

// Elements that exactly tile [data, data + numel): strides, sorted, are those of a contiguous
// tensor of the sizes in that order (size-1 dims aside).
bool dense(const Tensor& t) {
  if (t.is_contiguous()) return true;
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1) dims.emplace_back(t.stride(d), t.size(d));
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (auto [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

// The generator a kernel on `device` draws from: the one passed (a CUDA one, as torch's
// check_generator), else the device's default.
Generator& pick(Generator* gen, Device device) {
  // A captured kernel keeps the (seed, offset) it was launched with, so every replay would draw
  // the same numbers: refused until the offsets are read on the device (torch's graph-safe RNG).
  EMBER_CHECK(!stream_is_capturing(current_stream_of(device.has_index() ? device.index : current_gpu())),
              "random numbers on CUDA inside a CUDA graph capture are not supported yet: every replay would repeat "
              "the numbers drawn at capture. Draw them outside the captured region and pass them in.");
  if (!gen) return default_generator(device);
  EMBER_CHECK(gen->device().is_cuda(), "Expected a 'cuda' device type for generator but found '", gen->device().str(), "'");
  return *gen;
}

// Fills self through launch(args) with `words` 32-bit Philox words per element.
template <class Launch> Tensor& fill_random(Tensor& self, Generator* gen, int words, Launch&& launch) {
  const int64_t n = self.numel();
  if (n == 0) return self;
  const int device = self.device().index;
  GpuGuard guard(device);
  Tensor target = dense(self) ? self : empty(self.sizes(), {.dtype = self.dtype(), .device = self.device()});
  Generator& g = pick(gen, self.device());
  const auto [seed, offset] = g.philox_seed_and_advance(philox_counters(n, words));
  RandomArgs a;
  a.data = static_cast<char*>(target.data_ptr());
  a.n = n;
  a.dtype = int8_t(self.dtype());
  a.seed = seed;
  a.offset = offset;
  a.stream = current_cuda_stream(device);
  launch(a);
  if (!target.is_same(self)) {
    // A copy inside the kernel: never recorded by autograd (self may be a leaf that requires grad).
    ExcludeDispatchKeyGuard below(DispatchKey::Autograd);
    ops::copy_()(self, target, false);
  }
  return self;
}

void check_floating(const Tensor& self, const char* op) {
  if (!is_floating(self.dtype())) throw_dtype_not_implemented(op, self.dtype());
}
void check_real(const Tensor& self, const char* op) {
  if (is_complex(self.dtype())) throw_dtype_not_implemented(op, self.dtype());
}
int float_words_of(const Tensor& self) { return float_words(self.dtype() == kFloat64); }

Tensor& uniform_cuda(Tensor& self, double from, double to, Generator* gen) {
  check_floating(self, "uniform_");
  return fill_random(self, gen, float_words_of(self), [&](const RandomArgs& a) { launch_uniform(a, from, to); });
}

Tensor& normal_cuda(Tensor& self, double mean, double std, Generator* gen) {
  check_floating(self, "normal_");
  return fill_random(self, gen, float_words_of(self), [&](const RandomArgs& a) { launch_normal(a, mean, std, false); });
}

Tensor& log_normal_cuda(Tensor& self, double mean, double std, Generator* gen) {
  check_floating(self, "log_normal_");
  return fill_random(self, gen, float_words_of(self), [&](const RandomArgs& a) { launch_normal(a, mean, std, true); });
}

Tensor& exponential_cuda(Tensor& self, double lambd, Generator* gen) {
  check_floating(self, "exponential_");
  return fill_random(self, gen, float_words_of(self), [&](const RandomArgs& a) { launch_exponential(a, lambd); });
}

Tensor& bernoulli_cuda(Tensor& self, double p, Generator* gen) {
  check_real(self, "bernoulli_");
  return fill_random(self, gen, 2, [&](const RandomArgs& a) { launch_bernoulli(a, p); });
}

// ---- random_: the CPU's range rules (cpu/random_kernels.cpp), with the dtype known at run time.
// Mantissa digits of the floating dtypes (integers below 2^digits are exact).
int digits_of(DType t) {
  switch (t) {
    case DType::Float16: return 11;
    case DType::BFloat16: return 8;
    case DType::Float32: return 24;
    default: return 53;
  }
}
// v through the floating dtype and back (the 16-bit types through float, as c10).
int64_t through(DType t, int64_t v) {
  switch (t) {
    case DType::Float16: return int64_t(float(Half(float(v))));
    case DType::BFloat16: return int64_t(float(BFloat16(float(v))));
    case DType::Float32: return int64_t(static_cast<float>(v));
    default: return int64_t(static_cast<double>(v));
  }
}
// torch's update_from / update_to: bounds the dtype cannot hold exactly move inwards.
int64_t update_from(DType t, int64_t from) {
  const int64_t from_plus_1 = through(t, from + 1);
  if (from_plus_1 < from) {
    int64_t f = from + 1 < 0 ? -(from + 1) : from + 1;
    int n = 0;
    while (f >>= 1) ++n;
    from = from_plus_1 + (int64_t(1) << (n - digits_of(t) + 1));
  }
  return from;
}
int64_t update_to(DType t, int64_t to) {
  const int64_t to_minus_1 = through(t, to - 1);
  if (to_minus_1 >= to) {
    int64_t v = to - 1 < 0 ? -(to - 1) : to - 1;
    int n = 0;
    while (v >>= 1) ++n;
    to = to_minus_1 - (int64_t(1) << (n - digits_of(t) + 1));
  }
  return to;
}
// The largest value of an integer dtype.
int64_t int_max(DType t) {
  switch (t) {
    case DType::UInt8: return 255;
    case DType::Int8: return 127;
    case DType::Int16: return 32767;
    case DType::Int32: return INT32_MAX;
    default: return INT64_MAX;
  }
}

// from + draw % range (range 0: the whole 64-bit draw), 64-bit draws from a range of 2^28 on.
Tensor& random_with(Tensor& self, Generator* gen, int64_t from, uint64_t range, bool wide) {
  return fill_random(self, gen, wide ? 2 : 1, [&](const RandomArgs& a) { launch_random(a, from, range, wide); });
}

Tensor& random_cuda(Tensor& self, int64_t from, std::optional<int64_t> to, Generator* gen) {
  const DType dt = self.dtype();
  check_real(self, "random_");
  const bool floating = is_floating(dt);
  if (floating && (to || from != INT64_MIN)) from = update_from(dt, from);
  constexpr uint64_t kWide = uint64_t(1) << 28;
  if (to) {
    int64_t hi = *to;
    if (floating) hi = update_to(dt, hi);
    EMBER_CHECK(from < hi, "random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got from=",
                from, " >= to=", hi);
    const uint64_t range = uint64_t(hi) - uint64_t(from);
    return random_with(self, gen, from, range, range >= kWide);
  }
  if (from == INT64_MIN) {
    // The full 64-bit range for int64/double/float/bfloat16; for the other dtypes (ember's
    // random_() without bounds, see cpu/random_kernels.cpp) one 32-bit draw modulo the
    // dtype's range.
    if (dt == kInt64 || dt == kFloat64 || dt == kFloat32 || dt == kBFloat16) return random_with(self, gen, 0, 0, true);
    uint64_t m;
    if (dt == kBool) m = 2;
    else if (dt == kFloat16) m = (uint64_t(1) << digits_of(dt)) + 1;
    else m = uint64_t(int_max(dt)) + 1;
    return random_with(self, gen, 0, m, false);
  }
  int64_t to_inc;
  if (dt == kBool) to_inc = 1;
  else if (floating) to_inc = int64_t(1) << digits_of(dt);
  else to_inc = int_max(dt);
  EMBER_CHECK(from <= to_inc, "random_ expects 'from' to be less than or equal to 'to_inc', but got from=", from,
              " > to_inc=", to_inc);
  const uint64_t range = uint64_t(to_inc) - uint64_t(from) + 1;
  return random_with(self, gen, from, range, range >= kWide);
}

// ---- randperm: sort 64-bit random keys with their indices.
Tensor randperm_cuda(int64_t n, TensorOptions opts, Generator* gen) {
  const Device device = opts.device_or();
  const Device dev = device.has_index() ? device : Device(DeviceType::CUDA, int16_t(current_gpu()));
  const DType dt = opts.dtype_or(kInt64);
  GpuGuard guard(dev.index);
  Tensor perm = empty({n}, {.dtype = kInt64, .device = dev});
  if (n > 0) {
    Generator& g = pick(gen, dev);
    const auto [seed, offset] = g.philox_seed_and_advance(philox_counters(n, 2));
    Tensor keys_in = empty({n}, {.dtype = kInt64, .device = dev});  // 64-bit keys, as raw bits
    Tensor keys_out = empty({n}, {.dtype = kInt64, .device = dev});
    Tensor values_in = empty({n}, {.dtype = kInt64, .device = dev});
    const size_t temp_bytes = sort_pairs_temp_bytes(n, 64);
    Tensor temp = empty({int64_t(std::max<size_t>(temp_bytes, 1))}, {.dtype = kUInt8, .device = dev});
    launch_randperm(n, keys_in.data_ptr(), keys_out.data_ptr(), values_in.data_ptr<int64_t>(), perm.data_ptr<int64_t>(),
                    temp.data_ptr(), temp_bytes, seed, offset, current_cuda_stream(dev.index));
  }
  return dt == kInt64 ? perm : perm.to(dt);
}

// ---- multinomial (random_launchers.h): the CPU's two algorithms, its checks and messages.
// The checks read the probabilities on the GPU; the one host synchronisation (on the current
// stream) reads their verdict after the sampling kernels are queued, as torch's multinomial does.
Tensor multinomial_cuda(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
  check_floating(probs, "multinomial");
  const int64_t rows = probs.dim() == 2 ? probs.size(0) : 1, cats = probs.size(-1);
  const Device dev = probs.device();
  GpuGuard guard(dev.index);
  Tensor out = empty(probs.dim() == 2 ? Shape{rows, num_samples} : Shape{num_samples}, {.dtype = kInt64, .device = dev});
  if (rows == 0) return out;
  const Tensor c = probs.contiguous();
  cudaStream_t stream = current_cuda_stream(dev.index);
  Tensor flag = empty({1}, {.dtype = kInt32, .device = dev});
  EMBER_CUDA_CHECK(cudaMemsetAsync(flag.data_ptr(), 0, sizeof(int32_t), stream));
  MultinomialArgs a;
  a.probs = c.data_ptr();
  a.dtype = int8_t(c.dtype());
  a.rows = rows;
  a.cats = cats;
  a.samples = num_samples;
  a.out = out.data_ptr<int64_t>();
  a.flag = flag.data_ptr<int32_t>();
  a.stream = stream;
  Generator& g = pick(gen, dev);
  const bool is_double = c.dtype() == kFloat64;
  if (replacement && num_samples > 1) {
    std::tie(a.seed, a.offset) = g.philox_seed_and_advance(philox_counters(rows * num_samples, 2));
    Tensor cum = empty({rows * cats}, {.dtype = is_double ? kFloat64 : kFloat32, .device = dev});
    launch_multinomial_with_replacement(a, cum.data_ptr());
  } else {
    std::tie(a.seed, a.offset) = g.philox_seed_and_advance(philox_counters(rows * cats, float_words(is_double)));
    if (num_samples == 1) {
      launch_multinomial_argmax(a);
    } else {
      const int64_t n = rows * cats;
      const size_t temp_bytes = std::max(sort_pairs_temp_bytes(n, 64), sort_pairs_temp_bytes(n, row_bits(rows)));
      Tensor keys_in = empty({n}, {.dtype = kInt64, .device = dev}), keys_out = empty({n}, {.dtype = kInt64, .device = dev});
      Tensor values_in = empty({n}, {.dtype = kInt64, .device = dev}), values_out = empty({n}, {.dtype = kInt64, .device = dev});
      Tensor temp = empty({int64_t(std::max<size_t>(temp_bytes, 1))}, {.dtype = kUInt8, .device = dev});
      launch_multinomial_topk(a, keys_in.data_ptr(), keys_out.data_ptr(), values_in.data_ptr<int64_t>(),
                              values_out.data_ptr<int64_t>(), temp.data_ptr(), temp_bytes);
    }
  }
  int32_t verdict = 0;
  EMBER_CUDA_CHECK(cudaMemcpyAsync(&verdict, flag.data_ptr(), sizeof verdict, cudaMemcpyDeviceToHost, stream));
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
  EMBER_CHECK(!(verdict & 1), "probability tensor contains either `inf`, `nan` or element < 0");
  EMBER_CHECK(!(verdict & 2), "invalid multinomial distribution (sum of probabilities <= 0)");
  return out;
}

EMBER_REGISTER_KERNEL(uniform_, CUDA, uniform_cuda);
EMBER_REGISTER_KERNEL(normal_, CUDA, normal_cuda);
EMBER_REGISTER_KERNEL(log_normal_, CUDA, log_normal_cuda);
EMBER_REGISTER_KERNEL(exponential_, CUDA, exponential_cuda);
EMBER_REGISTER_KERNEL(bernoulli_, CUDA, bernoulli_cuda);
EMBER_REGISTER_KERNEL(random_, CUDA, random_cuda);
EMBER_REGISTER_KERNEL(randperm, CUDA, randperm_cuda);
EMBER_REGISTER_KERNEL(multinomial, CUDA, multinomial_cuda);

}  // namespace
}  // namespace ember::cuda
