// CPU kernels for the fused normalisation ops (native_layer_norm, native_rms_norm,
// native_batch_norm and the backwards of layer norm, rms norm and batch norm).
// The input is viewed as [M, N] rows (N = product of normalized_shape). Each row:
//   1. mean: lane-parallel sum in the compute type, flushed into a double every block;
//   2. variance: sum of squared deviations from that mean (second pass over a row that is
//      still in cache: as fast as one pass, and no cancellation for large means);
//   3. y = (x * rstd - mean * rstd) * w + b, one vectorised loop.
// Rows are split across threads. float16/bfloat16 compute in float32.
#pragma GCC target("prefer-vector-width=512")
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "core/dtype_dispatch.h"
#include "ops/norm_geometry.h"
#include "ops/reduce_utils.h"
#include "cpu/row_sum.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

using reduce::compute_dtype;
using norm_rows::param_in;
using norm_rows::split_rows;
using norm_rows::stat_shape;

int64_t rows_grain(int64_t n) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, 4 * n)); }

std::tuple<Tensor, Tensor, Tensor> layer_norm_cpu(const Tensor& input, IntArrayRef normalized_shape,
                                                  const std::optional<Tensor>& weight,
                                                  const std::optional<Tensor>& bias, double eps) {
  const DType out_dt = input.dtype();
  const DType cdt = compute_dtype(out_dt);
  Tensor x = reduce::convert(input, cdt, /*contig=*/true);
  Tensor w = param_in(weight, cdt);
  Tensor b = param_in(bias, cdt);
  // Not a structured binding: clang 14 (the fuzz build) can't capture those in lambdas.
  const auto rows = split_rows(x, normalized_shape);
  const int64_t m = rows.first, n = rows.second;
  Tensor y = empty(x.sizes(), {.dtype = cdt, .device = x.device()});
  Shape ss = stat_shape(x, normalized_shape);
  Tensor mean = empty(ss, {.dtype = cdt, .device = x.device()});
  Tensor rstd = empty(ss, {.dtype = cdt, .device = x.device()});
  visit_dtype<kFloatTypes>(cdt, "native_layer_norm", [&]<class T>() {
    const T* in = x.data_ptr<T>();
    T* out = y.data_ptr<T>();
    T* pm = mean.data_ptr<T>();
    T* pr = rstd.data_ptr<T>();
    const T* pw = w.defined() ? w.data_ptr<T>() : nullptr;
    const T* pb = b.defined() ? b.data_ptr<T>() : nullptr;
    parallel_for(0, m, rows_grain(n), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* __restrict xr = in + r * n;
        T* __restrict yr = out + r * n;
        double mu = n ? row_sum(xr, n, [](T v) { return v; }) / double(n) : std::nan("");
        const T mt = T(mu);
        double var = n ? row_sum(xr, n, [mt](T v) { T d = v - mt; return d * d; }) / double(n) : std::nan("");
        double rs = 1.0 / std::sqrt(var + eps);
        pm[r] = T(mu);
        pr[r] = T(rs);
        const T a = T(rs), c = T(-mu * rs);
        if (pw && pb) {
          for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] * a + c) * pw[j] + pb[j];
        } else if (pw) {
          for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] * a + c) * pw[j];
        } else if (pb) {
          for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] * a + c) + pb[j];
        } else {
          for (int64_t j = 0; j < n; ++j) yr[j] = xr[j] * a + c;
        }
      }
    });
  });
  return {reduce::convert(y, out_dt), mean, rstd};
}

