// CPU kernels for arange, linspace, the random fills, randperm and multinomial. Random draws are
// serial: one generator stream, so the same seed gives the same numbers whatever the thread
// count (float32 normal_ transforms its draws over threads, each value from its own pair).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "core/parallel.h"
#include "cpu/tensor_iter.h"
#include "cpu/vec_math.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

template <class T> T from_double(double v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(float(v));
  else return static_cast<T>(v);
}

Tensor arange_cpu(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions opts) {
  DType dt = opts.dtype_or_default();
  double s = start.to_double(), e = end.to_double(), st = step.to_double();
  EMBER_CHECK(st != 0, "step must be nonzero");
  EMBER_CHECK(std::isfinite(s) && std::isfinite(e), "unsupported range: ", start.str(), " -> ", end.str());
  EMBER_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "upper bound and larger bound inconsistent with step sign");
  int64_t n;
  if (is_floating(dt) || start.is_floating() || end.is_floating() || step.is_floating())
    n = int64_t(std::ceil((e - s) / st));
  else {
    int64_t is = start.to_int(), ie = end.to_int(), ist = step.to_int();
    n = ist > 0 ? (ie - is + ist - 1) / ist : (is - ie + (-ist) - 1) / (-ist);
  }
  Tensor out = empty({n}, {.dtype = dt});
  visit_dtype<kAllTypes & ~bit(DType::Bool)>(dt, "arange", [&]<class T>() {
    T* p = out.data_ptr<T>();
    if constexpr (std::is_integral_v<T>) {
      int64_t is = start.to_int(), ist = step.to_int();
      if (!start.is_floating() && !step.is_floating()) { for (int64_t i = 0; i < n; ++i) p[i] = T(is + i * ist); return; }
    }
    for (int64_t i = 0; i < n; ++i) p[i] = from_double<T>(s + double(i) * st);
  });
  return out;
}

Tensor linspace_cpu(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions opts) {
  DType dt = opts.dtype_or_default();
  Tensor out = empty({steps}, {.dtype = dt});
  double s = start.to_double(), e = end.to_double();
  double step = steps > 1 ? (e - s) / double(steps - 1) : 0.0;
  int64_t half = steps / 2;
  visit_dtype<kAllTypes & ~bit(DType::Bool)>(dt, "linspace", [&]<class T>() {
    T* p = out.data_ptr<T>();
    // Symmetric from both ends, as PyTorch does, so the last value is exactly `end`.
    for (int64_t i = 0; i < steps; ++i) {
      double v = (i < half || steps == 1) ? s + step * double(i) : e - step * double(steps - 1 - i);
      p[i] = from_double<T>(v);
    }
  });
  return out;
}

// Fills self (any layout) by generating into a contiguous buffer and copying when needed.
template <class Gen> Tensor& random_fill(Tensor& self, const char* name, Gen&& gen_value) {
  if (self.numel() == 0) return self;
  Tensor dst = self.is_contiguous() ? self : empty(self.sizes(), {.dtype = self.dtype()});
  visit_dtype<kAllTypes>(self.dtype(), name, [&]<class T>() {
    T* p = dst.data_ptr<T>();
    int64_t n = dst.numel();
    for (int64_t i = 0; i < n; ++i) p[i] = gen_value.template operator()<T>();
  });
  if (!dst.is_same(self)) ops::copy_()(self, dst);
  return self;
}

Generator& pick(Generator* g) { return g ? *g : default_generator(); }

Tensor& uniform_cpu(Tensor& self, double from, double to, Generator* gen) {
  EMBER_CHECK(is_floating(self.dtype()), "\"uniform_\" not implemented for '", scalar_type_name(self.dtype()), "'");
  Generator& g = pick(gen);
  std::lock_guard lock(g.mutex());
  auto& eng = g.engine();
  double range = to - from;
  return random_fill(self, "uniform_", [&]<class T>() -> T {
    double u = double(eng() >> 11) * 0x1.0p-53;
    double v = from + u * range;
    if constexpr (std::is_same_v<T, float>) {  // keep float results inside [from, to)
      float f = float(v);
      return f >= float(to) && to > from ? std::nextafter(float(to), float(from)) : f;
    } else {
      return from_double<T>(v);
    }
  });
}

