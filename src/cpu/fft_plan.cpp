// The Stockham transform behind src/cpu/fft_kernels.cpp (see fft_plan.h).
//
// A stage of radix r turns sub-transforms of length N = r * m (stride s) into r times as many of
// length m (stride r * s), writing to the other buffer in an order that leaves the result in
// natural order after the last stage (decimation in frequency, no bit reversal):
//   y[q + s (r p + k)] = w_N^(p k) * sum_j x[q + s (p + j m)] * w_r^(j k)
// for p < m, q < s, k < r, with w_N = exp(sign 2 pi i / N).
#include "cpu/fft_plan.h"

#include <cmath>
#include <cstring>
#include <tuple>

#include "core/parallel.h"
#include "cpu/fft_lanes.h"
#include "ember/core/errors.h"

namespace ember::cpu::fft {

int64_t largest_prime_factor(int64_t n) {
  int64_t best = 1;
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      best = p;
      n /= p;
    }
  return n > 1 ? n : best;
}

namespace {

// exp(sign 2 pi i num / den), computed in double with num reduced mod den.
void root(double sign, int64_t num, int64_t den, double& re, double& im) {
  const double a = sign * 2.0 * M_PI * double(num % den) / double(den);
  re = std::cos(a);
  im = std::sin(a);
}

// The radices of n: 4s first (fewest passes over the data), then 2, 3 and larger primes.
std::vector<int64_t> radices(int64_t n) {
  std::vector<int64_t> out;
  while (n % 4 == 0) {
    out.push_back(4);
    n /= 4;
  }
  for (int64_t p = 2; n > 1; ++p)
    while (n % p == 0) {
      out.push_back(p);
      n /= p;
    }
  return out;
}

// Relative cost of a transform of length m: passes over m elements, weighted by what a pass of
// each radix cost per element on 16-line float groups (AVX-512, this project's 2-core VM):
// radix 4, 3 and 2 alike (each pass streams the group through L2), radix 5 1.15, the generic
// butterfly about 0.6 p (7^4 points: 0.70 ns per point and pass against 0.17 for 4^6).
double transform_cost(int64_t m) {
  double passes = 0;
  for (int64_t r : radices(m)) passes += r <= 4 ? 1.0 : r == 5 ? 1.15 : 0.6 * double(r);
  return double(m) * passes;
}

// Bluestein's convolution length: at least 2n - 1, the cheapest of the 2^a 3^b 5^c up to the next
// power of two (for 4099 points, 9216 instead of 16384).
int64_t bluestein_length(int64_t n) {
  int64_t pow2 = 1;
  while (pow2 < 2 * n - 1) pow2 *= 2;
  int64_t best = pow2;
  for (int64_t p5 = 1; p5 <= pow2; p5 *= 5)
    for (int64_t p35 = p5; p35 <= pow2; p35 *= 3) {
      int64_t m = p35;
      while (m < 2 * n - 1) m *= 2;
      if (transform_cost(m) < transform_cost(best)) best = m;
    }
  return best;
}

}  // namespace

template <class R, class V> Plan<R, V>::Plan(int64_t n, bool inverse) : n_(n), sign_(inverse ? R(1) : R(-1)) {
  EMBER_CHECK(n >= 1, "fft: transform length must be positive, got ", n);
  if (largest_prime_factor(n) > kMaxDirectPrime) {
    m_ = bluestein_length(n);
    sub_ = std::make_unique<Plan>(m_, /*inverse=*/false);
    chirp_re_.resize(n);
    chirp_im_.resize(n);
    std::vector<double> kr(m_, 0.0), ki(m_, 0.0);
    for (int64_t k = 0; k < n; ++k) {
      double cr, ci;  // exp(sign pi i k^2 / n) = exp(sign 2 pi i (k^2 mod 2n) / 2n)
      root(double(sign_), (k * k) % (2 * n), 2 * n, cr, ci);
      chirp_re_[k] = R(cr);
      chirp_im_[k] = R(ci);
      kr[k] = cr;  // the kernel is conj(chirp), symmetric around 0 (mod m)
      ki[k] = -ci;
      if (k > 0) {
        kr[m_ - k] = cr;
        ki[m_ - k] = -ci;
      }
    }
    // The kernel's spectrum, by a direct double-precision pass through a one-line plan.
    Plan<double, double> once(m_, false);
    std::vector<double> work(size_t(once.work_size()));
    once.transform(kr.data(), ki.data(), work.data());
    kernel_re_.assign(kr.begin(), kr.end());
    kernel_im_.assign(ki.begin(), ki.end());
    return;
  }
  int64_t len = n, s = 1;
  for (int64_t r : radices(n)) {
    const int64_t m = len / r;
    stages_.push_back({r, m, s, int64_t(tw_re_.size()), int64_t(root_re_.size())});
    for (int64_t p = 0; p < m; ++p)
      for (int64_t k = 1; k < r; ++k) {
        double wr, wi;
        root(double(sign_), p * k, len, wr, wi);
        tw_re_.push_back(R(wr));
        tw_im_.push_back(R(wi));
      }
    if (r > 4)  // generic butterflies read the radix's roots of unity
      for (int64_t t = 0; t < r; ++t) {
        double wr, wi;
        root(double(sign_), t, r, wr, wi);
        root_re_.push_back(R(wr));
        root_im_.push_back(R(wi));
      }
    len = m;
    s *= r;
  }
}

