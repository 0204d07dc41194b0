#pragma once
// Optimizers (torch.optim). Parameters live in param groups, each with its own options (a dict
// Value: "lr", "momentum", "betas", ...), which a user or an lr scheduler may edit between steps.
// state_dict() has PyTorch's layout: {"state": {index: {...}}, "param_groups": [{...,
// "params": [indices]}]}, so a resumed run continues identically and files interoperate.
#include <memory>
#include <string>
#include <vector>

#include "ember/serialize/value.h"
#include "ember/tensor.h"

namespace ember::optim {

struct ParamGroup {
  std::vector<Tensor> params;
  Value options = Value::dict();  // every option, defaults filled in

  double lr() const { return options.at("lr").to_double(); }
  void set_lr(double lr) { options["lr"] = lr; }
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of every parameter that has a gradient.
  virtual void step() = 0;
  void zero_grad(bool set_to_none = true);
  void add_param_group(ParamGroup group);

  Value state_dict() const;
  void load_state_dict(const Value& state);

  std::vector<ParamGroup> param_groups;
  // Per-parameter state, keyed by the parameter's TensorImpl ("step", "exp_avg", ...).
  std::vector<std::pair<TensorImpl*, Value>> state;
  Value& state_for(const Tensor& p);

 protected:
  explicit Optimizer(Value defaults) : defaults_(std::move(defaults)) {}
  void init_groups(std::vector<ParamGroup> groups);
  Value defaults_;
};

}  // namespace ember::optim
