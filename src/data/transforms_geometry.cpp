// The geometric transforms: resize, crops, padding, flips and the affine warp, as torchvision
// 0.14 computes them on tensors. Each one turns into a per-axis index map or a per-pixel source
// map computed once per call, then a direct loop over the contiguous planes.
#include <cmath>
#include <array>
#include <numbers>

#include "data/image_utils.h"
#include "ember/core/generator.h"
#include "ember/data/transforms.h"
#include "ember/nn/functional.h"

namespace ember::transforms {

using detail::Acc;
using detail::Planes;
using detail::to_pixel;

namespace {

// ------------------------------------------------------------------------------ index-map kernel

// out[p][i][j] = in[p][rows[i]][cols[j]], or fill where either index is -1. Crops, padding, flips
// and nearest resizing are all this gather with different maps.
template <class T>
void gather_planes(const T* in, T* out, int64_t planes, int64_t h, int64_t w, const std::vector<int64_t>& rows,
                   const std::vector<int64_t>& cols, T fill) {
  int64_t oh = int64_t(rows.size()), ow = int64_t(cols.size());
  for (int64_t p = 0; p < planes; ++p) {
    const T* src = in + p * h * w;
    T* dst = out + p * oh * ow;
    for (int64_t i = 0; i < oh; ++i, dst += ow) {
      if (rows[size_t(i)] < 0) {
        std::fill(dst, dst + ow, fill);
        continue;
      }
      const T* row = src + rows[size_t(i)] * w;
      for (int64_t j = 0; j < ow; ++j) dst[j] = cols[size_t(j)] < 0 ? fill : row[cols[size_t(j)]];
    }
  }
}

Tensor gather(const Tensor& image, const char* who, const std::vector<int64_t>& rows,
              const std::vector<int64_t>& cols, double fill = 0) {
  Planes p = detail::image_planes(image, who);
  Tensor src = image.contiguous();
  Tensor out = detail::empty_planes(p, int64_t(rows.size()), int64_t(cols.size()), src.dtype());
  detail::visit_image_dtype(src.dtype(), who, [&](auto tag) {
    using T = decltype(tag);
    // torch's constant pad converts the fill to the image type as a cast: uint8 truncates.
    T f = std::is_same_v<T, uint8_t> ? T(std::clamp(std::trunc(fill), 0.0, 255.0)) : T(fill);
    gather_planes<T>(src.data_ptr<T>(), out.data_ptr<T>(), p.planes, p.h, p.w, rows, cols, f);
  });
  return out;
}

std::vector<int64_t> identity_map(int64_t n, int64_t offset = 0) {
  std::vector<int64_t> m(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) m[size_t(i)] = i + offset;
  return m;
}

std::vector<int64_t> reversed_map(int64_t n) {
  std::vector<int64_t> m(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) m[size_t(i)] = n - 1 - i;
  return m;
}

// ------------------------------------------------------------------------------ padding

struct Padding {
  int64_t left = 0, top = 0, right = 0, bottom = 0;
};

// torchvision's 1 / 2 / 4-value padding.
Padding parse_padding(const std::vector<int64_t>& v, const char* who) {
  EMBER_CHECK_VALUE(v.empty() || v.size() == 1 || v.size() == 2 || v.size() == 4, who,
                    ": Padding must be an int or a 1, 2, or 4 element tuple, not a ", v.size(), " element tuple");
  for (int64_t x : v) EMBER_CHECK_VALUE(x >= 0, who, ": padding must be non-negative, got ", v);
  if (v.empty()) return {};
  if (v.size() == 1) return {v[0], v[0], v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1], v[0], v[1]};
  return {v[0], v[1], v[2], v[3]};
}

// Where padded coordinate i (0 = first original pixel) reads from, -1 for the fill value. Reflect
// mirrors about the edge pixel (d c b | a b c d), symmetric repeats it (b a | a b c d).
int64_t padded_source(int64_t i, int64_t n, PaddingMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PaddingMode::Constant: return -1;
    case PaddingMode::Edge: return i < 0 ? 0 : n - 1;
    case PaddingMode::Reflect: return i < 0 ? -i : 2 * (n - 1) - i;
    case PaddingMode::Symmetric: return i < 0 ? -i - 1 : 2 * n - 1 - i;
  }
  return -1;
}

