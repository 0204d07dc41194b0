// CPU kernels for the fused cross entropy with class-index targets (ops cross_entropy_index and
// cross_entropy_index_backward, declared in the nn-loss section of src/ops/op_list.h).
//
// Rows of a contiguous (M, C) input. Per row: max, sum of exp(x - max) (vectorised exp_f32 for
// float32), logp[c] = (x[c] - max) - log(sum), then
//   loss = -((1 - ls) * w[t] * logp[t] + ls / C * sum_c w[c] logp[c])
// which is PyTorch's label-smoothing formula (w = 1 without weight). Ignored rows give 0 and do
// not count; "mean" divides by the sum of w[t] over the rows that are not ignored (0/0 -> nan).
// Backward: d loss / d x[j] = softmax(x)[j] * A - a[j], a[c] = (1 - ls) w[t] [c == t] + ls/C w[c],
// A = sum_c a[c], times grad (per row for "none"; grad / weight_sum for "mean").
// float16/bfloat16 compute in float32; partial sums accumulate in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "core/dtype_dispatch.h"
#include "ops/reduce_utils.h"
#include "cpu/vec_math.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

template <class T> inline T exp_t(T x) {
  if constexpr (std::is_same_v<T, float>) return exp_f32(x);
  else return std::exp(x);
}

// Row max and log(sum(exp(x - max))), kept apart: log-probabilities are (x - max) - logsum,
// which keeps the small losses of rows with large logits exact (max + logsum would round).
template <class T> struct Lse {
  T mx, logsum;
};
template <class T> inline Lse<T> row_lse(const T* __restrict x, int64_t n) {
  constexpr int K = 64 / sizeof(T);
  T m[2 * K];
  for (int k = 0; k < 2 * K; ++k) m[k] = -std::numeric_limits<T>::infinity();
  int64_t i = 0;
  for (; i + 2 * K <= n; i += 2 * K)
    for (int k = 0; k < 2 * K; ++k) m[k] = x[i + k] > m[k] ? x[i + k] : m[k];
  for (; i < n; ++i) m[0] = x[i] > m[0] ? x[i] : m[0];
  for (int w = K; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) m[k] = m[k + w] > m[k] ? m[k + w] : m[k];
  const T mx = m[0];
  if (std::isinf(mx)) return {mx, T(0)};  // all -inf, or +inf present: nan as PyTorch
  T s[2 * K];
  for (int k = 0; k < 2 * K; ++k) s[k] = T(0);
  i = 0;
  for (; i + 2 * K <= n; i += 2 * K)
    for (int k = 0; k < 2 * K; ++k) s[k] += exp_t(x[i + k] - mx);
  for (; i < n; ++i) s[0] += exp_t(x[i] - mx);
  for (int w = K; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) s[k] += s[k + w];
  return {mx, std::log(s[0])};
}

struct CeArgs {
  int64_t M, C, ignore_index, reduction;
  double ls;
};

// Checks every target and returns the divisor for "mean" (sum of w[t] over kept rows).
double check_targets(const int64_t* t, const double* w, const CeArgs& a) {
  double wsum = 0;
  for (int64_t i = 0; i < a.M; ++i) {
    int64_t c = t[i];
    if (c == a.ignore_index) continue;
    EMBER_CHECK_INDEX(c >= 0 && c < a.C, "Target ", c, " is out of bounds.");
    wsum += w ? w[c] : 1.0;
  }
  return wsum;
}

std::vector<double> weight_vec(const std::optional<Tensor>& weight) {
  if (!weight || !weight->defined()) return {};
  return weight->contiguous().to(kFloat64).tolist<double>();
}

