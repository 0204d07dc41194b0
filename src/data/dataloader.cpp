// DataLoader: passes over a dataset in batches, loaded by worker threads ahead of the consumer.
//
// Shape of the machinery (PyTorch's, with threads for processes): a pass hands batch i to
// worker i % num_workers (skipping workers whose iterable stream has ended), keeps
// prefetch_factor * num_workers batches in flight, and returns results strictly in batch order.
// Each worker owns a queue of tasks; finished batches meet in one map keyed by task number.
// A generation number separates passes, so a persistent pool drops work left from the last one.
#include "ember/cuda.h"
#include "ember/data/dataloader.h"
#include "ember/profiler.h"

#include <cxxabi.h>
#include <omp.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "ember/core/errors.h"

namespace ember::data {

namespace {

thread_local const WorkerInfo* current_worker_info = nullptr;

// "ValueError" for ember::ValueError, the demangled C++ name for anything else.
std::string exception_type_name(const std::exception& e) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : typeid(e).name();
  std::free(demangled);
  if (name.rfind("ember::", 0) == 0) name = name.substr(7);
  return name;
}

std::exception_ptr wrap_worker_error(std::exception_ptr original, int worker, int64_t sample, int64_t batch,
                                     const std::string& doing) {
  std::string type = "an exception", message;
  try {
    std::rethrow_exception(original);
  } catch (const std::exception& e) {
    type = exception_type_name(e);
    message = e.what();
  } catch (...) {
    message = "(not a std::exception)";
  }
  return std::make_exception_ptr(DataLoaderWorkerError(
      detail::cat("Caught ", type, " in DataLoader worker ", worker, " while ", doing, ": ", message), worker, sample,
      batch, original));
}

}  // namespace

std::optional<WorkerInfo> get_worker_info() {
  if (!current_worker_info) return std::nullopt;
  return *current_worker_info;
}

// What a pass needs to turn a task into a batch; shared by the pass and its workers.
struct FetchPlan {
  DatasetPtr dataset;
  IterableDatasetPtr iterable;
  CollateFn collate;
  bool auto_batch = true;
  int64_t batch_size = 1;
  bool drop_last = false;
  bool pin_memory = false;  // and a GPU is there to pin for
};

namespace {

struct Task {
  int64_t number = 0;            // position in the pass: results come back in this order
  std::vector<int64_t> indices;  // map-style: the samples of this batch
  uint64_t generation = 0;
  uint64_t base_seed = 0;        // of the pass: the worker's generator restarts at base_seed + id
};

struct Result {
  std::optional<Value> batch;
  std::exception_ptr error;
  bool exhausted = false;  // an iterable worker's stream ended: no batch
  int worker = 0;
};

// pin_memory=True: every host tensor of a batch moves to page-locked memory, so the training
// loop's .to("cuda", non_blocking=True) overlaps the copy (torch does this on a pinning thread;
// ember's workers are threads already, so they pin as they collate).
void pin_value(Value& v) {
  if (v.is_tensor()) {
    if (v.to_tensor().is_cpu()) v = Value(v.to_tensor().pin_memory());
  } else if (v.is_list() || v.is_tuple()) {
    for (Value& item : v.items_list()) pin_value(item);
  } else if (v.is_dict()) {
    for (auto& [key, item] : v.items()) pin_value(item);
  }
}

Value collate_or_convert(const FetchPlan& plan, std::vector<Value> samples) {
  Value batch = plan.collate ? plan.collate(std::move(samples))
                : plan.auto_batch ? default_collate(std::move(samples))
                                  : default_convert(std::move(samples.front()));
  if (plan.pin_memory) pin_value(batch);
  return batch;
}

// Map-style: the samples of one batch, collated. Errors propagate untouched (the caller wraps
// them when it is a worker); a failure in get_many is traced back to the failing index.
Value fetch_map(const FetchPlan& plan, const std::vector<int64_t>& indices, int64_t* failed_index) {
  std::vector<Value> samples;
  try {
    samples = plan.dataset->get_many(indices);
  } catch (...) {
    // Find which sample failed (datasets are meant to be pure, so asking again is safe).
    for (int64_t i : indices) {
      try {
        plan.dataset->get(i);
      } catch (...) {
        *failed_index = i;
        break;
      }
    }
    throw;
  }
  *failed_index = -1;
  return collate_or_convert(plan, std::move(samples));
}

// Iterable-style: up to batch_size samples from the stream; nullopt when nothing is left (or
// only a short batch under drop_last).
std::optional<Value> fetch_stream(const FetchPlan& plan, SampleIterator& stream, bool& ended, int64_t& produced) {
  std::vector<Value> samples;
  int64_t want = plan.auto_batch ? plan.batch_size : 1;
  while (!ended && int64_t(samples.size()) < want) {
    std::optional<Value> s = stream.next();
    if (!s) {
      ended = true;
      break;
    }
    samples.push_back(std::move(*s));
    ++produced;
  }
  if (samples.empty() || (plan.drop_last && int64_t(samples.size()) < want)) return std::nullopt;
  return collate_or_convert(plan, std::move(samples));
}

}  // namespace

