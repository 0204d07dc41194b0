// GPT-2 (include/ember/models/gpt2.h): transformers' GPT-2 layer for layer — Conv1D projections
// (weight [in, out]), pre-norm blocks, tanh GELU, a causal mask that lets query i see keys up to
// its absolute position (so the KV cache gives what recomputation gives), the LM head tied to
// the token embedding. The Python package's ember.models.gpt2 is the same model.
#include "ember/models/gpt2.h"

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/json_string.h"
#include "core/read_file.h"
#include "ember/autograd/autograd.h"
#include "ember/autograd/grad_mode.h"
#include "ember/nn.h"
#include "ember/ops.h"
#include "ember/serialize/serialize.h"
#include "ember/serialize/value.h"
#include "serialize/json.h"

namespace ember::models {
namespace F = nn::functional;

namespace {

// transformers' Conv1D: y = x W + b with W [in, out]; can carry a LoRA adapter (nn/lora.h).
class Conv1D : public nn::Module, public nn::LoRALayer {
 public:
  Conv1D(int64_t nf, int64_t nx, double std) : nf_(nf) {
    register_parameter("weight", &weight);
    register_parameter("bias", &bias);
    weight = randn({nx, nf}).mul(Scalar(std)).requires_grad_();
    bias = zeros({nf}).requires_grad_();
  }
  Tensor forward(const Tensor& x) override {
    Shape shape(x.sizes().begin(), x.sizes().end());
    shape.back() = nf_;
    Tensor y = addmm(bias, x.reshape({-1, x.size(-1)}), weight).view(shape);
    if (lora_active()) y = y + lora_output(x, is_training());
    return y;
  }
  std::string name() const override { return "Conv1D"; }

  // LoRA (nn/lora.h): the weight is [in, out], so merging adds the adapter's delta transposed
  int64_t lora_in_features() const override { return weight.size(0); }
  int64_t lora_out_features() const override { return nf_; }
  void merge_lora(bool on) override {
    if (!has_lora() || lora_merged == on) return;
    autograd::NoGradGuard no_grad;
    if (on) weight.add_(lora_delta().t());
    else weight.sub_(lora_delta().t());
    lora_merged = on;
  }
  Tensor weight, bias;

 private:
  int64_t nf_;
};

Tensor activation(const Tensor& x, const std::string& name) {
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return F::gelu(x, "tanh");
  if (name == "gelu") return F::gelu(x);
  if (name == "relu") return F::relu(x);
  if (name == "silu") return F::silu(x);
  throw ValueError(detail::cat("GPT2Config: activation_function '", name, "' is not supported"));
}

class Attention : public nn::Module {
 public:
  Attention(const GPT2Config& c)
      : heads_(c.n_head), embd_(c.n_embd), attn_pdrop_(c.attn_pdrop),
        c_attn(std::make_shared<Conv1D>(3 * c.n_embd, c.n_embd, c.initializer_range)),
        c_proj(std::make_shared<Conv1D>(c.n_embd, c.n_embd, c.initializer_range / std::sqrt(2.0 * double(c.n_layer)))),
        dropout(std::make_shared<nn::Dropout>(c.resid_pdrop)) {
    register_module("c_attn", c_attn);
    register_module("c_proj", c_proj);
    register_module("resid_dropout", dropout);
    scale_ = c.scale_attn_weights ? 1.0 / std::sqrt(double(embd_ / heads_)) : 1.0;
  }
  Tensor split_heads(const Tensor& x) const {
    return x.view({x.size(0), x.size(1), heads_, embd_ / heads_}).transpose(1, 2);
  }
  Tensor run(const Tensor& x, const std::pair<Tensor, Tensor>* past, std::pair<Tensor, Tensor>* present,
             const std::optional<Tensor>& mask) {
    auto qkv = c_attn->forward(x).split(embd_, 2);
    Tensor q = split_heads(qkv[0]), k = split_heads(qkv[1]), v = split_heads(qkv[2]);
    if (past) {
      k = cat({past->first, k}, -2);
      v = cat({past->second, v}, -2);
    }
    if (present) *present = {k, v};
    const double p = is_training() ? attn_pdrop_ : 0.0;
    Tensor y = mask ? F::scaled_dot_product_attention(q, k, v, mask, p, false, scale_)
                    : F::scaled_dot_product_attention(q, k, v, std::nullopt, p, true, scale_);
    y = y.transpose(1, 2).contiguous().view({x.size(0), x.size(1), embd_});
    return dropout->forward(c_proj->forward(y));
  }
  Tensor forward(const Tensor& x) override { return run(x, nullptr, nullptr, std::nullopt); }
  std::string name() const override { return "GPT2Attention"; }