std::tuple<Tensor, Tensor> rms_norm_cpu(const Tensor& input, IntArrayRef normalized_shape,
                                        const std::optional<Tensor>& weight, double eps) {
  const DType out_dt = input.dtype();
  const DType cdt = compute_dtype(out_dt);
  Tensor x = reduce::convert(input, cdt, /*contig=*/true);
  Tensor w = param_in(weight, cdt);
  // Not a structured binding: clang 14 (the fuzz build) can't capture those in lambdas.
  const auto rows = split_rows(x, normalized_shape);
  const int64_t m = rows.first, n = rows.second;
  Tensor y = empty(x.sizes(), {.dtype = cdt, .device = x.device()});
  Tensor rstd = empty(stat_shape(x, normalized_shape), {.dtype = cdt, .device = x.device()});
  visit_dtype<kFloatTypes>(cdt, "native_rms_norm", [&]<class T>() {
    const T* in = x.data_ptr<T>();
    T* out = y.data_ptr<T>();
    T* pr = rstd.data_ptr<T>();
    const T* pw = w.defined() ? w.data_ptr<T>() : nullptr;
    parallel_for(0, m, rows_grain(n), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* __restrict xr = in + r * n;
        T* __restrict yr = out + r * n;
        double ms = n ? row_sum(xr, n, [](T v) { return v * v; }) / double(n) : std::nan("");
        const T a = T(1.0 / std::sqrt(ms + eps));
        pr[r] = a;
        if (pw) {
          for (int64_t j = 0; j < n; ++j) yr[j] = xr[j] * a * pw[j];
        } else {
          for (int64_t j = 0; j < n; ++j) yr[j] = xr[j] * a;
        }
      }
    });
  });
  return {reduce::convert(y, out_dt), rstd};
}

// Per row (xh = (x - mean) * rstd, gx = g * w):
//   dx = rstd * (gx - sum(gx) / N - xh * sum(gx * xh) / N);
// dweight = sum over rows of g * xh, dbias = sum of g: each block of rows sums into its own
// buffer (no races, the same result for any thread count), then the buffers are added.
std::tuple<Tensor, Tensor, Tensor> layer_norm_backward_cpu(const Tensor& grad_out, const Tensor& input,
                                                           IntArrayRef normalized_shape, const Tensor& mean,
                                                           const Tensor& rstd, const std::optional<Tensor>& weight,
                                                           int64_t mask) {
  const DType out_dt = input.dtype();
  const DType cdt = compute_dtype(out_dt);
  Tensor x = reduce::convert(input, cdt, true), g = reduce::convert(grad_out, cdt, true);
  Tensor mu = reduce::convert(mean, cdt, true), rs = reduce::convert(rstd, cdt, true);
  Tensor w = param_in(weight, cdt);
  // Not a structured binding: clang 14 (the fuzz build) can't capture those in lambdas.
  const auto rows = split_rows(x, normalized_shape);
  const int64_t m = rows.first, n = rows.second;
  const bool need_dx = mask & 1, need_dw = mask & 2, need_db = mask & 4;
  Tensor dx = need_dx ? empty(x.sizes(), {.dtype = cdt, .device = x.device()}) : Tensor();
  const int64_t nblocks = std::max<int64_t>(1, std::min<int64_t>(m, 2 * int64_t(ember::detail::max_parallel_threads())));
  Tensor wbuf = need_dw ? zeros({nblocks, n}, {.dtype = cdt, .device = x.device()}) : Tensor();
  Tensor bbuf = need_db ? zeros({nblocks, n}, {.dtype = cdt, .device = x.device()}) : Tensor();
  visit_dtype<kFloatTypes>(cdt, "native_layer_norm_backward", [&]<class T>() {
    const T* px = x.data_ptr<T>();
    const T* pg = g.data_ptr<T>();
    const T* pm = mu.data_ptr<T>();
    const T* pr = rs.data_ptr<T>();
    const T* pw = w.defined() ? w.data_ptr<T>() : nullptr;
    T* pdx = need_dx ? dx.data_ptr<T>() : nullptr;
    const int64_t per = (m + nblocks - 1) / nblocks;
    parallel_for(0, nblocks, 1, [&](int64_t b0, int64_t b1) {
      std::vector<T> gw(n);
      for (int64_t blk = b0; blk < b1; ++blk) {
        T* __restrict dwb = need_dw ? wbuf.data_ptr<T>() + blk * n : nullptr;
        T* __restrict dbb = need_db ? bbuf.data_ptr<T>() + blk * n : nullptr;
        for (int64_t r = blk * per; r < std::min(m, (blk + 1) * per); ++r) {
          const T* __restrict xr = px + r * n;
          const T* __restrict gr = pg + r * n;
          const T a = pr[r], c = -pm[r] * pr[r];
          if (dwb)
            for (int64_t j = 0; j < n; ++j) dwb[j] += gr[j] * (xr[j] * a + c);
          if (dbb)
            for (int64_t j = 0; j < n; ++j) dbb[j] += gr[j];
          if (!pdx) continue;
          T* __restrict gx = gw.data();
          if (pw) for (int64_t j = 0; j < n; ++j) gx[j] = gr[j] * pw[j];
          else for (int64_t j = 0; j < n; ++j) gx[j] = gr[j];
          double sg = row_sum(gx, n, [](T v) { return v; });
          // sum(gx * xh) = a * sum(gx * x) + c * sum(gx)
          const double sgx = row_dot(gx, xr, n);
          const double sxh = double(a) * sgx + double(c) * sg;
          const T k1 = T(double(a) * sg / double(n)), k2 = T(double(a) * sxh / double(n));
          T* __restrict dr = pdx + r * n;
          for (int64_t j = 0; j < n; ++j) dr[j] = a * gx[j] - k1 - (xr[j] * a + c) * k2;
        }
      }
    });
  });
  Shape ns(normalized_shape.begin(), normalized_shape.end());
  Tensor dw = need_dw ? reduce::convert(wbuf.sum({0}).reshape(ns), out_dt) : Tensor();
  Tensor db = need_db ? reduce::convert(bbuf.sum({0}).reshape(ns), out_dt) : Tensor();
  return {need_dx ? reduce::convert(dx, out_dt) : Tensor(), dw, db};
}

