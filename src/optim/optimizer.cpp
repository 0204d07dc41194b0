// Optimizer base: param groups, per-parameter state, zero_grad, state_dict / load_state_dict in
// PyTorch's layout (torch/optim/optimizer.py, 1.13).
#include "ember/optim/optimizer.h"

#include <unordered_map>
#include <unordered_set>

#include "ember/autograd/grad_mode.h"
#include "ember/core/errors.h"
#include "ember/ops.h"

namespace ember::optim {

Value deep_copy(const Value& v, bool clone_tensors) {
  switch (v.kind()) {
    case Value::Kind::List:
    case Value::Kind::Tuple: {
      ValueList items;
      for (const auto& x : v.items_list()) items.push_back(deep_copy(x, clone_tensors));
      return v.is_list() ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case Value::Kind::Dict: {
      ValueItems items;
      for (const auto& [k, x] : v.items()) items.emplace_back(deep_copy(k, clone_tensors), deep_copy(x, clone_tensors));
      return Value::dict(std::move(items));
    }
    case Value::Kind::Tensor:
      if (clone_tensors) {
        NoGradGuard g;
        return Value(v.to_tensor().detach().clone());
      }
      return v;
    default: return v;
  }
}

namespace detail {
std::string py_num(double x) {
  std::string s = Value(x).repr();
  // Python writes a float with a fraction or an exponent: -1.0, 1e-08.
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}
}  // namespace detail

// A step looks up every parameter in the same order, the order the state was created in: the
// entry after the last one found is checked first, so a step costs one comparison per parameter
// rather than a scan each (quadratic in the parameter count). Anyone may edit `state`; the hint
// is bounds-checked and compared, never trusted.
Value& Optimizer::state_for(const Tensor& p) {
  TensorImpl* key = p.impl();
  if (state_hint_ < state.size() && state[state_hint_].first == key) return state[state_hint_++].second;
  for (size_t i = 0; i < state.size(); ++i)
    if (state[i].first == key) {
      state_hint_ = i + 1;
      return state[i].second;
    }
  state.emplace_back(key, Value::dict());
  state_hint_ = state.size();
  return state.back().second;
}

void Optimizer::init_groups(std::vector<ParamGroup> groups) {
  bool any = false;
  for (const auto& g : groups) any = any || !g.params.empty();
  EMBER_CHECK_VALUE(!groups.empty() && any, "optimizer got an empty parameter list");
  for (auto& g : groups) add_param_group(std::move(g));
}

void Optimizer::add_param_group(ParamGroup group) {
  EMBER_CHECK_TYPE(group.options.is_dict(), "param group options must be a dict");
  for (const auto& p : group.params) {
    EMBER_CHECK_TYPE(p.defined(), "optimizer can only optimize Tensors, but one of the params is undefined");
    EMBER_CHECK_VALUE(p.is_leaf() || p.retains_grad(), "can't optimize a non-leaf Tensor");
  }
  // Fill the missing options from the defaults, in the defaults' order (as setdefault does, the
  // group's own keys come first).
  Value opts = deep_copy(group.options, false);
  for (const auto& [k, v] : defaults_.items()) {
    if (opts.contains(k)) continue;
    EMBER_CHECK_VALUE(!(v.is_string() && v.to_string() == "<required parameter>"),
                      "parameter group didn't specify a value of required optimization parameter ",
                      k.to_string());
    opts[k] = deep_copy(v, false);
  }
  std::unordered_set<TensorImpl*> seen;
  for (const auto& g : param_groups)
    for (const auto& p : g.params) seen.insert(p.impl());
  for (const auto& p : group.params)
    EMBER_CHECK_VALUE(!seen.count(p.impl()), "some parameters appear in more than one parameter group");
  group.options = std::move(opts);
  param_groups.push_back(std::move(group));
  on_group_added(param_groups.back());
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard guard;
  for (auto& g : param_groups)
    for (auto& p : g.params) {
      if (!p.grad().defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        Tensor& gr = p.mutable_grad();
        if (gr.grad_fn()) gr = gr.detach();
        gr.zero_();
      }
    }
}

Value Optimizer::state_dict() const {
  std::unordered_map<TensorImpl*, int64_t> index;
  Value groups = Value::list();
  int64_t next = 0;
  for (const auto& g : param_groups) {
    Value packed = deep_copy(g.options, false);
    Value ids = Value::list();
    for (const auto& p : g.params) {
      auto it = index.find(p.impl());
      if (it == index.end()) it = index.emplace(p.impl(), next++).first;
      ids.push_back(it->second);
    }
    packed["params"] = ids;
    groups.push_back(packed);
  }
  Value packed_state = Value::dict();
  for (const auto& [k, v] : state) {
    auto it = index.find(k);
    if (it == index.end()) continue;  // state of a parameter no longer optimized
    packed_state[Value(it->second)] = deep_copy(v, false);
  }
  return Value::dict({{"state", packed_state}, {"param_groups", groups}});
}

void Optimizer::load_state_dict(const Value& sd) {
  EMBER_CHECK_VALUE(sd.is_dict() && sd.contains("state") && sd.contains("param_groups"),
                    "optimizer state dict must be a dict with 'state' and 'param_groups'");
  const Value& saved_groups = sd.at("param_groups");
  EMBER_CHECK_VALUE(saved_groups.size() == param_groups.size(),
                    "loaded state dict has a different number of parameter groups");
  for (size_t i = 0; i < param_groups.size(); ++i)
    EMBER_CHECK_VALUE(saved_groups[i].at("params").size() == param_groups[i].params.size(),
                      "loaded state dict contains a parameter group that doesn't match the size of optimizer's group");
  // Saved index -> this optimizer's parameter, in order across the groups.
  std::vector<std::pair<int64_t, Tensor>> id_map;
  for (size_t i = 0; i < param_groups.size(); ++i) {
    const Value& ids = saved_groups[i].at("params");
    for (size_t j = 0; j < ids.size(); ++j) id_map.emplace_back(ids[j].to_int(), param_groups[i].params[j]);
  }
  NoGradGuard guard;
  std::vector<std::pair<TensorImpl*, Value>> new_state;
  for (const auto& [k, v] : sd.at("state").items()) {
    const Tensor* param = nullptr;
    if (k.is_int())
      for (const auto& [id, p] : id_map)
        if (id == k.to_int()) { param = &p; break; }
    if (!param) continue;  // torch keeps it keyed by the index; nothing here can use it
    Value st = Value::dict();
    for (const auto& [name, x] : v.items()) {
      if (x.is_tensor()) {
        Tensor t = x.to_tensor().detach();
        bool is_step = name.is_string() && name.to_string() == "step";
        if (!is_step && param->is_floating_point() && t.dtype() != param->dtype())
          t = t.to(param->dtype());
        st[name] = Value(t.contiguous().clone());
      } else {
        st[name] = deep_copy(x, true);
      }
    }
    new_state.emplace_back(param->impl(), std::move(st));
  }
  state = std::move(new_state);
  for (size_t i = 0; i < param_groups.size(); ++i) {
    Value opts = Value::dict();
    for (const auto& [k, v] : saved_groups[i].items())
      if (!(k.is_string() && k.to_string() == "params")) opts[k] = deep_copy(v, true);
    param_groups[i].options = std::move(opts);
  }
}

}  // namespace ember::optim

namespace ember::optim::detail {

Tensor grad_of(const Tensor& param) {
  Tensor g = param.grad();
  return g.dtype() == param.dtype() ? g : g.to(param.dtype());
}

Tensor step_tensor(double v, Device device) {
  return ember::scalar_tensor(v, {.dtype = DType::Float32, .device = device});
}

const Tensor& step_of(Value& st, const Tensor& param) {
  Value& s = st["step"];
  if (s.is_tensor()) {
    const Tensor& t = s.to_tensor();
    if (t.dtype() == DType::Float32 && t.device() == param.device()) return t;
    s = t.to(param.device(), DType::Float32);
  } else {
    s = step_tensor(s.is_none() ? 0.0 : s.to_double(), param.device());
  }
  return s.to_tensor();
}

void increment_steps(TensorList steps) {
  if (steps.empty()) return;
  // step_t += 1 in float32, as torch does.
  Tensor one = ember::scalar_tensor(1, {.dtype = DType::Float32, .device = Device(DeviceType::CPU)});  // by value on any device
  for (const Tensor& t : steps) Tensor(t).add_(one);
}

double increment_step(Value& st) {
  Value& s = st["step"];
  if (s.is_tensor()) {
    Tensor& t = s.to_tensor();
    // step_t += 1 in the tensor's own dtype (float32 in torch 1.13).
    t.add_(ember::scalar_tensor(1, {.dtype = t.dtype(), .device = Device(DeviceType::CPU)}));
    return t.item<double>();
  }
  int64_t n = s.is_none() ? 1 : s.to_int() + 1;
  s = n;
  return double(n);
}

}  // namespace ember::optim::detail
