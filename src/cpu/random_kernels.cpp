// CPU kernels of the random fills (uniform_, normal_, random_, bernoulli_, exponential_,
// log_normal_), randperm and multinomial, drawing exactly what PyTorch's CPU kernels draw from
// the same mt19937 stream and transforming the draws with the same roundings, so a seed gives
// torch's values bit for bit (docs/issue15-random.md lists each transform and its evidence).
//
// Like torch, every fill is serial over one generator, so results never depend on the thread
// count. Elements are visited in torch's TensorIterator order for a single output: memory
// order (dimensions sorted by stride), which is the logical order for contiguous tensors.
// Built with -ffp-contract=off (CMakeLists.txt): where torch's build fused a multiply-add, the
// code says std::fma; everything else rounds once per operation.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "core/dtype_dispatch.h"
#include "cpu/box_muller16.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

Generator& pick(Generator* g) { return g ? *g : default_generator(); }

template <class T> constexpr bool is_reduced_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// The uniform draws behind torch's transforms.
inline float uniform_f24(Mt19937& e) { return float(e() & ((1u << 24) - 1)) * 0x1.0p-24f; }
inline double uniform_d53(Mt19937& e) { return double(e.random64() & ((uint64_t(1) << 53) - 1)) * 0x1.0p-53; }

template <class T> T cast_from_double(double v) {
  if constexpr (is_reduced_v<T>) return T(float(v));  // c10 converts double -> float -> 16 bits too
  else return static_cast<T>(v);
}
template <class T> T cast_from_int(int64_t v) {
  if constexpr (is_reduced_v<T>) return T(float(v));
  else return static_cast<T>(v);
}

// Calls f(T&) for every element of t in memory order (TensorIterator's order for one output:
// dimensions of size > 1 sorted by decreasing stride, ties keeping the outer one outside).
template <class T, class F> void for_each_memory_order(Tensor& t, F&& f) {
  const int64_t n = t.numel();
  if (n == 0) return;
  T* base = t.data_ptr<T>();
  if (t.is_contiguous()) {
    for (int64_t i = 0; i < n; ++i) f(base[i]);
    return;
  }
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1) dims.push_back(d);
  std::stable_sort(dims.begin(), dims.end(), [&](int64_t a, int64_t b) { return t.stride(a) > t.stride(b); });
  const size_t nd = dims.size();
  std::vector<int64_t> size(nd), stride(nd), idx(nd, 0);
  for (size_t i = 0; i < nd; ++i) { size[i] = t.size(dims[i]); stride[i] = t.stride(dims[i]); }
  const int64_t inner = nd ? size[nd - 1] : 1, inner_stride = nd ? stride[nd - 1] : 0;
  T* p = base;
  for (int64_t done = 0; done < n; done += inner) {
    for (int64_t i = 0; i < inner; ++i) f(p[i * inner_stride]);
    // advance the outer index (odometer over dims[0 .. nd-2])
    for (int64_t k = int64_t(nd) - 2; k >= 0; --k) {
      if (++idx[size_t(k)] < size[size_t(k)]) { p += stride[size_t(k)]; break; }
      p -= stride[size_t(k)] * (size[size_t(k)] - 1);
      idx[size_t(k)] = 0;
    }
  }
}

// ---- uniform_: 24 random bits for float and the 16-bit floats (computed in float), 53 for
// double; from + u * (to - from) as one fused multiply-add; a value that rounds up to `to` is
// replaced by `from`, so the range stays [from, to) (torch 2.x).
Tensor& uniform_cpu(Tensor& self, double from, double to, Generator* gen) {
  EMBER_CHECK(is_floating(self.dtype()), "\"uniform_\" not implemented for '", scalar_type_name(self.dtype()), "'");
  Generator& g = pick(gen);
  std::lock_guard lock(g.mutex());
  Mt19937& e = g.engine();
  visit_dtype<kFloatTypes | kReducedFloatTypes>(self.dtype(), "uniform_", [&]<class T>() {
    if constexpr (std::is_same_v<T, double>) {
      const double range = to - from;
      for_each_memory_order<T>(self, [&](T& out) {
        double v = std::fma(uniform_d53(e), range, from);
        out = v >= to ? from : v;
      });
    } else {
      const float lo = float(from), hi = float(to), range = hi - lo;
      const T lo_t = T(lo), hi_t = T(hi);
      for_each_memory_order<T>(self, [&](T& out) {
        T v = T(std::fma(uniform_f24(e), range, lo));
        out = float(v) >= float(hi_t) ? lo_t : v;
      });
    }
  });
  return self;
}