Tensor ce_forward_cpu(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                      int64_t ignore_index, int64_t reduction, double ls) {
  EMBER_CHECK(input.dim() == 2 && target.dim() == 1 && input.size(0) == target.size(0),
              "cross_entropy_index: expected (M, C) input and (M) target");
  DType out_dt = input.dtype();
  DType cdt = is_reduced_float(out_dt) ? kFloat32 : out_dt;
  Tensor x = reduce::convert(input, cdt, /*contig=*/true);
  Tensor tg = target.to(kInt64).contiguous();
  CeArgs a{input.size(0), input.size(1), ignore_index, reduction, ls};
  std::vector<double> wv = weight_vec(weight);
  const double* w = wv.empty() ? nullptr : wv.data();
  const int64_t* t = tg.data_ptr<int64_t>();
  double wsum = check_targets(t, w, a);
  double wall = 0;  // sum_c w[c]
  for (int64_t c = 0; c < a.C; ++c) wall += w ? w[c] : 1.0;
  std::vector<double> rows(a.M, 0.0);
  visit_dtype<kFloatTypes>(cdt, "cross_entropy", [&]<class T>() {
    const T* in = x.data_ptr<T>();
    const int64_t C = a.C;
    int64_t grain = std::max<int64_t>(1, kGrainSize / (4 * std::max<int64_t>(C, 1)));
    parallel_for(0, a.M, grain, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t c = t[r];
        if (c == ignore_index) continue;
        const T* row = in + r * C;
        const Lse<T> lse = row_lse<T>(row, C);
        const double mx = double(lse.mx), logsum = double(lse.logsum);
        double wt = w ? w[c] : 1.0;
        double l = -(1.0 - ls) * wt * ((double(row[c]) - mx) - logsum);
        if (ls > 0) {
          double wx = 0;  // sum_c w[c] (x[c] - max)
          if (w) for (int64_t j = 0; j < C; ++j) wx += w[j] * (double(row[j]) - mx);
          else for (int64_t j = 0; j < C; ++j) wx += double(row[j]) - mx;
          l -= ls / double(C) * (wx - logsum * wall);
        }
        rows[r] = l;
      }
    });
  });
  if (reduction == 0) {
    Tensor out = empty({a.M}, {.dtype = kFloat64, .device = Device(DeviceType::CPU)});
    std::copy(rows.begin(), rows.end(), out.data_ptr<double>());
    return out.to(out_dt);
  }
  double total = 0;
  for (double v : rows) total += v;
  if (reduction == 1) total = total / wsum;  // all ignored (or empty): 0/0 = nan, as PyTorch
  return full({}, total, {.dtype = out_dt, .device = Device(DeviceType::CPU)});
}

Tensor ce_backward_cpu(const Tensor& grad, const Tensor& input, const Tensor& target,
                       const std::optional<Tensor>& weight, int64_t ignore_index, int64_t reduction, double ls) {
  DType out_dt = input.dtype();
  DType cdt = is_reduced_float(out_dt) ? kFloat32 : out_dt;
  Tensor x = reduce::convert(input, cdt, /*contig=*/true);
  Tensor tg = target.to(kInt64).contiguous();
  CeArgs a{input.size(0), input.size(1), ignore_index, reduction, ls};
  std::vector<double> wv = weight_vec(weight);
  const double* w = wv.empty() ? nullptr : wv.data();
  const int64_t* t = tg.data_ptr<int64_t>();
  double wsum = check_targets(t, w, a);
  double wall = 0;
  for (int64_t c = 0; c < a.C; ++c) wall += w ? w[c] : 1.0;
  std::vector<double> g;
  double g0 = 0;
  if (reduction == 0) g = grad.contiguous().to(kFloat64).tolist<double>();
  else g0 = grad.item().to<double>() / (reduction == 1 ? wsum : 1.0);
  Tensor gi = empty(input.sizes(), {.dtype = cdt, .device = Device(DeviceType::CPU)});
  visit_dtype<kFloatTypes>(cdt, "cross_entropy_backward", [&]<class T>() {
    const T* in = x.data_ptr<T>();
    T* out = gi.data_ptr<T>();
    const int64_t C = a.C;
    const T lsc = T(ls / double(C));
    int64_t grain = std::max<int64_t>(1, kGrainSize / (4 * std::max<int64_t>(C, 1)));
    parallel_for(0, a.M, grain, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t c = t[r];
        T* o = out + r * C;
        if (c == ignore_index) {
          std::fill(o, o + C, T(0));
          continue;
        }
        const T* row = in + r * C;
        const Lse<T> lse = row_lse<T>(row, C);
        const T mx = lse.mx, logsum = lse.logsum;
        double gr = reduction == 0 ? g[r] : g0;
        double wt = w ? w[c] : 1.0;
        const T A = T(gr * ((1.0 - ls) * wt + ls / double(C) * wall));  // grad * sum_c a[c]
        for (int64_t j = 0; j < C; ++j) o[j] = exp_t((row[j] - mx) - logsum) * A;
        if (ls > 0) {
          const T gs = T(gr) * lsc;
          if (w) for (int64_t j = 0; j < C; ++j) o[j] -= gs * T(w[j]);
          else for (int64_t j = 0; j < C; ++j) o[j] -= gs;
        }
        o[c] -= T(gr * (1.0 - ls) * wt);
      }
    });
  });
  return reduce::convert(gi, out_dt);
}

EMBER_REGISTER_KERNEL(cross_entropy_index, CPU, ce_forward_cpu);
EMBER_REGISTER_KERNEL(cross_entropy_index_backward, CPU, ce_backward_cpu);

}  // namespace
}  // namespace ember::cpu
