#pragma once
// Datasets, as torch.utils.data defines them. A sample is an ember::Value (a tensor, a number, a
// string, or tuples/lists/dicts of them), so datasets can return what PyTorch datasets return
// and the default collation can batch it the same way.
//
//   Map-style:       struct Squares : data::Dataset {
//                      int64_t size() const override { return 100; }
//                      Value get(int64_t i) const override { return Value::tuple({tensor(double(i)), i * i}); }
//                    };
//   Iterable-style:  struct Counter : data::IterableDataset { ... iter() returns a SampleIterator };
//
// get() and iter() are called from DataLoader worker threads: get() must be safe to call
// concurrently (it is const; keep per-call state local). Random transforms draw from
// default_generator(), which each worker thread replaces with its own seeded generator.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ember/core/generator.h"
#include "ember/serialize/value.h"
#include "ember/tensor.h"

namespace ember::data {

// Map-style dataset: __len__ and __getitem__.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;             // len(dataset)
  virtual Value get(int64_t index) const = 0;   // dataset[index], index in [0, size())
  // dataset.__getitems__: the samples for a batch of indices. Override when a batch can be read
  // faster than one sample at a time; the default calls get() for each index.
  virtual std::vector<Value> get_many(std::span<const int64_t> indices) const;
  // The class name used in messages ("TensorDataset", "FashionMNIST").
  virtual std::string name() const { return "Dataset"; }
};
using DatasetPtr = std::shared_ptr<const Dataset>;

// One pass over an iterable dataset: next() returns the next sample, or nullopt at the end.
class SampleIterator {
 public:
  virtual ~SampleIterator() = default;
  virtual std::optional<Value> next() = 0;
};

// Iterable-style dataset: __iter__. With DataLoader workers, every worker calls iter() in its own
// thread; use get_worker_info() (dataloader.h) inside iter() to give each worker its share.
class IterableDataset {
 public:
  virtual ~IterableDataset() = default;
  virtual std::unique_ptr<SampleIterator> iter() const = 0;
  // len(), when the stream knows its length (used only for DataLoader::size()).
  virtual std::optional<int64_t> size() const { return std::nullopt; }
  virtual std::string name() const { return "IterableDataset"; }
};
using IterableDatasetPtr = std::shared_ptr<const IterableDataset>;

// Samples are tuples of rows: dataset[i] == (t0[i], t1[i], ...). All tensors share dim 0.
class TensorDataset : public Dataset {
 public:
  explicit TensorDataset(std::vector<Tensor> tensors);
  int64_t size() const override;
  Value get(int64_t index) const override;
  std::string name() const override { return "TensorDataset"; }
  const std::vector<Tensor>& tensors() const { return tensors_; }

 private:
  std::vector<Tensor> tensors_;
};

// dataset[indices[i]] as sample i.
class Subset : public Dataset {
 public:
  Subset(DatasetPtr dataset, std::vector<int64_t> indices);
  int64_t size() const override { return int64_t(indices_.size()); }
  Value get(int64_t index) const override;
  std::vector<Value> get_many(std::span<const int64_t> indices) const override;
  std::string name() const override { return "Subset"; }
  const DatasetPtr& dataset() const { return dataset_; }
  const std::vector<int64_t>& indices() const { return indices_; }

 private:
  DatasetPtr dataset_;
  std::vector<int64_t> indices_;
};

// The datasets one after another.
class ConcatDataset : public Dataset {
 public:
  explicit ConcatDataset(std::vector<DatasetPtr> datasets);
  int64_t size() const override { return cumulative_sizes_.empty() ? 0 : cumulative_sizes_.back(); }
  Value get(int64_t index) const override;
  std::string name() const override { return "ConcatDataset"; }
  const std::vector<int64_t>& cumulative_sizes() const { return cumulative_sizes_; }
  const std::vector<DatasetPtr>& datasets() const { return datasets_; }

 private:
  std::vector<DatasetPtr> datasets_;
  std::vector<int64_t> cumulative_sizes_;
};

// Applies a function to every sample of a dataset (a lazily mapped view of it).
class MapDataset : public Dataset {
 public:
  MapDataset(DatasetPtr dataset, std::function<Value(Value)> fn);
  int64_t size() const override { return dataset_->size(); }
  Value get(int64_t index) const override { return fn_(dataset_->get(index)); }
  std::string name() const override { return "MapDataset"; }

 private:
  DatasetPtr dataset_;
  std::function<Value(Value)> fn_;
};

// random_split(dataset, lengths, generator): disjoint random Subsets. `lengths` are counts that
// sum to len(dataset), or fractions that sum to 1 (floored, the remainder handed out one by one
// from the first split, as PyTorch 1.13 does). The permutation comes from `generator`, or from
// default_generator() when it is null.
//   auto parts = random_split(ds, {0.8, 0.2});   random_split(ds, {800, 200}, &generator);
std::vector<std::shared_ptr<Subset>> random_split(const DatasetPtr& dataset, std::span<const double> lengths,
                                                  Generator* generator = nullptr);
inline std::vector<std::shared_ptr<Subset>> random_split(const DatasetPtr& dataset,
                                                         std::initializer_list<double> lengths,
                                                         Generator* generator = nullptr) {
  return random_split(dataset, std::span<const double>(lengths.begin(), lengths.size()), generator);
}
std::vector<std::shared_ptr<Subset>> random_split(const DatasetPtr& dataset, const std::vector<int64_t>& lengths,
                                                  Generator* generator = nullptr);

}  // namespace ember::data
