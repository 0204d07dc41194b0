// torch.fft over the three dispatched primitives (fft_c2c, fft_r2c, fft_c2r; CPU kernels in
// cpu/fft_kernels.cpp): argument handling as torch's (n / s resizing, dim defaults, norm
// modes, dtype promotion) and the primitives' gradients, written with the primitives
// themselves so they differentiate again.
#include "ember/fft.h"

#include <algorithm>

#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/shape_utils.h"

namespace ember::fft {
namespace {

enum NormMode : int64_t { kNone = 0, kByRootN = 1, kByN = 2 };

// torch's norm_from_string: the scaling of a transform in the given direction.
int64_t norm_mode(const Norm& norm, bool forward) {
  if (!norm || *norm == "backward") return forward ? kNone : kByN;
  if (*norm == "forward") return forward ? kByN : kNone;
  if (*norm == "ortho") return kByRootN;
  throw Error(detail::cat("Invalid normalization mode: \"", *norm, "\""));
}

// Inputs of c2c: complex (real floats widen to their complex type, integers to the default's).
Tensor as_complex_input(const Tensor& x) {
  if (is_complex(x.dtype())) return x;
  DType parts = x.dtype() == DType::Float64 ? DType::Float64 : is_floating(x.dtype()) ? DType::Float32 : default_dtype();
  return x.to(real_to_complex(parts));
}
// Inputs of r2c: float32/float64 (integers in the default dtype, half types in float32).
Tensor as_real_input(const char* fn, const Tensor& x) {
  EMBER_CHECK(!is_complex(x.dtype()), fn, " expects a real input tensor, but got ", scalar_type_name(x.dtype()));
  if (x.dtype() == DType::Float32 || x.dtype() == DType::Float64) return x;
  return x.to(is_floating(x.dtype()) ? DType::Float32 : default_dtype());
}

// x trimmed or zero-padded to n entries along dim.
Tensor resize_dim(const Tensor& x, int64_t dim, int64_t n) {
  int64_t have = x.sizes()[dim];
  if (have == n) return x;
  if (n < have) return x.slice(dim, 0, n);
  Shape pad = x.sizes();
  pad[dim] = n - have;
  return cat({x, zeros(pad, {.dtype = x.dtype(), .device = x.device()})}, dim);
}

void check_points(int64_t n) { EMBER_CHECK(n >= 1, "Invalid number of data points (", n, ") specified"); }

// torch's canonicalize_fft_shape_and_dim_args: wrapped unique dims and the signal size per dim.
struct ShapeAndDims {
  std::vector<int64_t> shape, dims;
};
ShapeAndDims canonical(const Tensor& x, const OptSizes& s, const OptSizes& dim) {
  const int64_t nd = x.dim();
  ShapeAndDims r;
  if (dim) {
    for (int64_t d : *dim) r.dims.push_back(wrap_dim(d, nd));
    auto sorted = r.dims;
    std::sort(sorted.begin(), sorted.end());
    EMBER_CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(), "FFT dims must be unique");
  }
  if (s) {
    if (dim) EMBER_CHECK(s->size() == dim->size(), "When given, dim and shape arguments must have the same length");
    EMBER_CHECK(int64_t(s->size()) <= nd, "Got shape with ", s->size(), " values but input tensor only has ", nd,
                " dimensions.");
    if (!dim)
      for (int64_t i = nd - int64_t(s->size()); i < nd; ++i) r.dims.push_back(i);
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t n = (*s)[i] == -1 ? x.sizes()[r.dims[i]] : (*s)[i];
      check_points(n);
      r.shape.push_back(n);
    }
  } else {
    if (!dim)
      for (int64_t i = 0; i < nd; ++i) r.dims.push_back(i);
    for (int64_t d : r.dims) r.shape.push_back(x.sizes()[d]);
  }
  return r;
}

Tensor resize_dims(Tensor x, const ShapeAndDims& sd) {
  for (size_t i = 0; i < sd.dims.size(); ++i) x = resize_dim(x, sd.dims[i], sd.shape[i]);
  return x;
}