template <class R, class V> Plan<R, V>::Plan(Plan&&) noexcept = default;
template <class R, class V> Plan<R, V>::~Plan() = default;

template <class R, class V> int64_t Plan<R, V>::work_size() const {
  return sub_ ? 2 * m_ + sub_->work_size() : 2 * n_;
}

template <class R, class V>
void Plan<R, V>::run_stage(const Stage& st, const V* xr, const V* xi, V* yr, V* yi) const {
  const int64_t r = st.radix, m = st.m, s = st.s, step = s * m;
  const R* twr = tw_re_.data() + st.twiddle;
  const R* twi = tw_im_.data() + st.twiddle;
  // (a + ib) * (c + id)
  auto mul_re = [](V a, V b, R c, R d) { return a * c - b * d; };
  auto mul_im = [](V a, V b, R c, R d) { return a * d + b * c; };
  // output k of the butterfly at o, times its twiddle (wr, wi: the k = 1 .. radix-1 twiddles of p)
  auto put = [&](int64_t o, int64_t k, V vr, V vi, const R* wr, const R* wi) {
    yr[o + k * s] = mul_re(vr, vi, wr[k - 1], wi[k - 1]);
    yi[o + k * s] = mul_im(vr, vi, wr[k - 1], wi[k - 1]);
  };
  if (r == 2) {
    for (int64_t p = 0; p < m; ++p) {
      const R* wr = twr + p;
      const R* wi = twi + p;
      for (int64_t q = 0; q < s; ++q) {
        const int64_t i = q + s * p, o = q + 2 * s * p;
        const V ar = xr[i], ai = xi[i], br = xr[i + step], bi = xi[i + step];
        yr[o] = ar + br;
        yi[o] = ai + bi;
        put(o, 1, ar - br, ai - bi, wr, wi);
      }
    }
    return;
  }
  if (r == 4) {
    const R sg = sign_;  // w_4 = sign * i
    for (int64_t p = 0; p < m; ++p) {
      const R* wr = twr + 3 * p;
      const R* wi = twi + 3 * p;
      for (int64_t q = 0; q < s; ++q) {
        const int64_t i = q + s * p, o = q + 4 * s * p;
        const V a0r = xr[i], a0i = xi[i], a1r = xr[i + step], a1i = xi[i + step];
        const V a2r = xr[i + 2 * step], a2i = xi[i + 2 * step], a3r = xr[i + 3 * step], a3i = xi[i + 3 * step];
        const V t0r = a0r + a2r, t0i = a0i + a2i, t1r = a0r - a2r, t1i = a0i - a2i;
        const V t2r = a1r + a3r, t2i = a1i + a3i;
        // (a1 - a3) * sign i
        const V t3r = (a3i - a1i) * sg, t3i = (a1r - a3r) * sg;
        yr[o] = t0r + t2r;
        yi[o] = t0i + t2i;
        const V y1r = t1r + t3r, y1i = t1i + t3i, y2r = t0r - t2r, y2i = t0i - t2i, y3r = t1r - t3r,
                y3i = t1i - t3i;
        put(o, 1, y1r, y1i, wr, wi);
        put(o, 2, y2r, y2i, wr, wi);
        put(o, 3, y3r, y3i, wr, wi);
      }
    }
    return;
  }
  if (r == 3) {
    const R c = R(-0.5), d = sign_ * R(0.86602540378443864676);  // w_3 = c + i d
    for (int64_t p = 0; p < m; ++p) {
      const R* wr = twr + 2 * p;
      const R* wi = twi + 2 * p;
      for (int64_t q = 0; q < s; ++q) {
        const int64_t i = q + s * p, o = q + 3 * s * p;
        const V a0r = xr[i], a0i = xi[i], a1r = xr[i + step], a1i = xi[i + step];
        const V a2r = xr[i + 2 * step], a2i = xi[i + 2 * step];
        const V tr = a1r + a2r, ti = a1i + a2i;
        yr[o] = a0r + tr;
        yi[o] = a0i + ti;
        const V ur = a0r + tr * c, ui = a0i + ti * c;
        const V vr = (a2i - a1i) * d, vi = (a1r - a2r) * d;  // (a1 - a2) * i d
        const V y1r = ur + vr, y1i = ui + vi, y2r = ur - vr, y2i = ui - vi;
        put(o, 1, y1r, y1i, wr, wi);
        put(o, 2, y2r, y2i, wr, wi);
      }
    }
    return;
  }
  if (r == 5) {
    // y_0 = a0 + t1 + t2; y_1,4 = b1 +- sign i u1; y_2,3 = b2 +- sign i u2, with t1 = a1 + a4,
    // t2 = a2 + a3, b1 = a0 + c1 t1 + c2 t2, b2 = a0 + c2 t1 + c1 t2, u1 = s1 (a1 - a4) + s2 (a2 - a3),
    // u2 = s2 (a1 - a4) - s1 (a2 - a3); c_k, s_k = cos, sin (2 pi k / 5).
    const R c1 = R(0.30901699437494742410), c2 = R(-0.80901699437494742410);
    const R s1 = R(0.95105651629515357212), s2 = R(0.58778525229247312917), sg = sign_;
    for (int64_t p = 0; p < m; ++p) {
      const R* wr = twr + 4 * p;
      const R* wi = twi + 4 * p;
      for (int64_t q = 0; q < s; ++q) {
        const int64_t i = q + s * p, o = q + 5 * s * p;
        const V a0r = xr[i], a0i = xi[i], a1r = xr[i + step], a1i = xi[i + step];
        const V a2r = xr[i + 2 * step], a2i = xi[i + 2 * step], a3r = xr[i + 3 * step], a3i = xi[i + 3 * step];
        const V a4r = xr[i + 4 * step], a4i = xi[i + 4 * step];
        const V t1r = a1r + a4r, t1i = a1i + a4i, t2r = a2r + a3r, t2i = a2i + a3i;
        const V t3r = a1r - a4r, t3i = a1i - a4i, t4r = a2r - a3r, t4i = a2i - a3i;
        yr[o] = a0r + t1r + t2r;
        yi[o] = a0i + t1i + t2i;
        const V b1r = a0r + t1r * c1 + t2r * c2, b1i = a0i + t1i * c1 + t2i * c2;
        const V b2r = a0r + t1r * c2 + t2r * c1, b2i = a0i + t1i * c2 + t2i * c1;
        const V u1r = (t3r * s1 + t4r * s2) * sg, u1i = (t3i * s1 + t4i * s2) * sg;
        const V u2r = (t3r * s2 - t4r * s1) * sg, u2i = (t3i * s2 - t4i * s1) * sg;
        put(o, 1, b1r - u1i, b1i + u1r, wr, wi);
        put(o, 4, b1r + u1i, b1i - u1r, wr, wi);
        put(o, 2, b2r - u2i, b2i + u2r, wr, wi);
        put(o, 3, b2r + u2i, b2i - u2r, wr, wi);
      }
    }
    return;
  }
  // A generic prime radix: each output is a dot product with the radix's roots of unity.
  const R* rr = root_re_.data() + st.roots;
  const R* ri = root_im_.data() + st.roots;
  V ar[kMaxDirectPrime], ai[kMaxDirectPrime];
  for (int64_t p = 0; p < m; ++p) {
    const R* wr = twr + (r - 1) * p;
    const R* wi = twi + (r - 1) * p;
    for (int64_t q = 0; q < s; ++q) {
      const int64_t i = q + s * p, o = q + r * s * p;
      V sr = xr[i], si = xi[i];
      for (int64_t j = 0; j < r; ++j) {
        ar[j] = xr[i + j * step];
        ai[j] = xi[i + j * step];
      }
      for (int64_t j = 1; j < r; ++j) {
        sr += ar[j];
        si += ai[j];
      }
      yr[o] = sr;
      yi[o] = si;
      for (int64_t k = 1; k < r; ++k) {
        V zr = ar[0], zi = ai[0];
        for (int64_t j = 1, t = k; j < r; ++j, t = (t + k) % r) {
          zr += mul_re(ar[j], ai[j], rr[t], ri[t]);
          zi += mul_im(ar[j], ai[j], rr[t], ri[t]);
        }
        put(o, k, zr, zi, wr, wi);
      }
    }
  }
}

