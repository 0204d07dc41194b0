#pragma once
// Linear and the shape layers (Identity, Flatten, Unflatten).
#include "ember/nn/lora.h"
#include "ember/nn/module.h"

namespace ember::nn {

// y = x W^T + b over any leading dims. W: (out, in), kaiming_uniform(a=sqrt(5)); b: U(-1/sqrt(in), 1/sqrt(in)).
// Can carry a LoRA adapter (nn/lora.h): y += scaling * B(A(x)) until merged into W.
class Linear : public Module, public LoRALayer {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, TensorOptions opts = {});
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Linear"; }
  std::string extra_repr() const override;
  void reset_parameters();
  int64_t lora_in_features() const override { return in_features; }
  int64_t lora_out_features() const override { return out_features; }
  void merge_lora(bool on) override;

  int64_t in_features, out_features;
  Tensor weight, bias;  // bias undefined when bias=false
};

class Identity : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
  std::string name() const override { return "Identity"; }
};

class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) override { return x.flatten(start_dim, end_dim); }
  std::string name() const override { return "Flatten"; }
  std::string extra_repr() const override;
  int64_t start_dim, end_dim;
};

class Unflatten : public Module {
 public:
  Unflatten(int64_t dim, std::vector<int64_t> sizes) : dim(dim), sizes(std::move(sizes)) {}
  Tensor forward(const Tensor& x) override { return x.unflatten(dim, sizes); }
  std::string name() const override { return "Unflatten"; }
  std::string extra_repr() const override;
  int64_t dim;
  std::vector<int64_t> sizes;
};

}  // namespace ember::nn