void check_mirror_padding(int64_t before, int64_t after, int64_t n, PaddingMode mode, const char* who,
                          const char* axis) {
  if (mode == PaddingMode::Reflect)
    EMBER_CHECK_VALUE(std::max(before, after) < n, who, ": reflect padding (", before, ", ", after,
                      ") must be less than the image ", axis, " ", n);
  if (mode == PaddingMode::Symmetric)
    EMBER_CHECK_VALUE(std::max(before, after) <= n, who, ": symmetric padding (", before, ", ", after,
                      ") must be at most the image ", axis, " ", n);
}

// The map of `count` output coordinates starting at padded coordinate `start`, where the original
// axis of length n begins at padded coordinate `before`.
std::vector<int64_t> padded_window(int64_t start, int64_t count, int64_t before, int64_t n, PaddingMode mode) {
  std::vector<int64_t> m(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) m[size_t(k)] = padded_source(start + k - before, n, mode);
  return m;
}

// ------------------------------------------------------------------------------ resize

// F.interpolate(mode="nearest") source index: floor(dst * in / out) computed in float, as torch.
std::vector<int64_t> nearest_map(int64_t in, int64_t out) {
  std::vector<int64_t> m(static_cast<size_t>(out));
  const float scale = float(in) / float(out);
  for (int64_t i = 0; i < out; ++i)
    m[size_t(i)] = out == in ? i : std::min(int64_t(std::floor(float(i) * scale)), in - 1);
  return m;
}

// One output coordinate of align_corners=False linear interpolation: two taps and their weights.
template <class A>
struct LinearTap {
  int64_t i0, i1;
  A w0, w1;
};

template <class A>
std::vector<LinearTap<A>> linear_taps(int64_t in, int64_t out) {
  std::vector<LinearTap<A>> taps(static_cast<size_t>(out));
  const A scale = A(in) / A(out);
  for (int64_t i = 0; i < out; ++i) {
    // torch evaluates scale * (i + 0.5) - 0.5 in double before storing it as A.
    A src = std::max(A(double(scale) * (double(i) + 0.5) - 0.5), A(0));
    int64_t i0 = int64_t(src);
    A w1 = src - A(i0);
    taps[size_t(i)] = {i0, i0 + (i0 < in - 1 ? 1 : 0), A(1) - w1, w1};
  }
  return taps;
}

template <class T>
void resize_bilinear_planes(const T* in, T* out, int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow) {
  using A = Acc<T>;
  auto ys = linear_taps<A>(h, oh);
  auto xs = linear_taps<A>(w, ow);
  for (int64_t p = 0; p < planes; ++p) {
    const T* src = in + p * h * w;
    T* dst = out + p * oh * ow;
    for (int64_t i = 0; i < oh; ++i) {
      const auto& y = ys[size_t(i)];
      const T* r0 = src + y.i0 * w;
      const T* r1 = src + y.i1 * w;
      for (int64_t j = 0; j < ow; ++j) {
        const auto& x = xs[size_t(j)];
        A top = x.w0 * A(r0[x.i0]) + x.w1 * A(r0[x.i1]);
        A bottom = x.w0 * A(r1[x.i0]) + x.w1 * A(r1[x.i1]);
        dst[i * ow + j] = to_pixel<T>(y.w0 * top + y.w1 * bottom);
      }
    }
  }
}

// ------------------------------------------------------------------------------ affine

// torchvision's _get_inverse_affine_matrix about the image centre: maps an output position
// (relative to the centre) to the input position it samples.
std::array<double, 6> inverse_affine_matrix(double angle, std::pair<double, double> translate, double scale,
                                            std::pair<double, double> shear) {
  const double deg = std::numbers::pi / 180.0;
  double rot = angle * deg, sx = shear.first * deg, sy = shear.second * deg;
  double a = std::cos(rot - sy) / std::cos(sy);
  double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  double c = std::sin(rot - sy) / std::cos(sy);
  double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  // The rotation-shear block has determinant 1, so its inverse is the adjugate.
  std::array<double, 6> m = {d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0};
  auto [tx, ty] = translate;
  m[2] = m[0] * -tx + m[1] * -ty;
  m[5] = m[3] * -tx + m[4] * -ty;
  return m;
}

