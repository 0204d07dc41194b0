#pragma once
// Samplers, as torch.utils.data defines them: each pass (epoch) produces the order in which a
// DataLoader reads a map-style dataset. Random samplers draw a new order every pass.
//
//   data::RandomSampler sampler(dataset->size(), {.generator = gen});
//   data::DistributedSampler shard(dataset->size(), {.num_replicas = 4, .rank = 1});
//   shard.set_epoch(epoch);   // a different shuffle each epoch, the same on every rank
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "ember/core/generator.h"
#include "ember/tensor.h"

namespace ember::data {

class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual std::vector<int64_t> indices() = 0;  // one pass: iter(sampler)
  virtual int64_t size() const = 0;            // len(sampler)
};
using SamplerPtr = std::shared_ptr<Sampler>;

// 0, 1, ..., n-1.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n);
  std::vector<int64_t> indices() override;
  int64_t size() const override { return n_; }

 private:
  int64_t n_;
};

struct RandomSamplerOptions {
  bool replacement = false;
  std::optional<int64_t> num_samples;       // default: n
  std::shared_ptr<Generator> generator;     // default: a fresh seed from default_generator() per pass
};

// A random permutation of 0..n-1 per pass (num_samples > n: whole permutations, then part of
// one); with replacement, num_samples uniform draws.
class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(int64_t n, RandomSamplerOptions options = {});
  std::vector<int64_t> indices() override;
  int64_t size() const override { return num_samples_; }

 private:
  int64_t n_, num_samples_;
  RandomSamplerOptions options_;
};

// The given indices in a random order per pass.
class SubsetRandomSampler : public Sampler {
 public:
  explicit SubsetRandomSampler(std::vector<int64_t> indices, std::shared_ptr<Generator> generator = nullptr);
  std::vector<int64_t> indices() override;
  int64_t size() const override { return int64_t(indices_.size()); }

 private:
  std::vector<int64_t> indices_;
  std::shared_ptr<Generator> generator_;
};

// num_samples indices drawn with probability proportional to weights (torch.multinomial).
class WeightedRandomSampler : public Sampler {
 public:
  WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement = true,
                        std::shared_ptr<Generator> generator = nullptr);
  std::vector<int64_t> indices() override;
  int64_t size() const override { return num_samples_; }

 private:
  Tensor weights_;
  int64_t num_samples_;
  bool replacement_;
  std::shared_ptr<Generator> generator_;
};

struct DistributedSamplerOptions {
  int64_t num_replicas = 1;  // world size (once distributed training exists, its default)
  int64_t rank = 0;
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;
};

// This rank's share of the dataset: every rank gets the same number of indices. Without
// drop_last the (shuffled) order is padded by repeating its start until it divides evenly; with
// drop_last the tail is dropped. The shuffle is seeded with seed + epoch, so every rank agrees.
class DistributedSampler : public Sampler {
 public:
  explicit DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options = {});
  std::vector<int64_t> indices() override;
  int64_t size() const override { return num_samples_; }
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t total_size() const { return total_size_; }

 private:
  int64_t n_, num_samples_, total_size_, epoch_ = 0;
  DistributedSamplerOptions options_;
};

// Groups a sampler's indices into batches of batch_size (the last one shorter unless drop_last).
// Subclass it (overriding batches() and size()) for custom batching, e.g. by sequence length.
class BatchSampler {
 public:
  BatchSampler(SamplerPtr sampler, int64_t batch_size, bool drop_last);
  virtual ~BatchSampler() = default;
  virtual std::vector<std::vector<int64_t>> batches();  // one pass
  virtual int64_t size() const;                         // len(batch_sampler)
  const SamplerPtr& sampler() const { return sampler_; }
  int64_t batch_size() const { return batch_size_; }
  bool drop_last() const { return drop_last_; }

 protected:
  BatchSampler() = default;

 private:
  SamplerPtr sampler_;
  int64_t batch_size_ = 1;
  bool drop_last_ = false;
};
using BatchSamplerPtr = std::shared_ptr<BatchSampler>;

}  // namespace ember::data