// ---- normal_
// The one-at-a-time sampler (torch's normal_distribution<double>): a Box-Muller pair from two
// 53-bit uniforms, the cosine returned and the sine kept in the generator for the next call.
double normal_one(Generator& g, double mean, double std) {
  std::optional<double>& cache = g.cached_normal();
  double z;
  if (cache) {
    z = *cache;
    cache.reset();
  } else {
    Mt19937& e = g.engine();
    const double u1 = uniform_d53(e), u2 = uniform_d53(e);
    const double r = std::sqrt(-2.0 * std::log1p(-u2));
    const double theta = 2.0 * std::numbers::pi * u1;
    cache = r * std::sin(theta);
    z = r * std::cos(theta);
  }
  return std::fma(z, std, mean);
}

// The block sampler for contiguous tensors of >= 16 elements: one uniform per element, then
// Box-Muller on blocks of 16 (value j and j + 8 from one pair); when n is not a multiple of 16
// the last 16 elements are redrawn and transformed again. `fill_all` says whether the first
// pass draws all n uniforms (float, double) or only the whole blocks (float16/bfloat16 in 2.x).
template <class A, class Block>
void normal_blocks(A* d, int64_t n, Mt19937& e, bool fill_all, Block&& block) {
  auto draw = [&]() -> A {
    if constexpr (std::is_same_v<A, double>) return uniform_d53(e);
    else return uniform_f24(e);
  };
  const int64_t first = fill_all ? n : n - n % 16;
  for (int64_t i = 0; i < first; ++i) d[i] = draw();
  for (int64_t i = 0; i + 16 <= n; i += 16) block(d + i);
  if (n % 16 != 0) {
    A* tail = d + n - 16;
    for (int i = 0; i < 16; ++i) tail[i] = draw();
    block(tail);
  }
}

void double_block16(double* d, double mean, double std) {
  for (int j = 0; j < 8; ++j) {
    const double u1 = 1 - d[j], u2 = d[j + 8];
    const double radius = std::sqrt(-2 * std::log(u1));
    const double theta = 2.0 * std::numbers::pi * u2;
    d[j] = std::fma(radius * std::cos(theta), std, mean);
    d[j + 8] = std::fma(radius * std::sin(theta), std, mean);
  }
}

Tensor& normal_cpu(Tensor& self, double mean, double std, Generator* gen) {
  EMBER_CHECK(is_floating(self.dtype()), "\"normal_\" not implemented for '", scalar_type_name(self.dtype()), "'");
  Generator& g = pick(gen);
  std::lock_guard lock(g.mutex());
  Mt19937& e = g.engine();
  const int64_t n = self.numel();
  const bool blocks = n >= 16 && self.is_contiguous();
  visit_dtype<kFloatTypes | kReducedFloatTypes>(self.dtype(), "normal_", [&]<class T>() {
    if (!blocks) {
      for_each_memory_order<T>(self, [&](T& out) { out = cast_from_double<T>(normal_one(g, mean, std)); });
    } else if constexpr (std::is_same_v<T, float>) {
      const float m = float(mean), s = float(std);
      normal_blocks(self.data_ptr<float>(), n, e, true, [&](float* d) { box_muller::fill16(d, m, s); });
    } else if constexpr (std::is_same_v<T, double>) {
      normal_blocks(self.data_ptr<double>(), n, e, true, [&](double* d) { double_block16(d, mean, std); });
    } else {  // float16 / bfloat16: the float blocks, then one rounding
      const float m = float(mean), s = float(std);
      std::vector<float> buf(static_cast<size_t>(n));
      normal_blocks(buf.data(), n, e, false, [&](float* d) { box_muller::fill16(d, m, s); });
      T* out = self.data_ptr<T>();
      for (int64_t i = 0; i < n; ++i) out[i] = T(buf[size_t(i)]);
    }
  });
  return self;
}

// log_normal_: exp of the one-at-a-time normal sampler, for every size.
Tensor& log_normal_cpu(Tensor& self, double mean, double std, Generator* gen) {
  EMBER_CHECK(is_floating(self.dtype()), "\"log_normal_\" not implemented for '", scalar_type_name(self.dtype()), "'");
  Generator& g = pick(gen);
  std::lock_guard lock(g.mutex());
  visit_dtype<kFloatTypes | kReducedFloatTypes>(self.dtype(), "log_normal_", [&]<class T>() {
    for_each_memory_order<T>(self, [&](T& out) { out = cast_from_double<T>(std::exp(normal_one(g, mean, std))); });
  });
  return self;
}

