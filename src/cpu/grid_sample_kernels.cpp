// CPU kernels of grid_sampler_2d and its backward (bilinear and nearest; checks and the bicubic
// mode are src/nn/functional/grid_sample.cpp's and Python's). PyTorch's formulas
// (ATen/native/GridSampler.h): a grid point in [-1, 1] is unnormalised to a pixel position,
// clipped (border) or reflected then clipped (reflection), and read bilinearly from the four
// pixels around it, or from the nearest (ties to even). Pixels outside the image read as zero and
// receive no gradient.
//
// Each output pixel's corners and weights (Corner below) are computed once per sample and task,
// then the (sample, channel) planes run over them in parallel: the forward reads, grad_input
// scatters into its own plane (no two threads write one plane), and grad_grid sums over the
// channels per pixel.
#include <cmath>
#include <vector>

#include "core/dtype_dispatch.h"
#include "core/parallel.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

enum Interpolation : int64_t { kBilinear = 0, kNearest = 1 };
enum Padding : int64_t { kZeros = 0, kBorder = 1, kReflection = 2 };

// clip_coordinates_set_grad: into [0, size - 1]; the gradient is 0 where it clipped (at 0 too).
template <class T> T clip(T x, int64_t size, T& grad) {
  if (x <= T(0)) {
    grad = T(0);
    return T(0);
  }
  const T hi = T(size - 1);
  if (x >= hi) {
    grad = T(0);
    return hi;
  }
  grad = T(1);
  return x;
}

// reflect_coordinates_set_grad: folds x into [twice_low / 2, twice_high / 2].
template <class T> T reflect(T x, int64_t twice_low, int64_t twice_high, T& grad) {
  if (twice_low == twice_high) {
    grad = T(0);
    return T(0);
  }
  const T lo = T(twice_low) / 2, span = T(twice_high - twice_low) / 2;
  x -= lo;
  T sign = T(1);
  if (x < T(0)) {
    sign = T(-1);
    x = -x;
  }
  const T extra = std::fmod(x, span);
  const int64_t flips = int64_t(std::floor(x / span));
  if (flips % 2 == 0) {
    grad = sign;
    return extra + lo;
  }
  grad = -sign;
  return span - extra + lo;
}

// The pixel position a grid coordinate reads, and d(position)/d(coordinate).
template <class T> T source_index(T coord, int64_t size, int64_t padding, bool align_corners, T& grad) {
  T x;
  if (align_corners) {
    grad = T(size - 1) / 2;
    x = (coord + 1) / 2 * T(size - 1);
  } else {
    grad = T(size) / 2;
    x = ((coord + 1) * T(size) - 1) / 2;
  }
  if (padding == kBorder) {
    T g;
    x = clip(x, size, g);
    grad *= g;
  } else if (padding == kReflection) {
    T gr, gc;
    x = align_corners ? reflect(x, 0, 2 * (size - 1), gr) : reflect(x, -1, 2 * size - 1, gr);
    x = clip(x, size, gc);
    grad *= gr * gc;
  }
  return x;
}

// An output pixel's reads: up to four input offsets (-1: outside, reads zero) with weights
// (nw, ne, sw, se), the fractional position (for grad_grid) and the coordinate gradients.
template <class T> struct Corner {
  int64_t at[4];
  T w[4];
  T tx, ty, gx, gy;
};

