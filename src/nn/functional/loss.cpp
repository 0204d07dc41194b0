// Losses of ember::nn::functional (torch.nn.functional), with PyTorch's formulas, shape rules
// and error messages.
//  - cross_entropy with class indices: the fused op cross_entropy_index (rows of (M, C); kernel
//    in src/cpu/loss_kernels.cpp) with its own backward op; probability targets: log_softmax
//    (itself a fused, stable kernel) times the (smoothed, weighted) target.
//  - nll_loss: gather of the picked log-probabilities, weighted, targets checked first.
//  - binary_cross_entropy and binary_cross_entropy_with_logits: forward from ember ops, gradient
//    nodes with PyTorch's formulas (stable at the clamps and at x = 0); the rest are composites.
#include <cmath>
#include <limits>

#include "ember/dispatch/op_recording.h"
#include "amp/autocast.h"
#include "autograd/record.h"
#include "ember/autograd/grad_mode.h"
#include "ember/nn/functional.h"
#include "ops/op_handles.h"

namespace ember::nn::functional {
namespace {
using namespace autograd;

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

int64_t reduction_enum(const std::string& r) {
  if (r == "none") return kNone;
  if (r == "mean") return kMean;
  if (r == "sum") return kSum;
  EMBER_CHECK_VALUE(false, r, " is not a valid value for reduction");
  return kNone;
}

Tensor apply_reduction(const Tensor& loss, int64_t red) {
  if (red == kMean) return loss.mean();
  if (red == kSum) return loss.sum();
  return loss;
}

std::string shape_str(IntArrayRef s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

// Class-index checks shared by nll_loss and cross_entropy. Returns (rows (M, C) view or copy of
// input with the class dim last, flat target (M)). `input` is (C), (N, C) or (N, C, d1, ...).
std::pair<Tensor, Tensor> rows_and_targets(const Tensor& input, const Tensor& target,
                                           const std::optional<Tensor>& weight) {
  EMBER_CHECK(input.dim() >= 1, "Expected 1 or more dimensions (got ", input.dim(), ")");
  EMBER_CHECK(!is_floating(target.dtype()) && target.dtype() != kBool,
              "expected scalar type Long but found ", scalar_type_name(target.dtype()));
  int64_t C = input.dim() == 1 ? input.size(0) : input.size(1);
  if (weight && weight->defined())
    EMBER_CHECK(weight->numel() == C, "weight tensor should be defined either for all ", C,
                " classes or no classes but got weight tensor of shape: ", shape_str(weight->sizes()));
  if (input.dim() == 1) {
    EMBER_CHECK(target.dim() == 0, "0D or 1D target tensor expected, multi-target not supported");
    return {input.reshape({1, C}), target.reshape({1})};
  }
  EMBER_CHECK(target.dim() >= 1 && input.size(0) == target.size(0), "Expected input batch_size (", input.size(0),
              ") to match target batch_size (", target.dim() >= 1 ? target.size(0) : 0, ").");
  if (input.dim() == 2) {
    EMBER_CHECK(target.dim() == 1, "0D or 1D target tensor expected, multi-target not supported");
    return {input, target};
  }
  Shape expect{input.size(0)};
  for (int64_t d = 2; d < input.dim(); ++d) expect.push_back(input.size(d));
  EMBER_CHECK(IntArrayRef(target.sizes()) == IntArrayRef(expect), "Expected target size ", shape_str(expect),
              ", got ", shape_str(target.sizes()));
  return {input.movedim(1, -1).reshape({-1, C}), target.reshape({-1})};
}

// Shape of a "none" result: the target's shape.
Tensor none_shape(const Tensor& per_row, const Tensor& target) { return per_row.reshape(target.sizes()); }

// ---- fused cross entropy (class indices): autograd kernel beside the op
Tensor ce_index_ag(const Tensor& x, const Tensor& t, const std::optional<Tensor>& w, int64_t ignore_index,
                   int64_t red, double ls) {
  Tensor out = below_autograd([&] { return ops::cross_entropy_index()(x, t, w, ignore_index, red, ls); });
  Tensor wt = w ? *w : Tensor();
  record("NllLossBackward0", {x}, {out}, {saved_input(x), saved_input(t), saved_input(wt)},
         [ignore_index, red, ls](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] {
             Tensor x = n.unpack(0), t = n.unpack(1), wt = n.unpack(2);
             std::optional<Tensor> w = wt.defined() ? std::optional<Tensor>(wt) : std::nullopt;
             if (!GradMode::is_enabled())  // plain backward: the fused kernel
               return below_autograd(
                   [&] { return ops::cross_entropy_index_backward()(g[0], x, t, w, ignore_index, red, ls); });
             // create_graph: the same formula from differentiable ops, so double backward works.
             int64_t C = x.size(1);
             Tensor keep = t.ne(ignore_index);
             Tensor ts = where(keep, t, 0).to(kInt64);
             Tensor wrow = w ? w->index_select(0, ts).to(x.dtype()) : ones({t.size(0)}, {.dtype = x.dtype(), .device = x.device()});
             wrow = where(keep, wrow, 0.0);
             Tensor onehot = ember::one_hot(ts, C).to(x.dtype());
             Tensor wc = w ? w->to(x.dtype()).reshape({1, C}) : ones({1, C}, {.dtype = x.dtype(), .device = x.device()});
             Tensor a = onehot * wrow.unsqueeze(1) * (1.0 - ls) + wc * keep.to(x.dtype()).unsqueeze(1) * (ls / C);
             Tensor A = a.sum({1}, true);
             Tensor gi = ember::softmax(x, 1) * A - a;
             Tensor gr = g[0];
             if (red == kNone) return gi * gr.unsqueeze(1);
             if (red == kMean) gr = gr / wrow.sum();
             return gi * gr;
           })};
         });
  return out;
}
EMBER_REGISTER_KERNEL(cross_entropy_index, Autograd, ce_index_ag);