struct DataLoader::WorkerPool {
  WorkerPool(std::shared_ptr<const FetchPlan> plan, int num_workers, uint64_t base_seed,
             std::function<void(int)> init_fn)
      : plan_(std::move(plan)), init_fn_(std::move(init_fn)), queues_(size_t(num_workers)) {
    for (int id = 0; id < num_workers; ++id)
      threads_.emplace_back([this, id, num_workers, base_seed] { run(id, num_workers, base_seed); });
  }

  ~WorkerPool() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    task_cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  int num_workers() const { return int(queues_.size()); }

  // A new pass: forget queued tasks and unclaimed results of the previous one.
  uint64_t begin_pass() {
    std::lock_guard lock(mu_);
    for (auto& q : queues_) q.clear();
    results_.clear();
    return ++generation_;
  }

  void submit(int worker, Task task) {
    {
      std::lock_guard lock(mu_);
      queues_[size_t(worker)].push_back(std::move(task));
    }
    task_cv_.notify_all();
  }

  // The result of task `number`; timeout_s > 0 bounds the wait.
  Result take(int64_t number, double timeout_s) {
    std::unique_lock lock(mu_);
    auto ready = [&] { return results_.count(number) > 0; };
    if (timeout_s > 0) {
      if (!result_cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), ready))
        throw Error(detail::cat("DataLoader timed out after ", timeout_s, " seconds"));
    } else {
      result_cv_.wait(lock, ready);
    }
    Result r = std::move(results_[number]);
    results_.erase(number);
    return r;
  }

 private:
  void run(int id, int num_workers, uint64_t base_seed) {
    // One intra-op thread per worker: the workers themselves are the parallelism, and OpenMP
    // teams started from several threads would oversubscribe the cores.
    omp_set_num_threads(1);
    WorkerInfo info{id, num_workers, base_seed + uint64_t(id),
                    plan_->dataset ? static_cast<const void*>(plan_->dataset.get()) : plan_->iterable.get()};
    current_worker_info = &info;
    Generator generator(info.seed);
    ThreadDefaultGeneratorGuard generator_guard(&generator);
    std::exception_ptr init_error;
    if (init_fn_) {
      try {
        init_fn_(id);
      } catch (...) {
        init_error = wrap_worker_error(std::current_exception(), id, -1, -1, "running worker_init_fn");
      }
    }
    std::unique_ptr<SampleIterator> stream;
    uint64_t stream_generation = 0, seeded_generation = 0;
    bool stream_ended = false;
    int64_t produced = 0;
    while (true) {
      Task task;
      {
        std::unique_lock lock(mu_);
        task_cv_.wait(lock, [&] { return stopping_ || !queues_[size_t(id)].empty(); });
        if (stopping_) return;
        task = std::move(queues_[size_t(id)].front());
        queues_[size_t(id)].pop_front();
      }
      if (seeded_generation != task.generation) {
        // Unlike PyTorch's persistent workers, every pass reseeds (base_seed of the pass + id):
        // an epoch's random transforms then depend only on the state when it starts, so a run
        // resumed from a checkpoint repeats them exactly.
        seeded_generation = task.generation;
        info.seed = task.base_seed + uint64_t(id);
        generator.manual_seed(info.seed);
      }
      Result r;
      r.worker = id;
      profiler::RecordFunction span("DataLoader worker#fetch");  // the worker's row in a trace
      if (init_error) {
        r.error = init_error;
      } else if (plan_->dataset) {
        int64_t failed = -1;
        try {
          r.batch = fetch_map(*plan_, task.indices, &failed);
        } catch (...) {
          std::string doing = failed >= 0 ? detail::cat("loading sample ", failed, " (batch ", task.number, ")")
                                          : detail::cat("collating batch ", task.number);
          r.error = wrap_worker_error(std::current_exception(), id, failed, task.number, doing);
        }
      } else {
        try {
          if (!stream || stream_generation != task.generation) {
            stream = plan_->iterable->iter();  // a new pass restarts this worker's stream
            stream_generation = task.generation;
            stream_ended = false;
            produced = 0;
          }
          r.batch = fetch_stream(*plan_, *stream, stream_ended, produced);
          r.exhausted = !r.batch.has_value();
        } catch (...) {
          r.error = wrap_worker_error(std::current_exception(), id, produced, task.number,
                                      detail::cat("loading sample ", produced, " of its stream (batch ", task.number, ")"));
        }
      }
      {
        std::lock_guard lock(mu_);
        if (task.generation != generation_) continue;  // the pass it belonged to is over
        results_[task.number] = std::move(r);
      }
      result_cv_.notify_all();
    }
  }

  std::shared_ptr<const FetchPlan> plan_;
  std::function<void(int)> init_fn_;
  std::mutex mu_;
  std::condition_variable task_cv_, result_cv_;
  std::vector<std::deque<Task>> queues_;
  std::map<int64_t, Result> results_;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// One pass over the data.
