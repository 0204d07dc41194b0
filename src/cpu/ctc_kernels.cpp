// CPU kernels of _ctc_loss and its backward (checks, the concatenated-target form and the
// reductions: src/nn/functional/ctc_loss.cpp). One sample per task, split across threads.
//
// A sample with targets l_1..l_S is aligned through the extended labels blank, l_1, blank, ...,
// l_S, blank (2S + 1 positions). In log space:
//   alpha_0(0) = lp_0(blank), alpha_0(1) = lp_0(l_1),
//   alpha_t(s) = logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1), [skip] alpha_{t-1}(s-2)) + lp_t(ext_s),
// the skip allowed into a label that differs from the label two positions back; the loss is
// -logsumexp(alpha_{T-1}(2S), alpha_{T-1}(2S-1)). beta runs the same recursion from the end.
// The gradient with respect to log_probs is PyTorch's: exp(lp_t(c)) minus the posterior of c at
// t, exp(logsumexp_{s: ext_s = c}(alpha_t(s) + beta_t(s)) + nll - lp_t(c)), zero past the
// sample's length (the exact gradient through the log_softmax CTC is made for).
#include <cmath>
#include <limits>
#include <vector>

#include "core/dtype_dispatch.h"
#include "core/parallel.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

template <class T> inline T log_add(T a, T b) {
  if (a == -std::numeric_limits<T>::infinity()) return b;
  if (b == -std::numeric_limits<T>::infinity()) return a;
  const T m = std::max(a, b);
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

// The extended label at position s of sample n.
inline int64_t ext_label(const int64_t* targets, int64_t S, int64_t n, int64_t s, int64_t blank) {
  return (s & 1) ? targets[n * S + s / 2] : blank;
}

// Whether alpha_t(s) may come from alpha_{t-1}(s - 2): s is a label differing from the one before.
inline bool skip_allowed(const int64_t* targets, int64_t S, int64_t n, int64_t s) {
  return (s & 1) && s >= 3 && targets[n * S + s / 2] != targets[n * S + s / 2 - 1];
}

// -> (neg_log_likelihood (N), log_alpha (N, T, 2S + 1)), -inf where unreached.
std::tuple<Tensor, Tensor> ctc_loss_cpu(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                                        const Tensor& target_lengths, int64_t blank, bool /*zero_infinity*/) {
  const int64_t T = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2), S = targets.size(1);
  const int64_t L = 2 * S + 1;
  Tensor lp = log_probs.contiguous(), tg = targets.contiguous();
  Tensor il = input_lengths.contiguous(), tl = target_lengths.contiguous();
  Tensor nll = empty({N}, log_probs.options());
  Tensor alpha = empty({N, T, L}, log_probs.options());
  const int64_t* tp = tg.data_ptr<int64_t>();
  const int64_t* ilp = il.data_ptr<int64_t>();
  const int64_t* tlp = tl.data_ptr<int64_t>();
  visit_dtype<kFloatTypes>(log_probs.dtype(), "ctc_loss_cpu", [&]<class T_>() {
    constexpr T_ neg = -std::numeric_limits<T_>::infinity();
    const T_* P = lp.data_ptr<T_>();
    T_* A = alpha.data_ptr<T_>();
    T_* out = nll.data_ptr<T_>();
    parallel_for(0, N, 1, [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n) {
        const int64_t Tn = ilp[n], Sn = tlp[n], Ln = 2 * Sn + 1;
        T_* a = A + n * T * L;
        std::fill(a, a + T * L, neg);
        if (Tn == 0) {
          out[n] = Sn == 0 ? T_(0) : std::numeric_limits<T_>::infinity();
          continue;
        }
        auto lp_at = [&](int64_t t, int64_t c) { return P[(t * N + n) * C + c]; };
        a[0] = lp_at(0, blank);
        if (Sn > 0) a[1] = lp_at(0, ext_label(tp, S, n, 1, blank));
        for (int64_t t = 1; t < Tn; ++t) {
          const T_* prev = a + (t - 1) * L;
          T_* cur = a + t * L;
          for (int64_t s = 0; s < Ln; ++s) {
            T_ v = prev[s];
            if (s >= 1) v = log_add(v, prev[s - 1]);
            if (skip_allowed(tp, S, n, s)) v = log_add(v, prev[s - 2]);
            cur[s] = v == neg ? neg : v + lp_at(t, ext_label(tp, S, n, s, blank));
          }
        }
        const T_* last = a + (Tn - 1) * L;
        const T_ ll = Ln > 1 ? log_add(last[Ln - 1], last[Ln - 2]) : last[Ln - 1];
        out[n] = -ll;
      }
    });
  });
  return {nll, alpha};
}

