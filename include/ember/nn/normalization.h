#pragma once
// Normalisation layers and Embedding.
#include "ember/nn/functional.h"
#include "ember/nn/module.h"

namespace ember::nn {

// BatchNorm over dim 1 of (N, C) / (N, C, L) (BatchNorm1d) or (N, C, H, W) (BatchNorm2d).
// Buffers running_mean, running_var, num_batches_tracked; momentum nullopt = cumulative average.
class BatchNorm : public Module {
 public:
  BatchNorm(int64_t num_features, double eps = 1e-5, std::optional<double> momentum = 0.1, bool affine = true,
            bool track_running_stats = true);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t num_features;
  double eps;
  std::optional<double> momentum;
  bool affine, track_running_stats;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 protected:
  virtual void check_input(const Tensor& x) const = 0;
};

class BatchNorm1d : public BatchNorm {
 public:
  using BatchNorm::BatchNorm;
  std::string name() const override { return "BatchNorm1d"; }
 protected:
  void check_input(const Tensor& x) const override;
};

class BatchNorm2d : public BatchNorm {
 public:
  using BatchNorm::BatchNorm;
  std::string name() const override { return "BatchNorm2d"; }
 protected:
  void check_input(const Tensor& x) const override;
};

class LayerNorm : public Module {
 public:
  LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true, bool bias = true);
  LayerNorm(int64_t normalized_size, double eps = 1e-5, bool elementwise_affine = true, bool bias = true)
      : LayerNorm(std::vector<int64_t>{normalized_size}, eps, elementwise_affine, bias) {}
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "LayerNorm"; }
  std::string extra_repr() const override;
  std::vector<int64_t> normalized_shape;
  double eps;
  Tensor weight, bias;
};

class RMSNorm : public Module {
 public:
  RMSNorm(std::vector<int64_t> normalized_shape, std::optional<double> eps = std::nullopt, bool elementwise_affine = true);
  RMSNorm(int64_t normalized_size, std::optional<double> eps = std::nullopt, bool elementwise_affine = true)
      : RMSNorm(std::vector<int64_t>{normalized_size}, eps, elementwise_affine) {}
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "RMSNorm"; }
  std::string extra_repr() const override;
  std::vector<int64_t> normalized_shape;
  std::optional<double> eps;
  Tensor weight;
};

class GroupNorm : public Module {
 public:
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "GroupNorm"; }
  std::string extra_repr() const override;
  int64_t num_groups, num_channels;
  double eps;
  Tensor weight, bias;
};

// Embedding(num, dim, padding_idx): weight N(0, 1), the padding row zeroed and never updated.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt);
  Tensor forward(const Tensor& indices) override;
  std::string name() const override { return "Embedding"; }
  std::string extra_repr() const override;
  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;
  Tensor weight;
};

}  // namespace ember::nn