// Per row (a = rstd, gx = g * w):
//   dx = a * gx - x * (a^3 * sum(gx * x) / N);
// dweight = sum over rows of g * x * a: each of a fixed number of blocks of rows sums into its own
// buffer, then the buffers are added (the same bits at any thread count).
std::tuple<Tensor, Tensor> rms_norm_backward_cpu(const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape,
                                                 const Tensor& rstd, const std::optional<Tensor>& weight, int64_t mask) {
  const DType out_dt = input.dtype();
  const DType cdt = compute_dtype(out_dt);
  Tensor x = reduce::convert(input, cdt, true), g = reduce::convert(grad_out, cdt, true);
  Tensor rs = reduce::convert(rstd, cdt, true);
  Tensor w = param_in(weight, cdt);
  // Not a structured binding: clang 14 (the fuzz build) can't capture those in lambdas.
  const auto rows = split_rows(x, normalized_shape);
  const int64_t m = rows.first, n = rows.second;
  const bool need_dx = mask & 1, need_dw = (mask & 2) && w.defined();
  Tensor dx = need_dx ? empty(x.sizes(), {.dtype = cdt, .device = x.device()}) : Tensor();
  const int64_t nblocks = std::max<int64_t>(1, std::min<int64_t>(m, 64));
  Tensor wbuf = need_dw ? zeros({nblocks, n}, {.dtype = cdt, .device = x.device()}) : Tensor();
  visit_dtype<kFloatTypes>(cdt, "native_rms_norm_backward", [&]<class T>() {
    const T* px = x.data_ptr<T>();
    const T* pg = g.data_ptr<T>();
    const T* pr = rs.data_ptr<T>();
    const T* pw = w.defined() ? w.data_ptr<T>() : nullptr;
    T* pdx = need_dx ? dx.data_ptr<T>() : nullptr;
    parallel_for(0, nblocks, 1, [&](int64_t b0, int64_t b1) {
      std::vector<T> gw(pw ? n : 0);
      for (int64_t blk = b0; blk < b1; ++blk) {
        T* __restrict dwb = need_dw ? wbuf.data_ptr<T>() + blk * n : nullptr;
        for (int64_t r = blk * m / nblocks; r < (blk + 1) * m / nblocks; ++r) {
          const T* __restrict xr = px + r * n;
          const T* __restrict gr = pg + r * n;
          const T a = pr[r];
          if (dwb)
            for (int64_t j = 0; j < n; ++j) dwb[j] += gr[j] * xr[j] * a;
          if (!pdx) continue;
          const T* __restrict gx = gr;
          if (pw) {
            for (int64_t j = 0; j < n; ++j) gw[j] = gr[j] * pw[j];
            gx = gw.data();
          }
          const T k = T(double(a) * double(a) * double(a) * row_dot(gx, xr, n) / double(n));
          T* __restrict dr = pdx + r * n;
          for (int64_t j = 0; j < n; ++j) dr[j] = a * gx[j] - xr[j] * k;
        }
      }
    });
  });
  Shape ns(normalized_shape.begin(), normalized_shape.end());
  Tensor dw = need_dw ? reduce::convert(wbuf.sum({0}).reshape(ns), out_dt) : Tensor();
  return {need_dx ? reduce::convert(dx, out_dt) : Tensor(), dw};
}

