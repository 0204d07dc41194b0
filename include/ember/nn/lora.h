#pragma once
// LoRA for any C++ module tree (the seeds' LoRALinear, PEFT's layout): a layer that can carry a
// low-rank adapter (nn::Linear, GPT-2's Conv1D) derives from LoRALayer; inject_lora walks a
// module's children, gives the ones whose names match an adapter and freezes everything else.
// The host keeps calling its own forward, which adds scaling * B(A(dropout(x))); this is why the
// adapter lives inside the layer instead of wrapping it: C++ parents call their children through
// typed members, so a replaced child would never be called.
// Names are PEFT's: "<layer>.lora_A.weight" [r, in] (kaiming-uniform), "<layer>.lora_B.weight"
// [out, r] (zeros, so a fresh adapter leaves the output unchanged), scaling = alpha / r.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

class Linear;

struct LoRAConfig {
  int64_t r = 8;
  double alpha = 16;
  double dropout = 0.0;  // on the adapter's input, in training mode
};

class LoRALayer {
 public:
  virtual ~LoRALayer() = default;
  // Registers lora_A [r, in] and lora_B [out, r] on `self`, the host module.
  void add_lora(Module& self, const LoRAConfig& config);
  virtual int64_t lora_in_features() const = 0;
  virtual int64_t lora_out_features() const = 0;
  bool has_lora() const { return lora_A != nullptr; }
  // Whether forward adds the adapter's output: present and not merged into the weight.
  bool lora_active() const { return lora_A != nullptr && !lora_merged; }
  // scaling * B(A(dropout(x))), the adapter's share of the output.
  Tensor lora_output(const Tensor& x, bool training) const;
  // scaling * B A, (out, in): what merging adds to an (out, in) weight.
  Tensor lora_delta() const;
  // Folds the adapter into the weight (on) or takes it back out (off); no-op when already so.
  virtual void merge_lora(bool on) = 0;

  std::shared_ptr<Linear> lora_A, lora_B;
  double lora_scaling = 1.0, lora_dropout = 0.0;
  bool lora_merged = false;
};

// Gives every LoRALayer under `root` whose dotted name matches one of `targets` (the whole name,
// or its last parts on a dot boundary: "fc1", "encoder.fc1") an adapter, and freezes every
// parameter that is not an adapter's. Returns how many layers got one; none is an error.
int64_t inject_lora(Module& root, const std::vector<std::string>& targets, const LoRAConfig& config = {});
void merge_lora(Module& root, bool merged = true);
// The adapters' parameters alone, by their names under root.
std::vector<std::pair<std::string, Tensor>> lora_state_dict(const Module& root);
void save_lora(const Module& root, const std::string& path);  // safetensors, written atomically
void load_lora(Module& root, const std::string& path);

}  // namespace ember::nn