template <class R, class V> void Plan<R, V>::direct(V* re, V* im, V* work) const {
  V *xr = re, *xi = im, *yr = work, *yi = work + n_;
  for (const Stage& st : stages_) {
    run_stage(st, xr, xi, yr, yi);
    std::swap(xr, yr);
    std::swap(xi, yi);
  }
  if (xr != re)
    for (int64_t k = 0; k < n_; ++k) {
      re[k] = xr[k];
      im[k] = xi[k];
    }
}

template <class R, class V> void Plan<R, V>::transform(V* re, V* im, V* work) const {
  if (!sub_) {
    direct(re, im, work);
    return;
  }
  // Bluestein: b = x * chirp (zero-padded to m), B = DFT(b) * DFT(kernel), and the inverse DFT
  // as conj(DFT(conj(B))) so one forward plan serves; the output is chirp * that / m.
  V *br = work, *bi = work + m_, *sub_work = work + 2 * m_;
  for (int64_t k = 0; k < n_; ++k) {
    const R cr = chirp_re_[k], ci = chirp_im_[k];
    br[k] = re[k] * cr - im[k] * ci;
    bi[k] = re[k] * ci + im[k] * cr;
  }
  for (int64_t k = n_; k < m_; ++k) {
    br[k] = V{};
    bi[k] = V{};
  }
  sub_->transform(br, bi, sub_work);
  for (int64_t k = 0; k < m_; ++k) {
    const R kr = kernel_re_[k], ki = kernel_im_[k];
    const V r = br[k] * kr - bi[k] * ki, i = br[k] * ki + bi[k] * kr;
    br[k] = r;
    bi[k] = -i;
  }
  sub_->transform(br, bi, sub_work);
  const R inv_m = R(1) / R(m_);
  for (int64_t k = 0; k < n_; ++k) {
    // conj(b) * chirp / m
    const R cr = chirp_re_[k] * inv_m, ci = chirp_im_[k] * inv_m;
    const V r = br[k], i = -bi[k];
    re[k] = r * cr - i * ci;
    im[k] = r * ci + i * cr;
  }
}