// Gradient node helper: records `backward` for `out` computed without history.
template <class F> Tensor with_grad(const char* name, const variable_list& inputs, const Tensor& out,
                                    std::vector<Save> saves, F backward) {
  record(name, inputs, {out}, std::move(saves), std::move(backward));
  return out;
}

}  // namespace

// ---------------------------------------------------------------- nll_loss, cross_entropy
Tensor nll_loss(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight, int64_t ignore_index,
                const std::string& reduction) {
  EMBER_RECORD_COMPOSITE("nll_loss", input, target, weight, ignore_index, reduction);
  EMBER_AUTOCAST(nll_loss, input, target, weight, ignore_index, reduction);
  int64_t red = reduction_enum(reduction);
  auto [x, t] = rows_and_targets(input, target, weight);
  int64_t C = x.size(1);
  Tensor t64 = t.to(kInt64);
  {  // every target in range (or ignore_index)
    auto tv = t64.contiguous().tolist<int64_t>();
    for (int64_t c : tv)
      if (c != ignore_index) EMBER_CHECK_INDEX(c >= 0 && c < C, "Target ", c, " is out of bounds.");
  }
  Tensor keep = t64.ne(ignore_index);
  Tensor ts = where(keep, t64, 0).to(kInt64);
  Tensor picked = x.gather(1, ts.unsqueeze(1)).squeeze(1);
  Tensor wrow = (weight && weight->defined()) ? weight->to(x.dtype()).index_select(0, ts)
                                              : ones({ts.numel()}, {.dtype = x.dtype(), .device = x.device()});
  wrow = where(keep, wrow, 0.0);
  Tensor loss = -(picked * wrow);
  if (red == kNone) return none_shape(loss, target);
  if (red == kSum) return loss.sum();
  return loss.sum() / wrow.sum();  // all ignored: 0/0 = nan, as PyTorch
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                     int64_t ignore_index, const std::string& reduction, double label_smoothing) {
  EMBER_RECORD_COMPOSITE("cross_entropy", input, target, weight, ignore_index, reduction, label_smoothing);
  EMBER_AUTOCAST(cross_entropy, input, target, weight, ignore_index, reduction, label_smoothing);
  int64_t red = reduction_enum(reduction);
  EMBER_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0,
              "label_smoothing must be between 0.0 and 1.0. Got: ", label_smoothing);
  EMBER_CHECK(is_floating(input.dtype()), "\"log_softmax_lastdim_kernel_impl\" not implemented for '",
              scalar_type_name(input.dtype()), "'");
  if (input.dim() >= 1 && IntArrayRef(input.sizes()) == IntArrayRef(target.sizes())) {
    // probability targets (same shape as input, as PyTorch assumes)
    EMBER_CHECK(is_floating(target.dtype()), "Expected floating point type for target with class probabilities, got ",
                scalar_type_name(target.dtype()));
    int64_t cdim = input.dim() == 1 ? 0 : 1;
    int64_t C = input.size(cdim);
    if (weight && weight->defined())
      EMBER_CHECK(weight->numel() == C, "weight tensor should be defined either for all ", C,
                  " classes or no classes but got weight tensor of shape: ", shape_str(weight->sizes()));
    Tensor tt = label_smoothing > 0 ? target * (1.0 - label_smoothing) + label_smoothing / double(C) : target;
    Tensor lp = ember::log_softmax(input, cdim);
    Tensor prod = lp * tt;
    if (weight && weight->defined()) {
      Shape ws(input.dim(), 1);
      ws[cdim] = C;
      prod = prod * weight->to(input.dtype()).reshape(ws);
    }
    Tensor loss = -prod.sum({cdim});
    if (red == kNone) return loss;
    if (red == kSum) return loss.sum();
    return loss.sum() / double(C ? input.numel() / C : 0);
  }
  auto [x, t] = rows_and_targets(input, target, weight);
  if (input.dim() > 2) x = x.contiguous();
  Tensor out = ops::cross_entropy_index()(x, t.to(kInt64), weight, ignore_index, red, label_smoothing);
  return red == kNone ? none_shape(out, target) : out;
}