// For each output pixel, the input position it samples, in input pixel units. Follows
// torchvision's grid (pixel centres relative to the image centre, normalised by half the size)
// and grid_sample's align_corners=False unnormalisation, in the same precision, so nearest
// rounding lands on the same pixels.
template <class A>
void sample_positions(const std::array<double, 6>& m, int64_t h, int64_t w, std::vector<A>& xs, std::vector<A>& ys) {
  const A half_w = A(0.5 * double(w)), half_h = A(0.5 * double(h));
  const A tx0 = A(m[0]) / half_w, tx1 = A(m[1]) / half_w, tx2 = A(m[2]) / half_w;
  const A ty0 = A(m[3]) / half_h, ty1 = A(m[4]) / half_h, ty2 = A(m[5]) / half_h;
  const A scale_x = A(w) / A(2), scale_y = A(h) / A(2);
  xs.resize(size_t(h * w));
  ys.resize(size_t(h * w));
  for (int64_t i = 0; i < h; ++i) {
    const A by = A(i) - half_h + A(0.5);
    for (int64_t j = 0; j < w; ++j) {
      const A bx = A(j) - half_w + A(0.5);
      // Explicit fused multiply-adds (torch's grid arithmetic rounds this way), and this file is
      // built without contraction (CMakeLists.txt), so every build picks the same pixels.
      const A gx = std::fma(bx, tx0, by * tx1) + tx2;
      const A gy = std::fma(bx, ty0, by * ty1) + ty2;
      xs[size_t(i * w + j)] = std::fma(gx + A(1), scale_x, A(-0.5));
      ys[size_t(i * w + j)] = std::fma(gy + A(1), scale_y, A(-0.5));
    }
  }
}

template <class T>
void affine_nearest_planes(const T* in, T* out, int64_t planes, int64_t h, int64_t w,
                           const std::array<double, 6>& m, double fill) {
  using A = Acc<T>;
  std::vector<A> xs, ys;
  sample_positions<A>(m, h, w, xs, ys);
  // Round half to even like grid_sample; -1 marks a source outside the image.
  std::vector<int64_t> src(static_cast<size_t>(h * w));
  for (size_t k = 0; k < src.size(); ++k) {
    A x = std::nearbyint(xs[k]), y = std::nearbyint(ys[k]);
    bool inside = x >= 0 && x < A(w) && y >= 0 && y < A(h);
    src[k] = inside ? int64_t(y) * w + int64_t(x) : -1;
  }
  const T f = to_pixel<T>(A(fill));
  for (int64_t p = 0; p < planes; ++p) {
    const T* s = in + p * h * w;
    T* d = out + p * h * w;
    for (size_t k = 0; k < src.size(); ++k) d[k] = src[k] < 0 ? f : s[src[k]];
  }
}

