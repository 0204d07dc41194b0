// torch._foreach_norm / _foreach_mul_ (ember/foreach.h): the checks, in torch's words, and the
// loops any backend can run (CUDA fuses them: cuda/foreach_ops.cpp).
#include "ember/foreach.h"

#include "ember/autograd/grad_mode.h"
#include "ember/ops.h"
#include "ops/foreach_loops.h"
#include "ops/op_handles.h"

namespace ember {

namespace {
void check_tensors(const char* op, TensorList ts) {
  EMBER_CHECK(!ts.empty(), op, ": Tensor list must have at least one tensor.");
  for (size_t i = 0; i < ts.size(); ++i) {
    EMBER_CHECK(ts[i].defined(), op, ": tensors[", i, "] is undefined");
    EMBER_CHECK(ts[i].device() == ts[0].device(), op, ": all tensors must be on one device, tensors[0] is on ",
                ts[0].device().str(), " and tensors[", i, "] on ", ts[i].device().str());
  }
}
// The fused ops build no graph: a call that needs one (grad mode on, an input requiring grad)
// runs the loop of differentiable single-tensor ops instead.
bool needs_graph(TensorList ts, const Tensor& extra = Tensor()) {
  if (!is_grad_enabled()) return false;
  if (extra.defined() && extra.requires_grad()) return true;
  for (const Tensor& t : ts)
    if (t.requires_grad()) return true;
  return false;
}
bool one_floating_dtype(TensorList ts) {
  for (const Tensor& t : ts)
    if (t.dtype() != ts[0].dtype() || !is_floating(t.dtype())) return false;
  return true;
}
}  // namespace

Tensor foreach_norm_stacked_loop(TensorList tensors, double ord) {
  std::vector<Tensor> norms;
  norms.reserve(tensors.size());
  for (const Tensor& t : tensors) norms.push_back(norm(t, Scalar(ord)));
  return stack(norms);
}

void foreach_mul_loop(TensorList tensors, const Tensor& scale) {
  for (Tensor t : tensors) t.mul_(scale);  // a handle: the caller's tensor changes
}

Tensor _foreach_norm_stacked(TensorList tensors, double ord) {
  constexpr const char* op = "_foreach_norm";
  check_tensors(op, tensors);
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(is_floating(tensors[i].dtype()), op, ": expected floating tensors, tensors[", i, "] is ",
                dtype_name(tensors[i].dtype()));
    EMBER_CHECK(tensors[i].dtype() == tensors[0].dtype(), op, ": the stacked norms need one dtype, tensors[0] is ",
                dtype_name(tensors[0].dtype()), " and tensors[", i, "] ", dtype_name(tensors[i].dtype()));
  }
  if (needs_graph(tensors)) return foreach_norm_stacked_loop(tensors, ord);
  return ops::_foreach_norm_stacked()(tensors, ord);
}

std::vector<Tensor> _foreach_norm(TensorList tensors, double ord) {
  check_tensors("_foreach_norm", tensors);
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  if (one_floating_dtype(tensors)) {
    Tensor stacked = _foreach_norm_stacked(tensors, ord);
    for (int64_t i = 0; i < int64_t(tensors.size()); ++i) out.push_back(stacked.select(0, i));
  } else {
    for (const Tensor& t : tensors) out.push_back(norm(t, Scalar(ord)));
  }
  return out;
}

void _foreach_mul_(TensorList tensors, const Tensor& scale) {
  constexpr const char* op = "_foreach_mul_";
  check_tensors(op, tensors);
  EMBER_CHECK(scale.defined() && scale.numel() == 1, op, ": scale must be a tensor of one element, got ",
              scale.defined() ? scale.sizes() : Shape{});
  const Device device = tensors[0].device();
  Tensor s = scale;
  if (s.device() != device) {
    EMBER_CHECK(s.device().is_cpu(), op, ": scale is on ", s.device().str(), " but the tensors are on ", device.str());
    s = s.to(device);
  }
  if (needs_graph(tensors, scale)) return foreach_mul_loop(tensors, s.reshape({}));
  ops::_foreach_mul_()(tensors, s.reshape({}));
}

void _foreach_mul_(TensorList tensors, const Scalar& scale) {
  check_tensors("_foreach_mul_", tensors);
  // A 0-dim tensor does not promote the tensors it multiplies (a float32 gradient stays float32);
  // float64 and int64 keep the number whole.
  const DType dt = scale.is_floating() ? DType::Float64 : scale.is_complex() ? DType::Complex128 : scale.dtype();
  _foreach_mul_(tensors, full({}, scale, {.dtype = dt, .device = tensors[0].device()}));
}

EMBER_REGISTER_KERNEL(_foreach_norm_stacked, CompositeBackend, foreach_norm_stacked_loop);
EMBER_REGISTER_KERNEL(_foreach_mul_, CompositeBackend, foreach_mul_loop);

}  // namespace ember