// float32 normal_: the same uniform pairs as the double path below, drawn serially, then the
// Box-Muller transform in float over threads (vec_math's log/log1p and a quadrant sincos; log1p
// for u1 near 1, where rounding u1 to float would lose it). Within ~1e-6 of the double path's
// values; 1M elements 16.5 -> about 3 ms.
void normal_float32(Tensor& dst, double mean, double std, std::mt19937_64& eng) {
  float* p = dst.data_ptr<float>();
  const int64_t n = dst.numel(), pairs = (n + 1) / 2;
  // Only the engine is serial: raw draws first, turned into uniforms in the parallel loop.
  std::vector<uint64_t> raw(2 * static_cast<size_t>(pairs));
  for (uint64_t& r : raw) r = eng();
  const float m = float(mean), sd = float(std);
  // One pair -> values 2i (cos) and 2i + 1 (sin); no branches, so the loop vectorises.
  auto pair = [&](int64_t i, float& z0, float& z1) __attribute__((always_inline)) {
    const double u1 = (double(raw[2 * i] >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    const float ang = float(double(raw[2 * i + 1] >> 11) * 0x1.0p-53);
    const float la = log_f32(float(u1)), lb = log1p_f32(float(u1 - 1.0));  // u1 - 1 is exact
    const int32_t near1 = -int32_t(u1 >= 0.5);
    const float l = vm::as_float((vm::as_int(la) & ~near1) | (vm::as_int(lb) & near1));
    const float r = std::sqrt(-2.0f * l);
    float sn, cs;
    sincos_2pi_f32(ang, sn, cs);
    z0 = m + sd * r * cs;
    z1 = m + sd * r * sn;
  };
  const int64_t full = n / 2;
  parallel_for(0, full, 4096, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) pair(i, p[2 * i], p[2 * i + 1]);
  });
  if (full < pairs) {  // odd n: the last pair's second value is drawn and dropped
    float z1;
    pair(full, p[2 * full], z1);
  }
}

Tensor& normal_cpu(Tensor& self, double mean, double std, Generator* gen) {
  EMBER_CHECK(is_floating(self.dtype()), "\"normal_\" not implemented for '", scalar_type_name(self.dtype()), "'");
  Generator& g = pick(gen);
  std::lock_guard lock(g.mutex());
  auto& eng = g.engine();
  if (self.dtype() == kFloat32 && self.numel() > 0) {
    Tensor dst = self.is_contiguous() ? self : empty(self.sizes(), {.dtype = kFloat32});
    normal_float32(dst, mean, std, eng);
    if (!dst.is_same(self)) ops::copy_()(self, dst);
    return self;
  }
  bool have_spare = false;
  double spare = 0;
  return random_fill(self, "normal_", [&]<class T>() -> T {
    // Box-Muller: two uniforms give two independent normals.
    if (have_spare) { have_spare = false; return from_double<T>(mean + std * spare); }
    double u1 = (double(eng() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]: log(u1) is finite
    double u2 = double(eng() >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * std::log(u1));
    spare = r * std::sin(2.0 * std::numbers::pi * u2);
    have_spare = true;
    return from_double<T>(mean + std * r * std::cos(2.0 * std::numbers::pi * u2));
  });
}

Tensor& random_cpu(Tensor& self, int64_t from, int64_t to, Generator* gen) {
  Generator& g = pick(gen);
  std::lock_guard lock(g.mutex());
  auto& eng = g.engine();
  uint64_t range = uint64_t(to - from);
  return random_fill(self, "random_", [&]<class T>() -> T {
    // Rejection sampling keeps every value equally likely.
    uint64_t limit = UINT64_MAX - UINT64_MAX % range, r;
    do { r = eng(); } while (r >= limit);
    int64_t v = from + int64_t(r % range);
    if constexpr (std::is_same_v<T, bool>) return v != 0;
    else return from_double<T>(double(v));
  });
}

Tensor& bernoulli_cpu(Tensor& self, double p, Generator* gen) {
  Generator& g = pick(gen);
  std::lock_guard lock(g.mutex());
  auto& eng = g.engine();
  return random_fill(self, "bernoulli_", [&]<class T>() -> T {
    bool hit = double(eng() >> 11) * 0x1.0p-53 < p;
    if constexpr (std::is_same_v<T, bool>) return hit;
    else return from_double<T>(hit ? 1.0 : 0.0);
  });
}

Tensor randperm_cpu(int64_t n, TensorOptions opts, Generator* gen) {
  Tensor idx = empty({n}, {.dtype = kInt64});
  int64_t* p = idx.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  Generator& g = pick(gen);
  {
    std::lock_guard lock(g.mutex());
    auto& eng = g.engine();
    for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates
      uint64_t range = uint64_t(i + 1), limit = UINT64_MAX - UINT64_MAX % range, r;
      do { r = eng(); } while (r >= limit);
      std::swap(p[i], p[int64_t(r % range)]);
    }
  }
  DType dt = opts.dtype_or(kInt64);
  return dt == kInt64 ? idx : idx.to(dt);
}

