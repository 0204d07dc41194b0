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
// align_corners=False sampling (F.interpolate's); uint8 results are rounded and clamped.
struct Resize : TransformBase {
  explicit Resize(std::vector<int64_t> size, Interpolation interpolation = Interpolation::Bilinear);
  Tensor operator()(const Tensor& image) const override;
  std::string repr() const override;
  std::vector<int64_t> size;
  Interpolation interpolation;
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

// The deterministic kernel under RandomRotation and RandomAffine (torchvision.transforms.
// functional.affine): angle and shear in degrees, translate in pixels {tx, ty}.
Tensor affine(const Tensor& image, double angle, std::pair<double, double> translate, double scale,
              std::pair<double, double> shear, Interpolation interpolation = Interpolation::Nearest,
              double fill = 0);

}  // namespace ember::transforms