template <class R> std::pair<int64_t, int64_t> LongPlan<R>::split(int64_t n) {
  constexpr int64_t L = kLanes<R>, kMaxSide = int64_t(1) << 16;
  // The most square n1 x n2 (n1 <= n2) with both sides multiples of L (no partial lane groups),
  // else the most square with n1 >= L.
  std::pair<int64_t, int64_t> even{0, 0}, any{0, 0};
  for (int64_t n1 = L; n1 * n1 <= n; ++n1) {
    if (n % n1 != 0 || n / n1 > kMaxSide) continue;
    any = {n1, n / n1};
    if (n1 % L == 0 && (n / n1) % L == 0) even = any;
  }
  return even.first ? even : any;
}

template <class R> LongPlan<R>::LongPlan(int64_t n, bool inverse) : n_(n) {
  std::tie(n1_, n2_) = split(n);
  EMBER_CHECK(n1_ > 0, "fft: no six-step split of length ", n);
  using P = Plan<R, Vec<R>>;
  columns_ = cached<P>(n1_, inverse, [&] { return std::make_shared<const P>(n1_, inverse); });
  rows_ = cached<P>(n2_, inverse, [&] { return std::make_shared<const P>(n2_, inverse); });
  tw_re_.resize(size_t(n));
  tw_im_.resize(size_t(n));
  const double sign = inverse ? 1.0 : -1.0;
  parallel_for(0, n1_, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k1 = begin; k1 < end; ++k1)
      for (int64_t j2 = 0; j2 < n2_; ++j2) {
        double wr, wi;
        root(sign, j2 * k1, n, wr, wi);
        tw_re_[k1 * n2_ + j2] = R(wr);
        tw_im_[k1 * n2_ + j2] = R(wi);
      }
  });
}