// torch.multinomial. Every row is checked before anything is drawn; then the generator is
// locked once and rows are sampled in order, so a seed fixes all draws.
Tensor multinomial_cpu(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
  int64_t rows = probs.dim() == 2 ? probs.size(0) : 1, cats = probs.size(-1);
  std::vector<double> w(static_cast<size_t>(rows * cats));
  Tensor c = probs.contiguous();
  visit_dtype<kFloatTypes | kReducedFloatTypes>(c.dtype(), "multinomial", [&]<class T>() {
    const T* p = c.data_ptr<T>();
    for (size_t i = 0; i < w.size(); ++i) w[i] = double(p[i]);
  });
  for (double x : w)  // NaN fails both comparisons
    EMBER_CHECK(x >= 0 && x < INFINITY, "probability tensor contains either `inf`, `nan` or element < 0");
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = w.data() + r * cats;
    double total = 0;
    int64_t positive = 0;
    for (int64_t k = 0; k < cats; ++k) { total += row[k]; positive += row[k] > 0; }
    EMBER_CHECK(total > 0, "invalid multinomial distribution (sum of probabilities <= 0)");
    EMBER_CHECK(replacement || positive >= num_samples,
                "invalid multinomial distribution (with replacement=False, not enough non-negative category to sample)");
  }
  Tensor out = empty(probs.dim() == 2 ? Shape{rows, num_samples} : Shape{num_samples}, {.dtype = kInt64});
  int64_t* o = out.data_ptr<int64_t>();
  Generator& g = pick(gen);
  std::lock_guard lock(g.mutex());
  auto& eng = g.engine();
  std::vector<double> cdf(static_cast<size_t>(cats)), key(static_cast<size_t>(cats));
  std::vector<int64_t> idx;
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = w.data() + r * cats;
    int64_t* orow = o + r * num_samples;
    if (replacement) {
      // Inverse CDF: the first category whose cumulative weight exceeds u * total. A zero
      // weight repeats the previous cumulative value, so it is never the first to exceed it.
      double acc = 0;
      int64_t last = 0;  // the last category with a positive weight
      for (int64_t k = 0; k < cats; ++k) { acc += row[k]; cdf[size_t(k)] = acc; if (row[k] > 0) last = k; }
      double total = acc;
      for (int64_t s = 0; s < num_samples; ++s) {
        double u = double(eng() >> 11) * 0x1.0p-53 * total;  // [0, total)
        int64_t k = std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
        orow[s] = std::min(k, last);  // u rounded up to total: the last positive category
      }
    } else {
      // Exponential keys: category k gets E_k / w_k with E_k ~ Exp(1); sorting the keys
      // ascending gives the order of successive draws without replacement. Compared as
      // log(E_k) - log(w_k) so tiny weights cannot overflow. Zero weights take no part.
      idx.clear();
      for (int64_t k = 0; k < cats; ++k) {
        if (!(row[k] > 0)) continue;
        double u = (double(eng() >> 11) + 0.5) * 0x1.0p-53;  // (0, 1)
        key[size_t(k)] = std::log(-std::log(u)) - std::log(row[k]);
        idx.push_back(k);
      }
      auto by_key = [&](int64_t a, int64_t b) {
        double ka = key[size_t(a)], kb = key[size_t(b)];
        return ka < kb || (ka == kb && a < b);
      };
      std::partial_sort(idx.begin(), idx.begin() + num_samples, idx.end(), by_key);
      std::copy(idx.begin(), idx.begin() + num_samples, orow);
    }
  }
  return out;
}

EMBER_REGISTER_KERNEL(arange, CPU, arange_cpu);
EMBER_REGISTER_KERNEL(linspace, CPU, linspace_cpu);
EMBER_REGISTER_KERNEL(uniform_, CPU, uniform_cpu);
EMBER_REGISTER_KERNEL(normal_, CPU, normal_cpu);
EMBER_REGISTER_KERNEL(random_, CPU, random_cpu);
EMBER_REGISTER_KERNEL(bernoulli_, CPU, bernoulli_cpu);
EMBER_REGISTER_KERNEL(randperm, CPU, randperm_cpu);
EMBER_REGISTER_KERNEL(multinomial, CPU, multinomial_cpu);

}  // namespace
}  // namespace ember::cpu
