#pragma once
// GPT-2 in C++ with Hugging Face's module and parameter names (the Python package's
// ember.models.GPT2LMHeadModel is the same model): transformers folders load as they are
// (config.json + model.safetensors or pytorch_model.bin) and save_pretrained writes one that
// transformers loads.
//
//   auto model = ember::models::GPT2LMHeadModel::from_pretrained("folder");
//   Tensor logits = model->forward(ids);                          // [B, T, vocab]
//   Tensor loss = model->loss(ids, ids);                          // next-token cross entropy
//   Tensor out = model->generate(ids, {.max_new_tokens = 50, .do_sample = true, .top_k = 40});
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/generator.h"
#include "ember/nn/module.h"

namespace ember::models {

struct GPT2Config {
  int64_t vocab_size = 50257, n_positions = 1024, n_embd = 768, n_layer = 12, n_head = 12;
  std::optional<int64_t> n_inner;  // default 4 n_embd
  double layer_norm_epsilon = 1e-5;
  double resid_pdrop = 0.1, embd_pdrop = 0.1, attn_pdrop = 0.1;
  double initializer_range = 0.02;
  bool scale_attn_weights = true;
  bool tie_word_embeddings = true;
  std::string activation_function = "gelu_new";
  int64_t bos_token_id = 50256, eos_token_id = 50256;
  // Per-block gradient checkpointing in training (each block recomputed during backward; the
  // Python config's use_checkpoint, transformers' gradient_checkpointing). Not saved to config.json.
  bool use_checkpoint = false;

  // transformers' config.json (unknown keys are ignored; a model_type other than gpt2 is an error)
  static GPT2Config from_json_file(const std::string& path);
  std::string to_json() const;
};

using KVCache = std::vector<std::pair<Tensor, Tensor>>;  // per layer: keys, values [B, H, T, D]

class GPT2LMHeadModel : public nn::Module {
 public:
  explicit GPT2LMHeadModel(GPT2Config config);
  // Logits for token ids [B, T] (or [T]).
  Tensor forward(const Tensor& input_ids) override;
  // With a cache: `past` (may be null) holds the previous positions' keys and values; when
  // `present` is given it receives them extended by these positions. attention_mask [B, past +
  // T] marks real tokens (1) and left padding (0).
  Tensor forward_cached(const Tensor& input_ids, const KVCache* past, KVCache* present,
                        const std::optional<Tensor>& attention_mask = std::nullopt);
  // Mean cross entropy of logits at t against labels at t + 1 (ignore_index -100).
  Tensor loss(const Tensor& input_ids, const Tensor& labels);
  std::string name() const override { return "GPT2LMHeadModel"; }
  const GPT2Config& config() const { return config_; }

  static std::shared_ptr<GPT2LMHeadModel> from_pretrained(const std::string& folder);
  void save_pretrained(const std::string& folder);
  // transformers' state dict names ("transformer.h.0.attn.c_attn.weight", ...); a tied lm_head
  // and old checkpoints' attention-mask buffers are skipped; a missing or misshapen tensor is an
  // error naming it.
  // assign: a checkpoint tensor of the parameter's dtype and device becomes the parameter's memory
  // (no copy; the caller must not reuse it), as load_state_dict(assign=True).
  void load_hf_state_dict(const std::vector<std::pair<std::string, Tensor>>& state, bool assign = false);

  // LoRA on the Conv1D projections named in `targets` (last name part, e.g. "c_attn", "c_proj",
  // "c_fc", or a full dotted name): adapters "<layer>.lora_A.weight" [r, in] and
  // "<layer>.lora_B.weight" [out, r] (B starts at zero; PEFT's names, the Python side's too),
  // scaled by alpha / r; every other parameter is frozen. Returns how many layers were wrapped.
  int64_t inject_lora(const std::vector<std::string>& targets, int64_t r = 8, double alpha = 16);
  void merge_lora(bool merged = true);  // W += (alpha / r) B A (false: back)
  std::vector<std::pair<std::string, Tensor>> lora_state_dict();
  void save_lora(const std::string& path);  // the adapters alone, safetensors
  void load_lora(const std::string& path);

  struct GenerateOptions {
    int64_t max_new_tokens = 20;
    bool do_sample = false;
    double temperature = 1.0;
    int64_t top_k = 0;    // 0: off
    double top_p = 1.0;   // 1: off
    std::optional<int64_t> eos_token_id;
    Generator* generator = nullptr;
    std::optional<Tensor> attention_mask;  // prompts of different lengths, left-padded
  };
  // Greedy or sampled continuation with a KV cache; past n_positions a sliding window.
  Tensor generate(const Tensor& input_ids, const GenerateOptions& options);
  Tensor generate(const Tensor& input_ids) { return generate(input_ids, GenerateOptions{}); }

 private:
  class Impl;
  GPT2Config config_;
  std::shared_ptr<nn::Module> transformer_;
  std::shared_ptr<nn::Module> lm_head_;  // only when the embedding is not tied
};

}  // namespace ember::models