Tensor channel_affine_cpu(const Tensor& input, const Tensor& scale, const Tensor& shift) {
  const DType out_dt = input.dtype();
  const DType cdt = compute_dtype(out_dt);
  Tensor x = reduce::convert(input, cdt, true);
  Tensor s = reduce::convert(scale, cdt, true), t = reduce::convert(shift, cdt, true);
  Tensor y = empty(x.sizes(), {.dtype = cdt, .device = x.device()});
  const int64_t c = x.sizes()[1], planes = x.sizes()[0] * c;
  const int64_t inner = planes ? x.numel() / planes : 0;
  visit_dtype<kFloatTypes>(cdt, "channel_affine", [&]<class T>() {
    const T* px = x.data_ptr<T>();
    T* py = y.data_ptr<T>();
    const T* ps = s.data_ptr<T>();
    const T* pt = t.data_ptr<T>();
    parallel_for(0, planes, rows_grain(inner), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const T a = ps[p % c], b = pt[p % c];
        const T* __restrict xr = px + p * inner;
        T* __restrict yr = py + p * inner;
        for (int64_t j = 0; j < inner; ++j) yr[j] = xr[j] * a + b;
      }
    });
  });
  return reduce::convert(y, out_dt);
}

// ---- batch norm. The input is viewed as [N, C, S] (S = product of the dims after 1): a channel
// is N planes of S contiguous values, reduced with row_sum / row_dot (mean first, then squared
// deviations from it, as layer norm). Channels are split across threads. (N, C) input (S = 1)
// has strided channels: rows are walked instead, summing into per-channel accumulators for the
// thread's block of channels.
struct BnGeom {
  int64_t n, c, s;
  int64_t count() const { return n * s; }
};
BnGeom bn_geom(const Tensor& x) {
  const int64_t n = x.sizes()[0], c = x.sizes()[1];
  int64_t s = 1;
  for (int64_t d = 2; d < x.dim(); ++d) s *= x.sizes()[d];
  return {n, c, s};
}
int64_t bn_grain(const BnGeom& g) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, 2 * g.count())); }