 private:
  int64_t heads_, embd_;
  double attn_pdrop_, scale_ = 1.0;

 public:
  std::shared_ptr<Conv1D> c_attn, c_proj;
  std::shared_ptr<nn::Dropout> dropout;
};

class MLP : public nn::Module {
 public:
  MLP(const GPT2Config& c)
      : act_(c.activation_function),
        c_fc(std::make_shared<Conv1D>(c.n_inner.value_or(4 * c.n_embd), c.n_embd, c.initializer_range)),
        c_proj(std::make_shared<Conv1D>(c.n_embd, c.n_inner.value_or(4 * c.n_embd),
                                        c.initializer_range / std::sqrt(2.0 * double(c.n_layer)))),
        dropout(std::make_shared<nn::Dropout>(c.resid_pdrop)) {
    register_module("c_fc", c_fc);
    register_module("c_proj", c_proj);
    register_module("dropout", dropout);
  }
  Tensor forward(const Tensor& x) override { return dropout->forward(c_proj->forward(activation(c_fc->forward(x), act_))); }
  std::string name() const override { return "GPT2MLP"; }

 private:
  std::string act_;

 public:
  std::shared_ptr<Conv1D> c_fc, c_proj;
  std::shared_ptr<nn::Dropout> dropout;
};

class Block : public nn::Module {
 public:
  explicit Block(const GPT2Config& c)
      : ln_1(std::make_shared<nn::LayerNorm>(c.n_embd, c.layer_norm_epsilon)), attn(std::make_shared<Attention>(c)),
        ln_2(std::make_shared<nn::LayerNorm>(c.n_embd, c.layer_norm_epsilon)), mlp(std::make_shared<MLP>(c)) {
    register_module("ln_1", ln_1);
    register_module("attn", attn);
    register_module("ln_2", ln_2);
    register_module("mlp", mlp);
  }
  Tensor run(const Tensor& x, const std::pair<Tensor, Tensor>* past, std::pair<Tensor, Tensor>* present,
             const std::optional<Tensor>& mask) {
    Tensor h = x + attn->run(ln_1->forward(x), past, present, mask);
    return h + mlp->forward(ln_2->forward(h));
  }
  Tensor forward(const Tensor& x) override { return run(x, nullptr, nullptr, std::nullopt); }
  std::string name() const override { return "GPT2Block"; }
  std::shared_ptr<nn::LayerNorm> ln_1;
  std::shared_ptr<Attention> attn;
  std::shared_ptr<nn::LayerNorm> ln_2;
  std::shared_ptr<MLP> mlp;
};

class Transformer : public nn::Module {
 public:
  explicit Transformer(const GPT2Config& c)
      : config(c), wte(std::make_shared<nn::Embedding>(c.vocab_size, c.n_embd)),
        wpe(std::make_shared<nn::Embedding>(c.n_positions, c.n_embd)), drop(std::make_shared<nn::Dropout>(c.embd_pdrop)),
        h(std::make_shared<nn::ModuleList>()), ln_f(std::make_shared<nn::LayerNorm>(c.n_embd, c.layer_norm_epsilon)) {
    register_module("wte", wte);
    register_module("wpe", wpe);
    register_module("drop", drop);
    for (int64_t i = 0; i < c.n_layer; ++i) h->push_back(std::make_shared<Block>(c));
    register_module("h", h);
    register_module("ln_f", ln_f);
    autograd::NoGradGuard no_grad;  // transformers' initialisation
    wte->weight.normal_(0.0, c.initializer_range);
    wpe->weight.normal_(0.0, c.initializer_range);
  }
  // attention_mask [B, before + t] (1: a token, 0: left padding), optional.
  Tensor run(Tensor ids, const KVCache* past, KVCache* present, const std::optional<Tensor>& attention_mask = std::nullopt) {
    if (ids.dim() == 1) ids = ids.unsqueeze(0);
    const int64_t t = ids.size(1);
    const int64_t before = past && !past->empty() ? (*past)[0].first.size(-2) : 0;
    EMBER_CHECK_VALUE(before + t <= config.n_positions, "GPT2: ", before + t, " positions exceed n_positions = ",
                      config.n_positions);
    Tensor pos = arange(Scalar(before), Scalar(before + t), 1, {.dtype = kInt64, .device = ids.device()}).unsqueeze(0);
    if (attention_mask) {  // left padding: positions count the real tokens
      EMBER_CHECK_VALUE(attention_mask->dim() == 2 && attention_mask->size(0) == ids.size(0) &&
                            attention_mask->size(1) == before + t,
                        "GPT2: attention_mask must be [batch, ", before + t, "], got ", attention_mask->sizes());
      pos = attention_mask->to(kInt64).cumsum(-1).sub(Scalar(1)).clamp_min(Scalar(0)).narrow(1, before, t);
    }
    std::optional<Tensor> mask;
    if (before > 0 || attention_mask) {  // query i (absolute position before + i) sees keys j <= before + i
      Tensor rows = arange(Scalar(before), Scalar(before + t), 1, {.dtype = kInt64, .device = ids.device()}).unsqueeze(1);
      Tensor cols = arange(Scalar(before + t), {.dtype = kInt64, .device = ids.device()}).unsqueeze(0);
      Tensor m = cols.le(rows).unsqueeze(0).unsqueeze(0);  // [1, 1, t, before + t]
      if (attention_mask) {
        m = m.logical_and(attention_mask->to(kBool).unsqueeze(1).unsqueeze(1));
        // a padded query row would see nothing: let it see itself so the softmax stays finite
        m = m.logical_or(cols.eq(rows).unsqueeze(0).unsqueeze(0));
      }
      mask = m;
    }
    Tensor x = drop->forward(wte->forward(ids) + wpe->forward(pos));
    if (present) present->assign(size_t(config.n_layer), {});
    const bool checkpointed = config.use_checkpoint && is_training() && !present && !past && autograd::GradMode::is_enabled();
    for (int64_t i = 0; i < config.n_layer; ++i) {
      Block& block = h->at<Block>(i);
      if (checkpointed) {  // keep only the block's input; recompute its inside during backward
        x = autograd::checkpoint([&block, mask](const autograd::variable_list& in) -> autograd::variable_list {
              return {block.run(in[0], nullptr, nullptr, mask)};
            }, {x})[0];
      } else {
        x = block.run(x, past && !past->empty() ? &(*past)[size_t(i)] : nullptr,
                      present ? &(*present)[size_t(i)] : nullptr, mask);
      }
    }
    return ln_f->forward(x);
  }
  Tensor forward(const Tensor& ids) override { return run(ids, nullptr, nullptr); }
  std::string name() const override { return "GPT2Model"; }
  GPT2Config config;
  std::shared_ptr<nn::Embedding> wte, wpe;
  std::shared_ptr<nn::Dropout> drop;
  std::shared_ptr<nn::ModuleList> h;
  std::shared_ptr<nn::LayerNorm> ln_f;
};

Tensor pick_next(Tensor logits, const GPT2LMHeadModel::GenerateOptions& o) {
  if (!o.do_sample) return logits.argmax(-1);
  logits = logits.div(Scalar(std::max(o.temperature, 1e-8)));
  const double neg_inf = -std::numeric_limits<double>::infinity();
  if (o.top_k > 0) {
    auto [values, _] = topk(logits, std::min(o.top_k, logits.size(-1)), -1);
    Tensor kth = values.narrow(-1, values.size(-1) - 1, 1);
    logits = logits.masked_fill(logits.lt(kth), Scalar(neg_inf));
  }
  if (o.top_p < 1.0) {
    auto [sorted, order] = sort(logits, -1, /*descending=*/true);
    Tensor probs = sorted.softmax(-1);
    Tensor drop = (probs.cumsum(-1) - probs).gt(Scalar(o.top_p));  // keep the smallest prefix reaching top_p
    sorted = sorted.masked_fill(drop, Scalar(neg_inf));
    logits = full_like(logits, Scalar(neg_inf)).scatter(-1, order, sorted);
  }
  return multinomial(logits.softmax(-1), 1, false, o.generator).squeeze(-1);
}

}  // namespace

// ---------------------------------------------------------------- config
GPT2Config GPT2Config::from_json_file(const std::string& path) {
  const std::string text = read_whole_file(path, "GPT2Config");
  const json::Json root = json::JsonParser(text, path + ": invalid JSON").parse_document();
  EMBER_CHECK_VALUE(root.kind == json::Json::Object, path, ": expected a JSON object");
  GPT2Config c;
  auto integer = [&](const char* key, int64_t& out) {
    if (const json::Json* v = json::member(root, key); v && v->kind == json::Json::Number) out = std::stoll(v->text);
  };
  auto number = [&](const char* key, double& out) {
    if (const json::Json* v = json::member(root, key); v && v->kind == json::Json::Number) out = std::stod(v->text);
  };
  auto boolean = [&](const char* key, bool& out) {
    if (const json::Json* v = json::member(root, key); v && v->kind == json::Json::Bool) out = v->b;
  };
  if (const json::Json* mt = json::member(root, "model_type"); mt && mt->kind == json::Json::String)
    EMBER_CHECK_VALUE(mt->text == "gpt2", path, ": a '", mt->text, "' model, not gpt2");
  integer("vocab_size", c.vocab_size);
  integer("n_positions", c.n_positions);
  integer("n_embd", c.n_embd);
  integer("n_layer", c.n_layer);
  integer("n_head", c.n_head);
  integer("bos_token_id", c.bos_token_id);
  integer("eos_token_id", c.eos_token_id);
  if (const json::Json* v = json::member(root, "n_inner"); v && v->kind == json::Json::Number) c.n_inner = std::stoll(v->text);
  number("layer_norm_epsilon", c.layer_norm_epsilon);
  number("resid_pdrop", c.resid_pdrop);
  number("embd_pdrop", c.embd_pdrop);
  number("attn_pdrop", c.attn_pdrop);
  number("initializer_range", c.initializer_range);
  boolean("scale_attn_weights", c.scale_attn_weights);
  boolean("tie_word_embeddings", c.tie_word_embeddings);
  if (const json::Json* v = json::member(root, "activation_function"); v && v->kind == json::Json::String)
    c.activation_function = v->text;
  EMBER_CHECK_VALUE(c.n_head > 0 && c.n_embd % c.n_head == 0, path, ": n_embd (", c.n_embd,
                    ") must be divisible by n_head (", c.n_head, ")");
  return c;
}

std::string GPT2Config::to_json() const {
  std::ostringstream o;
  o.precision(17);
  o << "{\n  \"activation_function\": ";
  std::string act;
  append_json_string(act, activation_function);
  o << act << ",\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"attn_pdrop\": " << attn_pdrop
    << ",\n  \"bos_token_id\": " << bos_token_id << ",\n  \"embd_pdrop\": " << embd_pdrop
    << ",\n  \"eos_token_id\": " << eos_token_id << ",\n  \"initializer_range\": " << initializer_range
    << ",\n  \"layer_norm_epsilon\": " << layer_norm_epsilon << ",\n  \"model_type\": \"gpt2\",\n  \"n_embd\": " << n_embd
    << ",\n  \"n_head\": " << n_head << ",\n  \"n_inner\": ";
  if (n_inner) o << *n_inner;
  else o << "null";
  o << ",\n  \"n_layer\": " << n_layer << ",\n  \"n_positions\": " << n_positions << ",\n  \"resid_pdrop\": " << resid_pdrop
    << ",\n  \"scale_attn_weights\": " << (scale_attn_weights ? "true" : "false")
    << ",\n  \"tie_word_embeddings\": " << (tie_word_embeddings ? "true" : "false") << ",\n  \"vocab_size\": " << vocab_size
    << "\n}\n";
  return o.str();
}

// ---------------------------------------------------------------- model
GPT2LMHeadModel::GPT2LMHeadModel(GPT2Config config) : config_(std::move(config)) {
  EMBER_CHECK_VALUE(config_.n_head > 0 && config_.n_embd % config_.n_head == 0, "GPT2Config: n_embd (", config_.n_embd,
                    ") must be divisible by n_head (", config_.n_head, ")");
  activation(zeros({1}), config_.activation_function);  // fails early on an unknown name
  transformer_ = std::make_shared<Transformer>(config_);
  register_module("transformer", transformer_);
  if (!config_.tie_word_embeddings) {
    auto head = std::make_shared<nn::Linear>(config_.n_embd, config_.vocab_size, false);
    autograd::NoGradGuard no_grad;
    head->weight.normal_(0.0, config_.initializer_range);
    lm_head_ = head;
    register_module("lm_head", lm_head_);
  }
}

Tensor GPT2LMHeadModel::forward_cached(const Tensor& input_ids, const KVCache* past, KVCache* present,
                                       const std::optional<Tensor>& attention_mask) {
  auto& t = static_cast<Transformer&>(*transformer_);
  Tensor hidden = t.run(input_ids, past, present, attention_mask);
  return lm_head_ ? lm_head_->forward(hidden) : F::linear(hidden, t.wte->weight);
}

Tensor GPT2LMHeadModel::forward(const Tensor& input_ids) { return forward_cached(input_ids, nullptr, nullptr); }

Tensor GPT2LMHeadModel::loss(const Tensor& input_ids, const Tensor& labels) {
  Tensor logits = forward(input_ids);
  const int64_t t = logits.size(-2);
  Tensor shifted = logits.narrow(-2, 0, t - 1).contiguous();
  Tensor target = (labels.dim() == 1 ? labels.unsqueeze(0) : labels).narrow(-1, 1, t - 1).contiguous();
  return F::cross_entropy(shifted.view({-1, shifted.size(-1)}), target.view({-1}));
}

void GPT2LMHeadModel::load_hf_state_dict(const std::vector<std::pair<std::string, Tensor>>& state, bool assign) {
  std::map<std::string, Tensor> own;
  for (auto& [k, v] : named_parameters()) own[k] = v;
  std::set<std::string> loaded;
  autograd::NoGradGuard no_grad;
  for (const auto& [raw, v] : state) {
    std::string k = raw;
    if (k.ends_with(".attn.bias") || k.ends_with(".attn.masked_bias")) continue;  // old checkpoints' mask buffers
    if (!k.starts_with("transformer.") && !k.starts_with("lm_head.")) k = "transformer." + k;
    if (k == "lm_head.weight" && config_.tie_word_embeddings) continue;
    auto it = own.find(k);
    EMBER_CHECK_VALUE(it != own.end(), "GPT2LMHeadModel: the checkpoint has '", k, "', which this config has not");
    EMBER_CHECK_VALUE(it->second.sizes() == v.sizes(), "GPT2LMHeadModel: ", k, " has shape ", v.sizes(),
                      " in the checkpoint, ", it->second.sizes(), " here");
    if (assign && v.dtype() == it->second.dtype() && v.device() == it->second.device() && v.is_contiguous())
      it->second.set_data(v);
    else
      it->second.copy_(v);
    loaded.insert(k);
  }
  for (const auto& [k, _] : own)
    EMBER_CHECK_VALUE(loaded.count(k), "GPT2LMHeadModel: the checkpoint lacks '", k, "'");
}

std::shared_ptr<GPT2LMHeadModel> GPT2LMHeadModel::from_pretrained(const std::string& folder) {
  namespace fs = std::filesystem;
  // Built on the meta device and given uninitialised memory: every parameter is then loaded, so
  // the random initialisation would be thrown away (2.3 s of the 124M model's load on this CPU).
  std::shared_ptr<GPT2LMHeadModel> model;
  {
    DefaultDeviceGuard meta{Device(DeviceType::Meta)};
    model = std::make_shared<GPT2LMHeadModel>(GPT2Config::from_json_file((fs::path(folder) / "config.json").string()));
  }
  model->to_empty(Device(DeviceType::CPU));
  const fs::path st = fs::path(folder) / "model.safetensors", bin = fs::path(folder) / "pytorch_model.bin";
  // The loaded tensors are this call's own: they become the parameters (no copy).
  if (fs::exists(st)) model->load_hf_state_dict(safetensors::load(st.string()), /*assign=*/true);
  else if (fs::exists(bin)) model->load_hf_state_dict(to_state_dict(load(bin.string())), /*assign=*/true);
  else throw Error(detail::cat("GPT2LMHeadModel::from_pretrained: no model.safetensors or pytorch_model.bin in ", folder));
  model->eval();
  return model;
}

void GPT2LMHeadModel::save_pretrained(const std::string& folder) {
  namespace fs = std::filesystem;
  fs::create_directories(folder);
  atomic_write_file((fs::path(folder) / "config.json").string(), config_.to_json());
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (auto& [k, v] : named_parameters()) tensors.emplace_back(k, v.detach().contiguous());
  safetensors::save(tensors, (fs::path(folder) / "model.safetensors").string(), {{"format", "pt"}});
}

// ---------------------------------------------------------------- LoRA
int64_t GPT2LMHeadModel::inject_lora(const std::vector<std::string>& targets, int64_t r, double alpha) {
  return nn::inject_lora(*this, targets, {.r = r, .alpha = alpha});
}

void GPT2LMHeadModel::merge_lora(bool merged) { nn::merge_lora(*this, merged); }

std::vector<std::pair<std::string, Tensor>> GPT2LMHeadModel::lora_state_dict() { return nn::lora_state_dict(*this); }

void GPT2LMHeadModel::save_lora(const std::string& path) { nn::save_lora(*this, path); }

void GPT2LMHeadModel::load_lora(const std::string& path) { nn::load_lora(*this, path); }

Tensor GPT2LMHeadModel::generate(const Tensor& input_ids, const GenerateOptions& o) {
  autograd::NoGradGuard no_grad;
  Tensor ids = input_ids.dim() == 1 ? input_ids.unsqueeze(0) : input_ids;
  KVCache cache;
  std::optional<Tensor> mask = o.attention_mask;
  Tensor logits = forward_cached(ids, nullptr, &cache, mask);
  logits = logits.select(1, logits.size(1) - 1);
  Tensor finished = zeros({ids.size(0)}, {.dtype = kBool, .device = ids.device()});
  for (int64_t step = 0; step < o.max_new_tokens; ++step) {
    Tensor next = pick_next(logits, o);
    if (o.eos_token_id) {
      next = where(finished, Scalar(*o.eos_token_id), next);
      finished = finished.logical_or(next.eq(Scalar(*o.eos_token_id)));
    }
    ids = cat({ids, next.unsqueeze(1)}, 1);
    if (mask) mask = cat({*mask, ones({mask->size(0), 1}, {.dtype = mask->dtype(), .device = mask->device()})}, 1);
    if (step + 1 == o.max_new_tokens || (o.eos_token_id && finished.all().item<bool>())) break;
    if (ids.size(1) > config_.n_positions) {  // a sliding window past the context, recomputed
      const int64_t from = ids.size(1) - config_.n_positions;
      logits = forward_cached(ids.narrow(1, from, config_.n_positions), nullptr, nullptr,
                              mask ? std::optional<Tensor>(mask->narrow(1, from, config_.n_positions)) : std::nullopt);
    } else {
      KVCache next_cache;
      logits = forward_cached(next.unsqueeze(1), &cache, &next_cache, mask);
      cache = std::move(next_cache);
    }
    logits = logits.select(1, logits.size(1) - 1);
  }
  return ids;
}

}  // namespace ember::models