// torch's update_from / update_to for floating dtypes: bounds the dtype cannot hold exactly move
// inwards to representable integers (from + 1 rounding down below from, to - 1 rounding up).
template <class T> constexpr int digits_of() {
  if constexpr (std::is_same_v<T, Half>) return 11;
  else if constexpr (std::is_same_v<T, BFloat16>) return 8;
  else return std::numeric_limits<T>::digits;
}
template <class T> int64_t through(int64_t v) {
  if constexpr (is_reduced_v<T>) return int64_t(float(T(float(v))));
  else return int64_t(static_cast<T>(v));
}
template <class T> int64_t update_from(int64_t from) {
  const int64_t from_plus_1 = through<T>(from + 1);
  if (from_plus_1 < from) {
    int64_t f = from + 1 < 0 ? -(from + 1) : from + 1;
    int n = 0;
    while (f >>= 1) ++n;
    from = from_plus_1 + (int64_t(1) << (n - digits_of<T>() + 1));
  }
  return from;
}
template <class T> int64_t update_to(int64_t to) {
  const int64_t to_minus_1 = through<T>(to - 1);
  if (to_minus_1 >= to) {
    int64_t t = to - 1 < 0 ? -(to - 1) : to - 1;
    int n = 0;
    while (t >>= 1) ++n;
    to = to_minus_1 - (int64_t(1) << (n - digits_of<T>() + 1));
  }
  return to;
}

// ---- random_: `draw % range + from`, from 64 random bits when the range is 2^28 or more, else
// from 32. No `to`: torch's
// default upper end (the dtype's max, 2^digits for floating types), or, from the lowest int64,
// the full 64-bit range.
Tensor& random_cpu(Tensor& self, int64_t from, std::optional<int64_t> to, Generator* gen) {
  Generator& g = pick(gen);
  std::lock_guard lock(g.mutex());
  Mt19937& e = g.engine();
  visit_dtype<kAllTypes>(self.dtype(), "random_", [&]<class T>() {
    constexpr bool wide_ok = std::is_same_v<T, int64_t> || std::is_same_v<T, double> ||
                             std::is_same_v<T, float> || std::is_same_v<T, BFloat16>;
    constexpr bool floating = std::is_floating_point_v<T> || is_reduced_v<T>;
    if constexpr (floating) {
      if (to || from != INT64_MIN) from = update_from<T>(from);
    }
    uint64_t range;
    if (to) {
      int64_t hi = *to;
      if constexpr (floating) hi = update_to<T>(hi);
      EMBER_CHECK(from < hi, "random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got from=",
                  from, " >= to=", hi);
      range = uint64_t(hi) - uint64_t(from);
    } else if (from == INT64_MIN) {
      // torch's full 64-bit range for int64/double/float/bfloat16. For the other dtypes torch
      // has no such range (ember::random_from_ raises its error first), so ember::random_()
      // uses this combination for torch's random_() (uniform_int): one 32-bit draw reduced
      // modulo the dtype's range, which for int32 is not what random_(0, None) draws.
      if constexpr (wide_ok) {
        for_each_memory_order<T>(self, [&](T& out) { out = cast_from_int<T>(int64_t(e.random64())); });
      } else {
        uint64_t m;
        if constexpr (std::is_same_v<T, bool>) m = 2;
        else if constexpr (is_reduced_v<T>) m = (uint64_t(1) << digits_of<T>()) + 1;
        else m = uint64_t(std::numeric_limits<T>::max()) + 1;
        for_each_memory_order<T>(self, [&](T& out) {
          const uint64_t v = uint64_t(e()) % m;
          if constexpr (std::is_same_v<T, bool>) out = v != 0;
          else out = cast_from_int<T>(int64_t(v));
        });
      }
      return;
    } else {
      int64_t to_inc;
      if constexpr (std::is_same_v<T, bool>) to_inc = 1;
      else if constexpr (floating) to_inc = int64_t(1) << digits_of<T>();
      else to_inc = int64_t(std::numeric_limits<T>::max());
      EMBER_CHECK(from <= to_inc, "random_ expects 'from' to be less than or equal to 'to_inc', but got from=", from,
                  " > to_inc=", to_inc);
      range = uint64_t(to_inc) - uint64_t(from) + 1;
    }
    // torch 2.x: 64-bit draws from a range of 2^28 on, whatever the dtype (1.13: 2^32, and only
    // for int64/double/float/bfloat16), so that `draw % range` stays close to uniform.
    const bool wide = range >= (uint64_t(1) << 28);
    for_each_memory_order<T>(self, [&](T& out) {
      const uint64_t r = wide ? e.random64() : uint64_t(e());
      const int64_t v = int64_t(r % range + uint64_t(from));
      if constexpr (std::is_same_v<T, bool>) out = v != 0;
      else out = cast_from_int<T>(v);
    });
  });
  return self;
}