// ---------------------------------------------------------------- regression losses
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  EMBER_RECORD_COMPOSITE("mse_loss", input, target, reduction);
  EMBER_AUTOCAST(mse_loss, input, target, reduction);
  int64_t red = reduction_enum(reduction);
  Tensor d = input - target;
  return apply_reduction(d * d, red);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  EMBER_RECORD_COMPOSITE("l1_loss", input, target, reduction);
  EMBER_AUTOCAST(l1_loss, input, target, reduction);
  int64_t red = reduction_enum(reduction);
  return apply_reduction((input - target).abs(), red);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction, double beta) {
  EMBER_RECORD_COMPOSITE("smooth_l1_loss", input, target, reduction, beta);
  EMBER_AUTOCAST(smooth_l1_loss, input, target, reduction, beta);
  int64_t red = reduction_enum(reduction);
  EMBER_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  if (beta == 0.0) return l1_loss(input, target, reduction);
  Tensor z = (input - target).abs();
  Tensor loss = where(z.lt(beta), z * z * (0.5 / beta), z - 0.5 * beta);
  return apply_reduction(loss, red);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction, double delta) {
  EMBER_RECORD_COMPOSITE("huber_loss", input, target, reduction, delta);
  EMBER_AUTOCAST(huber_loss, input, target, reduction, delta);
  int64_t red = reduction_enum(reduction);
  EMBER_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  Tensor z = (input - target).abs();
  Tensor loss = where(z.lt(delta), z * z * 0.5, (z - 0.5 * delta) * delta);
  return apply_reduction(loss, red);
}

