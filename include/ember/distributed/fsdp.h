#pragma once
// FullyShardedDataParallel for C++ models (Python's is ember.distributed.fsdp, on the same
// FlatParamHandle engine, include/ember/distributed/flat_param.h).
//
// C++ modules call their children's forward directly, so there is no hook to catch a unit's
// forward in an arbitrary model. The wrapper therefore shards in two shapes:
//   - any module: one unit for all its parameters (parameters, gradients and optimizer state
//     sharded between steps; whole during forward and backward);
//   - an nn::Sequential: with `wrap_children`, each child whose parameter count reaches
//     `min_unit_params` is a unit of its own, gathered just before its forward and freed after
//     (FULL_SHARD), gathered again when its backward starts, with the next one's gather prefetched.
//
//   auto model = std::make_shared<nn::Sequential>(...);
//   FullyShardedDataParallel fsdp(model, pg, {.wrap_children = true});
//   optim::AdamW opt(fsdp.parameters(), ...);
//   Tensor loss = loss_fn(fsdp.forward(x), y); loss.backward(); fsdp.clip_grad_norm_(1.0); opt.step();
//   auto state = fsdp.state_dict();   // the plain model's keys and whole tensors, on every rank
#include <memory>
#include <vector>

#include "ember/autograd/autograd.h"
#include "ember/distributed/checkpoint.h"
#include "ember/distributed/flat_param.h"
#include "ember/nn/containers.h"

namespace ember::distributed {

struct FsdpOptions {
  FlatParamOptions flat;         // sharding strategy, mixed precision, CPU offload
  bool wrap_children = false;    // an nn::Sequential's children become units
  int64_t min_unit_params = 1;   // ... those with at least this many parameters
  bool forward_prefetch = true;  // start the next unit's all-gather before running this one
};

class FullyShardedDataParallel {
 public:
  FullyShardedDataParallel(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> group,
                           FsdpOptions options = {});
  Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) { return forward(input); }

  // What the optimizer updates: each unit's flat shard.
  std::vector<Tensor> parameters() const;
  // Clips the gradients by their norm over the whole model (all ranks' shards); returns it.
  Tensor clip_grad_norm_(double max_norm, double norm_type = 2.0);
  // The plain model's state: whole parameters (gathered; every rank takes part) and buffers.
  nn::StateDict state_dict() const;
  void load_state_dict(const nn::StateDict& state);
  // For distributed checkpoints: each parameter as this rank's dim-0 piece (torch.chunk's cut),
  // buffers replicated; and the reverse, from pieces cut for this world size (whatever world size
  // wrote the checkpoint they were loaded from).
  checkpoint::DistStateDict sharded_state_dict() const;
  void load_sharded_state_dict(const checkpoint::DistStateDict& state);
  nn::Module& module() { return *module_; }
  size_t num_units() const { return units_.size(); }

 private:
  struct Unit {
    nn::Module* module = nullptr;  // whose parameters the unit holds
    std::vector<std::string> names;  // relative to the model (state-dict keys)
    std::vector<Tensor*> slots;      // where each view is installed
    std::shared_ptr<FlatParamHandle> handle;
    bool reshard_after_forward = true;
    bool backward_started = false;
  };
  void install(Unit& u);
  void before_backward(size_t i);

  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<ProcessGroup> group_;
  FsdpOptions options_;
  std::vector<Unit> units_;  // children's units in forward order, then the root unit (the rest)
  std::vector<std::pair<nn::Module*, bool>> steps_;  // Sequential children in order, and whether a unit
  std::vector<autograd::RemovableHandle> hooks_;
};

}  // namespace ember::distributed
