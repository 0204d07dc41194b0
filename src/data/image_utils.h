#pragma once
// Shared plumbing of the image transforms: reading (H, W) / (C, H, W) / (N, C, H, W) shapes as a
// stack of H x W planes, the element types the kernels are compiled for, and Python-style
// printing for the reprs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/core/errors.h"
#include "ember/ops.h"
#include "nn/repr.h"

namespace ember::transforms::detail {

// An image as `planes` contiguous H x W planes; `lead` are the dims before H and W.
struct Planes {
  std::vector<int64_t> lead;
  int64_t planes = 1, h = 0, w = 0;
};

inline Planes image_planes(const Tensor& image, const char* who, int64_t min_dim = 2) {
  int64_t d = image.dim();
  EMBER_CHECK_VALUE(d >= min_dim && d <= 4, who, ": expected an image of shape ",
                    min_dim == 2 ? "(H, W), " : "", "(C, H, W) or (N, C, H, W), got shape ", image.sizes());
  Planes p;
  for (int64_t i = 0; i < d - 2; ++i) {
    p.lead.push_back(image.sizes()[i]);
    p.planes *= image.sizes()[i];
  }
  p.h = image.sizes()[d - 2];
  p.w = image.sizes()[d - 1];
  return p;
}

// The output of a transform that maps every plane to an oh x ow plane.
inline Tensor empty_planes(const Planes& p, int64_t oh, int64_t ow, DType dtype) {
  std::vector<int64_t> shape = p.lead;
  shape.push_back(oh);
  shape.push_back(ow);
  return empty(shape, {.dtype = dtype});
}

// Calls f(T{}) with T the C++ element type of `dtype`: the geometric kernels exist for uint8,
// float32 and float64 only.
template <class F>
decltype(auto) visit_image_dtype(DType dtype, const char* who, F&& f) {
  switch (dtype) {
    case DType::UInt8: return f(uint8_t{});
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    default:
      throw TypeError(::ember::detail::cat(who, ": unsupported image dtype ", to_string(dtype),
                                           " (expected ember.uint8, ember.float32 or ember.float64)"));
  }
}

// Interpolation arithmetic runs in float for uint8 and float32 images (torchvision casts uint8 to
// float32) and in double for float64 ones.
template <class T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// A computed value stored as T: uint8 rounds half to even (torch.round) and saturates.
template <class T, class A>
inline T to_pixel(A v) {
  if constexpr (std::is_same_v<T, uint8_t>)
    return uint8_t(std::clamp(std::nearbyint(v), A(0), A(255)));
  else
    return T(v);
}

// torchvision's draws, so a seed gives its parameters: float(torch.empty(1).uniform_(lo, hi))
// and torch.randint(0, n, (1,)).item().
inline double uniform(double lo, double hi) {
  Tensor t = empty({1});
  uniform_(t, lo, hi);
  return double(t.item<float>());
}
inline int64_t random_below(int64_t n) { return randint(0, n, {1}).item<int64_t>(); }

// Python's repr of a float, and of a number that torchvision keeps as given (fill=0 prints "0").
using ::ember::nn::py_float;
inline std::string py_number(double v) {
  if (v == std::trunc(v) && std::abs(v) < 1e15) return std::to_string(int64_t(v));
  return py_float(v);
}
inline std::string py_float_list(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + py_float(v[i]);
  return s + "]";
}
inline std::string py_int_list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace ember::transforms::detail
