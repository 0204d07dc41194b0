#pragma once
// Image transforms, as torchvision.transforms defines them, on tensors.
//
// Images are tensors in (C, H, W) layout (or (H, W), read as one channel), of dtype uint8
// (0..255, what the datasets return) or floating point (after ToTensor). The geometric
// transforms accept either and keep the dtype; ToTensor turns uint8 into float32 in [0, 1] and
// (H, W) into (1, H, W); Normalize needs floating point. A leading batch dimension (N, C, H, W)
// is accepted by every transform except ToTensor.
//
//   auto tf = transforms::Compose({transforms::RandomRotation(10),
//                                  transforms::RandomAffine(0, {{0.1, 0.1}}),
//                                  transforms::ToTensor(),
//                                  transforms::Normalize({0.1307}, {0.3081})});
//   Tensor x = tf(image);
//
// Random transforms draw from default_generator() (each DataLoader worker thread has its own,
// seeded as PyTorch seeds its worker processes), so a seeded run is reproducible.
#include <array>
#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/tensor.h"

namespace ember::transforms {

// Every transform derives from TransformBase. Transform is the value type users pass around: it
// holds any TransformBase (or a plain function, via Lambda) and is cheap to copy.
class TransformBase {
 public:
  virtual ~TransformBase() = default;
  virtual Tensor operator()(const Tensor& image) const = 0;
  virtual std::string repr() const = 0;  // as torchvision prints it, e.g. "Normalize(mean=[0.1307], std=[0.3081])"
};

class Transform {
 public:
  Transform() = default;  // empty: apply() returns its input
  template <class T>
    requires std::derived_from<std::decay_t<T>, TransformBase>
  Transform(T&& t) : impl_(std::make_shared<std::decay_t<T>>(std::forward<T>(t))) {}
  explicit operator bool() const { return impl_ != nullptr; }
  Tensor operator()(const Tensor& image) const { return impl_ ? (*impl_)(image) : image; }
  std::string repr() const { return impl_ ? impl_->repr() : "None"; }