Tensor c2c_nd(const char* fn, const Tensor& input, const OptSizes& s, const OptSizes& dim, const Norm& norm, bool forward) {
  Tensor x = as_complex_input(input);
  ShapeAndDims sd = canonical(x, s, dim);
  x = resize_dims(x, sd);
  return ops::fft_c2c()(x, sd.dims, norm_mode(norm, forward), forward);
}
Tensor r2c_nd(const char* fn, const Tensor& input, const OptSizes& s, const OptSizes& dim, const Norm& norm, bool forward) {
  Tensor x = as_real_input(fn, input);
  ShapeAndDims sd = canonical(x, s, dim);
  EMBER_CHECK(!sd.dims.empty(), fn, " must transform at least one axis");
  x = resize_dims(x, sd);
  Tensor out = ops::fft_r2c()(x, sd.dims, norm_mode(norm, forward), /*onesided=*/true);
  return forward ? out : conj(out);
}
// c2r over dims; the last dim's output size is s's last entry, else 2 * (m - 1).
Tensor c2r_nd(const char* fn, const Tensor& input, const OptSizes& s, const OptSizes& dim, const Norm& norm, bool forward) {
  Tensor x = as_complex_input(input);
  ShapeAndDims sd = canonical(x, s, dim);
  EMBER_CHECK(!sd.dims.empty(), fn, " must transform at least one axis");
  int64_t last = sd.dims.back();
  int64_t n = (s && s->back() != -1) ? sd.shape.back() : 2 * (x.sizes()[last] - 1);
  check_points(n);
  sd.shape.back() = n / 2 + 1;
  x = resize_dims(x, sd);
  if (forward) x = conj(x);  // hfft: the Hermitian signal's forward transform
  return ops::fft_c2r()(x, sd.dims, norm_mode(norm, forward), n);
}

// A roll by sign * (n / 2) along each dim (every dim when dim is nullopt): fftshift / ifftshift.
Tensor roll_half(const Tensor& x, const OptSizes& dim, int64_t sign) {
  std::vector<int64_t> dims, shifts;
  if (dim) dims = *dim;
  else for (int64_t i = 0; i < x.dim(); ++i) dims.push_back(i);
  for (int64_t d : dims) shifts.push_back(sign * (x.sizes()[wrap_dim(d, x.dim())] / 2));
  return dims.empty() ? x.clone() : roll(x, shifts, dims);
}

OptSizes one(std::optional<int64_t> n) { return n ? OptSizes(std::vector<int64_t>{*n}) : std::nullopt; }
OptSizes one_dim(int64_t dim) { return std::vector<int64_t>{dim}; }

}  // namespace

Tensor fft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const Norm& norm) {
  return c2c_nd("fft", x, one(n), one_dim(dim), norm, true);
}
Tensor ifft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const Norm& norm) {
  return c2c_nd("ifft", x, one(n), one_dim(dim), norm, false);
}
Tensor rfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const Norm& norm) {
  return r2c_nd("rfft", x, one(n), one_dim(dim), norm, true);
}
Tensor irfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const Norm& norm) {
  return c2r_nd("irfft", x, one(n), one_dim(dim), norm, false);
}
Tensor hfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const Norm& norm) {
  return c2r_nd("hfft", x, one(n), one_dim(dim), norm, true);
}
Tensor ihfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const Norm& norm) {
  return r2c_nd("ihfft", x, one(n), one_dim(dim), norm, false);
}

Tensor fftn(const Tensor& x, const OptSizes& s, const OptSizes& dim, const Norm& norm) {
  return c2c_nd("fftn", x, s, dim, norm, true);
}
Tensor ifftn(const Tensor& x, const OptSizes& s, const OptSizes& dim, const Norm& norm) {
  return c2c_nd("ifftn", x, s, dim, norm, false);
}
Tensor rfftn(const Tensor& x, const OptSizes& s, const OptSizes& dim, const Norm& norm) {
  return r2c_nd("rfftn", x, s, dim, norm, true);
}
Tensor irfftn(const Tensor& x, const OptSizes& s, const OptSizes& dim, const Norm& norm) {
  return c2r_nd("irfftn", x, s, dim, norm, false);
}
Tensor fft2(const Tensor& x, const OptSizes& s, std::vector<int64_t> dim, const Norm& norm) { return fftn(x, s, dim, norm); }
Tensor ifft2(const Tensor& x, const OptSizes& s, std::vector<int64_t> dim, const Norm& norm) { return ifftn(x, s, dim, norm); }
Tensor rfft2(const Tensor& x, const OptSizes& s, std::vector<int64_t> dim, const Norm& norm) { return rfftn(x, s, dim, norm); }
Tensor irfft2(const Tensor& x, const OptSizes& s, std::vector<int64_t> dim, const Norm& norm) { return irfftn(x, s, dim, norm); }

