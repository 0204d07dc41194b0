// Colour transforms: brightness, contrast, saturation, hue, grayscale and ColorJitter, as
// torchvision.transforms.functional computes them on tensors (its _functional_tensor), op for op
// in float32 so values match: the blends with ember ops, the hue rotation (RGB -> HSV -> RGB, a
// dozen ops per pixel there) as one loop over the pixels with the same expressions in the same
// order. Built with -ffp-contract=off (CMakeLists.txt) so no product and sum fuse differently.
#include <cmath>
#include <cstdint>
#include <limits>

#include "data/image_utils.h"
#include "ember/data/transforms.h"
#include "ember/ops.h"
#include "ops/elementwise_formulas.h"

namespace ember::transforms {

namespace {

int64_t channels_of(const Tensor& image, const char* who) {
  EMBER_CHECK_VALUE(image.dim() >= 2 && image.dim() <= 4, who,
                    ": expected an image of shape (H, W), (C, H, W) or (N, C, H, W), got shape ", image.sizes());
  EMBER_CHECK_TYPE(image.dtype() == kUInt8 || image.is_floating_point(), who,
                   ": expected a uint8 or floating point image, got ", to_string(image.dtype()));
  return image.dim() == 2 ? 1 : image.size(-3);
}

// torchvision's _assert_channels, its message and its order of the permitted values
void check_channels(int64_t c, const char* permitted) {
  EMBER_CHECK_TYPE(c == 1 || c == 3, "Input image tensor permitted channel values are ", permitted, ", but found ", c);
}

void check_factor(double f, const char* name) {
  EMBER_CHECK_VALUE(f >= 0, name, " (", detail::py_float(f), ") is not non-negative.");
}

// torchvision's _blend: (ratio * img1 + (1 - ratio) * img2), clamped to the dtype's range, cast
// back (a uint8 result truncates, as torch's cast does)
Tensor blend(const Tensor& img1, const Tensor& img2, double ratio) {
  const double bound = img1.is_floating_point() ? 1.0 : 255.0;
  return (img1 * ratio + img2 * (1.0 - ratio)).clamp(0, bound).to(img1.dtype());
}

// 0.2989 R + 0.587 G + 0.114 B of a 3-channel image, cast to its dtype, with a channel dim of 1
Tensor luma(const Tensor& image) {
  const std::vector<Tensor> rgb = image.unbind(-3);
  return (rgb[0] * 0.2989 + rgb[1] * 0.587 + rgb[2] * 0.114).to(image.dtype()).unsqueeze(-3);
}

// One pixel's hue rotation, torchvision's _rgb2hsv, (h + hue) % 1 and _hsv2rgb in float32.
// _rgb2hsv sums three masked terms of which two are zero: the sum is the selected term.
struct Hsv {
  float h, s, v;
};
inline Hsv rgb_to_hsv(float r, float g, float b) {
  const float maxc = std::fmax(std::fmax(r, g), b), minc = std::fmin(std::fmin(r, g), b);
  const bool eqc = maxc == minc;
  const float cr = maxc - minc;
  const float s = cr / (eqc ? 1.0f : maxc);
  const float div = eqc ? 1.0f : cr;
  const float rc = (maxc - r) / div, gc = (maxc - g) / div, bc = (maxc - b) / div;
  float h;
  if (maxc == r) h = bc - gc;
  else if (maxc == g) h = (2.0f + rc) - bc;
  else h = (4.0f + gc) - rc;
  h = std::fmod(h / 6.0f + 1.0f, 1.0f);
  return {h, s, maxc};
}
inline void hsv_to_rgb(float h, float s, float v, float& r, float& g, float& b) {
  const float i_f = std::floor(h * 6.0f);
  const float f = (h * 6.0f) - i_f;
  int i = int(i_f) % 6;
  if (i < 0) i += 6;  // (torch's remainder of an int32: h is in [0, 1), so never negative)
  const float p = std::clamp(v * (1.0f - s), 0.0f, 1.0f);
  const float q = std::clamp(v * (1.0f - s * f), 0.0f, 1.0f);
  const float t = std::clamp(v * (1.0f - s * (1.0f - f)), 0.0f, 1.0f);
  const float rs[6] = {v, q, p, p, t, v}, gs[6] = {t, v, v, q, p, p}, bs[6] = {p, p, t, v, v, q};
  r = rs[i];
  g = gs[i];
  b = bs[i];
}

// The image's values as float32 (convert_image_dtype: uint8 / 255) and back (* 255.999, truncated)
template <class T> inline float load_unit(T x) {
  if constexpr (std::is_same_v<T, uint8_t>) return float(x) / 255.0f;
  else return float(x);
}
template <class T> inline T store_unit(float x) {
  if constexpr (std::is_same_v<T, uint8_t>) return uint8_t(x * 255.999f);
  else return T(x);
}

template <class T>
void rotate_hue(const T* in, T* out, int64_t images, int64_t plane, float hue) {
  const formula::remainder_fn<> remainder;
  for (int64_t n = 0; n < images; ++n) {
    const T* src = in + n * 3 * plane;
    T* dst = out + n * 3 * plane;
    for (int64_t k = 0; k < plane; ++k) {
      Hsv c = rgb_to_hsv(load_unit(src[k]), load_unit(src[plane + k]), load_unit(src[2 * plane + k]));
      c.h = remainder(c.h + hue, 1.0f);
      float r, g, b;
      hsv_to_rgb(c.h, c.s, c.v, r, g, b);
      dst[k] = store_unit<T>(r);
      dst[plane + k] = store_unit<T>(g);
      dst[2 * plane + k] = store_unit<T>(b);
    }
  }
}

}  // namespace

Tensor adjust_brightness(const Tensor& image, double factor) {
  check_factor(factor, "brightness_factor");
  check_channels(channels_of(image, "adjust_brightness"), "[1, 3]");
  return blend(image, zeros_like(image), factor);
}

Tensor adjust_contrast(const Tensor& image, double factor) {
  check_factor(factor, "contrast_factor");
  const int64_t c = channels_of(image, "adjust_contrast");
  check_channels(c, "[3, 1]");
  const DType dtype = image.is_floating_point() ? image.dtype() : kFloat32;
  const std::vector<int64_t> dims = image.dim() == 2 ? std::vector<int64_t>{-2, -1} : std::vector<int64_t>{-3, -2, -1};
  const Tensor mean = (c == 3 ? luma(image) : image).to(dtype).mean(dims, true);
  return blend(image, mean, factor);
}

Tensor adjust_saturation(const Tensor& image, double factor) {
  check_factor(factor, "saturation_factor");
  const int64_t c = channels_of(image, "adjust_saturation");
  check_channels(c, "[1, 3]");
  if (c == 1) return image;  // as PIL: a grey image has no saturation
  return blend(image, luma(image), factor);
}

Tensor adjust_hue(const Tensor& image, double hue_factor) {
  EMBER_CHECK_VALUE(hue_factor >= -0.5 && hue_factor <= 0.5, "hue_factor (", detail::py_float(hue_factor),
                    ") is not in [-0.5, 0.5].");
  const int64_t c = channels_of(image, "adjust_hue");
  check_channels(c, "[1, 3]");
  if (c == 1) return image;
  Tensor src = image.contiguous();
  Tensor out = empty(src.sizes(), {.dtype = src.dtype()});
  const int64_t plane = src.size(-1) * src.size(-2), images = src.numel() / (3 * std::max<int64_t>(plane, 1));
  detail::visit_image_dtype(src.dtype(), "adjust_hue", [&](auto tag) {
    using T = decltype(tag);
    rotate_hue<T>(src.data_ptr<T>(), out.data_ptr<T>(), images, plane, float(hue_factor));
  });
  return out;
}

Tensor rgb_to_grayscale(const Tensor& image, int64_t num_output_channels) {
  EMBER_CHECK_TYPE(image.dim() >= 3, "Input image tensor should have at least 3 dimensions, but found ", image.dim());
  const int64_t c = channels_of(image, "rgb_to_grayscale");
  check_channels(c, "[1, 3]");
  EMBER_CHECK_VALUE(num_output_channels == 1 || num_output_channels == 3,
                    "num_output_channels should be either 1 or 3");
  const Tensor grey = c == 3 ? luma(image) : image.clone();
  // (as torchvision: three channels out only from three in; a grey image stays one channel)
  return num_output_channels == 3 ? grey.expand(image.sizes()) : grey;
}

// ------------------------------------------------------------------------------ ColorJitter

namespace {
void check_range(const ColorJitter::Range& r, const char* name, double lo, double hi) {
  if (!r) return;
  EMBER_CHECK_VALUE(lo <= r->first && r->first <= r->second && r->second <= hi, "ColorJitter: ", name,
                    " values should be between (", detail::py_float(lo), ", ", std::isinf(hi) ? "inf" : detail::py_float(hi),
                    "), but got [", detail::py_float(r->first), ", ", detail::py_float(r->second), "].");
}
std::string range_repr(const ColorJitter::Range& r) {
  return r ? "(" + detail::py_float(r->first) + ", " + detail::py_float(r->second) + ")" : "None";
}
}  // namespace

ColorJitter::ColorJitter(Range brightness, Range contrast, Range saturation, Range hue)
    : brightness(brightness), contrast(contrast), saturation(saturation), hue(hue) {
  const double inf = std::numeric_limits<double>::infinity();
  check_range(brightness, "brightness", 0, inf);
  check_range(contrast, "contrast", 0, inf);
  check_range(saturation, "saturation", 0, inf);
  check_range(hue, "hue", -0.5, 0.5);
}

// torchvision's get_params then forward: randperm(4), then one uniform draw per range present
// (brightness, contrast, saturation, hue in that order), then the adjustments in the drawn order.
Tensor ColorJitter::operator()(const Tensor& image) const {
  const Tensor order = randperm(4);
  const auto draw = [](const Range& r) { return r ? std::optional<double>(detail::uniform(r->first, r->second)) : std::nullopt; };
  const std::optional<double> b = draw(brightness), c = draw(contrast), s = draw(saturation), h = draw(hue);
  Tensor img = image;
  for (int64_t k = 0; k < 4; ++k) {
    switch (order[k].item<int64_t>()) {
      case 0: if (b) img = adjust_brightness(img, *b); break;
      case 1: if (c) img = adjust_contrast(img, *c); break;
      case 2: if (s) img = adjust_saturation(img, *s); break;
      default: if (h) img = adjust_hue(img, *h); break;
    }
  }
  return img;
}

std::string ColorJitter::repr() const {
  return "ColorJitter(brightness=" + range_repr(brightness) + ", contrast=" + range_repr(contrast) +
         ", saturation=" + range_repr(saturation) + ", hue=" + range_repr(hue) + ")";
}

// ------------------------------------------------------------------------------ grayscale

Grayscale::Grayscale(int64_t num_output_channels) : num_output_channels(num_output_channels) {
  EMBER_CHECK_VALUE(num_output_channels == 1 || num_output_channels == 3,
                    "num_output_channels should be either 1 or 3");
}

Tensor Grayscale::operator()(const Tensor& image) const { return rgb_to_grayscale(image, num_output_channels); }

std::string Grayscale::repr() const {
  return "Grayscale(num_output_channels=" + std::to_string(num_output_channels) + ")";
}

RandomGrayscale::RandomGrayscale(double p) : p(p) {}

// torchvision: the image's own channel count, torch.rand(1) < p
Tensor RandomGrayscale::operator()(const Tensor& image) const {
  const int64_t c = channels_of(image, "RandomGrayscale");
  if (!(rand({1}).item<float>() < float(p))) return image;
  return rgb_to_grayscale(image, c);
}

std::string RandomGrayscale::repr() const { return "RandomGrayscale(p=" + detail::py_float(p) + ")"; }

}  // namespace ember::transforms