std::tuple<Tensor, Tensor, Tensor> batch_norm_cpu(const Tensor& input, const std::optional<Tensor>& weight,
                                                  const std::optional<Tensor>& bias, double eps) {
  const DType out_dt = input.dtype();
  const DType cdt = compute_dtype(out_dt);
  Tensor x = reduce::convert(input, cdt, /*contig=*/true);
  Tensor w = param_in(weight, cdt);
  Tensor b = param_in(bias, cdt);
  const BnGeom geo = bn_geom(x);
  Tensor y = empty(x.sizes(), {.dtype = cdt, .device = x.device()});
  Tensor mean = empty({geo.c}, {.dtype = cdt, .device = x.device()});
  Tensor invstd = empty({geo.c}, {.dtype = cdt, .device = x.device()});
  visit_dtype<kFloatTypes>(cdt, "native_batch_norm", [&]<class T>() {
    const T* px = x.data_ptr<T>();
    T* py = y.data_ptr<T>();
    T* pm = mean.data_ptr<T>();
    T* pr = invstd.data_ptr<T>();
    const T* pw = w.defined() ? w.data_ptr<T>() : nullptr;
    const T* pb = b.defined() ? b.data_ptr<T>() : nullptr;
    const int64_t N = geo.n, C = geo.c, S = geo.s;
    const double M = double(geo.count());
    // y = x * A + B with A = invstd * w, B = b - mean * invstd * w
    auto finish = [&](int64_t c, double mu, double var, T& A, T& B) {
      const double rs = 1.0 / std::sqrt(var + eps), wc = pw ? double(pw[c]) : 1.0, bc = pb ? double(pb[c]) : 0.0;
      pm[c] = T(mu);
      pr[c] = T(rs);
      A = T(rs * wc);
      B = T(bc - mu * rs * wc);
    };
    parallel_for(0, C, bn_grain(geo), [&](int64_t c0, int64_t c1) {
      if (S > 1) {
        for (int64_t c = c0; c < c1; ++c) {
          double sum = 0, sq = 0;
          for (int64_t i = 0; i < N; ++i) sum += row_sum(px + (i * C + c) * S, S, [](T v) { return v; });
          const double mu = M > 0 ? sum / M : std::nan("");
          const T mt = T(mu);
          for (int64_t i = 0; i < N; ++i)
            sq += row_sum(px + (i * C + c) * S, S, [mt](T v) { T d = v - mt; return d * d; });
          T A, B;
          finish(c, mu, M > 0 ? sq / M : std::nan(""), A, B);
          for (int64_t i = 0; i < N; ++i) {
            const T* __restrict xr = px + (i * C + c) * S;
            T* __restrict yr = py + (i * C + c) * S;
            for (int64_t j = 0; j < S; ++j) yr[j] = xr[j] * A + B;
          }
        }
        return;
      }
      const int64_t nc = c1 - c0;
      std::vector<double> sum(nc, 0.0), sq(nc, 0.0);
      std::vector<T> A(nc), B(nc), mt(nc);
      for (int64_t i = 0; i < N; ++i)
        for (int64_t k = 0; k < nc; ++k) sum[k] += double(px[i * C + c0 + k]);
      for (int64_t k = 0; k < nc; ++k) mt[k] = T(M > 0 ? sum[k] / M : std::nan(""));
      for (int64_t i = 0; i < N; ++i)
        for (int64_t k = 0; k < nc; ++k) {
          const double d = double(px[i * C + c0 + k] - mt[k]);
          sq[k] += d * d;
        }
      for (int64_t k = 0; k < nc; ++k)
        finish(c0 + k, M > 0 ? sum[k] / M : std::nan(""), M > 0 ? sq[k] / M : std::nan(""), A[k], B[k]);
      for (int64_t i = 0; i < N; ++i)
        for (int64_t k = 0; k < nc; ++k) py[i * C + c0 + k] = px[i * C + c0 + k] * A[k] + B[k];
    });
  });
  return {reduce::convert(y, out_dt), mean, invstd};
}