// ---- bernoulli_(p): a 53-bit uniform per element, 1 where it is below p.
Tensor& bernoulli_cpu(Tensor& self, double p, Generator* gen) {
  Generator& g = pick(gen);
  std::lock_guard lock(g.mutex());
  Mt19937& e = g.engine();
  visit_dtype<kAllTypes>(self.dtype(), "bernoulli_", [&]<class T>() {
    for_each_memory_order<T>(self, [&](T& out) {
      const bool hit = uniform_d53(e) < p;
      if constexpr (std::is_same_v<T, bool>) out = hit;
      else out = cast_from_int<T>(hit ? 1 : 0);
    });
  });
  return self;
}

// ---- exponential_: -1/lambda * log1p(-u) from a 53-bit uniform, in double (torch 2.x).
template <class T> void exponential_fill(Tensor& self, double lambd, Mt19937& e) {
  const double scale = -1.0 / lambd;
  for_each_memory_order<T>(self, [&](T& out) { out = cast_from_double<T>(scale * std::log1p(-uniform_d53(e))); });
}

Tensor& exponential_cpu(Tensor& self, double lambd, Generator* gen) {
  EMBER_CHECK(is_floating(self.dtype()), "\"exponential_\" not implemented for '", scalar_type_name(self.dtype()), "'");
  Generator& g = pick(gen);
  std::lock_guard lock(g.mutex());
  visit_dtype<kFloatTypes | kReducedFloatTypes>(self.dtype(), "exponential_", [&]<class T>() {
    exponential_fill<T>(self, lambd, g.engine());
  });
  return self;
}

// ---- randperm: torch's forward Fisher-Yates (swap i with i + draw % (n - i), 32-bit draws)
// below 2^32 / 20 elements; above, the "inside-out" variant with 64-bit draws.
Tensor randperm_cpu(int64_t n, TensorOptions opts, Generator* gen) {
  Tensor idx = empty({n}, {.dtype = kInt64, .device = Device(DeviceType::CPU)});
  int64_t* p = idx.data_ptr<int64_t>();
  Generator& g = pick(gen);
  {
    std::lock_guard lock(g.mutex());
    Mt19937& e = g.engine();
    if (n < int64_t(UINT32_MAX / 20)) {
      for (int64_t i = 0; i < n; ++i) p[i] = i;
      for (int64_t i = 0; i < n - 1; ++i) {
        const int64_t z = int64_t(e() % uint64_t(n - i));
        std::swap(p[i], p[z + i]);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t z = int64_t(e.random64() % uint64_t(i + 1));
        p[i] = p[z];
        p[z] = i;
      }
    }
  }
  DType dt = opts.dtype_or(kInt64);
  return dt == kInt64 ? idx : idx.to(dt);
}