// Bilinear: the four taps with their weights, taps outside the image dropped (grid_sample's zero
// padding). torchvision then blends with the fill by the in-image weight: v * m + (1 - m) * fill.
template <class T>
void affine_bilinear_planes(const T* in, T* out, int64_t planes, int64_t h, int64_t w,
                            const std::array<double, 6>& m, double fill) {
  using A = Acc<T>;
  std::vector<A> xs, ys;
  sample_positions<A>(m, h, w, xs, ys);
  const int64_t n = h * w;
  std::vector<int64_t> idx(static_cast<size_t>(4 * n));
  std::vector<A> wt(static_cast<size_t>(4 * n)), inside(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    A x0 = std::floor(xs[size_t(k)]), y0 = std::floor(ys[size_t(k)]);
    A fx = xs[size_t(k)] - x0, fy = ys[size_t(k)] - y0;
    const A dx[2] = {A(1) - fx, fx}, dy[2] = {A(1) - fy, fy};
    A mass = 0;
    for (int c = 0; c < 4; ++c) {
      int64_t x = int64_t(x0) + (c & 1), y = int64_t(y0) + (c >> 1);
      bool ok = x >= 0 && x < w && y >= 0 && y < h;
      idx[size_t(4 * k + c)] = ok ? y * w + x : 0;
      wt[size_t(4 * k + c)] = ok ? dx[c & 1] * dy[c >> 1] : A(0);
      mass += wt[size_t(4 * k + c)];
    }
    inside[size_t(k)] = mass;
  }
  const A f = A(fill);
  for (int64_t p = 0; p < planes; ++p) {
    const T* s = in + p * h * w;
    T* d = out + p * h * w;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t* ix = &idx[size_t(4 * k)];
      const A* wk = &wt[size_t(4 * k)];
      A v = wk[0] * A(s[ix[0]]) + wk[1] * A(s[ix[1]]) + wk[2] * A(s[ix[2]]) + wk[3] * A(s[ix[3]]);
      A mk = inside[size_t(k)];
      d[k] = to_pixel<T>(v * mk + (A(1) - mk) * f);
    }
  }
}

Tensor affine_impl(const Tensor& image, const std::array<double, 6>& m, Interpolation interpolation, double fill,
                   const char* who) {
  Planes p = detail::image_planes(image, who);
  Tensor src = image.contiguous();
  Tensor out = detail::empty_planes(p, p.h, p.w, src.dtype());
  detail::visit_image_dtype(src.dtype(), who, [&](auto tag) {
    using T = decltype(tag);
    if (interpolation == Interpolation::Nearest)
      affine_nearest_planes<T>(src.data_ptr<T>(), out.data_ptr<T>(), p.planes, p.h, p.w, m, fill);
    else
      affine_bilinear_planes<T>(src.data_ptr<T>(), out.data_ptr<T>(), p.planes, p.h, p.w, m, fill);
  });
  return out;
}

// ------------------------------------------------------------------------------ randomness

using detail::random_below;
using detail::uniform;

// A single number d means [-d, d], as torchvision's _setup_angle.
std::pair<double, double> symmetric_range(double d, const char* who, const char* name) {
  EMBER_CHECK_VALUE(d >= 0, who, ": If ", name, " is a single number, it must be positive.");
  return {0.0 - d, d};  // 0 gives [0.0, 0.0], not [-0.0, 0.0], as Python's -0 for an int
}

void check_range(std::pair<double, double> r, const char* who, const char* name) {
  EMBER_CHECK_VALUE(r.first <= r.second, who, ": ", name, " range must be (min, max) with min <= max, got (",
                    r.first, ", ", r.second, ")");
}

std::vector<int64_t> check_size(std::vector<int64_t> size, const char* who) {
  EMBER_CHECK_VALUE(size.size() == 1 || size.size() == 2, who,
                    ": size must have 1 or 2 values (h, w), got ", size.size());
  for (int64_t s : size) EMBER_CHECK_VALUE(s > 0, who, ": size must be positive, got ", size);
  return size;
}

const char* interpolation_name(Interpolation i) { return i == Interpolation::Nearest ? "nearest" : "bilinear"; }

std::string py_pair(std::pair<double, double> r, bool as_list) {
  std::string s = detail::py_float(r.first) + ", " + detail::py_float(r.second);
  return as_list ? "[" + s + "]" : "(" + s + ")";
}

}  // namespace

// ------------------------------------------------------------------------------ Resize

Resize::Resize(std::vector<int64_t> size, Interpolation interpolation, bool antialias)
    : size(check_size(std::move(size), "Resize")), interpolation(interpolation), antialias(antialias) {}

