#pragma once
// DataLoader, as torch.utils.data defines it: batches from a dataset, optionally shuffled,
// collated into tensors, loaded ahead by worker threads.
//
//   data::DataLoader loader(train_set, {.batch_size = 128, .shuffle = true, .num_workers = 2});
//   for (Value batch : loader) {
//     const Tensor& images = batch[0].to_tensor();
//     const Tensor& labels = batch[1].to_tensor();
//   }
//
// Workers are threads, not processes: a C++ dataset needs no pickling and no shared memory, and
// a batch a worker builds is handed over by pointer. Each worker runs with one intra-op thread
// (as PyTorch sets torch.set_num_threads(1) in its workers) and its own default generator,
// seeded base_seed + worker_id with base_seed drawn from `generator` (or the global generator)
// when the pass starts, so random transforms are reproducible (persistent workers are reseeded
// every pass too, unlike PyTorch's, so a resumed run repeats an epoch's randomness exactly).
// Batch i goes to worker i % num_workers and batches come back in order, whatever order the
// workers finish in.
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/data/collate.h"
#include "ember/data/dataset.h"
#include "ember/data/sampler.h"

namespace ember::data {

struct DataLoaderOptions {
  std::optional<int64_t> batch_size = 1;  // nullopt: no automatic batching (samples come one by one)
  bool shuffle = false;
  SamplerPtr sampler;                     // mutually exclusive with shuffle
  BatchSamplerPtr batch_sampler;          // mutually exclusive with batch_size, shuffle, sampler, drop_last
  int num_workers = 0;
  CollateFn collate_fn;                   // empty: default_collate (or default_convert without batching)
  bool pin_memory = false;                // page-locked host memory for fast GPU copies (needs CUDA)
  bool drop_last = false;
  double timeout = 0;                     // seconds to wait for a worker's batch; 0: forever
  std::function<void(int)> worker_init_fn;  // called in each worker with its id, after seeding
  std::optional<int> prefetch_factor;     // batches loaded ahead per worker (default 2; needs workers)
  bool persistent_workers = false;        // keep the workers between passes (needs workers)
  std::shared_ptr<Generator> generator;   // draws the shuffle order and the workers' base seed
};

// What a worker thread knows about itself (torch.utils.data.get_worker_info()).
struct WorkerInfo {
  int id = 0;
  int num_workers = 0;
  uint64_t seed = 0;
  const void* dataset = nullptr;  // the loader's Dataset or IterableDataset
};
// In a worker thread: its WorkerInfo. In any other thread: nullopt.
std::optional<WorkerInfo> get_worker_info();

// An exception raised while a worker loaded a batch, rethrown in the thread that iterates. The
// message reads "Caught ValueError in DataLoader worker 1 while loading sample 37 (batch 4):
// <original message>"; original() is the exception itself (std::rethrow_exception it).
class DataLoaderWorkerError : public Error {
 public:
  DataLoaderWorkerError(const std::string& message, int worker_id, int64_t sample_index, int64_t batch_index,
                        std::exception_ptr original)
      : Error(message), worker_id_(worker_id), sample_index_(sample_index), batch_index_(batch_index),
        original_(std::move(original)) {}
  int worker_id() const { return worker_id_; }
  int64_t sample_index() const { return sample_index_; }  // -1: the error came from collate_fn
  int64_t batch_index() const { return batch_index_; }
  std::exception_ptr original() const { return original_; }

 private:
  int worker_id_;
  int64_t sample_index_, batch_index_;
  std::exception_ptr original_;
};

class DataLoaderPass;  // one pass over the data (implementation detail)

// One pass: next() returns batches until the pass ends (nullopt). Keep it alive while iterating;
// destroying it stops its workers (unless they are persistent).
class DataLoaderIterator {
 public:
  explicit DataLoaderIterator(std::shared_ptr<DataLoaderPass> pass);
  std::optional<Value> next();
  int64_t batches_remaining() const;  // -1 for iterable datasets without a length

  // Range-for support.
  struct Sentinel {};
  struct RangeIterator {
    DataLoaderIterator* owner;
    std::optional<Value> current;
    const Value& operator*() const { return *current; }
    Value& operator*() { return *current; }
    RangeIterator& operator++() { current = owner->next(); return *this; }
    bool operator!=(Sentinel) const { return current.has_value(); }
    bool operator==(Sentinel) const { return !current.has_value(); }
  };

 private:
  std::shared_ptr<DataLoaderPass> pass_;
};

class DataLoader {
 public:
  DataLoader(DatasetPtr dataset, DataLoaderOptions options = {});
  DataLoader(IterableDatasetPtr dataset, DataLoaderOptions options = {});
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // iter(loader): a new pass (a persistent pool of workers is reused and the previous pass ends).
  DataLoaderIterator iter();
  // len(loader): the number of batches (samples without batching). An iterable dataset without
  // a length is a TypeError, as in PyTorch.
  int64_t size() const;

  // for (Value batch : loader): each range-for is one pass.
  DataLoaderIterator::RangeIterator begin();
  DataLoaderIterator::Sentinel end() { return {}; }

  const DatasetPtr& dataset() const { return dataset_; }                    // null for iterable
  const IterableDatasetPtr& iterable_dataset() const { return iterable_; }  // null for map-style
  const DataLoaderOptions& options() const { return options_; }
  const BatchSamplerPtr& batch_sampler() const { return batch_sampler_; }  // null without batching
  const SamplerPtr& sampler() const { return sampler_; }

  struct WorkerPool;  // implementation detail

 private:
  void configure();  // checks the options (PyTorch's messages) and builds the samplers
  DatasetPtr dataset_;
  IterableDatasetPtr iterable_;
  DataLoaderOptions options_;
  SamplerPtr sampler_;
  BatchSamplerPtr batch_sampler_;
  std::shared_ptr<WorkerPool> persistent_pool_;
  std::optional<DataLoaderIterator> range_pass_;  // the pass a range-for is running
};

}  // namespace ember::data
