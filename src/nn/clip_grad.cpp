// torch.nn.utils.clip_grad_norm_ / clip_grad_value_ / parameters_to_vector / vector_to_parameters,
// as in PyTorch 1.13 (torch/nn/utils/clip_grad.py, convert_parameters.py).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "ember/autograd/grad_mode.h"
#include "ember/core/errors.h"
#include "ember/foreach.h"
#include "nn/repr.h"
#include "ember/nn/utils.h"
#include "ember/ops.h"

namespace ember::nn::utils {

namespace {
std::vector<Tensor> grads_of(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  return grads;
}
}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  NoGradGuard no_grad;
  std::vector<Tensor> grads = grads_of(parameters);
  if (grads.empty()) return scalar_tensor(0.0);
  const Device device = grads[0].device();
  // As torch 2: the gradients grouped by device and dtype, each group's norms from one
  // multi-tensor op (a few launches on CUDA instead of one per gradient), then the norm of norms.
  std::vector<std::vector<Tensor>> groups;
  for (const Tensor& g : grads) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const std::vector<Tensor>& grp) {
      return grp[0].device() == g.device() && grp[0].dtype() == g.dtype();
    });
    if (it == groups.end()) groups.push_back({g});
    else it->push_back(g);
  }
  std::vector<Tensor> norms;
  for (const std::vector<Tensor>& grp : groups) {
    Tensor n = is_floating(grp[0].dtype()) ? _foreach_norm_stacked(grp, norm_type) : stack(_foreach_norm(grp, norm_type));
    norms.push_back(n.to(device));
  }
  Tensor all_norms = norms.size() == 1 ? norms[0] : cat(norms);
  Tensor total_norm = std::isinf(norm_type) ? all_norms.max() : all_norms.norm(norm_type);
  if (error_if_nonfinite) {
    const double t = total_norm.item<double>();
    EMBER_CHECK(std::isfinite(t), "The total norm of order ", py_float(norm_type),
                " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error "
                "and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`");
  }
  Tensor clip_coef = Scalar(max_norm) / (total_norm + 1e-6);
  Tensor clip_coef_clamped = clip_coef.clamp(std::nullopt, Scalar(1.0));
  for (const std::vector<Tensor>& grp : groups) _foreach_mul_(grp, clip_coef_clamped.to(grp[0].device()));
  return total_norm;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard no_grad;
  for (const Tensor& g : grads_of(parameters)) {
    Tensor gd = g.detach();
    gd.clamp_(Scalar(-clip_value), Scalar(clip_value));
  }
}

Tensor parameters_to_vector(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> flat;
  for (const Tensor& p : parameters) {
    EMBER_CHECK_TYPE(p.defined(), "parameters_to_vector: expected a defined tensor");
    flat.push_back(p.reshape({-1}));
  }
  if (flat.empty()) return empty({0});
  return cat(flat);
}

void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters) {
  EMBER_CHECK_TYPE(vec.defined(), "expected torch.Tensor, but got: undefined");
  EMBER_CHECK_VALUE(vec.dim() == 1, "vector_to_parameters: expected a 1-D vector, got ", vec.dim(), " dims");
  int64_t total = 0;
  for (const Tensor& p : parameters) total += p.numel();
  EMBER_CHECK_VALUE(total == vec.numel(), "vector_to_parameters: the vector has ", vec.numel(),
                    " elements but the parameters have ", total);
  NoGradGuard no_grad;
  int64_t offset = 0;
  for (const Tensor& p : parameters) {
    const int64_t n = p.numel();
    Tensor dst = p.detach();
    dst.copy_(vec.detach().narrow(0, offset, n).view(p.sizes()));
    offset += n;
  }
}

}  // namespace ember::nn::utils
