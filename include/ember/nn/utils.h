#pragma once
// torch.nn.utils: gradient clipping and flat parameter vectors (PyTorch 1.13 semantics).
#include <limits>
#include <vector>

#include "ember/tensor.h"

namespace ember::nn::utils {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// Scales the gradients of `parameters` (those that have one) in place so their joint norm is at
// most max_norm: every grad is multiplied by clamp(max_norm / (total_norm + 1e-6), max=1).
// norm_type may be kInf. Returns the total norm (a 0-dim tensor) before clipping. With
// error_if_nonfinite, a NaN/inf total norm is an Error and nothing is scaled.
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
// Clamps every gradient element into [-clip_value, clip_value] in place.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

// All parameters flattened and concatenated into one 1-D tensor (a copy).
Tensor parameters_to_vector(const std::vector<Tensor>& parameters);
// Copies consecutive slices of `vec` into the parameters (in place); the sizes must match.
void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters);

}  // namespace ember::nn::utils
