// SGD: torch 1.13's update rule. This file keeps the options and the momentum buffers; the
// update itself is the multi-tensor op _fused_sgd_ (ember/optim/fused.h).
#include "ember/optim/sgd.h"

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

Value sgd_defaults(const SGDOptions& o) {
  if (o.lr) EMBER_CHECK_VALUE(0.0 <= *o.lr, "Invalid learning rate: ", py_num(*o.lr));
  EMBER_CHECK_VALUE(0.0 <= o.momentum, "Invalid momentum value: ", py_num(o.momentum));
  EMBER_CHECK_VALUE(0.0 <= o.weight_decay, "Invalid weight_decay value: ", py_num(o.weight_decay));
  EMBER_CHECK_VALUE(!o.nesterov || (o.momentum > 0 && o.dampening == 0),
                    "Nesterov momentum requires a momentum and zero dampening");
  return Value::dict({{"lr", o.lr ? Value(*o.lr) : Value("<required parameter>")},
                      {"momentum", num0(o.momentum)}, {"dampening", num0(o.dampening)},
                      {"weight_decay", num0(o.weight_decay)}, {"nesterov", o.nesterov},
                      {"maximize", o.maximize}, {"foreach", nullptr}, {"differentiable", false}});
}

// The op's lists for the parameters of one call.
struct SGDLists {
  std::vector<Tensor> params, grads, momentum_buffer_list;
  void reserve(size_t n) {
    params.reserve(n);
    grads.reserve(n);
    momentum_buffer_list.reserve(n);
  }
};

}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : SGD(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}
SGD::SGD(std::vector<ParamGroup> groups, SGDOptions options) : Optimizer(sgd_defaults(options)) {
  init_groups(std::move(groups));
}

void SGD::step() {
  NoGradGuard guard;
  for (auto& group : param_groups) {
    const Value& o = group.options;
    const double lr = o.at("lr").to_double(), momentum = o.at("momentum").to_double();
    const double dampening = o.at("dampening").to_double(), weight_decay = o.at("weight_decay").to_double();
    const bool nesterov = o.at("nesterov").to_bool(), maximize = o.at("maximize").to_bool();
    // One call per device and per "buffers created this step": torch decides the latter per
    // group, here per parameter, so a parameter whose gradient appears later still starts its
    // buffer from its own gradient.
    std::vector<std::pair<std::pair<Device, bool>, SGDLists>> batches;
    for (auto& param : group.params) {
      if (!param.grad().defined()) continue;
      Value& st = state_for(param);
      bool first = !st.contains("momentum_buffer") || st.at("momentum_buffer").is_none();
      if (momentum != 0) {
        if (first) st["momentum_buffer"] = zeros(param.sizes(), param.options());
      } else if (first) {
        st["momentum_buffer"] = nullptr;
      }
      SGDLists& l = detail::batch_for(batches, std::pair{param.device(), momentum != 0 && first}, group.params.size());
      l.params.push_back(param);
      l.grads.push_back(detail::grad_of(param));
      if (momentum != 0) l.momentum_buffer_list.push_back(st["momentum_buffer"].to_tensor());
    }
    for (auto& [key, l] : batches)
      _fused_sgd_(l.params, l.grads, l.momentum_buffer_list, weight_decay, momentum, lr, dampening, nesterov, maximize,
                  /*is_first_step=*/key.second);
  }
}

}  // namespace ember::optim