Tensor Resize::operator()(const Tensor& image) const {
  Planes p = detail::image_planes(image, "Resize");
  EMBER_CHECK_VALUE(p.h > 0 && p.w > 0, "Resize: cannot resize an empty image of shape ", image.sizes());
  int64_t oh = 0, ow = 0;
  if (size.size() == 2) {
    oh = size[0];
    ow = size[1];
  } else {
    // The smaller edge becomes size[0]; the other is truncated as Python's int() does.
    int64_t shorter = std::min(p.h, p.w), longer = std::max(p.h, p.w);
    int64_t new_long = int64_t(double(size[0]) * double(longer) / double(shorter));
    oh = p.h <= p.w ? size[0] : new_long;
    ow = p.h <= p.w ? new_long : size[0];
  }
  if (interpolation == Interpolation::Nearest) return gather(image, "Resize", nearest_map(p.h, oh), nearest_map(p.w, ow));
  if (antialias) return resized_crop(image, 0, 0, p.h, p.w, {oh, ow}, interpolation, true);
  Tensor src = image.contiguous();
  Tensor out = detail::empty_planes(p, oh, ow, src.dtype());
  detail::visit_image_dtype(src.dtype(), "Resize", [&](auto tag) {
    using T = decltype(tag);
    resize_bilinear_planes<T>(src.data_ptr<T>(), out.data_ptr<T>(), p.planes, p.h, p.w, oh, ow);
  });
  return out;
}

std::string Resize::repr() const {
  std::string s = size.size() == 1 ? std::to_string(size[0]) : detail::py_int_list(size);
  return "Resize(size=" + s + ", interpolation=" + interpolation_name(interpolation) +
         ", max_size=None, antialias=" + (antialias ? "True" : "None") + ")";
}

// ------------------------------------------------------------------------------ CenterCrop

CenterCrop::CenterCrop(std::vector<int64_t> size) : size(check_size(std::move(size), "CenterCrop")) {}

Tensor CenterCrop::operator()(const Tensor& image) const {
  Planes p = detail::image_planes(image, "CenterCrop");
  const int64_t ch = size[0], cw = size.back();
  // torchvision first pads a too-small image with zeros (the extra pixel going right/bottom), then
  // crops at round((padded - crop) / 2), Python's round: half to even.
  int64_t top_pad = ch > p.h ? (ch - p.h) / 2 : 0, left_pad = cw > p.w ? (cw - p.w) / 2 : 0;
  int64_t ph = std::max(p.h, ch), pw = std::max(p.w, cw);
  int64_t top = int64_t(std::nearbyint(double(ph - ch) / 2.0));
  int64_t left = int64_t(std::nearbyint(double(pw - cw) / 2.0));
  return gather(image, "CenterCrop", padded_window(top, ch, top_pad, p.h, PaddingMode::Constant),
                padded_window(left, cw, left_pad, p.w, PaddingMode::Constant));
}

std::string CenterCrop::repr() const {
  return "CenterCrop(size=" + (size.size() == 1 ? nn::py_tuple({size[0], size[0]}) : detail::py_int_list(size)) + ")";
}

// ------------------------------------------------------------------------------ RandomCrop

RandomCrop::RandomCrop(std::vector<int64_t> size, std::vector<int64_t> padding, bool pad_if_needed, double fill,
                       PaddingMode padding_mode)
    : size(check_size(std::move(size), "RandomCrop")),
      padding(std::move(padding)),
      pad_if_needed(pad_if_needed),
      fill(fill),
      padding_mode(padding_mode) {
  parse_padding(this->padding, "RandomCrop");
}

