#pragma once
// torch.fft (ember::fft): discrete Fourier transforms of real and complex tensors, with torch's
// signatures and semantics. n / s resize the input along the transformed dims first (zero-pad
// or trim); norm is "backward" (the default: forward unscaled, inverse by 1/n), "ortho"
// (1/sqrt(n) both ways) or "forward" (forward by 1/n, inverse unscaled). Integer inputs
// compute in the default dtype; float16/bfloat16 in float32. Every transform is
// differentiable (torch's complex-gradient convention).
#include <optional>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember::fft {

using OptSizes = std::optional<std::vector<int64_t>>;
using Norm = std::optional<std::string>;

// One dim: complex (fft/ifft), real to half spectrum (rfft), half spectrum to real (irfft, n
// output points, default 2 * (m - 1)), Hermitian to real (hfft) and its inverse (ihfft).
Tensor fft(const Tensor& x, std::optional<int64_t> n = std::nullopt, int64_t dim = -1, const Norm& norm = std::nullopt);
Tensor ifft(const Tensor& x, std::optional<int64_t> n = std::nullopt, int64_t dim = -1, const Norm& norm = std::nullopt);
Tensor rfft(const Tensor& x, std::optional<int64_t> n = std::nullopt, int64_t dim = -1, const Norm& norm = std::nullopt);
Tensor irfft(const Tensor& x, std::optional<int64_t> n = std::nullopt, int64_t dim = -1, const Norm& norm = std::nullopt);
Tensor hfft(const Tensor& x, std::optional<int64_t> n = std::nullopt, int64_t dim = -1, const Norm& norm = std::nullopt);
Tensor ihfft(const Tensor& x, std::optional<int64_t> n = std::nullopt, int64_t dim = -1, const Norm& norm = std::nullopt);

// Several dims. dim nullopt: the last len(s) dims, or every dim when s is nullopt too.
Tensor fftn(const Tensor& x, const OptSizes& s = std::nullopt, const OptSizes& dim = std::nullopt, const Norm& norm = std::nullopt);
Tensor ifftn(const Tensor& x, const OptSizes& s = std::nullopt, const OptSizes& dim = std::nullopt, const Norm& norm = std::nullopt);
Tensor rfftn(const Tensor& x, const OptSizes& s = std::nullopt, const OptSizes& dim = std::nullopt, const Norm& norm = std::nullopt);
Tensor irfftn(const Tensor& x, const OptSizes& s = std::nullopt, const OptSizes& dim = std::nullopt, const Norm& norm = std::nullopt);
// The 2-D forms: fftn with dim defaulting to (-2, -1).
Tensor fft2(const Tensor& x, const OptSizes& s = std::nullopt, std::vector<int64_t> dim = {-2, -1}, const Norm& norm = std::nullopt);
Tensor ifft2(const Tensor& x, const OptSizes& s = std::nullopt, std::vector<int64_t> dim = {-2, -1}, const Norm& norm = std::nullopt);
Tensor rfft2(const Tensor& x, const OptSizes& s = std::nullopt, std::vector<int64_t> dim = {-2, -1}, const Norm& norm = std::nullopt);
Tensor irfft2(const Tensor& x, const OptSizes& s = std::nullopt, std::vector<int64_t> dim = {-2, -1}, const Norm& norm = std::nullopt);

// Sample frequencies [0, 1, ..., -(n/2), ..., -1] / (d n) and the non-negative half; the
// zero-frequency term moved to the centre and back (dim nullopt: every dim).
Tensor fftfreq(int64_t n, double d = 1.0, TensorOptions options = {});
Tensor rfftfreq(int64_t n, double d = 1.0, TensorOptions options = {});
Tensor fftshift(const Tensor& x, const OptSizes& dim = std::nullopt);
Tensor ifftshift(const Tensor& x, const OptSizes& dim = std::nullopt);

}  // namespace ember::fft