Tensor fftfreq(int64_t n, double d, TensorOptions options) {
  check_points(n);
  Tensor idx = cat({arange(0, (n - 1) / 2 + 1, 1, {.device = options.device_or()}),
                    arange(-(n / 2), 0, 1, {.device = options.device_or()})});
  return (idx * (1.0 / (d * double(n)))).to(options.dtype_or_default());
}
Tensor rfftfreq(int64_t n, double d, TensorOptions options) {
  check_points(n);
  return (arange(0, n / 2 + 1, 1, {.device = options.device_or()}) * (1.0 / (d * double(n)))).to(options.dtype_or_default());
}
Tensor fftshift(const Tensor& x, const OptSizes& dim) { return roll_half(x, dim, 1); }
Tensor ifftshift(const Tensor& x, const OptSizes& dim) { return roll_half(x, dim, -1); }

}  // namespace ember::fft

// ---------------------------------------------------------------- gradients
#include "autograd/record.h"

namespace ember {
namespace {
using namespace autograd;

// (scale F)^H = scale * (the opposite-direction transform): the same normalization mode.
Tensor fft_c2c_ag(const Tensor& self, IntArrayRef dims, int64_t normalization, bool forward) {
  Tensor out = below_autograd([&] { return ops::fft_c2c()(self, dims, normalization, forward); });
  record("FftC2CBackward0", {self}, {out}, {},
         [d = dims.vec(), normalization, forward](const variable_list& g, LambdaNode&) -> variable_list {
           return {ops::fft_c2c()(g[0], d, normalization, !forward)};
         });
  return out;
}

// The half spectrum's gradient, zero-padded to the full spectrum, through the inverse-direction
// complex transform; the input was real, so its gradient is the real part.
Tensor fft_r2c_ag(const Tensor& self, IntArrayRef dims, int64_t normalization, bool onesided) {
  Tensor out = below_autograd([&] { return ops::fft_r2c()(self, dims, normalization, onesided); });
  record("FftR2CBackward0", {self}, {out}, {},
         [d = dims.vec(), normalization, onesided, n = self.sizes()[dims.back()]](const variable_list& g,
                                                                                 LambdaNode&) -> variable_list {
           Tensor full = g[0];
           if (onesided) {
             int64_t last = d.back(), have = full.sizes()[last];
             Shape pad = full.sizes();
             pad[last] = n - have;
             if (pad[last] > 0) full = cat({full, zeros(pad, {.dtype = full.dtype(), .device = full.device()})}, last);
           }
           return {real(ops::fft_c2c()(full, d, normalization, /*forward=*/false)).contiguous()};
         });
  return out;
}

// The real output's gradient through r2c; the entries that stand for two conjugate terms of the
// full spectrum (all but DC and, n even, Nyquist) count twice.
Tensor fft_c2r_ag(const Tensor& self, IntArrayRef dims, int64_t normalization, int64_t last_dim_size) {
  Tensor out = below_autograd([&] { return ops::fft_c2r()(self, dims, normalization, last_dim_size); });
  record("FftC2RBackward0", {self}, {out}, {},
         [d = dims.vec(), normalization](const variable_list& g, LambdaNode&) -> variable_list {
           Tensor gi = ops::fft_r2c()(g[0], d, normalization, /*onesided=*/true);
           int64_t last = d.back(), double_length = g[0].sizes()[last] - gi.sizes()[last];
           if (double_length <= 0) return {gi};
           Shape w(gi.dim(), 1);
           Tensor weight = ones({gi.sizes()[last]}, {.dtype = complex_to_real(gi.dtype()), .device = gi.device()});
           weight.slice(0, 1, 1 + double_length).fill_(2.0);
           w[last] = gi.sizes()[last];
           return {gi * weight.reshape(w)};
         });
  return out;
}

EMBER_REGISTER_KERNEL(fft_c2c, Autograd, fft_c2c_ag);
EMBER_REGISTER_KERNEL(fft_r2c, Autograd, fft_r2c_ag);
EMBER_REGISTER_KERNEL(fft_c2r, Autograd, fft_c2r_ag);

}  // namespace
}  // namespace ember
