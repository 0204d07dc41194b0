#pragma once
// Optimizers (torch.optim). Parameters live in param groups, each with its own options (a dict
// Value: "lr", "momentum", "betas", ...), which a user or an lr scheduler may edit between steps.
// state_dict() has PyTorch's layout: {"state": {index: {...}}, "param_groups": [{...,
// "params": [indices]}]}, so a resumed run continues identically and files interoperate.
#include <functional>
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
  // Adds a group; options it lacks are filled from the optimizer's defaults. A parameter may
  // belong to one group only ("some parameters appear in more than one parameter group").
  void add_param_group(ParamGroup group);

  // PyTorch's layout. Tensors in "state" are shared with the optimizer (as torch's are); options
  // are copies.
  Value state_dict() const;
  // Maps saved indices onto this optimizer's parameters in order, deep-copies the state tensors
  // (cast to the parameter's dtype, except "step") and takes the saved group options.
  void load_state_dict(const Value& state);

  const Value& defaults() const { return defaults_; }

  std::vector<ParamGroup> param_groups;
  // Per-parameter state, keyed by the parameter's TensorImpl ("step", "exp_avg", ...).
  std::vector<std::pair<TensorImpl*, Value>> state;
  Value& state_for(const Tensor& p);

 protected:
  explicit Optimizer(Value defaults) : defaults_(std::move(defaults)) {}
  void init_groups(std::vector<ParamGroup> groups);
  // Called by add_param_group after the options are filled (Adagrad creates its state here).
  virtual void on_group_added(ParamGroup&) {}
  Value defaults_;
};

// Deep copy of a Value: containers always copied; tensors cloned when clone_tensors.
Value deep_copy(const Value& v, bool clone_tensors = true);

namespace detail {
// A number as Python prints it ("-0.1", "1e-08"), for error messages.
std::string py_num(double x);
// Torch stores some defaults as the int 0; keep that when the value is 0.
inline Value num0(double x) { return x == 0.0 ? Value(int64_t(0)) : Value(x); }
// Runs fn(param, grad) on contiguous tensors of the parameter's dtype: the parameter itself when
// it is contiguous, else a contiguous copy that is written back afterwards.
void with_contiguous(Tensor& param, const std::function<void(Tensor&, const Tensor&)>& fn);
// A 0-dim float32 tensor holding v (torch 1.13 keeps Adam's and Adagrad's "step" like this).
Tensor step_tensor(double v);
// Increments a "step" state entry (a tensor or an int) and returns the new value.
double increment_step(Value& st);
}  // namespace detail

}  // namespace ember::optim
