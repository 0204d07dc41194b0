// LoRA for C++ module trees (ember/nn/lora.h): the adapter a host layer carries, and the walks
// over a module tree that inject, merge, save and load adapters.
#include "ember/nn/lora.h"

#include <cmath>
#include <map>

#include "ember/autograd/grad_mode.h"
#include "ember/nn/functional.h"
#include "ember/nn/linear.h"
#include "ember/serialize/serialize.h"

namespace ember::nn {

void LoRALayer::add_lora(Module& self, const LoRAConfig& c) {
  EMBER_CHECK_VALUE(c.r > 0, "inject_lora: rank r must be positive, got ", c.r);
  EMBER_CHECK_VALUE(c.dropout >= 0.0 && c.dropout < 1.0, "inject_lora: dropout must be in [0, 1), got ", c.dropout);
  EMBER_CHECK(!lora_A, "inject_lora: this ", self.name(), " already has an adapter");
  lora_A = std::make_shared<Linear>(lora_in_features(), c.r, false);
  lora_B = std::make_shared<Linear>(c.r, lora_out_features(), false);
  {
    autograd::NoGradGuard no_grad;
    lora_B->weight.zero_();  // lora_A keeps Linear's kaiming_uniform(a=sqrt(5)), as PEFT
  }
  self.register_module("lora_A", lora_A);
  self.register_module("lora_B", lora_B);
  lora_scaling = c.alpha / double(c.r);
  lora_dropout = c.dropout;
  lora_merged = false;
}

Tensor LoRALayer::lora_output(const Tensor& x, bool training) const {
  const Tensor in = lora_dropout > 0.0 ? functional::dropout(x, lora_dropout, training) : x;
  return lora_B->forward(lora_A->forward(in)).mul(Scalar(lora_scaling));
}

Tensor LoRALayer::lora_delta() const { return lora_B->weight.matmul(lora_A->weight).mul(Scalar(lora_scaling)); }

namespace {

// name equals target, or ends with "." + target
bool name_matches(const std::string& name, const std::string& target) {
  if (name == target) return true;
  return name.size() > target.size() && name.compare(name.size() - target.size(), target.size(), target) == 0 &&
         name[name.size() - target.size() - 1] == '.';
}

bool is_adapter_parameter(const std::string& name) {
  return name.find("lora_A.") != std::string::npos || name.find("lora_B.") != std::string::npos;
}

// an adapter's own Linear (never given an adapter of its own)
bool is_adapter_module(const std::string& name) {
  return name_matches(name, "lora_A") || name_matches(name, "lora_B");
}

}  // namespace

int64_t inject_lora(Module& root, const std::vector<std::string>& targets, const LoRAConfig& config) {
  int64_t wrapped = 0;
  for (auto& [name, module] : root.named_modules()) {
    auto* layer = dynamic_cast<LoRALayer*>(module);
    if (!layer || layer->has_lora() || is_adapter_module(name)) continue;
    bool wanted = false;
    for (const auto& t : targets) wanted = wanted || name_matches(name, t);
    if (!wanted) continue;
    layer->add_lora(*module, config);
    ++wrapped;
  }
  if (wrapped == 0) {
    std::string names;
    for (const auto& t : targets) names += (names.empty() ? "" : ", ") + t;
    throw ValueError("inject_lora: no layer that takes an adapter (Linear, GPT-2's Conv1D) and has none yet is "
                     "named like " + names);
  }
  for (auto& [name, p] : root.named_parameters()) p.requires_grad_(is_adapter_parameter(name));
  return wrapped;
}

void merge_lora(Module& root, bool merged) {
  for (auto& [_, module] : root.named_modules())
    if (auto* layer = dynamic_cast<LoRALayer*>(module); layer && layer->has_lora()) layer->merge_lora(merged);
}

std::vector<std::pair<std::string, Tensor>> lora_state_dict(const Module& root) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& [name, p] : root.named_parameters())
    if (is_adapter_parameter(name)) out.emplace_back(name, p);
  return out;
}

void save_lora(const Module& root, const std::string& path) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (auto& [k, v] : lora_state_dict(root)) tensors.emplace_back(k, v.detach().contiguous());
  EMBER_CHECK_VALUE(!tensors.empty(), "save_lora: the model has no LoRA adapters (inject_lora first)");
  safetensors::save(tensors, path, {{"format", "pt"}});
}

void load_lora(Module& root, const std::string& path) {
  auto own = lora_state_dict(root);
  std::map<std::string, Tensor> mine(own.begin(), own.end());
  EMBER_CHECK_VALUE(!mine.empty(), "load_lora: the model has no LoRA adapters (inject_lora first, with the same "
                    "targets and rank as the saved ones)");
  const auto theirs = safetensors::load(path);
  EMBER_CHECK_VALUE(theirs.size() == mine.size(), "load_lora: ", path, " holds ", theirs.size(),
                    " adapter tensors, this model has ", mine.size());
  autograd::NoGradGuard no_grad;
  for (const auto& [k, v] : theirs) {
    auto it = mine.find(k);
    EMBER_CHECK_VALUE(it != mine.end(), "load_lora: '", k, "' is not one of this model's adapters");
    EMBER_CHECK_VALUE(it->second.sizes() == v.sizes(), "load_lora: '", k, "' has size ", v.sizes(),
                      ", this model's adapter has ", it->second.sizes());
    it->second.copy_(v);
  }
}

}  // namespace ember::nn
