#pragma once
// The host side of the CUDA elementwise engine: checks devices, builds the shared
// ElementwisePlan (converting dtypes in the kernels, never in extra passes), turns it into the
// plain ElementwiseArgs of elementwise.cuh, and calls a launcher compiled by nvcc.
#include <vector>

#include "cuda/cuda_state.h"
#include "cuda/elementwise_args.h"
#include "ember/tensor.h"
#include "ops/elementwise_plan.h"

namespace ember::cuda {

using Launcher = void (*)(const ElementwiseArgs&);

// Every tensor on one CUDA device, but for 0-dim host tensors (Python numbers); torch's error
// otherwise. Returns that device.
Device common_device(const char* op, const std::vector<Tensor>& tensors);

ElementwiseArgs make_args(const ElementwisePlan& plan);
// A host number as launch parameter i, in both forms the kernels read (param_f / param_i).
void set_param(ElementwiseArgs& args, int i, const Scalar& v);

// out = launcher(inputs...) under cfg (cfg.cast_in_loop is set here). out may be undefined (a
// new tensor) or a tensor to write (in-place). set_params(args) fills per-op parameters.
template <class SetParams>
Tensor& run_elementwise(Tensor& out, std::vector<Tensor> inputs, IterConfig cfg, Launcher launcher,
                        const SetParams& set_params) {
  std::vector<Tensor> all = inputs;
  if (out.defined()) all.push_back(out);
  // Kernels run on the current device: make it the operands' one for the launch.
  GpuGuard guard(common_device(cfg.op_name, all).index);
  cfg.cast_in_loop = true;
  ElementwisePlan plan({out}, std::move(inputs), cfg);
  ElementwiseArgs args = make_args(plan);
  set_params(args);
  launcher(args);
  out = plan.output();
  return out;
}
inline Tensor& run_elementwise(Tensor& out, std::vector<Tensor> inputs, IterConfig cfg, Launcher launcher) {
  return run_elementwise(out, std::move(inputs), cfg, launcher, [](ElementwiseArgs&) {});
}

// The CUDA kernels of a one-operand op whose integer inputs compute in the default float dtype
// (the floating family and the special functions): out-of-place and in-place forms through
// launch_<n>, registered for the CUDA key.
#define EMBER_CUDA_UNARY_FLOAT_KERNELS(n)                                                                \
  Tensor n##_cuda(const Tensor& a) {                                                                     \
    Tensor out;                                                                                          \
    return run_elementwise(out, {a}, {.op_name = #n, .int_to_float = true}, launch_##n);                 \
  }                                                                                                      \
  Tensor& n##_inplace_cuda(Tensor& a) { return run_elementwise(a, {a}, {.op_name = #n "_", .int_to_float = true}, launch_##n); } \
  EMBER_REGISTER_KERNEL(n, CUDA, n##_cuda);                                                              \
  EMBER_REGISTER_KERNEL(n##_, CUDA, n##_inplace_cuda);

}  // namespace ember::cuda
