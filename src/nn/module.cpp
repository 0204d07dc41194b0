#include "ember/nn/module.h"

#include <set>
#include <sstream>
#include <unordered_map>

#include "ember/ops.h"

namespace ember::nn {

Tensor Module::forward(const Tensor&) {
  throw NotImplementedError(::ember::detail::cat("Module [", name(), "] is missing the required \"forward\" function"));
}

Tensor& Module::register_parameter(const std::string& name, Tensor* slot) {
  EMBER_CHECK(name.find('.') == std::string::npos, "parameter name can't contain \".\"");
  for (auto& p : params_)
    if (p.name == name) { p.slot = slot; p.owned.reset(); return *slot; }
  params_.push_back({name, slot, nullptr, true});
  return *slot;
}
Tensor& Module::register_parameter(const std::string& name, Tensor value, bool requires_grad) {
  auto owned = std::make_shared<Tensor>(make_parameter(std::move(value), requires_grad));
  Tensor& ref = register_parameter(name, owned.get());
  for (auto& p : params_) if (p.name == name) p.owned = owned;
  return ref;
}
Tensor& Module::register_buffer(const std::string& name, Tensor* slot, bool persistent) {
  EMBER_CHECK(name.find('.') == std::string::npos, "buffer name can't contain \".\"");
  for (auto& b : buffers_)
    if (b.name == name) { b.slot = slot; b.owned.reset(); b.persistent = persistent; return *slot; }
  buffers_.push_back({name, slot, nullptr, persistent});
  return *slot;
}
Tensor& Module::register_buffer(const std::string& name, Tensor value, bool persistent) {
  auto owned = std::make_shared<Tensor>(std::move(value));
  Tensor& ref = register_buffer(name, owned.get(), persistent);
  for (auto& b : buffers_) if (b.name == name) b.owned = owned;
  return ref;
}
Module& Module::register_module(const std::string& name, Module* child) {
  EMBER_CHECK(name.find('.') == std::string::npos, "module name can't contain \".\", got: ", name);
  for (auto& c : children_)
    if (c.name == name) { c.module = child; c.owned.reset(); return *child; }
  children_.push_back({name, child, nullptr});
  return *child;
}
Module& Module::register_module(const std::string& name, std::shared_ptr<Module> child) {
  Module& ref = register_module(name, child.get());
  for (auto& c : children_) if (c.name == name) c.owned = std::move(child);
  return ref;
}

// ---- traversal

std::vector<std::pair<std::string, Module*>> Module::named_children() const {
  std::vector<std::pair<std::string, Module*>> out;
  for (const auto& c : children_) out.emplace_back(c.name, c.module);
  return out;
}
std::vector<Module*> Module::children() const {
  std::vector<Module*> out;
  for (const auto& c : children_) out.push_back(c.module);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules(const std::string& prefix) {
  std::vector<std::pair<std::string, Module*>> out;
  std::set<Module*> seen;
  std::vector<std::pair<std::string, Module*>> stack{{prefix, this}};
  while (!stack.empty()) {  // depth-first, children in registration order
    auto [p, m] = stack.back();
    stack.pop_back();
    if (!seen.insert(m).second) continue;
    out.emplace_back(p, m);
    for (auto it = m->children_.rbegin(); it != m->children_.rend(); ++it)
      stack.emplace_back(p.empty() ? it->name : p + "." + it->name, it->module);
  }
  return out;
}
std::vector<Module*> Module::modules() {
  std::vector<Module*> out;
  for (auto& [n, m] : named_modules()) out.push_back(m);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_tensors(bool recurse, bool buffers) const {
  std::vector<std::pair<std::string, Tensor>> out;
  std::set<TensorImpl*> seen;  // a tensor shared by two modules (weight tying) appears once
  std::vector<std::pair<std::string, Module*>> mods =
      recurse ? const_cast<Module*>(this)->named_modules() : std::vector<std::pair<std::string, Module*>>{{"", const_cast<Module*>(this)}};
  for (auto& [prefix, m] : mods) {
    for (const auto& slot : buffers ? m->buffers_ : m->params_) {
      const Tensor& t = *slot.slot;
      if (!t.defined() || !seen.insert(t.impl()).second) continue;
      out.emplace_back(prefix.empty() ? slot.name : prefix + "." + slot.name, t);
    }
  }
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const { return named_tensors(recurse, false); }
std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const { return named_tensors(recurse, true); }
std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}
std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

Module* Module::get_submodule(const std::string& dotted) {
  if (dotted.empty()) return this;
  Module* m = this;
  std::stringstream ss(dotted);
  std::string part;
  while (std::getline(ss, part, '.')) {
    Module* next = nullptr;
    for (auto& c : m->children_) if (c.name == part) next = c.module;
    EMBER_CHECK(next, name(), " has no attribute `", part, "`");
    m = next;
  }
  return m;
}

Tensor& Module::get_parameter(const std::string& dotted) {
  auto dot = dotted.rfind('.');
  Module* owner = dot == std::string::npos ? this : get_submodule(dotted.substr(0, dot));
  std::string leaf = dot == std::string::npos ? dotted : dotted.substr(dot + 1);
  for (auto& p : owner->params_) if (p.name == leaf) return *p.slot;
  throw Error(::ember::detail::cat(owner->name(), " has no parameter `", leaf, "`"));
}

// ---- mode and housekeeping

Module& Module::train(bool on) {
  training_ = on;
  for (auto& c : children_) c.module->train(on);
  return *this;
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& c : children_) c.module->apply(fn);
  fn(*this);
  return *this;
}

Module& Module::to(DType dtype) {
  NoGradGuard no_grad;
  for (auto& [n, m] : named_modules()) {
    for (auto& p : m->params_)
      if (p.slot->defined() && p.slot->is_floating_point() && p.slot->dtype() != dtype) {
        bool rg = p.slot->requires_grad();
        *p.slot = make_parameter(p.slot->to(dtype), rg);
      }
    for (auto& b : m->buffers_)
      if (b.slot->defined() && b.slot->is_floating_point()) *b.slot = b.slot->to(dtype);
  }
  return *this;
}

Module& Module::to(Device device) {
  NoGradGuard no_grad;
  for (auto& [n, m] : named_modules()) {
    for (auto& p : m->params_)
      if (p.slot->defined() && !(p.slot->device() == device)) {
        bool rg = p.slot->requires_grad();
        *p.slot = make_parameter(p.slot->to(device), rg);
      }
    for (auto& b : m->buffers_)
      if (b.slot->defined()) *b.slot = b.slot->to(device);
  }
  return *this;
}

Module& Module::to_empty(Device device) {
  NoGradGuard no_grad;
  std::unordered_map<const TensorImpl*, Tensor> fresh;
  auto replace = [&](Tensor& slot, bool parameter) {
    if (!slot.defined()) return;
    auto [it, added] = fresh.try_emplace(slot.impl());
    if (added) {
      Tensor t = empty(slot.sizes(), {.dtype = slot.dtype(), .device = device});
      it->second = parameter ? make_parameter(t, slot.requires_grad()) : t;
    }
    slot = it->second;
  };
  for (auto& [n, m] : named_modules()) {
    for (auto& p : m->params_) replace(*p.slot, true);
    for (auto& b : m->buffers_) replace(*b.slot, false);
  }
  return *this;
}

void Module::zero_grad(bool set_to_none) {
  for (auto& p : parameters()) {
    if (!p.grad().defined()) continue;
    Tensor mp = p;
    if (set_to_none) mp.set_grad(Tensor());
    else mp.mutable_grad().zero_();
  }
}

Module& Module::requires_grad_(bool on) {
  for (auto& p : parameters()) {
    Tensor mp = p;
    mp.requires_grad_(on);
  }
  return *this;
}

int64_t Module::num_parameters(bool only_trainable) const {
  int64_t n = 0;
  for (auto& p : parameters())
    if (!only_trainable || p.requires_grad()) n += p.numel();
  return n;
}

// ---- state dict

StateDict Module::state_dict(const std::string& prefix) const {
  StateDict out;
  for (auto& [p, m] : const_cast<Module*>(this)->named_modules(prefix)) {
    std::string pre = p.empty() ? "" : p + ".";
    for (const auto& t : m->params_)
      if (t.slot->defined()) out.emplace_back(pre + t.name, t.slot->detach());
    for (const auto& b : m->buffers_)
      if (b.persistent && b.slot->defined()) out.emplace_back(pre + b.name, b.slot->detach());
  }
  return out;
}

LoadResult Module::load_state_dict(const StateDict& state, bool strict) {
  std::map<std::string, const Tensor*> incoming;
  for (const auto& [k, v] : state) incoming[k] = &v;
  LoadResult result;
  std::vector<std::string> errors;
  std::set<std::string> used;
  NoGradGuard no_grad;
  for (auto& [p, m] : named_modules()) {
    std::string pre = p.empty() ? "" : p + ".";
    auto load = [&](const std::string& key, Tensor* slot) {
      auto it = incoming.find(key);
      if (it == incoming.end()) { result.missing_keys.push_back(key); return; }
      used.insert(key);
      const Tensor& src = *it->second;
      if (!(IntArrayRef(src.sizes()) == IntArrayRef(slot->sizes()))) {
        std::ostringstream os;
        os << "size mismatch for " << key << ": copying a param with shape " << IntArrayRef(src.sizes())
           << " from checkpoint, the shape in current model is " << IntArrayRef(slot->sizes()) << ".";
        errors.push_back(os.str());
        return;
      }
      slot->copy_(src);
    };
    for (auto& t : m->params_) if (t.slot->defined()) load(pre + t.name, t.slot);
    for (auto& b : m->buffers_) if (b.persistent && b.slot->defined()) load(pre + b.name, b.slot);
  }
  for (const auto& [k, v] : state) if (!used.count(k)) result.unexpected_keys.push_back(k);
  if (strict) {
    if (!result.unexpected_keys.empty()) {
      std::string s = "Unexpected key(s) in state_dict: ";
      for (size_t i = 0; i < result.unexpected_keys.size(); ++i) s += (i ? ", \"" : "\"") + result.unexpected_keys[i] + "\"";
      errors.insert(errors.begin(), s + ". ");
    }
    if (!result.missing_keys.empty()) {
      std::string s = "Missing key(s) in state_dict: ";
      for (size_t i = 0; i < result.missing_keys.size(); ++i) s += (i ? ", \"" : "\"") + result.missing_keys[i] + "\"";
      errors.insert(errors.begin(), s + ". ");
    }
  }
  if (!errors.empty()) {
    std::string msg = "Error(s) in loading state_dict for " + name() + ":";
    for (const auto& e : errors) msg += "\n\t" + e;
    throw Error(msg);
  }
  return result;
}

// ---- printing

std::string Module::repr() const {
  std::string extra = extra_repr();
  if (children_.empty()) return name() + "(" + extra + ")";
  std::string s = name() + "(";
  if (!extra.empty()) s += "\n  " + extra;
  for (const auto& c : children_) {
    std::string child = c.module->repr();
    std::string indented;
    for (char ch : child) { indented += ch; if (ch == '\n') indented += "  "; }
    s += "\n  (" + c.name + "): " + indented;
  }
  return s + "\n)";
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.repr(); }

}  // namespace ember::nn
