// Adagrad: torch 1.13's update rule (dense gradients). This file keeps the options and the
// state; the update itself is the multi-tensor op _fused_adagrad_ (ember/optim/fused.h).
#include "ember/optim/adagrad.h"

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

Value adagrad_defaults(const AdagradOptions& o) {
  EMBER_CHECK_VALUE(0.0 <= o.lr, "Invalid learning rate: ", py_num(o.lr));
  EMBER_CHECK_VALUE(0.0 <= o.lr_decay, "Invalid lr_decay value: ", py_num(o.lr_decay));
  EMBER_CHECK_VALUE(0.0 <= o.weight_decay, "Invalid weight_decay value: ", py_num(o.weight_decay));
  EMBER_CHECK_VALUE(0.0 <= o.initial_accumulator_value, "Invalid initial_accumulator_value value: ",
                    py_num(o.initial_accumulator_value));
  EMBER_CHECK_VALUE(0.0 <= o.eps, "Invalid epsilon value: ", py_num(o.eps));
  return Value::dict({{"lr", o.lr}, {"lr_decay", num0(o.lr_decay)}, {"eps", o.eps},
                      {"weight_decay", num0(o.weight_decay)},
                      {"initial_accumulator_value", num0(o.initial_accumulator_value)}, {"foreach", nullptr},
                      {"maximize", o.maximize}});
}

// The op's lists for the parameters of one device.
struct AdagradLists {
  std::vector<Tensor> params, grads, state_sums, state_steps;
  void reserve(size_t n) {
    params.reserve(n);
    grads.reserve(n);
    state_sums.reserve(n);
    state_steps.reserve(n);
  }
};

}  // namespace

Adagrad::Adagrad(std::vector<Tensor> params, AdagradOptions options)
    : Adagrad(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}
Adagrad::Adagrad(std::vector<ParamGroup> groups, AdagradOptions options) : Optimizer(adagrad_defaults(options)) {
  init_groups(std::move(groups));
}

// torch creates Adagrad's state in the constructor (and for groups added later).
void Adagrad::on_group_added(ParamGroup& group) {
  NoGradGuard guard;
  double init = group.options.at("initial_accumulator_value").to_double();
  for (auto& p : group.params) {
    Value& st = state_for(p);
    st["step"] = detail::step_tensor(0, p.device());
    st["sum"] = full(p.sizes(), init, p.options());
  }
}

void Adagrad::step() {
  NoGradGuard guard;
  for (auto& group : param_groups) {
    const Value& o = group.options;
    const double lr = o.at("lr").to_double(), lr_decay = o.at("lr_decay").to_double();
    const double eps = o.at("eps").to_double(), weight_decay = o.at("weight_decay").to_double();
    const bool maximize = o.at("maximize").to_bool();
    std::vector<std::pair<Device, AdagradLists>> batches;
    for (auto& param : group.params) {
      if (!param.grad().defined()) continue;
      Value& st = state_for(param);
      EMBER_CHECK(st.contains("sum"), "Adagrad: state 'sum' is missing");
      AdagradLists& l = detail::batch_for(batches, param.device(), group.params.size());
      l.params.push_back(param);
      l.grads.push_back(detail::grad_of(param));
      l.state_sums.push_back(st["sum"].to_tensor());
      l.state_steps.push_back(detail::step_of(st, param));
    }
    for (auto& [device, l] : batches) {
      detail::increment_steps(l.state_steps);
      _fused_adagrad_(l.params, l.grads, l.state_sums, l.state_steps, lr, lr_decay, weight_decay, eps, maximize);
    }
  }
}

}  // namespace ember::optim
