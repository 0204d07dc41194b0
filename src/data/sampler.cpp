// Samplers with PyTorch 1.13's semantics (orders, lengths, padding) and messages.
#include "ember/data/sampler.h"

#include <numeric>

#include "ember/core/errors.h"
#include "ember/ops.h"

namespace ember::data {

namespace {
// PyTorch's samplers without a generator seed a fresh one from the global generator every pass,
// so the order depends on (and advances) the global random state.
std::shared_ptr<Generator> pass_generator(const std::shared_ptr<Generator>& given) {
  if (given) return given;
  return std::make_shared<Generator>(default_generator().next_u64() & uint64_t(INT64_MAX));
}

std::vector<int64_t> permutation(int64_t n, Generator& g) { return randperm(n, {}, &g).tolist<int64_t>(); }
}  // namespace

SequentialSampler::SequentialSampler(int64_t n) : n_(n) {
  EMBER_CHECK_VALUE(n >= 0, "SequentialSampler: the dataset size must be non-negative, got ", n);
}

std::vector<int64_t> SequentialSampler::indices() {
  std::vector<int64_t> out(static_cast<size_t>(n_));
  std::iota(out.begin(), out.end(), int64_t(0));
  return out;
}

RandomSampler::RandomSampler(int64_t n, RandomSamplerOptions options)
    : n_(n), num_samples_(options.num_samples.value_or(n)), options_(std::move(options)) {
  EMBER_CHECK_VALUE(num_samples_ > 0, "num_samples should be a positive integer value, but got num_samples=",
                    num_samples_);
}

std::vector<int64_t> RandomSampler::indices() {
  auto g = pass_generator(options_.generator);
  std::vector<int64_t> out;
  out.reserve(size_t(num_samples_));
  if (options_.replacement) {
    EMBER_CHECK_VALUE(n_ > 0, "RandomSampler: cannot draw with replacement from an empty dataset");
    return randint(0, n_, {num_samples_}, {.dtype = kInt64}, g.get()).tolist<int64_t>();
  }
  for (int64_t full = 0; full < num_samples_ / std::max<int64_t>(n_, 1); ++full) {
    std::vector<int64_t> p = permutation(n_, *g);
    out.insert(out.end(), p.begin(), p.end());
  }
  if (n_ > 0 && num_samples_ % n_) {
    std::vector<int64_t> p = permutation(n_, *g);
    out.insert(out.end(), p.begin(), p.begin() + num_samples_ % n_);
  }
  return out;
}

SubsetRandomSampler::SubsetRandomSampler(std::vector<int64_t> indices, std::shared_ptr<Generator> generator)
    : indices_(std::move(indices)), generator_(std::move(generator)) {}

std::vector<int64_t> SubsetRandomSampler::indices() {
  auto g = pass_generator(generator_);
  std::vector<int64_t> out;
  out.reserve(indices_.size());
  for (int64_t i : permutation(int64_t(indices_.size()), *g)) out.push_back(indices_[size_t(i)]);
  return out;
}

WeightedRandomSampler::WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement,
                                             std::shared_ptr<Generator> generator)
    : num_samples_(num_samples), replacement_(replacement), generator_(std::move(generator)) {
  EMBER_CHECK_VALUE(num_samples > 0, "num_samples should be a positive integer value, but got num_samples=",
                    num_samples);
  weights_ = tensor(weights, {.dtype = kFloat64});
}

std::vector<int64_t> WeightedRandomSampler::indices() {
  // A null generator makes multinomial draw from the global generator, as torch.multinomial does.
  return multinomial(weights_, num_samples_, replacement_, generator_.get()).tolist<int64_t>();
}

DistributedSampler::DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options)
    : n_(dataset_size), options_(options) {
  EMBER_CHECK_VALUE(options.num_replicas >= 1, "DistributedSampler: num_replicas must be positive, got ",
                    options.num_replicas);
  EMBER_CHECK_VALUE(options.rank >= 0 && options.rank < options.num_replicas, "Invalid rank ", options.rank,
                    ", rank should be in the interval [0, ", options.num_replicas - 1, "]");
  int64_t r = options.num_replicas;
  // drop_last with an uneven split: every rank gets floor(n / r); otherwise ceil(n / r), padded.
  num_samples_ = (options.drop_last && n_ % r != 0) ? n_ / r : (n_ + r - 1) / r;
  total_size_ = num_samples_ * r;
}

std::vector<int64_t> DistributedSampler::indices() {
  std::vector<int64_t> order;
  if (options_.shuffle) {
    Generator g(options_.seed + uint64_t(epoch_));
    order = permutation(n_, g);
  } else {
    order.resize(size_t(n_));
    std::iota(order.begin(), order.end(), int64_t(0));
  }
  if (int64_t(order.size()) < total_size_) {
    EMBER_CHECK_VALUE(n_ > 0, "DistributedSampler: cannot pad an empty dataset to ", total_size_, " samples");
    // Repeat the order from its start until the total divides evenly among the ranks.
    for (size_t i = 0; int64_t(order.size()) < total_size_; ++i) order.push_back(order[i]);
  } else {
    order.resize(size_t(total_size_));
  }
  std::vector<int64_t> mine;
  mine.reserve(size_t(num_samples_));
  for (int64_t i = options_.rank; i < total_size_; i += options_.num_replicas) mine.push_back(order[size_t(i)]);
  return mine;
}

BatchSampler::BatchSampler(SamplerPtr sampler, int64_t batch_size, bool drop_last)
    : sampler_(std::move(sampler)), batch_size_(batch_size), drop_last_(drop_last) {
  EMBER_CHECK_VALUE(sampler_ != nullptr, "BatchSampler: sampler is null");
  EMBER_CHECK_VALUE(batch_size > 0, "batch_size should be a positive integer value, but got batch_size=",
                    batch_size);
}

std::vector<std::vector<int64_t>> BatchSampler::batches() {
  std::vector<int64_t> order = sampler_->indices();
  std::vector<std::vector<int64_t>> out;
  out.reserve(order.size() / size_t(batch_size_) + 1);
  for (size_t start = 0; start < order.size(); start += size_t(batch_size_)) {
    size_t end = std::min(order.size(), start + size_t(batch_size_));
    if (drop_last_ && end - start < size_t(batch_size_)) break;
    out.emplace_back(order.begin() + start, order.begin() + end);
  }
  return out;
}

int64_t BatchSampler::size() const {
  int64_t n = sampler_->size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

}  // namespace ember::data
