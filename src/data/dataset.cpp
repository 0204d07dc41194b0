// Map-style dataset building blocks: TensorDataset, Subset, ConcatDataset, MapDataset and
// random_split, with PyTorch 1.13's rules and messages.
#include "ember/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ember/core/errors.h"
#include "ember/ops.h"

namespace ember::data {

std::vector<Value> Dataset::get_many(std::span<const int64_t> indices) const {
  std::vector<Value> out;
  out.reserve(indices.size());
  for (int64_t i : indices) out.push_back(get(i));
  return out;
}

namespace {
// Python-style index: -1 is the last sample; anything outside [-size, size) is an IndexError.
int64_t wrap_index(int64_t index, int64_t size, const std::string& what) {
  EMBER_CHECK_INDEX(index >= -size && index < size, "index ", index, " is out of range for ", what, " of size ",
                    size);
  return index < 0 ? index + size : index;
}
}  // namespace

// ---- TensorDataset ----

TensorDataset::TensorDataset(std::vector<Tensor> tensors) : tensors_(std::move(tensors)) {
  EMBER_CHECK_VALUE(!tensors_.empty(), "TensorDataset needs at least one tensor");
  for (size_t i = 0; i < tensors_.size(); ++i) {
    EMBER_CHECK_VALUE(tensors_[i].defined() && tensors_[i].dim() >= 1, "TensorDataset: tensor ", i,
                      " must have at least one dimension");
    EMBER_CHECK_VALUE(tensors_[i].size(0) == tensors_[0].size(0), "Size mismatch between tensors: tensor 0 has ",
                      tensors_[0].size(0), " rows but tensor ", i, " has ", tensors_[i].size(0));
  }
}

int64_t TensorDataset::size() const { return tensors_[0].size(0); }

Value TensorDataset::get(int64_t index) const {
  int64_t i = wrap_index(index, size(), "TensorDataset");
  ValueList row;
  row.reserve(tensors_.size());
  for (const Tensor& t : tensors_) row.emplace_back(t.select(0, i));
  return Value::tuple(std::move(row));
}

// ---- Subset ----

Subset::Subset(DatasetPtr dataset, std::vector<int64_t> indices)
    : dataset_(std::move(dataset)), indices_(std::move(indices)) {
  EMBER_CHECK_VALUE(dataset_ != nullptr, "Subset: dataset is null");
}

Value Subset::get(int64_t index) const {
  return dataset_->get(indices_[wrap_index(index, size(), "Subset")]);
}

std::vector<Value> Subset::get_many(std::span<const int64_t> indices) const {
  std::vector<int64_t> mapped(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) mapped[k] = indices_[wrap_index(indices[k], size(), "Subset")];
  return dataset_->get_many(mapped);
}

// ---- ConcatDataset ----

ConcatDataset::ConcatDataset(std::vector<DatasetPtr> datasets) : datasets_(std::move(datasets)) {
  EMBER_CHECK_VALUE(!datasets_.empty(), "datasets should not be an empty iterable");
  int64_t total = 0;
  for (const DatasetPtr& d : datasets_) {
    EMBER_CHECK_VALUE(d != nullptr, "ConcatDataset: a dataset is null");
    total += d->size();
    cumulative_sizes_.push_back(total);
  }
}

Value ConcatDataset::get(int64_t index) const {
  int64_t i = wrap_index(index, size(), "ConcatDataset");
  // The first dataset whose cumulative size exceeds i holds it (bisect_right, as PyTorch).
  size_t d = size_t(std::upper_bound(cumulative_sizes_.begin(), cumulative_sizes_.end(), i) -
                    cumulative_sizes_.begin());
  int64_t start = d == 0 ? 0 : cumulative_sizes_[d - 1];
  return datasets_[d]->get(i - start);
}

// ---- MapDataset ----

MapDataset::MapDataset(DatasetPtr dataset, std::function<Value(Value)> fn)
    : dataset_(std::move(dataset)), fn_(std::move(fn)) {
  EMBER_CHECK_VALUE(dataset_ != nullptr && fn_, "MapDataset needs a dataset and a function");
}

// ---- random_split ----

std::vector<std::shared_ptr<Subset>> random_split(const DatasetPtr& dataset, const std::vector<int64_t>& lengths,
                                                  Generator* generator) {
  EMBER_CHECK_VALUE(dataset != nullptr, "random_split: dataset is null");
  int64_t total = 0;
  for (int64_t l : lengths) {
    EMBER_CHECK_VALUE(l >= 0, "random_split: lengths must be non-negative, got ", l);
    total += l;
  }
  EMBER_CHECK_VALUE(total == dataset->size(), "Sum of input lengths does not equal the length of the input dataset!",
                    " (sum ", total, ", dataset has ", dataset->size(), ")");
  std::vector<int64_t> perm = randperm(total, {}, generator).tolist<int64_t>();
  std::vector<std::shared_ptr<Subset>> out;
  int64_t offset = 0;
  for (int64_t l : lengths) {
    out.push_back(std::make_shared<Subset>(dataset, std::vector<int64_t>(perm.begin() + offset,
                                                                         perm.begin() + offset + l)));
    offset += l;
  }
  return out;
}

std::vector<std::shared_ptr<Subset>> random_split(const DatasetPtr& dataset, std::span<const double> lengths,
                                                  Generator* generator) {
  EMBER_CHECK_VALUE(dataset != nullptr, "random_split: dataset is null");
  double sum = std::accumulate(lengths.begin(), lengths.end(), 0.0);
  std::vector<int64_t> counts;
  // PyTorch reads lengths summing to 1 (and not above it) as fractions.
  bool fractions = std::abs(sum - 1.0) <= 1e-9 && sum <= 1.0;
  int64_t n = dataset->size();
  for (size_t i = 0; i < lengths.size(); ++i) {
    double l = lengths[i];
    if (fractions) {
      EMBER_CHECK_VALUE(l >= 0 && l <= 1, "Fraction at index ", i, " is not between 0 and 1");
      counts.push_back(int64_t(std::floor(double(n) * l)));
    } else {
      EMBER_CHECK_VALUE(l >= 0 && l == std::floor(l), "random_split: length at index ", i,
                        " must be a non-negative integer or a fraction, got ", l);
      counts.push_back(int64_t(l));
    }
  }
  if (fractions && !counts.empty()) {
    int64_t remainder = n - std::accumulate(counts.begin(), counts.end(), int64_t(0));
    for (int64_t i = 0; i < remainder; ++i) counts[size_t(i) % counts.size()] += 1;
  }
  return random_split(dataset, counts, generator);
}

}  // namespace ember::data
