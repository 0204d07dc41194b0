// torch.nn.functional.embedding_bag: PyTorch's checks and messages, a 2-D input or
// include_last_offset turned into one bounds vector (bag b is indices[bounds[b], bounds[b + 1])),
// then the _embedding_bag op (cpu/embedding_bag_kernels.cpp) with its gradient for the weight and
// the per-sample weights. As in PyTorch, the backward has no derivative of its own.
#include "autograd/no_derivative.h"
#include "ember/nn/functional.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::nn::functional {

Tensor embedding_bag(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& offsets,
                     const std::string& mode, const std::optional<Tensor>& per_sample_weights,
                     bool include_last_offset, std::optional<int64_t> padding_idx) {
  EMBER_CHECK(mode == "sum" || mode == "mean" || mode == "max", "mode has to be one of sum, mean or max, but got ",
              mode);
  EMBER_CHECK(!per_sample_weights || mode == "sum", "embedding_bag: per_sample_weights was not None. "
              "per_sample_weights is only supported for mode='sum' (got mode='", mode, "')");
  EMBER_CHECK(weight.dim() == 2, "embedding_bag: weight has to be a 2D Tensor, but got Tensor of dimension ",
              weight.dim());
  EMBER_CHECK(!is_floating(input.dtype()) && !is_complex(input.dtype()) && input.dtype() != kBool,
              "embedding_bag: expected indices of an integer dtype, but got ", dtype_name(input.dtype()));
  const int64_t num = weight.size(0);
  int64_t pad = -1;
  if (padding_idx) {
    pad = *padding_idx < 0 ? *padding_idx + num : *padding_idx;
    EMBER_CHECK(pad >= 0 && pad < num, "padding_idx must be within the number of embeddings");
  }
  Tensor idx, bounds;
  const Device dev = input.device();
  if (input.dim() == 2) {
    EMBER_CHECK(!offsets, "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed "
                "length sequences");
    idx = input.reshape({-1}).to(kInt64);
    const int64_t B = input.size(0), L = input.size(1);
    bounds = arange(0, B * L + 1, std::max<int64_t>(L, 1), {.dtype = kInt64, .device = dev});
    if (L == 0) bounds = zeros({B + 1}, {.dtype = kInt64, .device = dev});
  } else {
    EMBER_CHECK(input.dim() == 1, "input has to be 1D or 2D Tensor, but got Tensor of dimension ", input.dim());
    EMBER_CHECK(offsets.has_value(), "offsets has to be a 1D Tensor but got None");
    EMBER_CHECK(offsets->dim() == 1, "offsets has to be a 1D Tensor");
    idx = input.to(kInt64);
    const int64_t n = input.size(0);
    Tensor offs = offsets->to(kInt64);
    bounds = include_last_offset ? offs : cat({offs, full({1}, n, {.dtype = kInt64, .device = dev})});
    if (!bounds.is_meta()) {  // the offsets' values, where there are values (meta has none, as in torch)
      auto b = bounds.to(Device(DeviceType::CPU)).contiguous();
      const int64_t* p = b.data_ptr<int64_t>();
      if (offs.numel()) {  // (the offsets as given: bounds may end with the appended n)
        const int64_t last = p[offs.numel() - 1];
        EMBER_CHECK(p[0] == 0, "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                    "from position 0. However, got ", p[0]);
        EMBER_CHECK(last <= n, "offsets[-1] can not be greater than input's length (", n, "), but got offsets[-1] "
                    "of ", last);
      }
      for (int64_t i = 0; i + 1 < b.numel(); ++i)
        EMBER_CHECK(p[i] <= p[i + 1], "embedding_bag: offsets must be non-decreasing, but got offsets[", i, "] = ",
                    p[i], " > offsets[", i + 1, "] = ", p[i + 1]);
    }
    if (bounds.numel() == 0) bounds = zeros({1}, {.dtype = kInt64, .device = dev});
  }
  if (idx.numel() && !idx.is_meta()) {
    const int64_t lo = idx.min().item<int64_t>(), hi = idx.max().item<int64_t>();
    EMBER_CHECK_INDEX(lo >= 0 && hi < num, "index out of range in self (embedding_bag: indices must be in [0, ", num,
                      "), got ", lo < 0 ? lo : hi, ")");
  }
  std::optional<Tensor> psw;
  if (per_sample_weights) {
    EMBER_CHECK(per_sample_weights->numel() == input.numel(), "embedding_bag: expected per_sample_weights to have as "
                "many elements as input (", input.numel(), "), but got ", per_sample_weights->numel());
    psw = per_sample_weights->reshape({-1}).to(weight.dtype());
  }
  const int64_t m = mode == "sum" ? 0 : mode == "mean" ? 1 : 2;
  return std::get<0>(ops::_embedding_bag()(weight, idx, bounds, m, psw, pad));
}

}  // namespace ember::nn::functional

namespace ember {
namespace {
using namespace autograd;

std::tuple<Tensor, Tensor> embedding_bag_ag(const Tensor& weight, const Tensor& indices, const Tensor& bounds,
                                            int64_t mode, const std::optional<Tensor>& per_sample_weights,
                                            int64_t padding_idx) {
  auto [out, aux] = below_autograd(
      [&] { return ops::_embedding_bag()(weight, indices, bounds, mode, per_sample_weights, padding_idx); });
  const Tensor psw = per_sample_weights ? *per_sample_weights : Tensor();
  record("EmbeddingBagBackward0", {weight, psw}, {out},
         {saved_input(weight), saved_input(indices), saved_input(bounds), saved_output(aux), saved_input(psw)},
         [mode, padding_idx](const variable_list& g, LambdaNode& n) -> variable_list {
           const Tensor p = n.unpack(4);
           // (std::get, not a structured binding: clang refuses to capture those in the lambdas below)
           const auto grads = ops::_embedding_bag_backward()(g[0], n.unpack(0), n.unpack(1), n.unpack(2), n.unpack(3),
                                                             mode, p.defined() ? std::optional<Tensor>(p) : std::nullopt,
                                                             padding_idx);
           return {grad_for(n, 0, [&] { return std::get<0>(grads); }), grad_for(n, 1, [&] { return std::get<1>(grads); })};
         });
  return {out, aux};
}

std::tuple<Tensor, Tensor> embedding_bag_backward_ag(const Tensor& grad, const Tensor& weight, const Tensor& indices,
                                                     const Tensor& bounds, const Tensor& aux, int64_t mode,
                                                     const std::optional<Tensor>& per_sample_weights,
                                                     int64_t padding_idx) {
  auto [gw, gp] = below_autograd([&] {
    return ops::_embedding_bag_backward()(grad, weight, indices, bounds, aux, mode, per_sample_weights, padding_idx);
  });
  record_no_derivative("EmbeddingBagBackwardBackward0", "_embedding_bag_backward",
                       {grad, weight, per_sample_weights ? *per_sample_weights : Tensor()}, {gw, gp});
  return {gw, gp};
}

EMBER_REGISTER_KERNEL(_embedding_bag, Autograd, embedding_bag_ag);
EMBER_REGISTER_KERNEL(_embedding_bag_backward, Autograd, embedding_bag_backward_ag);

}  // namespace
}  // namespace ember
