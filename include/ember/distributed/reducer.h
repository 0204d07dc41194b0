#pragma once
// DistributedDataParallel's engine (torch's Reducer): averages the gradients of a replica's
// parameters over a process group during backward. Parameters are bucketed in reverse
// registration order (the order backward produces their gradients; the first bucket small so
// communication starts early); a hook on each parameter's gradient accumulation counts its
// bucket, and a full bucket is flattened and all-reduced asynchronously while backward goes on.
// Buckets launch in index order on every rank (the collectives must match across the group);
// once the last one has launched, all are waited on, divided by the world size and written back
// into .grad.
//
//   auto pg = ember::distributed::make_gloo_process_group(store, rank, world, {});
//   ember::distributed::DistributedDataParallel ddp(model, pg);     // broadcasts rank 0's state
//   Tensor loss = loss_fn(ddp.forward(x), y);  loss.backward();  optimizer.step();
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ember/autograd/autograd.h"
#include "ember/distributed/process_group.h"
#include "ember/nn/module.h"

namespace ember::distributed {

struct ReducerOptions {
  double bucket_cap_mb = 25;  // torch's default
  int64_t first_bucket_bytes = 1 << 20;
  bool find_unused_parameters = false;
  bool gradient_as_bucket_view = false;
};

class Reducer {
 public:
  // named_params: the parameters that require gradients, in registration order.
  Reducer(std::vector<std::pair<std::string, Tensor>> named_params, std::shared_ptr<ProcessGroup> group,
          ReducerOptions options = {});
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Before a forward: fails (torch's message) when the previous backward did not produce every
  // parameter's gradient, then starts a fresh iteration.
  void prepare_for_forward();
  // After a forward that a backward will follow (grad mode on, sync wanted): arms the hooks;
  // with find_unused_parameters, parameters `outputs`' graph does not reach count as ready.
  void prepare_for_backward(const std::vector<Tensor>& outputs);
  // The names in each bucket, first bucket first (the reversed registration order).
  std::vector<std::vector<std::string>> bucket_names() const;

 private:
  struct Bucket {
    std::vector<size_t> params;  // indices into params_
    std::vector<int64_t> offsets;
    Tensor flat;
    size_t ready = 0;
    std::shared_ptr<Work> work;
  };
  void mark_ready(size_t index);
  bool launch_complete_buckets();
  void finish();
  void reset();

  std::vector<std::pair<std::string, Tensor>> params_;  // reversed registration order
  std::vector<std::pair<size_t, size_t>> bucket_of_;  // param -> (bucket, slot)
  std::vector<char> got_;  // per param this iteration: 0 not yet, 1 unused (find_unused), 2 gradient arrived
  std::vector<Bucket> buckets_;
  std::shared_ptr<ProcessGroup> group_;
  ReducerOptions options_;
  std::vector<autograd::RemovableHandle> hooks_;
  std::recursive_mutex mutex_;
  bool expect_sync_ = false;
  size_t next_launch_ = 0;
};

// Broadcasts `tensors` from group rank `root`, one message per (dtype, device).
void broadcast_coalesced(ProcessGroup& group, const std::vector<Tensor>& tensors, int root = 0);

// The C++ module wrapper: construction broadcasts rank 0's parameters and buffers; forward()
// (one tensor in, one out, as nn::Module's) drives the Reducer; no_sync() turns gradient
// averaging off for the backward passes of its lifetime (gradient accumulation).
class DistributedDataParallel {
 public:
  struct Options {
    ReducerOptions reducer;
    bool broadcast_buffers = true;
  };
  DistributedDataParallel(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> group, Options options);
  DistributedDataParallel(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> group)
      : DistributedDataParallel(std::move(module), std::move(group), Options{}) {}
  Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) { return forward(input); }
  nn::Module& module() { return *module_; }
  Reducer& reducer() { return *reducer_; }

  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& d) : d_(d), old_(d.require_sync_) { d.require_sync_ = false; }
    ~NoSync() { d_.require_sync_ = old_; }
   private:
    DistributedDataParallel& d_;
    bool old_;
  };
  NoSync no_sync() { return NoSync(*this); }

 private:
  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<ProcessGroup> group_;
  Options options_;
  std::unique_ptr<Reducer> reducer_;
  bool require_sync_ = true;
};

}  // namespace ember::distributed