template <class T>
Corner<T> corner_at(const T* grid, int64_t n, int64_t p, int64_t pixels, int64_t H, int64_t W, int64_t interpolation,
                    int64_t padding, bool align_corners) {
  Corner<T> c;
  const T* g = grid + (n * pixels + p) * 2;
  const T x = source_index(g[0], W, padding, align_corners, c.gx);
  const T y = source_index(g[1], H, padding, align_corners, c.gy);
  auto offset = [&](int64_t ix, int64_t iy) { return ix >= 0 && ix < W && iy >= 0 && iy < H ? iy * W + ix : -1; };
  if (interpolation == kNearest) {
    const T rx = std::nearbyint(x), ry = std::nearbyint(y);
    const bool finite = std::fabs(rx) < T(1e15) && std::fabs(ry) < T(1e15);  // (false for NaN)
    c.at[0] = finite ? offset(int64_t(rx), int64_t(ry)) : -1;
    c.w[0] = T(1);
    for (int k = 1; k < 4; ++k) c.at[k] = -1, c.w[k] = T(0);
    c.tx = c.ty = T(0);
    return c;
  }
  // (floor of a NaN or huge coordinate: every corner falls outside and reads zero)
  const T fx = std::floor(x), fy = std::floor(y);
  const bool finite = std::fabs(fx) < T(1e15) && std::fabs(fy) < T(1e15);
  const int64_t x0 = finite ? int64_t(fx) : -2, y0 = finite ? int64_t(fy) : -2;
  c.tx = x - fx;
  c.ty = y - fy;
  c.w[0] = (T(1) - c.tx) * (T(1) - c.ty);
  c.w[1] = c.tx * (T(1) - c.ty);
  c.w[2] = (T(1) - c.tx) * c.ty;
  c.w[3] = c.tx * c.ty;
  c.at[0] = offset(x0, y0);
  c.at[1] = offset(x0 + 1, y0);
  c.at[2] = offset(x0, y0 + 1);
  c.at[3] = offset(x0 + 1, y0 + 1);
  return c;
}

// Runs plane_fn(n, c, corners of sample n) for every (sample, channel) plane, split across
// threads; each task computes a sample's corners once for the planes of it that it runs.
template <class T, class F>
void for_each_plane(const T* grid, int64_t N, int64_t C, int64_t pixels, int64_t H, int64_t W, int64_t interpolation,
                    int64_t padding, bool align_corners, const F& plane_fn) {
  parallel_for(0, N * C, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, pixels)), [&](int64_t b, int64_t e) {
    std::vector<Corner<T>> cs(static_cast<size_t>(pixels));
    int64_t have = -1;
    for (int64_t plane = b; plane < e; ++plane) {
      const int64_t n = plane / C;
      if (n != have) {
        for (int64_t p = 0; p < pixels; ++p)
          cs[size_t(p)] = corner_at(grid, n, p, pixels, H, W, interpolation, padding, align_corners);
        have = n;
      }
      plane_fn(n, plane % C, cs);
    }
  });
}

Tensor grid_sampler_2d_cpu(const Tensor& input, const Tensor& grid, int64_t interpolation, int64_t padding,
                           bool align_corners) {
  if (is_reduced_float(input.dtype()))
    return grid_sampler_2d_cpu(input.to(kFloat32), grid.to(kFloat32), interpolation, padding, align_corners)
        .to(input.dtype());
  const int64_t N = input.size(0), C = input.size(1), H = input.size(2), W = input.size(3);
  const int64_t Ho = grid.size(1), Wo = grid.size(2), pixels = Ho * Wo;
  Tensor out = empty({N, C, Ho, Wo}, input.options());
  if (out.numel() == 0) return out;
  Tensor x = input.contiguous(), gr = grid.to(input.dtype()).contiguous();
  visit_dtype<kFloatTypes>(input.dtype(), "grid_sampler_2d_cpu", [&]<class T>() {
    const T* X = x.data_ptr<T>();
    T* Y = out.data_ptr<T>();
    for_each_plane(gr.data_ptr<T>(), N, C, pixels, H, W, interpolation, padding, align_corners,
                   [&](int64_t n, int64_t c, const std::vector<Corner<T>>& cs) {
                     const T* plane = X + (n * C + c) * H * W;
                     T* y = Y + (n * C + c) * pixels;
                     for (int64_t p = 0; p < pixels; ++p) {
                       const Corner<T>& k = cs[size_t(p)];
                       T acc = T(0);
                       for (int i = 0; i < 4; ++i)
                         if (k.at[i] >= 0) acc += plane[k.at[i]] * k.w[i];
                       y[p] = acc;
                     }
                   });
  });
  return out;
}