// ---------------------------------------------------------------- binary cross entropy
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                            const std::string& reduction) {
  EMBER_RECORD_COMPOSITE("binary_cross_entropy", input, target, weight, reduction);
  EMBER_AUTOCAST(binary_cross_entropy, input, target, weight, reduction);
  int64_t red = reduction_enum(reduction);
  EMBER_CHECK_VALUE(IntArrayRef(input.sizes()) == IntArrayRef(target.sizes()), "Using a target size (",
                    shape_str(target.sizes()), ") that is different to the input size (", shape_str(input.sizes()),
                    ") is deprecated. Please ensure they have the same size.");
  {
    NoGradGuard ng;
    EMBER_CHECK(input.numel() == 0 || (input.ge(0.0).logical_and(input.le(1.0))).all().item().to<bool>(),
                "all elements of input should be between 0 and 1");
  }
  Tensor w = weight && weight->defined() ? *weight : Tensor();
  Tensor loss;
  {
    AutoGradMode off(false);
    Tensor lx = input.log().clamp_min(-100.0), l1x = (1.0 - input).log().clamp_min(-100.0);
    loss = -(target * lx + (1.0 - target) * l1x);
    if (w.defined()) loss = loss * w;
  }
  // d/dx = w (x - t) / max(x (1 - x), 1e-12); d/dt = w (log(1 - x) - log(x)) (clamped logs)
  loss = with_grad("BinaryCrossEntropyBackward0", {input, target}, loss,
                   {saved_input(input), saved_input(target), saved_input(w)},
                   [](const variable_list& g, LambdaNode& n) -> variable_list {
                     Tensor x = n.unpack(0), t = n.unpack(1), w = n.unpack(2);
                     Tensor gw = w.defined() ? g[0] * w : g[0];
                     return {grad_for(n, 0, [&] { return gw * (x - t) / (x * (1.0 - x)).clamp_min(1e-12); }),
                             grad_for(n, 1, [&] {
                               return gw * ((1.0 - x).log().clamp_min(-100.0) - x.log().clamp_min(-100.0));
                             })};
                   });
  return apply_reduction(loss, red);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                                        const std::string& reduction, const std::optional<Tensor>& pos_weight) {
  EMBER_RECORD_COMPOSITE("binary_cross_entropy_with_logits", input, target, weight, reduction, pos_weight);
  EMBER_AUTOCAST(binary_cross_entropy_with_logits, input, target, weight, reduction, pos_weight);
  int64_t red = reduction_enum(reduction);
  EMBER_CHECK_VALUE(IntArrayRef(input.sizes()) == IntArrayRef(target.sizes()), "Target size (",
                    shape_str(target.sizes()), ") must be the same as input size (", shape_str(input.sizes()), ")");
  Tensor w = weight && weight->defined() ? *weight : Tensor();
  Tensor pw = pos_weight && pos_weight->defined() ? *pos_weight : Tensor();
  Tensor loss;
  {
    AutoGradMode off(false);
    Tensor sp = (-input).clamp_min(0.0) + (-input.abs()).exp().log1p();  // softplus(-x), stable
    if (pw.defined()) {
      Tensor lw = (pw - 1.0) * target + 1.0;
      loss = (1.0 - target) * input + lw * sp;
    } else {
      loss = (1.0 - target) * input + sp;  // = max(x, 0) - x t + log1p(exp(-|x|))
    }
    if (w.defined()) loss = loss * w;
  }
  // d/dx = (lw sigmoid(x) - pw t) w; d/dt = (-x + (pw - 1) softplus(-x)) w
  Shape out_shape = loss.sizes();
  loss = with_grad("BinaryCrossEntropyWithLogitsBackward0", {input, target, pw}, loss,
                   {saved_input(input), saved_input(target), saved_input(w), saved_input(pw)},
                   [out_shape](const variable_list& g, LambdaNode& n) -> variable_list {
                     Tensor x = n.unpack(0), t = n.unpack(1), w = n.unpack(2), pw = n.unpack(3);
                     Tensor gw = w.defined() ? g[0] * w : g[0];
                     Tensor sp = (-x).clamp_min(0.0) + (-x.abs()).exp().log1p();
                     return {grad_for(n, 0,
                                      [&] {
                                        if (!pw.defined()) return sum_to(gw * (x.sigmoid() - t), x.sizes());
                                        Tensor lw = (pw - 1.0) * t + 1.0;
                                        return sum_to(gw * (lw * x.sigmoid() - pw * t), x.sizes());
                                      }),
                             grad_for(n, 1,
                                      [&] {
                                        if (!pw.defined()) return sum_to(gw * (-x), t.sizes());
                                        return sum_to(gw * ((pw - 1.0) * sp - x), t.sizes());
                                      }),
                             grad_for(n, 2, [&] { return sum_to(gw * t * sp, pw.sizes()); })};
                   });
  return apply_reduction(loss, red);
}

// ---------------------------------------------------------------- kl_div
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction, bool log_target) {
  EMBER_RECORD_COMPOSITE("kl_div", input, target, reduction, log_target);
  EMBER_AUTOCAST(kl_div, input, target, reduction, log_target);
  int64_t red = reduction == "batchmean" ? -1 : reduction_enum(reduction);
  Tensor loss;
  if (log_target) {
    loss = target.exp() * (target - input);
  } else {
    // xlogy(t, t) - t x: 0 where t == 0 (with a finite gradient there), nan for t < 0 as PyTorch
    Tensor nz = target.ne(0.0);
    Tensor safe = where(nz, target, 1.0);
    loss = where(nz, target * safe.log(), 0.0) - target * input;
  }
  if (red == -1) {
    Tensor s = loss.sum();
    return input.dim() == 0 ? s : s / double(input.size(0));
  }
  return apply_reduction(loss, red);
}

}  // namespace ember::nn::functional