Tensor RandomCrop::operator()(const Tensor& image) const {
  Planes p = detail::image_planes(image, "RandomCrop");
  const int64_t th = size[0], tw = size.back();
  Padding pad = parse_padding(padding, "RandomCrop");
  check_mirror_padding(pad.left, pad.right, p.w, padding_mode, "RandomCrop", "width");
  check_mirror_padding(pad.top, pad.bottom, p.h, padding_mode, "RandomCrop", "height");
  int64_t ph = p.h + pad.top + pad.bottom, pw = p.w + pad.left + pad.right;
  // pad_if_needed pads both sides by the shortfall, as torchvision does (in two steps: each pads
  // the already padded image, so a mirror mode reads from the first padding).
  int64_t extra_w = pad_if_needed && pw < tw ? tw - pw : 0;
  int64_t extra_h = pad_if_needed && ph < th ? th - ph : 0;
  EMBER_CHECK_VALUE(ph + 2 * extra_h >= th && pw + 2 * extra_w >= tw, "RandomCrop: Required crop size (", th, ", ",
                    tw, ") is larger than input image size (", ph + 2 * extra_h, ", ", pw + 2 * extra_w, ")");
  check_mirror_padding(extra_w, extra_w, pw, padding_mode, "RandomCrop", "width");
  check_mirror_padding(extra_h, extra_h, ph, padding_mode, "RandomCrop", "height");
  int64_t fh = ph + 2 * extra_h, fw = pw + 2 * extra_w;
  int64_t top = 0, left = 0;
  if (fh != th || fw != tw) {
    top = random_below(fh - th + 1);
    left = random_below(fw - tw + 1);
  }
  // Compose the two paddings on each axis: the window over the final padded axis reads the first
  // padded axis, which reads the image.
  auto axis = [&](int64_t start, int64_t count, int64_t extra, int64_t before, int64_t n, int64_t padded) {
    std::vector<int64_t> first = padded_window(start, count, extra, padded, padding_mode);
    for (auto& i : first)
      if (i >= 0) i = padded_source(i - before, n, padding_mode);
    return first;
  };
  return gather(image, "RandomCrop", axis(top, th, extra_h, pad.top, p.h, ph), axis(left, tw, extra_w, pad.left, p.w, pw),
                fill);
}

std::string RandomCrop::repr() const {
  std::string pad = padding.empty() ? "None" : padding.size() == 1 ? std::to_string(padding[0]) : detail::py_int_list(padding);
  return "RandomCrop(size=" + nn::py_tuple({size[0], size.back()}) + ", padding=" + pad + ")";
}

// ------------------------------------------------------------------------------ RandomResizedCrop

Tensor resized_crop(const Tensor& image, int64_t top, int64_t left, int64_t height, int64_t width,
                    std::vector<int64_t> size, Interpolation interpolation, bool antialias) {
  Planes p = detail::image_planes(image, "resized_crop");
  EMBER_CHECK_VALUE(height > 0 && width > 0 && top >= 0 && left >= 0 && top + height <= p.h && left + width <= p.w,
                    "resized_crop: the window (top=", top, ", left=", left, ", height=", height, ", width=", width,
                    ") must lie inside the ", p.h, "x", p.w, " image");
  size = check_size(std::move(size), "resized_crop");
  const int64_t oh = size[0], ow = size.back();
  if (interpolation == Interpolation::Nearest) {
    std::vector<int64_t> rows = nearest_map(height, oh), cols = nearest_map(width, ow);
    for (auto& r : rows) r += top;
    for (auto& c : cols) c += left;
    return gather(image, "resized_crop", rows, cols);
  }
  Tensor crop = image.narrow(-2, top, height).narrow(-1, left, width).contiguous();
  Tensor out = detail::empty_planes(p, oh, ow, crop.dtype());
  if (antialias && (oh < height || ow < width)) {
    // torchvision: F.interpolate(antialias=True) in float, uint8 rounded back (torch.round)
    detail::visit_image_dtype(crop.dtype(), "resized_crop", [](auto) {});  // (the dtype check)
    const DType compute = crop.dtype() == kFloat64 ? kFloat64 : kFloat32;
    Tensor planes = crop.to(compute).reshape({1, p.planes, height, width});
    Tensor scaled = nn::functional::interpolate(planes, std::vector<int64_t>{oh, ow}, std::nullopt, "bilinear", false,
                                                std::nullopt, true);
    scaled = scaled.reshape(out.sizes());
    return crop.dtype() == kUInt8 ? scaled.round().clamp(0, 255).to(kUInt8) : scaled.to(crop.dtype());
  }
  detail::visit_image_dtype(crop.dtype(), "resized_crop", [&](auto tag) {
    using T = decltype(tag);
    resize_bilinear_planes<T>(crop.data_ptr<T>(), out.data_ptr<T>(), p.planes, height, width, oh, ow);
  });
  return out;
}