Tensor ctc_loss_backward_cpu(const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
                             const Tensor& input_lengths, const Tensor& target_lengths, const Tensor& nll,
                             const Tensor& log_alpha, int64_t blank, bool zero_infinity) {
  const int64_t T = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2), S = targets.size(1);
  const int64_t L = 2 * S + 1;
  Tensor lp = log_probs.contiguous(), tg = targets.contiguous(), g = grad.contiguous();
  Tensor il = input_lengths.contiguous(), tl = target_lengths.contiguous();
  Tensor nl = nll.contiguous(), la = log_alpha.contiguous();
  Tensor out = zeros(log_probs.sizes(), log_probs.options());
  const int64_t* tp = tg.data_ptr<int64_t>();
  const int64_t* ilp = il.data_ptr<int64_t>();
  const int64_t* tlp = tl.data_ptr<int64_t>();
  visit_dtype<kFloatTypes>(log_probs.dtype(), "ctc_loss_backward_cpu", [&]<class T_>() {
    constexpr T_ neg = -std::numeric_limits<T_>::infinity();
    const T_* P = lp.data_ptr<T_>();
    const T_* A = la.data_ptr<T_>();
    const T_* G = g.data_ptr<T_>();
    const T_* NL = nl.data_ptr<T_>();
    T_* O = out.data_ptr<T_>();
    parallel_for(0, N, 1, [&](int64_t n0, int64_t n1) {
      std::vector<T_> beta(static_cast<size_t>(2 * L)), lcab(static_cast<size_t>(C));
      for (int64_t n = n0; n < n1; ++n) {
        const int64_t Tn = ilp[n], Sn = tlp[n], Ln = 2 * Sn + 1;
        const T_ nll_n = NL[n], gn = G[n];
        if (Tn == 0 || (zero_infinity && nll_n == std::numeric_limits<T_>::infinity())) continue;
        auto lp_at = [&](int64_t t, int64_t c) { return P[(t * N + n) * C + c]; };
        const T_* a = A + n * T * L;
        // beta in two rows (t and t + 1), consumed as it is made.
        T_* next = beta.data();
        T_* cur = beta.data() + L;
        for (int64_t t = Tn - 1; t >= 0; --t) {
          for (int64_t s = 0; s < Ln; ++s) {
            T_ v;
            if (t == Tn - 1) {
              v = (s == Ln - 1 || s == Ln - 2) ? T_(0) : neg;
            } else {
              v = next[s];
              if (s + 1 < Ln) v = log_add(v, next[s + 1]);
              if (s + 2 < Ln && skip_allowed(tp, S, n, s + 2)) v = log_add(v, next[s + 2]);
            }
            cur[s] = v == neg ? neg : v + lp_at(t, ext_label(tp, S, n, s, blank));
          }
          // the posterior of each label at t: logsumexp over its positions of alpha + beta
          std::fill(lcab.begin(), lcab.end(), neg);
          const T_* at = a + t * L;
          for (int64_t s = 0; s < Ln; ++s) {
            const int64_t c = ext_label(tp, S, n, s, blank);
            lcab[size_t(c)] = log_add(lcab[size_t(c)], at[s] + cur[s]);
          }
          T_* o = O + (t * N + n) * C;
          for (int64_t c = 0; c < C; ++c) {
            const T_ l = lp_at(t, c);
            o[c] = (std::exp(l) - std::exp(lcab[size_t(c)] + nll_n - l)) * gn;
          }
          std::swap(next, cur);
        }
      }
    });
  });
  return out;
}

EMBER_REGISTER_KERNEL(_ctc_loss, CPU, ctc_loss_cpu);
EMBER_REGISTER_KERNEL(_ctc_loss_backward, CPU, ctc_loss_backward_cpu);

}  // namespace
}  // namespace ember::cpu