// Per channel (M values, xh = (x - mean) * invstd, sg = sum(g), sxh = sum(g * xh)):
//   dx = w * invstd * (g - sg / M - xh * sxh / M) = k0 * g + k1 * x + k2,
//   dweight = sxh, dbias = sg.
std::tuple<Tensor, Tensor, Tensor> batch_norm_backward_cpu(const Tensor& grad_out, const Tensor& input,
                                                           const std::optional<Tensor>& weight, const Tensor& save_mean,
                                                           const Tensor& save_invstd, int64_t mask) {
  const DType out_dt = input.dtype();
  const DType cdt = compute_dtype(out_dt);
  Tensor x = reduce::convert(input, cdt, true), g = reduce::convert(grad_out, cdt, true);
  Tensor mu = reduce::convert(save_mean, cdt, true), rs = reduce::convert(save_invstd, cdt, true);
  Tensor w = param_in(weight, cdt);
  const BnGeom geo = bn_geom(x);
  const bool need_dx = mask & 1, need_dw = mask & 2, need_db = mask & 4;
  Tensor dx = need_dx ? empty(x.sizes(), {.dtype = cdt, .device = x.device()}) : Tensor();
  Tensor dw = empty({geo.c}, {.dtype = cdt, .device = x.device()});
  Tensor db = empty({geo.c}, {.dtype = cdt, .device = x.device()});
  visit_dtype<kFloatTypes>(cdt, "native_batch_norm_backward", [&]<class T>() {
    const T* px = x.data_ptr<T>();
    const T* pg = g.data_ptr<T>();
    const T* pm = mu.data_ptr<T>();
    const T* pr = rs.data_ptr<T>();
    const T* pw = w.defined() ? w.data_ptr<T>() : nullptr;
    T* pdx = need_dx ? dx.data_ptr<T>() : nullptr;
    T* pdw = dw.data_ptr<T>();
    T* pdb = db.data_ptr<T>();
    const int64_t N = geo.n, C = geo.c, S = geo.s;
    const double M = double(geo.count());
    // From the channel's sums: dweight, dbias and dx's coefficients.
    auto finish = [&](int64_t c, double sg, double sgx, T& k0, T& k1, T& k2) {
      const double r = double(pr[c]), m = double(pm[c]), wc = pw ? double(pw[c]) : 1.0;
      const double sxh = r * (sgx - m * sg);
      pdw[c] = T(sxh);
      pdb[c] = T(sg);
      const double a1 = -wc * r * r * sxh / M;
      k0 = T(wc * r);
      k1 = T(a1);
      k2 = T(-wc * r * sg / M - a1 * m);
    };
    parallel_for(0, C, bn_grain(geo), [&](int64_t c0, int64_t c1) {
      if (S > 1) {
        for (int64_t c = c0; c < c1; ++c) {
          double sg = 0, sgx = 0;
          for (int64_t i = 0; i < N; ++i) {
            const T* gr = pg + (i * C + c) * S;
            sg += row_sum(gr, S, [](T v) { return v; });
            sgx += row_dot(gr, px + (i * C + c) * S, S);
          }
          T k0, k1, k2;
          finish(c, sg, sgx, k0, k1, k2);
          if (!pdx) continue;
          for (int64_t i = 0; i < N; ++i) {
            const T* __restrict gr = pg + (i * C + c) * S;
            const T* __restrict xr = px + (i * C + c) * S;
            T* __restrict dr = pdx + (i * C + c) * S;
            for (int64_t j = 0; j < S; ++j) dr[j] = k0 * gr[j] + k1 * xr[j] + k2;
          }
        }
        return;
      }
      const int64_t nc = c1 - c0;
      std::vector<double> sg(nc, 0.0), sgx(nc, 0.0);
      std::vector<T> k0(nc), k1(nc), k2(nc);
      for (int64_t i = 0; i < N; ++i)
        for (int64_t k = 0; k < nc; ++k) {
          const double gv = double(pg[i * C + c0 + k]);
          sg[k] += gv;
          sgx[k] += gv * double(px[i * C + c0 + k]);
        }
      for (int64_t k = 0; k < nc; ++k) finish(c0 + k, sg[k], sgx[k], k0[k], k1[k], k2[k]);
      if (!pdx) return;
      for (int64_t i = 0; i < N; ++i)
        for (int64_t k = 0; k < nc; ++k)
          pdx[i * C + c0 + k] = k0[k] * pg[i * C + c0 + k] + k1[k] * px[i * C + c0 + k] + k2[k];
    });
  });
  const DType pdt = weight && weight->defined() ? weight->dtype() : out_dt;
  return {need_dx ? reduce::convert(dx, out_dt) : Tensor(), need_dw ? reduce::convert(dw, pdt) : Tensor(),
          need_db ? reduce::convert(db, pdt) : Tensor()};
}

EMBER_REGISTER_KERNEL(native_layer_norm, CPU, layer_norm_cpu);
EMBER_REGISTER_KERNEL(channel_affine, CPU, channel_affine_cpu);
EMBER_REGISTER_KERNEL(native_layer_norm_backward, CPU, layer_norm_backward_cpu);
EMBER_REGISTER_KERNEL(native_rms_norm_backward, CPU, rms_norm_backward_cpu);
EMBER_REGISTER_KERNEL(native_rms_norm, CPU, rms_norm_cpu);
EMBER_REGISTER_KERNEL(native_batch_norm, CPU, batch_norm_cpu);
EMBER_REGISTER_KERNEL(native_batch_norm_backward, CPU, batch_norm_backward_cpu);

}  // namespace
}  // namespace ember::cpu