RandomResizedCrop::RandomResizedCrop(std::vector<int64_t> size, std::pair<double, double> scale,
                                     std::pair<double, double> ratio, Interpolation interpolation, bool antialias)
    : size(check_size(std::move(size), "RandomResizedCrop")),
      scale(scale),
      ratio(ratio),
      interpolation(interpolation),
      antialias(antialias) {
  EMBER_CHECK_VALUE(scale.first >= 0 && ratio.first > 0 && ratio.second > 0,
                    "RandomResizedCrop: scale must be non-negative and ratio positive, got scale=(", scale.first, ", ",
                    scale.second, ") and ratio=(", ratio.first, ", ", ratio.second, ")");
}

// torchvision's get_params, draw for draw: area * U(scale), exp(U(log ratio)) in float32 (its
// log and exp run on float tensors), sizes rounded half to even as Python's round().
std::array<int64_t, 4> RandomResizedCrop::get_params(int64_t height, int64_t width) const {
  const double area = double(height) * double(width);
  const double log_lo = double(std::log(float(ratio.first))), log_hi = double(std::log(float(ratio.second)));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * uniform(scale.first, scale.second);
    const double aspect = double(std::exp(float(uniform(log_lo, log_hi))));
    const int64_t w = int64_t(std::nearbyint(std::sqrt(target_area * aspect)));
    const int64_t h = int64_t(std::nearbyint(std::sqrt(target_area / aspect)));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const int64_t top = random_below(height - h + 1);
      const int64_t left = random_below(width - w + 1);
      return {top, left, h, w};
    }
  }
  // the centre crop, clamped to the ratio range
  const double in_ratio = double(width) / double(height);
  const double lo = std::min(ratio.first, ratio.second), hi = std::max(ratio.first, ratio.second);
  int64_t w = width, h = height;
  if (in_ratio < lo) h = int64_t(std::nearbyint(double(w) / lo));
  else if (in_ratio > hi) w = int64_t(std::nearbyint(double(h) * hi));
  return {(height - h) / 2, (width - w) / 2, h, w};
}

Tensor RandomResizedCrop::operator()(const Tensor& image) const {
  Planes p = detail::image_planes(image, "RandomResizedCrop");
  EMBER_CHECK_VALUE(p.h > 0 && p.w > 0, "RandomResizedCrop: cannot crop an empty image of shape ", image.sizes());
  const auto [top, left, h, w] = get_params(p.h, p.w);
  return resized_crop(image, top, left, h, w, {size[0], size.back()}, interpolation, antialias);
}

std::string RandomResizedCrop::repr() const {
  auto rounded = [](std::pair<double, double> r) {  // Python's round(v, 4)
    return std::pair<double, double>{std::nearbyint(r.first * 1e4) / 1e4, std::nearbyint(r.second * 1e4) / 1e4};
  };
  return "RandomResizedCrop(size=" + nn::py_tuple({size[0], size.back()}) + ", scale=" + py_pair(rounded(scale), false) +
         ", ratio=" + py_pair(rounded(ratio), false) + ", interpolation=" + interpolation_name(interpolation) +
         ", antialias=" + (antialias ? "True" : "False") + ")";
}

// ------------------------------------------------------------------------------ flips

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p(p) {}

Tensor RandomHorizontalFlip::operator()(const Tensor& image) const {
  Planes pl = detail::image_planes(image, "RandomHorizontalFlip");
  if (!(rand({1}).item<float>() < float(p))) return image;  // torch.rand(1) < p, in float32
  return gather(image, "RandomHorizontalFlip", identity_map(pl.h), reversed_map(pl.w));
}

std::string RandomHorizontalFlip::repr() const { return "RandomHorizontalFlip(p=" + detail::py_float(p) + ")"; }

RandomVerticalFlip::RandomVerticalFlip(double p) : p(p) {}

Tensor RandomVerticalFlip::operator()(const Tensor& image) const {
  Planes pl = detail::image_planes(image, "RandomVerticalFlip");
  if (!(rand({1}).item<float>() < float(p))) return image;  // torch.rand(1) < p, in float32
  return gather(image, "RandomVerticalFlip", reversed_map(pl.h), identity_map(pl.w));
}

