// Every dispatched op either has a gradient (an Autograd kernel) or is on the list of ops that
// are not differentiable. A new op that forgets its gradient fails here instead of silently
// producing tensors without history.
#include <set>
#include <string>

#include "ops/op_handles.h"
#include "test_utils.h"

using namespace ember;

TEST(AutogradCoverage, EveryDifferentiableOpHasAGradient) {
  const std::set<std::string> not_differentiable = {
      // factories and random fills
      "empty", "empty_strided", "arange", "linspace", "uniform_", "normal_", "random_", "bernoulli_", "randperm",
      "multinomial", "exponential_", "log_normal_",
      // boolean / integer results
      "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
      "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "bitwise_not",
      "bitwise_and_", "bitwise_or_", "bitwise_xor_", "bitwise_left_shift_", "bitwise_right_shift_",
      "isnan", "isinf", "isfinite", "argmax", "argmin", "any", "all", "nonzero", "unique", "bincount",
      // fused backward kernels, only called when no graph of the backward is built (under
      // create_graph their callers build the same formula from differentiable ops)
      "native_layer_norm_backward", "native_rms_norm_backward", "native_batch_norm_backward", "gelu_backward",
      "tanh_backward", "sigmoid_backward", "silu_backward", "threshold_backward", "cross_entropy_index_backward",
      "_flash_attention_backward", "_lstm_cell_backward", "_gru_cell_backward",
      // optimizer updates: in-place on parameters under no_grad, as torch's _fused_* ops
      "_fused_adam_", "_fused_adamw_", "_fused_sgd_", "_fused_adagrad_", "_fused_rmsprop_",
      // GradScaler's updates of gradients and of its own state, under no_grad (torch: not differentiable)
      "_amp_foreach_non_finite_check_and_unscale_", "_amp_update_scale_",
      // multi-tensor ops: a call that needs a graph runs the loop of differentiable ops instead
      "_foreach_norm_stacked", "_foreach_mul_",
      // runs under no_grad: linalg::lstsq differentiates the same solution as pinv(A) @ B
      "linalg_lstsq_gelsy",
      // indices; the gradient of a gradient formula torch leaves undefined too (issue 15 names)
      "searchsorted", "_standard_gamma_grad",
      // reinterpreted bytes (torch's view.dtype is not differentiable either)
      "view_dtype",
  };
  std::vector<std::string> missing;
#define EMBER_OP(name, ...)                                                                   \
  if (!not_differentiable.count(#name) && !ops::name().has_kernel(DispatchKey::Autograd)) \
    missing.push_back(#name);
#include "ops/op_list.h"
#undef EMBER_OP
  std::string list;
  for (const auto& m : missing) list += m + " ";
  EXPECT_TRUE(missing.empty()) << "ops without a gradient formula: " << list;
}
