// Adam and AdamW: torch 1.13's update rules. This file keeps the options and the per-parameter
// state; the update itself is the multi-tensor op _fused_adam_ / _fused_adamw_ (ember/optim/fused.h),
// one call per device, whose kernel the parameters' device registers.
#include "ember/optim/adam.h"

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

template <class O> void check_options(const O& o) {
  EMBER_CHECK_VALUE(0.0 <= o.lr, "Invalid learning rate: ", py_num(o.lr));
  EMBER_CHECK_VALUE(0.0 <= o.eps, "Invalid epsilon value: ", py_num(o.eps));
  EMBER_CHECK_VALUE(0.0 <= o.betas.first && o.betas.first < 1.0, "Invalid beta parameter at index 0: ",
                    py_num(o.betas.first));
  EMBER_CHECK_VALUE(0.0 <= o.betas.second && o.betas.second < 1.0, "Invalid beta parameter at index 1: ",
                    py_num(o.betas.second));
  EMBER_CHECK_VALUE(0.0 <= o.weight_decay, "Invalid weight_decay value: ", py_num(o.weight_decay));
}

Value betas_value(std::pair<double, double> b) { return Value::tuple({b.first, b.second}); }

Value adam_defaults(const AdamOptions& o) {
  check_options(o);
  return Value::dict({{"lr", o.lr}, {"betas", betas_value(o.betas)}, {"eps", o.eps},
                      {"weight_decay", num0(o.weight_decay)}, {"amsgrad", o.amsgrad},
                      {"maximize", o.maximize}, {"foreach", nullptr}, {"capturable", false},
                      {"differentiable", false}, {"fused", false}});
}

Value adamw_defaults(const AdamWOptions& o) {
  check_options(o);
  return Value::dict({{"lr", o.lr}, {"betas", betas_value(o.betas)}, {"eps", o.eps},
                      {"weight_decay", num0(o.weight_decay)}, {"amsgrad", o.amsgrad},
                      {"foreach", nullptr}, {"maximize", o.maximize}, {"capturable", false}});
}

// The op's lists for the parameters of one device.
struct AdamLists {
  std::vector<Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps;
  void reserve(size_t n) {
    params.reserve(n);
    grads.reserve(n);
    exp_avgs.reserve(n);
    exp_avg_sqs.reserve(n);
    max_exp_avg_sqs.reserve(n);
    state_steps.reserve(n);
  }
};

void adam_step(Optimizer& opt, bool decoupled) {
  NoGradGuard guard;
  for (auto& group : opt.param_groups) {
    const Value& o = group.options;
    const Value& betas = o.at("betas");
    const double lr = o.at("lr").to_double(), beta1 = betas[0].to_double(), beta2 = betas[1].to_double();
    const double eps = o.at("eps").to_double(), weight_decay = o.at("weight_decay").to_double();
    const bool amsgrad = o.at("amsgrad").to_bool(), maximize = o.at("maximize").to_bool();
    std::vector<std::pair<Device, AdamLists>> batches;
    for (auto& param : group.params) {
      if (!param.grad().defined()) continue;
      Value& st = opt.state_for(param);
      if (!st.contains("step")) {
        st["step"] = detail::step_tensor(0, param.device());
        st["exp_avg"] = zeros(param.sizes(), param.options());
        st["exp_avg_sq"] = zeros(param.sizes(), param.options());
        if (amsgrad) st["max_exp_avg_sq"] = zeros(param.sizes(), param.options());
      }
      EMBER_CHECK(!amsgrad || st.contains("max_exp_avg_sq"), "Adam: amsgrad state is missing max_exp_avg_sq");
      AdamLists& l = detail::batch_for(batches, param.device(), group.params.size());
      l.params.push_back(param);
      l.grads.push_back(detail::grad_of(param));
      l.exp_avgs.push_back(st["exp_avg"].to_tensor());
      l.exp_avg_sqs.push_back(st["exp_avg_sq"].to_tensor());
      if (amsgrad) l.max_exp_avg_sqs.push_back(st["max_exp_avg_sq"].to_tensor());
      l.state_steps.push_back(detail::step_of(st, param));
    }
    for (auto& [device, l] : batches) {
      detail::increment_steps(l.state_steps);
      auto* update = decoupled ? &_fused_adamw_ : &_fused_adam_;
      update(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.state_steps, lr, beta1, beta2,
             weight_decay, eps, amsgrad, maximize);
    }
  }
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamOptions options) : Adam(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}
Adam::Adam(std::vector<ParamGroup> groups, AdamOptions options) : Optimizer(adam_defaults(options)) {
  init_groups(std::move(groups));
}
void Adam::step() { adam_step(*this, false); }

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options) : AdamW(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, options) {}
AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions options) : Optimizer(adamw_defaults(options)) {
  init_groups(std::move(groups));
}
void AdamW::step() { adam_step(*this, true); }

}  // namespace ember::optim