class DataLoaderPass {
 public:
  DataLoaderPass(std::shared_ptr<const FetchPlan> plan, std::vector<std::vector<int64_t>> batches,
                 std::shared_ptr<DataLoader::WorkerPool> pool, int prefetch_factor, double timeout, uint64_t base_seed)
      : plan_(std::move(plan)), batches_(std::move(batches)), pool_(std::move(pool)), timeout_(timeout),
        base_seed_(base_seed) {
    if (!pool_) {
      if (plan_->iterable) stream_ = plan_->iterable->iter();
      return;
    }
    generation_ = pool_->begin_pass();
    active_.assign(size_t(pool_->num_workers()), true);
    for (int i = 0; i < prefetch_factor * pool_->num_workers(); ++i) send_next();
  }

  ~DataLoaderPass() {
    if (pool_) pool_->begin_pass();  // drop what is still queued for this pass
  }

  std::optional<Value> next() { return pool_ ? next_from_workers() : next_inline(); }

  int64_t remaining() const {
    if (plan_->iterable) return -1;
    return int64_t(batches_.size()) - received_;
  }

 private:
  std::optional<Value> next_inline() {
    if (plan_->dataset) {
      if (received_ >= int64_t(batches_.size())) return std::nullopt;
      int64_t failed = -1;
      return fetch_map(*plan_, batches_[size_t(received_++)], &failed);
    }
    int64_t produced = 0;
    return fetch_stream(*plan_, *stream_, stream_ended_, produced);
  }

  std::optional<Value> next_from_workers() {
    while (true) {
      if (received_ == sent_) {
        // Everything sent came back: the pass is over unless an iterable worker can give more.
        if (plan_->dataset || !any_active()) {
          pool_.reset();  // a non-persistent pool's threads end with the pass
          return std::nullopt;
        }
        send_next();
      }
      Result r = pool_->take(received_++, timeout_);
      if (r.exhausted) {
        active_[size_t(r.worker)] = false;
        continue;
      }
      send_next();
      if (r.error) std::rethrow_exception(r.error);
      return std::move(r.batch);
    }
  }