 private:
  std::shared_ptr<const TransformBase> impl_;
};

enum class Interpolation { Nearest, Bilinear };
enum class PaddingMode { Constant, Edge, Reflect, Symmetric };

// Applies the transforms in order. repr lists them one per line, as torchvision does.
struct Compose : TransformBase {
  explicit Compose(std::vector<Transform> transforms);
  Tensor operator()(const Tensor& image) const override;
  std::string repr() const override;
  std::vector<Transform> transforms;
};

// A function as a transform: Lambda([](const Tensor& x) { return x.flip({2}); }).
struct Lambda : TransformBase {
  explicit Lambda(std::function<Tensor(const Tensor&)> fn);
  Tensor operator()(const Tensor& image) const override;
  std::string repr() const override { return "Lambda()"; }
  std::function<Tensor(const Tensor&)> fn;
};

// uint8 (C,H,W) or (H,W) -> float32 (C,H,W) in [0, 1] (divides by 255). Floating inputs are
// returned as float32 unchanged in value; other dtypes are a TypeError.
struct ToTensor : TransformBase {
  Tensor operator()(const Tensor& image) const override;
  std::string repr() const override { return "ToTensor()"; }
};

// (x - mean[c]) / std[c] per channel; one value broadcasts to every channel. A std of 0 is a
// ValueError (as torchvision), a channel-count mismatch names both counts. Not in place.
struct Normalize : TransformBase {
  Normalize(std::vector<double> mean, std::vector<double> std, bool inplace = false);
  Tensor operator()(const Tensor& image) const override;
  std::string repr() const override;
  std::vector<double> mean, std;
  bool inplace = false;
};

// Resize to `size` = {h, w}, or with one value the smaller edge to that value keeping the aspect
// ratio (the longer edge is int(size * long / short), as torchvision). Bilinear uses
// align_corners=False sampling (F.interpolate's); uint8 results are rounded and clamped. With
// antialias, bilinear shrinking filters every input pixel under the scaled kernel (torchvision's
// antialias=True, its default since 0.17; ember's default stays false, torchvision 0.14's).
struct Resize : TransformBase {
  explicit Resize(std::vector<int64_t> size, Interpolation interpolation = Interpolation::Bilinear,
                  bool antialias = false);
  Tensor operator()(const Tensor& image) const override;
  std::string repr() const override;
  std::vector<int64_t> size;
  Interpolation interpolation;
  bool antialias = false;
};

// The centre crop of size {h, w} (one value: square); pads with zeros when the image is smaller.
struct CenterCrop : TransformBase {
  explicit CenterCrop(std::vector<int64_t> size);
  Tensor operator()(const Tensor& image) const override;
  std::string repr() const override;
  std::vector<int64_t> size;
};

// Pads (padding: 1 value = all sides, 2 = {left/right, top/bottom}, 4 = {left, top, right,
// bottom}), then crops a random {h, w} window. pad_if_needed pads images smaller than the crop.
struct RandomCrop : TransformBase {
  RandomCrop(std::vector<int64_t> size, std::vector<int64_t> padding = {}, bool pad_if_needed = false,
             double fill = 0, PaddingMode padding_mode = PaddingMode::Constant);
  Tensor operator()(const Tensor& image) const override;
  std::string repr() const override;
  std::vector<int64_t> size, padding;
  bool pad_if_needed;
  double fill;
  PaddingMode padding_mode;
};

// Mirrors the image left-right with probability p.
struct RandomHorizontalFlip : TransformBase {
  explicit RandomHorizontalFlip(double p = 0.5);
  Tensor operator()(const Tensor& image) const override;
  std::string repr() const override;
  double p;
};

// Same, top-bottom.
struct RandomVerticalFlip : TransformBase {
  explicit RandomVerticalFlip(double p = 0.5);
  Tensor operator()(const Tensor& image) const override;
  std::string repr() const override;
  double p;
};

// Rotates by an angle drawn uniformly from [-degrees, degrees] (or [min, max]) counter-clockwise
// about the centre, as torchvision: output pixel p samples the input at R^-1 (p - c) + c, the
// centre c = ((W-1)/2, (H-1)/2); pixels from outside the image get `fill`. expand is not supported.
struct RandomRotation : TransformBase {
  explicit RandomRotation(double degrees, Interpolation interpolation = Interpolation::Nearest, double fill = 0);
  RandomRotation(std::pair<double, double> degrees, Interpolation interpolation = Interpolation::Nearest,
                 double fill = 0);
  Tensor operator()(const Tensor& image) const override;
  std::string repr() const override;
  std::pair<double, double> degrees;
  Interpolation interpolation;
  double fill;
};

// torchvision's RandomAffine: rotation from degrees, translation by up to translate = {a, b}
// (fractions of width and height; the shift is round(uniform(-a*W, a*W)) pixels), scale from
// [min, max], shear (x only, or {min, max}) in degrees. Same centre and sampling as RandomRotation.
struct RandomAffine : TransformBase {
  explicit RandomAffine(double degrees, std::optional<std::pair<double, double>> translate = std::nullopt,
                        std::optional<std::pair<double, double>> scale = std::nullopt,
                        std::optional<std::pair<double, double>> shear = std::nullopt,
                        Interpolation interpolation = Interpolation::Nearest, double fill = 0);
  Tensor operator()(const Tensor& image) const override;
  std::string repr() const override;
  std::pair<double, double> degrees;
  std::optional<std::pair<double, double>> translate, scale, shear;
  Interpolation interpolation;
  double fill;
};

// torchvision's RandomResizedCrop: a window covering a fraction of the area drawn uniformly from
// `scale`, with an aspect ratio drawn log-uniformly from `ratio` (ten tries, drawn as torchvision
// draws them, then the centre crop clamped to the ratio range), resized to size {h, w} (one
// value: square). Bilinear shrinking is antialiased unless antialias is false (torchvision's
// default since 0.17 is true).
struct RandomResizedCrop : TransformBase {
  explicit RandomResizedCrop(std::vector<int64_t> size, std::pair<double, double> scale = {0.08, 1.0},
                             std::pair<double, double> ratio = {3.0 / 4.0, 4.0 / 3.0},
                             Interpolation interpolation = Interpolation::Bilinear, bool antialias = true);
  Tensor operator()(const Tensor& image) const override;
  std::string repr() const override;
  // The window {top, left, height, width} a call draws for an h x w image (get_params).
  std::array<int64_t, 4> get_params(int64_t h, int64_t w) const;
  std::vector<int64_t> size;
  std::pair<double, double> scale, ratio;
  Interpolation interpolation;
  bool antialias;
};

// torchvision's F.resized_crop: rows top..top+height, columns left..left+width (inside the
// image), resized to size {h, w} as Resize does (bilinear antialiased when shrinking, with
// antialias). F.resize with antialias is resized_crop of the whole image.
Tensor resized_crop(const Tensor& image, int64_t top, int64_t left, int64_t height, int64_t width,
                    std::vector<int64_t> size, Interpolation interpolation = Interpolation::Bilinear,
                    bool antialias = true);

// Colour, as torchvision.transforms.functional on tensors (src/data/transforms_color.cpp): images
// of 1 or 3 channels ((C, H, W) or (N, C, H, W)), uint8 or floating point, results of the input's
// dtype. Brightness, contrast and saturation blend the image with black, its mean grey and its
// grey image: (f * img + (1 - f) * other) clamped to [0, 1] (float) or [0, 255] (uint8,
// truncated as torch's cast). Hue rotates the hue channel of HSV by hue_factor in [-0.5, 0.5].
// A 1-channel image has no saturation or hue to change: returned as it is.
Tensor adjust_brightness(const Tensor& image, double brightness_factor);
Tensor adjust_contrast(const Tensor& image, double contrast_factor);
Tensor adjust_saturation(const Tensor& image, double saturation_factor);
Tensor adjust_hue(const Tensor& image, double hue_factor);
// 0.2989 R + 0.587 G + 0.114 B (a 1-channel image is copied); 1 or 3 output channels.
Tensor rgb_to_grayscale(const Tensor& image, int64_t num_output_channels = 1);

// torchvision's ColorJitter: per call, the four adjustments in a random order (randperm(4)), each
// with a factor drawn uniformly from its range; nullopt leaves that adjustment out (torchvision's
// None). Ranges as torchvision's constructor makes them (a number b means [max(0, 1 - b), 1 + b];
// hue h means [-h, h]).
struct ColorJitter : TransformBase {
  using Range = std::optional<std::pair<double, double>>;
  ColorJitter(Range brightness = std::nullopt, Range contrast = std::nullopt, Range saturation = std::nullopt,
              Range hue = std::nullopt);
  Tensor operator()(const Tensor& image) const override;
  std::string repr() const override;
  Range brightness, contrast, saturation, hue;
};

// rgb_to_grayscale as a transform, and with probability p keeping the channel count.
struct Grayscale : TransformBase {
  explicit Grayscale(int64_t num_output_channels = 1);
  Tensor operator()(const Tensor& image) const override;
  std::string repr() const override;
  int64_t num_output_channels;
};
struct RandomGrayscale : TransformBase {
  explicit RandomGrayscale(double p = 0.1);
  Tensor operator()(const Tensor& image) const override;
  std::string repr() const override;
  double p;
};

// The deterministic kernel under RandomRotation and RandomAffine (torchvision.transforms.
// functional.affine): angle and shear in degrees, translate in pixels {tx, ty}.
Tensor affine(const Tensor& image, double angle, std::pair<double, double> translate, double scale,
              std::pair<double, double> shear, Interpolation interpolation = Interpolation::Nearest,
              double fill = 0);

}  // namespace ember::transforms
