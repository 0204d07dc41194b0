#pragma once
// FSDP's engine: one unit's parameters flattened into one buffer and sharded over a process
// group (torch's FlatParamHandle). Each rank keeps only its shard: a 1-D leaf that requires grad,
// padded so the flat length divides by the group size; that is what the optimizer updates.
//
//   unshard()   all-gathers the shards (cast to the mixed-precision param dtype) into the full
//               flat buffer; start_unshard()/wait_unshard() split it so the all-gather of the
//               next unit can run while this one computes (prefetch).
//   views()     the original parameters as differentiable views of the full buffer. Their
//               gradients meet in one backward node that reduce-scatters them (averaged over
//               the group, in the reduce dtype) into the shard's .grad and then frees the full
//               buffer.
//   reshard()   frees the full buffer's memory. Views saved for backward keep its Storage
//               object; unshard() refills it before they are read again (FULL_SHARD frees after
//               forward and all-gathers again before the unit's backward).
//
// NO_SHARD keeps the whole flat parameter on every rank and all-reduces its gradient (DDP's
// arithmetic with FSDP's API). With offload_params the shard and its gradient live on the CPU
// and the full buffer on compute_device.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/distributed/process_group.h"

namespace ember::distributed {

enum class ShardingStrategy { FULL_SHARD, SHARD_GRAD_OP, NO_SHARD };
const char* sharding_strategy_name(ShardingStrategy s);

// torch.distributed.fsdp.MixedPrecision: unset fields keep the parameters' own dtype.
struct MixedPrecisionPolicy {
  std::optional<DType> param_dtype;   // of the all-gathered parameters, so of forward and backward
  std::optional<DType> reduce_dtype;  // of the gradient reduce-scatter (default: param_dtype)
  std::optional<DType> buffer_dtype;  // buffers are cast to it when the model is wrapped
};

struct FlatParamOptions {
  ShardingStrategy strategy = ShardingStrategy::FULL_SHARD;
  MixedPrecisionPolicy mixed_precision;
  bool offload_params = false;
  std::optional<Device> compute_device;  // default: the parameters' device
};

class FlatParamHandle : public std::enable_shared_from_this<FlatParamHandle> {
 public:
  // named_params: the unit's parameters (one dtype and device, all or none requiring grad), in
  // registration order; their values become the flat parameter (they are not modified).
  FlatParamHandle(std::vector<std::pair<std::string, Tensor>> named_params, std::shared_ptr<ProcessGroup> group,
                  FlatParamOptions options = {});
  ~FlatParamHandle();
  FlatParamHandle(const FlatParamHandle&) = delete;
  FlatParamHandle& operator=(const FlatParamHandle&) = delete;

  // This rank's shard (the whole padded flat parameter under NO_SHARD): a 1-D leaf.
  const Tensor& flat_param() const { return shard_; }
  // Makes `param` (a new leaf over the shard's memory, such as Python's nn.Parameter(flat_param))
  // the tensor that backward accumulates into.
  void set_flat_param(const Tensor& param);
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<Shape>& shapes() const { return shapes_; }
  int64_t numel() const { return numel_; }                // the parameters' total
  int64_t padded_numel() const { return padded_numel_; }  // divisible by the group size
  const std::shared_ptr<ProcessGroup>& group() const { return group_; }
  const FlatParamOptions& options() const { return options_; }
  // The first flat index of this rank's shard (its piece of [0, padded_numel)).
  int64_t shard_offset() const;

  void unshard() { start_unshard(); wait_unshard(); }
  void start_unshard();  // no-op when unsharded or a gather is already in flight
  void wait_unshard();
  void reshard();        // no-op when the full buffer is the flat parameter itself (NO_SHARD)
  bool is_unsharded() const { return state_ == State::kUnsharded; }

  // The parameters as views of the full buffer (needs unsharded): differentiable when the flat
  // parameter requires grad and grad mode is on.
  std::vector<Tensor> views();

  // For state dicts, with no effect on the handle's state: the unpadded full flat parameter in
  // its own dtype (an all-gather), split into per-parameter views; and the reverse, which copies
  // this rank's shard out of a full flat tensor.
  Tensor gather_full() const;
  std::vector<Tensor> split(const Tensor& full_flat) const;
  void load_full(const Tensor& full_flat);

 private:
  enum class State { kSharded, kGathering, kUnsharded };
  Tensor reduce_gradient(const std::vector<Tensor>& grads);
  bool full_is_shard() const;

  std::vector<std::string> names_;
  std::vector<Shape> shapes_;
  std::vector<int64_t> offsets_, numels_;
  int64_t numel_ = 0, padded_numel_ = 0;
  std::shared_ptr<ProcessGroup> group_;
  FlatParamOptions options_;
  Device compute_device_;
  Tensor shard_;       // the leaf the optimizer sees
  Tensor full_;        // the all-gathered buffer (its Storage is released while sharded)
  Tensor gather_src_;  // the cast shard an in-flight all-gather reads
  std::shared_ptr<Work> gather_work_;
  State state_ = State::kSharded;
};

}  // namespace ember::distributed