  bool any_active() const {
    for (bool a : active_)
      if (a) return true;
    return false;
  }

  // Hands the next batch to the next worker in turn whose stream has not ended.
  void send_next() {
    if (plan_->dataset && sent_ >= int64_t(batches_.size())) return;
    int n = pool_->num_workers();
    for (int tries = 0; tries < n; ++tries) {
      int w = next_worker_;
      next_worker_ = (next_worker_ + 1) % n;
      if (!active_[size_t(w)]) continue;
      Task t;
      t.number = sent_++;
      t.generation = generation_;
      t.base_seed = base_seed_;
      if (plan_->dataset) t.indices = batches_[size_t(t.number)];
      pool_->submit(w, std::move(t));
      return;
    }
  }

  std::shared_ptr<const FetchPlan> plan_;
  std::vector<std::vector<int64_t>> batches_;
  std::shared_ptr<DataLoader::WorkerPool> pool_;
  double timeout_;
  uint64_t generation_ = 0, base_seed_ = 0;
  int64_t sent_ = 0, received_ = 0;
  int next_worker_ = 0;
  std::vector<bool> active_;
  std::unique_ptr<SampleIterator> stream_;
  bool stream_ended_ = false;
};

DataLoaderIterator::DataLoaderIterator(std::shared_ptr<DataLoaderPass> pass) : pass_(std::move(pass)) {}
std::optional<Value> DataLoaderIterator::next() {
  profiler::RecordFunction span("enumerate(DataLoader)#DataLoaderIterator::next");
  return pass_->next();
}
int64_t DataLoaderIterator::batches_remaining() const { return pass_->remaining(); }

DataLoader::DataLoader(DatasetPtr dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  EMBER_CHECK_VALUE(dataset_ != nullptr, "DataLoader: dataset is null");
  configure();
}

DataLoader::DataLoader(IterableDatasetPtr dataset, DataLoaderOptions options)
    : iterable_(std::move(dataset)), options_(std::move(options)) {
  EMBER_CHECK_VALUE(iterable_ != nullptr, "DataLoader: dataset is null");
  configure();
}

DataLoader::~DataLoader() {
  range_pass_.reset();
  persistent_pool_.reset();
}

