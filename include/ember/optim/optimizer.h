#pragma once
// Optimizers (torch.optim). Parameters live in param groups, each with its own options (a dict
// Value: "lr", "momentum", "betas", ...), which a user or an lr scheduler may edit between steps.
// state_dict() has PyTorch's layout: {"state": {index: {...}}, "param_groups": [{...,
// "params": [indices]}]}, so a resumed run continues identically and files interoperate.
#include <memory>
#include <string>
#include <utility>
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

 private:
  size_t state_hint_ = 0;  // where state_for looks first (see there)
};

// Deep copy of a Value: containers always copied; tensors cloned when clone_tensors.
Value deep_copy(const Value& v, bool clone_tensors = true);

namespace detail {
// A number as Python prints it ("-0.1", "1e-08"), for error messages.
std::string py_num(double x);
// Torch stores some defaults as the int 0; keep that when the value is 0.
inline Value num0(double x) { return x == 0.0 ? Value(int64_t(0)) : Value(x); }
// The parameter's gradient in the parameter's dtype (the update ops take both in one dtype).
Tensor grad_of(const Tensor& param);
// A 0-dim float32 tensor holding v on `device` (torch keeps Adam's and Adagrad's "step" like
// this; on the parameter's device, as torch's fused optimizers do, a device kernel reads it).
Tensor step_tensor(double v, Device device = Device(DeviceType::CPU));
// The "step" entry of a parameter's state as the update ops take it: a float32 tensor on the
// parameter's device. A step loaded as a number, in another dtype or on another device is
// converted in place (torch's fused optimizers convert on load likewise).
const Tensor& step_of(Value& st, const Tensor& param);
// Adds 1 to every step tensor, in float32 (before the update, as torch's optimizers do).
void increment_steps(TensorList steps);
// Increments a "step" state entry (a tensor or an int) and returns the new value.
double increment_step(Value& st);
// The op lists of `key` (a device; an optimizer may add more): parameters on different devices
// go to different calls, since one multi-tensor call runs on one device. First-seen order. New
// lists reserve room for `n` parameters (Lists::reserve), so a step does not regrow them.
template <class Key, class Lists>
Lists& batch_for(std::vector<std::pair<Key, Lists>>& batches, const Key& key, size_t n) {
  for (auto& [k, lists] : batches)
    if (k == key) return lists;
  Lists& lists = batches.emplace_back(key, Lists{}).second;
  lists.reserve(n);
  return lists;
}
}  // namespace detail

}  // namespace ember::optim