std::string RandomVerticalFlip::repr() const { return "RandomVerticalFlip(p=" + detail::py_float(p) + ")"; }

// ------------------------------------------------------------------------------ affine family

Tensor affine(const Tensor& image, double angle, std::pair<double, double> translate, double scale,
              std::pair<double, double> shear, Interpolation interpolation, double fill) {
  EMBER_CHECK_VALUE(scale > 0, "affine: Argument scale should be positive, got ", scale);
  return affine_impl(image, inverse_affine_matrix(angle, translate, scale, shear), interpolation, fill, "affine");
}

RandomRotation::RandomRotation(double degrees, Interpolation interpolation, double fill)
    : RandomRotation(symmetric_range(degrees, "RandomRotation", "degrees"), interpolation, fill) {}

RandomRotation::RandomRotation(std::pair<double, double> degrees, Interpolation interpolation, double fill)
    : degrees(degrees), interpolation(interpolation), fill(fill) {
  check_range(degrees, "RandomRotation", "degrees");
}

Tensor RandomRotation::operator()(const Tensor& image) const {
  detail::image_planes(image, "RandomRotation");
  double angle = uniform(degrees.first, degrees.second);
  // F.rotate turns counter-clockwise, the opposite sense to F.affine's angle.
  return affine_impl(image, inverse_affine_matrix(-angle, {0, 0}, 1, {0, 0}), interpolation, fill, "RandomRotation");
}

std::string RandomRotation::repr() const {
  return "RandomRotation(degrees=" + py_pair(degrees, true) + ", interpolation=" + interpolation_name(interpolation) +
         ", expand=False, fill=" + detail::py_number(fill) + ")";
}

RandomAffine::RandomAffine(double degrees, std::optional<std::pair<double, double>> translate,
                           std::optional<std::pair<double, double>> scale,
                           std::optional<std::pair<double, double>> shear, Interpolation interpolation, double fill)
    : degrees(symmetric_range(degrees, "RandomAffine", "degrees")),
      translate(translate),
      scale(scale),
      shear(shear),
      interpolation(interpolation),
      fill(fill) {
  if (translate)
    for (double t : {translate->first, translate->second})
      EMBER_CHECK_VALUE(t >= 0.0 && t <= 1.0, "RandomAffine: translation values should be between 0 and 1");
  if (scale) {
    for (double s : {scale->first, scale->second})
      EMBER_CHECK_VALUE(s > 0, "RandomAffine: scale values should be positive");
    check_range(*scale, "RandomAffine", "scale");
  }
  if (shear) check_range(*shear, "RandomAffine", "shear");
}

Tensor RandomAffine::operator()(const Tensor& image) const {
  Planes p = detail::image_planes(image, "RandomAffine");
  // Drawn in torchvision's order: angle, tx, ty, scale, shear.
  double angle = uniform(degrees.first, degrees.second);
  std::pair<double, double> shift{0, 0};
  if (translate) {
    double max_dx = translate->first * double(p.w), max_dy = translate->second * double(p.h);
    shift.first = std::nearbyint(uniform(-max_dx, max_dx));
    shift.second = std::nearbyint(uniform(-max_dy, max_dy));
  }
  double s = scale ? uniform(scale->first, scale->second) : 1.0;
  double shear_x = shear ? uniform(shear->first, shear->second) : 0.0;
  return affine_impl(image, inverse_affine_matrix(angle, shift, s, {shear_x, 0.0}), interpolation, fill,
                     "RandomAffine");
}

std::string RandomAffine::repr() const {
  std::string s = "RandomAffine(degrees=" + py_pair(degrees, true);
  if (translate) s += ", translate=" + py_pair(*translate, false);
  if (scale) s += ", scale=" + py_pair(*scale, false);
  if (shear) s += ", shear=" + py_pair(*shear, true);
  if (interpolation != Interpolation::Nearest) s += std::string(", interpolation=") + interpolation_name(interpolation);
  if (fill != 0) s += ", fill=" + detail::py_number(fill);
  return s + ")";
}

}  // namespace ember::transforms