void DataLoader::configure() {
  const DataLoaderOptions& o = options_;
  EMBER_CHECK_VALUE(o.num_workers >= 0,
                    "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.");
  EMBER_CHECK_VALUE(o.timeout >= 0, "timeout option should be non-negative");
  EMBER_CHECK_VALUE(!(o.num_workers == 0 && o.prefetch_factor.has_value()),
                    "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to "
                    "enable multiprocessing, otherwise set prefetch_factor to None.");
  EMBER_CHECK_VALUE(o.prefetch_factor.value_or(2) > 0, "prefetch_factor option should be positive, got ",
                    o.prefetch_factor.value_or(2));
  EMBER_CHECK_VALUE(!(o.persistent_workers && o.num_workers == 0), "persistent_workers option needs num_workers > 0");
  if (iterable_) {
    EMBER_CHECK_VALUE(!o.shuffle, "DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                  "shuffle=True");
    EMBER_CHECK_VALUE(!o.sampler, "DataLoader with IterableDataset: expected unspecified sampler option, but got a "
                                  "sampler");
    EMBER_CHECK_VALUE(!o.batch_sampler, "DataLoader with IterableDataset: expected unspecified batch_sampler "
                                        "option, but got a batch_sampler");
  }
  EMBER_CHECK_VALUE(!(o.sampler && o.shuffle), "sampler option is mutually exclusive with shuffle");
  if (o.batch_sampler) {
    EMBER_CHECK_VALUE(o.batch_size == std::optional<int64_t>(1) && !o.shuffle && !o.sampler && !o.drop_last,
                      "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last");
  }
  EMBER_CHECK_VALUE(o.batch_size.has_value() || o.batch_sampler || !o.drop_last,
                    "batch_size=None option disables auto-batching and is mutually exclusive with drop_last");
  EMBER_CHECK_VALUE(!o.batch_size || *o.batch_size > 0,
                    "batch_size should be a positive integer value, but got batch_size=", o.batch_size.value_or(0));
  if (o.pin_memory && !cuda::is_available()) {
    static std::once_flag warned;
    std::call_once(warned, [] {
      std::cerr << "UserWarning: 'pin_memory' argument is set as true but no accelerator is found, then device "
                   "pinned memory won't be used.\n";
    });
  }
  if (dataset_) {
    if (o.batch_sampler) {
      batch_sampler_ = o.batch_sampler;
      sampler_ = batch_sampler_->sampler();
    } else {
      sampler_ = o.sampler ? o.sampler
                 : o.shuffle ? SamplerPtr(std::make_shared<RandomSampler>(
                                   dataset_->size(), RandomSamplerOptions{.num_samples = std::nullopt, .generator = o.generator}))
                             : SamplerPtr(std::make_shared<SequentialSampler>(dataset_->size()));
      if (o.batch_size) batch_sampler_ = std::make_shared<BatchSampler>(sampler_, *o.batch_size, o.drop_last);
    }
  }
}

int64_t DataLoader::size() const {
  if (dataset_) return batch_sampler_ ? batch_sampler_->size() : sampler_->size();
  std::optional<int64_t> n = iterable_->size();
  EMBER_CHECK_TYPE(n.has_value(), "object of type '", iterable_->name(), "' has no len()");
  if (!options_.batch_size) return *n;
  int64_t bs = *options_.batch_size;
  return options_.drop_last ? *n / bs : (*n + bs - 1) / bs;
}

DataLoaderIterator DataLoader::iter() {
  auto plan = std::make_shared<FetchPlan>();
  plan->dataset = dataset_;
  plan->iterable = iterable_;
  plan->collate = options_.collate_fn;
  plan->auto_batch = options_.batch_size.has_value() || options_.batch_sampler != nullptr;
  plan->batch_size = options_.batch_size.value_or(1);
  plan->drop_last = options_.drop_last;
  plan->pin_memory = options_.pin_memory && cuda::is_available();

  // As in PyTorch, every pass draws the workers' base seed first (even without workers, so the
  // global random stream advances the same way), then the sampler draws its order.
  Generator& g = options_.generator ? *options_.generator : default_generator();
  uint64_t base_seed = g.next_u64() & uint64_t(INT64_MAX);  // torch's empty((), int64).random_()

  std::vector<std::vector<int64_t>> batches;
  if (dataset_) {
    if (batch_sampler_) {
      batches = batch_sampler_->batches();
    } else {
      for (int64_t i : sampler_->indices()) batches.push_back({i});
    }
  }

  std::shared_ptr<WorkerPool> pool;
  if (options_.num_workers > 0) {
    if (options_.persistent_workers) {
      range_pass_.reset();  // one pass at a time over a persistent pool
      if (!persistent_pool_)
        persistent_pool_ = std::make_shared<WorkerPool>(plan, options_.num_workers, base_seed, options_.worker_init_fn);
      pool = persistent_pool_;
    } else {
      pool = std::make_shared<WorkerPool>(plan, options_.num_workers, base_seed, options_.worker_init_fn);
    }
  }
  return DataLoaderIterator(std::make_shared<DataLoaderPass>(plan, std::move(batches), std::move(pool),
                                                             options_.prefetch_factor.value_or(2), options_.timeout,
                                                             base_seed));
}

DataLoaderIterator::RangeIterator DataLoader::begin() {
  range_pass_.reset();
  range_pass_.emplace(iter());
  DataLoaderIterator::RangeIterator it{&*range_pass_, std::nullopt};
  it.current = range_pass_->next();
  return it;
}

}  // namespace ember::data