namespace {
// count (<= L) consecutive values at p as the first lanes of a vector, and back.
template <class R> Vec<R> load_lanes(const R* p, int64_t count) {
  Vec<R> v{};
  if (count == kLanes<R>) std::memcpy(&v, p, sizeof(v));
  else
    for (int64_t t = 0; t < count; ++t) v[t] = p[t];
  return v;
}
template <class R> void store_lanes(R* p, Vec<R> v, int64_t count) {
  if (count == kLanes<R>) std::memcpy(p, &v, sizeof(v));
  else
    for (int64_t t = 0; t < count; ++t) p[t] = v[t];
}
}  // namespace

template <class R> void LongPlan<R>::transform(R* re, R* im, R* work) const {
  using V = Vec<R>;
  constexpr int64_t L = kLanes<R>;
  const int64_t n1 = n1_, n2 = n2_;
  // 1. Columns: L of them side by side are one lane group (the last may be partial); twiddled
  // in place.
  parallel_for(0, (n2 + L - 1) / L, std::max<int64_t>(1, 4096 / n1), [&](int64_t begin, int64_t end) {
    std::vector<V> vr(static_cast<size_t>(n1)), vi(static_cast<size_t>(n1));
    std::vector<V> scratch(static_cast<size_t>(columns_->work_size()));
    for (int64_t block = begin; block < end; ++block) {
      const int64_t j2 = block * L, count = std::min(L, n2 - j2);
      for (int64_t j1 = 0; j1 < n1; ++j1) {
        vr[j1] = load_lanes(re + j1 * n2 + j2, count);
        vi[j1] = load_lanes(im + j1 * n2 + j2, count);
      }
      columns_->transform(vr.data(), vi.data(), scratch.data());
      for (int64_t k1 = 0; k1 < n1; ++k1) {
        const V wr = load_lanes(tw_re_.data() + k1 * n2 + j2, count);
        const V wi = load_lanes(tw_im_.data() + k1 * n2 + j2, count);
        store_lanes(re + k1 * n2 + j2, vr[k1] * wr - vi[k1] * wi, count);
        store_lanes(im + k1 * n2 + j2, vr[k1] * wi + vi[k1] * wr, count);
      }
    }
  });
  // 2. Rows: L consecutive rows are a lane group (in through tile transposes where whole); element
  // k2 of row k1 is X[k1 + n1 k2], so lane vector k2 lands on consecutive outputs as it is.
  R *out_re = work, *out_im = work + n_;
  parallel_for(0, (n1 + L - 1) / L, std::max<int64_t>(1, 4096 / n2), [&](int64_t begin, int64_t end) {
    std::vector<V> vr(static_cast<size_t>(n2)), vi(static_cast<size_t>(n2));
    std::vector<V> scratch(static_cast<size_t>(rows_->work_size()));
    for (int64_t block = begin; block < end; ++block) {
      const int64_t k1 = block * L, count = std::min(L, n1 - k1);
      int64_t k2 = 0;
      if (count == L)
        for (; k2 + L <= n2; k2 += L) {
          for (int64_t t = 0; t < L; ++t) {
            std::memcpy(&vr[k2 + t], re + (k1 + t) * n2 + k2, sizeof(V));
            std::memcpy(&vi[k2 + t], im + (k1 + t) * n2 + k2, sizeof(V));
          }
          transpose_tile<R>(vr.data() + k2);
          transpose_tile<R>(vi.data() + k2);
        }
      for (; k2 < n2; ++k2) {
        vr[k2] = V{};
        vi[k2] = V{};
        for (int64_t t = 0; t < count; ++t) {
          vr[k2][t] = re[(k1 + t) * n2 + k2];
          vi[k2][t] = im[(k1 + t) * n2 + k2];
        }
      }
      rows_->transform(vr.data(), vi.data(), scratch.data());
      for (k2 = 0; k2 < n2; ++k2) {
        store_lanes(out_re + k2 * n1 + k1, vr[k2], count);
        store_lanes(out_im + k2 * n1 + k1, vi[k2], count);
      }
    }
  });
  std::memcpy(re, out_re, sizeof(R) * size_t(n_));
  std::memcpy(im, out_im, sizeof(R) * size_t(n_));
}

template class Plan<float, float>;
template class Plan<double, double>;
template class Plan<float, Vec<float>>;
template class Plan<double, Vec<double>>;
template class LongPlan<float>;
template class LongPlan<double>;

}  // namespace ember::cpu::fft