std::tuple<Tensor, Tensor> grid_sampler_2d_backward_cpu(const Tensor& grad_out, const Tensor& input,
                                                        const Tensor& grid, int64_t interpolation, int64_t padding,
                                                        bool align_corners, bool input_requires_grad) {
  if (is_reduced_float(input.dtype())) {
    auto [gi, gg] = grid_sampler_2d_backward_cpu(grad_out.to(kFloat32), input.to(kFloat32), grid.to(kFloat32),
                                                 interpolation, padding, align_corners, input_requires_grad);
    return {gi.defined() ? gi.to(input.dtype()) : gi, gg.to(grid.dtype())};
  }
  const int64_t N = input.size(0), C = input.size(1), H = input.size(2), W = input.size(3);
  const int64_t Ho = grid.size(1), Wo = grid.size(2), pixels = Ho * Wo;
  Tensor grad_input = input_requires_grad ? zeros(input.sizes(), input.options()) : Tensor();
  Tensor grad_grid = zeros(grid.sizes(), {.dtype = input.dtype(), .device = grid.device()});
  if (N == 0 || C == 0 || pixels == 0) return {grad_input, grad_grid.to(grid.dtype())};
  Tensor x = input.contiguous(), gr = grid.to(input.dtype()).contiguous(), go = grad_out.contiguous();
  visit_dtype<kFloatTypes>(input.dtype(), "grid_sampler_2d_backward_cpu", [&]<class T>() {
    const T* X = x.data_ptr<T>();
    const T* G = go.data_ptr<T>();
    const T* GR = gr.data_ptr<T>();
    T* GG = grad_grid.data_ptr<T>();
    if (input_requires_grad) {
      T* GI = grad_input.data_ptr<T>();
      for_each_plane(GR, N, C, pixels, H, W, interpolation, padding, align_corners,
                     [&](int64_t n, int64_t c, const std::vector<Corner<T>>& cs) {
                       T* plane = GI + (n * C + c) * H * W;
                       const T* g = G + (n * C + c) * pixels;
                       for (int64_t p = 0; p < pixels; ++p) {
                         const Corner<T>& k = cs[size_t(p)];
                         for (int i = 0; i < 4; ++i)
                           if (k.at[i] >= 0) plane[k.at[i]] += k.w[i] * g[p];
                       }
                     });
    }
    if (interpolation == kNearest) return;  // piecewise constant: the grid's gradient is zero
    // d out / d x = (ne - nw) (1 - ty) + (se - sw) ty, d out / d y = (sw - nw) (1 - tx) + (se - ne) tx,
    // summed over the channels against the incoming gradient, then through the coordinate map.
    parallel_for(0, N * pixels, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, C)), [&](int64_t b, int64_t e) {
      for (int64_t q = b; q < e; ++q) {
        const int64_t n = q / pixels, p = q % pixels;
        const Corner<T> k = corner_at(GR, n, p, pixels, H, W, interpolation, padding, align_corners);
        T gx = T(0), gy = T(0);
        for (int64_t c = 0; c < C; ++c) {
          const T* plane = X + (n * C + c) * H * W;
          T v[4];
          for (int i = 0; i < 4; ++i) v[i] = k.at[i] >= 0 ? plane[k.at[i]] : T(0);
          const T g = G[(n * C + c) * pixels + p];
          gx += ((v[1] - v[0]) * (T(1) - k.ty) + (v[3] - v[2]) * k.ty) * g;
          gy += ((v[2] - v[0]) * (T(1) - k.tx) + (v[3] - v[1]) * k.tx) * g;
        }
        GG[q * 2] = gx * k.gx;
        GG[q * 2 + 1] = gy * k.gy;
      }
    });
  });
  return {grad_input, grad_grid.to(grid.dtype())};
}

EMBER_REGISTER_KERNEL(grid_sampler_2d, CPU, grid_sampler_2d_cpu);
EMBER_REGISTER_KERNEL(grid_sampler_2d_backward, CPU, grid_sampler_2d_backward_cpu);

}  // namespace
}  // namespace ember::cpu