// ---- multinomial. With replacement (and more than one sample): per row, the cumulative sums
// in the probabilities' type (float for the 16-bit types) divided by the total, the last set to
// 1, and for each sample a 53-bit uniform placed by binary search (first bucket not below it).
// Without replacement or for one sample: torch's exponential race, argmax / top-k of
// p / q with q ~ Exp(1) drawn for every entry (in the tensor's own layout order).
Tensor multinomial_cpu(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
  const int64_t rows = probs.dim() == 2 ? probs.size(0) : 1, cats = probs.size(-1);
  Tensor c = probs.contiguous();
  std::vector<double> w(static_cast<size_t>(rows * cats));
  visit_dtype<kFloatTypes | kReducedFloatTypes>(c.dtype(), "multinomial", [&]<class T>() {
    const T* p = c.data_ptr<T>();
    for (size_t i = 0; i < w.size(); ++i) w[i] = double(p[i]);
  });
  for (double x : w)  // NaN fails both comparisons
    EMBER_CHECK(x >= 0 && x < INFINITY, "probability tensor contains either `inf`, `nan` or element < 0");
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = w.data() + r * cats;
    double total = 0;
    for (int64_t k = 0; k < cats; ++k) total += row[k];
    EMBER_CHECK(total > 0, "invalid multinomial distribution (sum of probabilities <= 0)");
  }
  Tensor out = empty(probs.dim() == 2 ? Shape{rows, num_samples} : Shape{num_samples}, {.dtype = kInt64, .device = Device(DeviceType::CPU)});
  int64_t* o = out.data_ptr<int64_t>();
  Generator& g = pick(gen);
  std::lock_guard lock(g.mutex());
  Mt19937& e = g.engine();
  visit_dtype<kFloatTypes | kReducedFloatTypes>(c.dtype(), "multinomial", [&]<class T>() {
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* p = c.data_ptr<T>();
    if (replacement && num_samples > 1) {
      std::vector<Acc> cum(static_cast<size_t>(cats));
      for (int64_t r = 0; r < rows; ++r) {
        Acc sum = 0;
        for (int64_t k = 0; k < cats; ++k) {
          sum += Acc(p[r * cats + k]);
          cum[size_t(k)] = sum;
        }
        for (auto& v : cum) v /= sum;
        cum[size_t(cats - 1)] = 1;
        for (int64_t s = 0; s < num_samples; ++s) {
          const double u = uniform_d53(e);
          int64_t lo = 0, hi = cats;
          while (hi - lo > 0) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (cum[size_t(mid)] < u) lo = mid + 1;
            else hi = mid;
          }
          o[r * num_samples + s] = lo;
        }
      }
      return;
    }
    // q ~ Exp(1) in the input's dtype and layout order, then p / q in that dtype.
    Tensor q = empty_like_layout(probs);  // torch's empty_like(self): same layout, same draw order
    exponential_fill<T>(q, 1.0, e);
    Tensor qc = q.contiguous();
    const T* qp = qc.data_ptr<T>();
    std::vector<std::pair<double, int64_t>> queue(static_cast<size_t>(cats));
    // torch's topk comparator (NaN first, then larger) on (value, index) pairs in index order:
    // the same libstdc++ algorithms on the same sequence give torch's order among ties.
    auto larger = [](const std::pair<double, int64_t>& x, const std::pair<double, int64_t>& y) {
      return (std::isnan(x.first) && !std::isnan(y.first)) || x.first > y.first;
    };
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < cats; ++k) {
        const int64_t i = r * cats + k;
        T ratio;
        if constexpr (is_reduced_v<T>) ratio = T(float(p[i]) / float(qp[i]));
        else ratio = p[i] / qp[i];
        queue[size_t(k)] = {double(ratio), k};
      }
      int64_t* orow = o + r * num_samples;
      if (num_samples == 1) {  // argmax: the first maximum
        int64_t best = 0;
        for (int64_t k = 1; k < cats; ++k)
          if (larger(queue[size_t(k)], queue[size_t(best)])) best = k;
        orow[0] = best;
        continue;
      }
      // torch's topk: partial_sort when k * 64 <= n, else nth_element and a sort of the first k - 1
      if (num_samples * 64 <= cats) {
        std::partial_sort(queue.begin(), queue.begin() + num_samples, queue.end(), larger);
      } else {
        std::nth_element(queue.begin(), queue.begin() + num_samples - 1, queue.end(), larger);
        std::sort(queue.begin(), queue.begin() + num_samples - 1, larger);
      }
      for (int64_t s = 0; s < num_samples; ++s) orow[s] = queue[size_t(s)].second;
    }
  });
  return out;
}

EMBER_REGISTER_KERNEL(uniform_, CPU, uniform_cpu);
EMBER_REGISTER_KERNEL(normal_, CPU, normal_cpu);
EMBER_REGISTER_KERNEL(log_normal_, CPU, log_normal_cpu);
EMBER_REGISTER_KERNEL(random_, CPU, random_cpu);
EMBER_REGISTER_KERNEL(bernoulli_, CPU, bernoulli_cpu);
EMBER_REGISTER_KERNEL(exponential_, CPU, exponential_cpu);
EMBER_REGISTER_KERNEL(randperm, CPU, randperm_cpu);
EMBER_REGISTER_KERNEL(multinomial, CPU, multinomial_cpu);

}  // namespace
}  // namespace ember::cpu
