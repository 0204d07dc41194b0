// RMSprop: torch 1.13's update rule. This file keeps the options and the state; the update
// itself is the multi-tensor op _fused_rmsprop_ (ember/optim/fused.h).
#include "ember/optim/rmsprop.h"

#include <utility>
#include <vector>

#include "ember/autograd/grad_mode.h"
#include "ember/core/errors.h"
#include "ember/ops.h"
#include "ember/optim/fused.h"

namespace ember::optim {
namespace {

using detail::num0;
using detail::py_num;

Value rmsprop_defaults(const RMSpropOptions& o) {
  EMBER_CHECK_VALUE(0.0 <= o.lr, "Invalid learning rate: ", py_num(o.lr));
  EMBER_CHECK_VALUE(0.0 <= o.eps, "Invalid epsilon value: ", py_num(o.eps));
  EMBER_CHECK_VALUE(0.0 <= o.momentum, "Invalid momentum value: ", py_num(o.momentum));
  EMBER_CHECK_VALUE(0.0 <= o.weight_decay, "Invalid weight_decay value: ", py_num(o.weight_decay));
  EMBER_CHECK_VALUE(0.0 <= o.alpha, "Invalid alpha value: ", py_num(o.alpha));
  return Value::dict({{"lr", o.lr}, {"momentum", num0(o.momentum)}, {"alpha", o.alpha}, {"eps", o.eps},
                      {"centered", o.centered}, {"weight_decay", num0(o.weight_decay)}, {"foreach", nullptr},
                      {"maximize", o.maximize}, {"differentiable", false}});
}

// The op's lists for the parameters of one device.
struct RMSpropLists {
  std::vector<Tensor> params, grads, square_avgs, momentum_buffer_list, grad_avgs;
  void reserve(size_t n) {
    params.reserve(n);
    grads.reserve(n);
    square_avgs.reserve(n);
    momentum_buffer_list.reserve(n);
    grad_avgs.reserve(n);
  }
};

}  // namespace

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions options)
    : RMSprop(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}
RMSprop::RMSprop(std::vector<ParamGroup> groups, RMSpropOptions options) : Optimizer(rmsprop_defaults(options)) {
  init_groups(std::move(groups));
}

void RMSprop::step() {
  NoGradGuard guard;
  for (auto& group : param_groups) {
    const Value& o = group.options;
    const double lr = o.at("lr").to_double(), alpha = o.at("alpha").to_double(), eps = o.at("eps").to_double();
    const double weight_decay = o.at("weight_decay").to_double(), momentum = o.at("momentum").to_double();
    const bool centered = o.at("centered").to_bool(), maximize = o.at("maximize").to_bool();
    std::vector<std::pair<Device, RMSpropLists>> batches;
    for (auto& param : group.params) {
      if (!param.grad().defined()) continue;
      Value& st = state_for(param);
      if (!st.contains("step")) {
        st["step"] = int64_t(0);
        st["square_avg"] = zeros(param.sizes(), param.options());
        if (momentum > 0) st["momentum_buffer"] = zeros(param.sizes(), param.options());
        if (centered) st["grad_avg"] = zeros(param.sizes(), param.options());
      }
      EMBER_CHECK(momentum <= 0 || st.contains("momentum_buffer"), "RMSprop: momentum_buffer state is missing");
      EMBER_CHECK(!centered || st.contains("grad_avg"), "RMSprop: grad_avg state is missing");
      // torch 1.13 counts RMSprop's steps in a Python int: no update reads it.
      detail::increment_step(st);
      RMSpropLists& l = detail::batch_for(batches, param.device(), group.params.size());
      l.params.push_back(param);
      l.grads.push_back(detail::grad_of(param));
      l.square_avgs.push_back(st["square_avg"].to_tensor());
      if (momentum > 0) l.momentum_buffer_list.push_back(st["momentum_buffer"].to_tensor());
      if (centered) l.grad_avgs.push_back(st["grad_avg"].to_tensor());
    }
    for (auto& [device, l] : batches)
      _fused_rmsprop_(l.params, l.grads, l.square_avgs, l.momentum_buffer_list, l.grad_avgs, lr, alpha, eps,
                      weight_decay, momentum, centered, maximize);
  }
}

}  // namespace ember::optim
