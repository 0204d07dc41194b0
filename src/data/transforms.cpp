// Compose, Lambda, ToTensor and Normalize: the non-geometric transforms.
#include "ember/data/transforms.h"

#include "data/image_utils.h"
#include "ember/ops.h"

namespace ember::transforms {

Compose::Compose(std::vector<Transform> transforms) : transforms(std::move(transforms)) {}

Tensor Compose::operator()(const Tensor& image) const {
  Tensor x = image;
  for (const auto& t : transforms) x = t(x);
  return x;
}

std::string Compose::repr() const {
  std::string s = "Compose(";
  for (const auto& t : transforms) s += "\n    " + t.repr();
  return s + "\n)";
}

Lambda::Lambda(std::function<Tensor(const Tensor&)> fn) : fn(std::move(fn)) {
  EMBER_CHECK_TYPE(this->fn != nullptr, "Lambda: the function is empty");
}

Tensor Lambda::operator()(const Tensor& image) const { return fn(image); }

namespace {

Tensor uint8_to_unit_float(const Tensor& image) {
  Tensor src = image.contiguous();
  Tensor out = empty(src.sizes(), {.dtype = kFloat32});
  const uint8_t* in = src.data_ptr<uint8_t>();
  float* o = out.data_ptr<float>();
  // A division, not a multiplication by 1/255, so the values equal torch's img.div(255).
  for (int64_t i = 0, n = src.numel(); i < n; ++i) o[i] = float(in[i]) / 255.0f;
  return out;
}

}  // namespace

Tensor ToTensor::operator()(const Tensor& image) const {
  EMBER_CHECK_VALUE(image.dim() == 2 || image.dim() == 3,
                    "ToTensor: expected an image of shape (H, W) or (C, H, W), got shape ", image.sizes());
  EMBER_CHECK_TYPE(image.dtype() == kUInt8 || image.is_floating_point(),
                   "ToTensor: expected a uint8 or floating point image, got ", to_string(image.dtype()));
  Tensor x = image.dtype() == kUInt8 ? uint8_to_unit_float(image) : image.to(kFloat32);
  return x.dim() == 2 ? x.unsqueeze(0) : x;
}

Normalize::Normalize(std::vector<double> mean, std::vector<double> std, bool inplace)
    : mean(std::move(mean)), std(std::move(std)), inplace(inplace) {
  EMBER_CHECK_VALUE(!this->mean.empty() && !this->std.empty(), "Normalize: mean and std need at least one value");
}

namespace {

// Per-channel statistics, one value broadcast to every channel, converted to the image's type
// first as torchvision does (so a tiny std can become 0).
template <class T>
std::vector<T> per_channel(const std::vector<double>& v, int64_t channels, const char* what) {
  EMBER_CHECK_VALUE(v.size() == 1 || int64_t(v.size()) == channels, "Normalize: ", what, " has ", v.size(),
                    " values but the image has ", channels, " channels");
  std::vector<T> out(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) out[size_t(c)] = T(v.size() == 1 ? v[0] : v[size_t(c)]);
  return out;
}

template <class T>
void normalize_planes(const T* in, T* out, int64_t batches, int64_t plane, const std::vector<T>& mean,
                      const std::vector<T>& std) {
  int64_t channels = int64_t(mean.size());
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < channels; ++c) {
      const T m = mean[size_t(c)], s = std[size_t(c)];
      int64_t base = (b * channels + c) * plane;
      for (int64_t i = 0; i < plane; ++i) out[base + i] = (in[base + i] - m) / s;
    }
}

}  // namespace

Tensor Normalize::operator()(const Tensor& image) const {
  EMBER_CHECK_TYPE(image.is_floating_point(), "Normalize: Input tensor should be a float tensor. Got ",
                   to_string(image.dtype()), ".");
  EMBER_CHECK_VALUE(image.dim() == 3 || image.dim() == 4,
                    "Normalize: expected a tensor image of size (C, H, W) or (N, C, H, W), got shape ",
                    image.sizes());
  // Half precision: computed in float32 and stored back, rare enough not to need its own kernel.
  if (image.dtype() != kFloat32 && image.dtype() != kFloat64) {
    Tensor out = Normalize(mean, std)(image.to(kFloat32)).to(image.dtype());
    if (!inplace) return out;
    Tensor target = image;
    return target.copy_(out);
  }
  int64_t channels = image.sizes()[image.dim() - 3];
  int64_t plane = image.sizes()[image.dim() - 1] * image.sizes()[image.dim() - 2];
  int64_t batches = image.dim() == 4 ? image.sizes()[0] : 1;
  Tensor src = image.contiguous();
  bool write_through = inplace && src.data_ptr() == image.data_ptr();
  Tensor out = write_through ? src : empty(src.sizes(), {.dtype = src.dtype()});
  detail::visit_image_dtype(src.dtype(), "Normalize", [&](auto tag) {
    using T = decltype(tag);
    auto m = per_channel<T>(mean, channels, "mean");
    auto s = per_channel<T>(std, channels, "std");
    for (T v : s)
      EMBER_CHECK_VALUE(v != T(0), "std evaluated to zero after conversion to ", to_string(src.dtype()),
                        ", leading to division by zero.");
    normalize_planes<T>(src.data_ptr<T>(), out.data_ptr<T>(), batches, plane, m, s);
  });
  if (inplace && !write_through) {
    Tensor target = image;
    return target.copy_(out);
  }
  return out;
}

std::string Normalize::repr() const {
  return "Normalize(mean=" + detail::py_float_list(mean) + ", std=" + detail::py_float_list(std) + ")";
}

}  // namespace ember::transforms
