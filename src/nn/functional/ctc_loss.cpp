// torch.nn.functional.ctc_loss: PyTorch's argument checks and messages, concatenated targets cut
// into a padded (N, S) batch, then the _ctc_loss op (cpu/ctc_kernels.cpp: the alpha recursion per
// sample) and its backward (beta and the posteriors); the reductions over its per-sample losses.
// As in PyTorch, the backward has no derivative of its own.
#include "autograd/no_derivative.h"
#include "ember/nn/functional.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::nn::functional {

namespace {
constexpr const char* kChecking = " (while checking arguments for ctc_loss_allocate_outputs)";

std::vector<int64_t> lengths_of(const Tensor& t, const char* name) {
  EMBER_CHECK(!is_floating(t.dtype()) && !is_complex(t.dtype()) && t.dtype() != kBool, "ctc_loss(): ", name,
              " must be an integer tensor, but got ", dtype_name(t.dtype()));
  return t.reshape({-1}).to(kInt64).to(Device(DeviceType::CPU)).tolist<int64_t>();
}
}  // namespace

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, const std::string& reduction, bool zero_infinity) {
  EMBER_CHECK(reduction == "none" || reduction == "mean" || reduction == "sum", reduction,
              " is not a valid value for reduction");
  const bool batched = log_probs.dim() == 3;
  Tensor lp = batched ? log_probs : log_probs.unsqueeze(1);
  EMBER_CHECK(lp.dim() == 3, "Expected 3-dimensional tensor, but got ", lp.dim(),
              "-dimensional tensor for argument #1 'log_probs'", kChecking);
  EMBER_CHECK(lp.dtype() == kFloat32 || lp.dtype() == kFloat64, "\"ctc_loss_cpu\" not implemented for '",
              dtype_name(lp.dtype()), "'");
  const int64_t T = lp.size(0), N = lp.size(1), C = lp.size(2);
  EMBER_CHECK(blank >= 0 && blank < C, "blank must be in label range");
  std::vector<int64_t> il = lengths_of(input_lengths, "input_lengths");
  std::vector<int64_t> tl = lengths_of(target_lengths, "target_lengths");
  EMBER_CHECK(int64_t(il.size()) == N, "input_lengths must be of size batch_size");
  EMBER_CHECK(int64_t(tl.size()) == N, "target_lengths must be of size batch_size");
  Tensor tg = batched ? targets : targets.unsqueeze(0);
  EMBER_CHECK(tg.dim() == 1 || tg.dim() == 2, "Expected 1 to 2 dimensions, but got ", tg.dim(),
              "-dimensional tensor for argument #2 'targets'", kChecking);
  int64_t S = 0, total = 0;
  for (int64_t v : tl) {
    EMBER_CHECK(v >= 0, "Expected target_lengths to have value at least 0, but got value ", v, kChecking);
    S = std::max(S, v);
    total += v;
  }
  Tensor padded;
  const TensorOptions cpu_long{.dtype = kInt64, .device = Device(DeviceType::CPU)};
  if (tg.dim() == 1) {  // concatenated: cut into a padded (N, S) batch
    EMBER_CHECK(tg.size(0) == total, "Expected tensor to have size ", total, " at dimension 0, but got size ",
                tg.size(0), " for argument #2 'targets'", kChecking);
    std::vector<int64_t> flat = tg.to(kInt64).to(Device(DeviceType::CPU)).tolist<int64_t>();
    std::vector<int64_t> rows(size_t(N * S), blank);
    int64_t offset = 0;
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t i = 0; i < tl[size_t(n)]; ++i) rows[size_t(n * S + i)] = flat[size_t(offset + i)];
      offset += tl[size_t(n)];
    }
    padded = tensor(rows, cpu_long).reshape({N, S});
  } else {
    EMBER_CHECK(tg.size(1) >= S, "Expected tensor to have size at least ", S, " at dimension 1, but got size ",
                tg.size(1), " for argument #2 'targets'", kChecking);
    padded = tg.narrow(1, 0, S).to(kInt64).to(Device(DeviceType::CPU));
  }
  for (int64_t v : il) {
    EMBER_CHECK(v >= 0, "Expected input_lengths to have value at least 0, but got value ", v, kChecking);
    EMBER_CHECK(v <= T, "Expected input_lengths to have value at most ", T, ", but got value ", v, kChecking);
  }
  // Labels index log_probs' class dim: out of range would read outside it (torch does not check).
  padded = padded.contiguous();
  const int64_t* labels = padded.data_ptr<int64_t>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < tl[size_t(n)]; ++i) {
      const int64_t v = labels[n * S + i];
      EMBER_CHECK_INDEX(v >= 0 && v < C, "ctc_loss(): target labels must be in [0, ", C, "), but sample ", n,
                        " has ", v);
    }
  Tensor nll =
      std::get<0>(ops::_ctc_loss()(lp, padded, tensor(il, cpu_long), tensor(tl, cpu_long), blank, zero_infinity));
  if (zero_infinity) nll = where(isinf(nll), zeros_like(nll), nll);
  if (reduction == "mean") {
    Tensor divisor = clamp(tensor(tl, {.dtype = nll.dtype(), .device = nll.device()}), Scalar(1));
    return (nll / divisor).mean();
  }
  if (reduction == "sum") return nll.sum();
  return batched ? nll : nll.squeeze(0);
}

}  // namespace ember::nn::functional

namespace ember {
namespace {
using namespace autograd;

// zero_infinity: the backward gives impossible alignments (infinite loss) a zero gradient, where
// PyTorch otherwise gives NaN.
std::tuple<Tensor, Tensor> ctc_loss_ag(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                                       const Tensor& target_lengths, int64_t blank, bool zero_infinity) {
  auto [nll, alpha] = below_autograd(
      [&] { return ops::_ctc_loss()(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity); });
  record("CtcLossBackward0", {log_probs}, {nll},
         {saved_input(log_probs), saved_input(targets), saved_input(input_lengths), saved_input(target_lengths),
          saved_output(nll), saved_output(alpha)},
         [blank, zero_infinity](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] {
             return ops::_ctc_loss_backward()(g[0], n.unpack(0), n.unpack(1), n.unpack(2), n.unpack(3), n.unpack(4),
                                              n.unpack(5), blank, zero_infinity);
           })};
         });
  return {nll, alpha};
}

Tensor ctc_loss_backward_ag(const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
                            const Tensor& input_lengths, const Tensor& target_lengths, const Tensor& nll,
                            const Tensor& log_alpha, int64_t blank, bool zero_infinity) {
  Tensor out = below_autograd([&] {
    return ops::_ctc_loss_backward()(grad, log_probs, targets, input_lengths, target_lengths, nll, log_alpha, blank,
                                     zero_infinity);
  });
  record_no_derivative("CtcLossBackwardBackward0", "_ctc_loss_backward", {grad, log_probs}, {out});
  return out;
}

EMBER_REGISTER_KERNEL(_ctc_loss, Autograd, ctc_loss_ag);
EMBER_REGISTER_KERNEL(_ctc_loss_backward, Autograd, ctc_loss_backward_ag);

}  // namespace
}  // namespace ember
