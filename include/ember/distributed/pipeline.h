#pragma once
// Pipeline parallelism for C++ models (Python's is ember.distributed.pipelining): a model cut
// into consecutive stages, one per rank of the group, with micro-batches streamed through them.
//   GPipe  every micro-batch forward, then every backward
//   1F1B   stage i runs num_stages - 1 - i forwards ahead, then one forward and one backward
//          alternately, then the remaining backwards (at most num_stages micro-batches alive)
// The last stage computes loss_fn(output, target) per micro-batch and backpropagates it divided by
// the number of micro-batches, so gradients equal one step on the whole batch with a mean loss.
// Activations and gradients travel as point-to-point messages (a header with dtype and shape,
// then the data); sends are asynchronous and waited at the end of the step.
//
//   PipelineStage stage(my_part, rank, world, pg);
//   PipelineSchedule schedule(stage, 4, PipelineSchedule::Kind::k1F1B, loss_fn);
//   auto losses = schedule.step(rank == 0 ? x : Tensor(), rank == world - 1 ? y : Tensor());
//   optimizer.step();
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "ember/distributed/process_group.h"
#include "ember/nn/module.h"

namespace ember::distributed {

class PipelineStage {
 public:
  PipelineStage(std::shared_ptr<nn::Module> module, int stage_index, int num_stages,
                std::shared_ptr<ProcessGroup> group);
  bool is_first() const { return stage_index_ == 0; }
  bool is_last() const { return stage_index_ == num_stages_ - 1; }
  int stage_index() const { return stage_index_; }
  int num_stages() const { return num_stages_; }
  nn::Module& module() { return *module_; }

  // Micro-batch mb forward: the first stage on `input`, the others on what the previous sent.
  Tensor forward_one_chunk(int mb, const Tensor& input = {});
  // Its backward: from `loss` on the last stage, from the gradient the next stage sent elsewhere.
  void backward_one_chunk(int mb, const Tensor& loss = {});
  void wait_sends();
  void reset();

 private:
  void send(const Tensor& t, int peer, int tag);
  Tensor recv(int peer, int tag);

  std::shared_ptr<nn::Module> module_;
  int stage_index_, num_stages_;
  std::shared_ptr<ProcessGroup> group_;
  std::map<int, std::pair<Tensor, Tensor>> live_;  // mb -> (input, output)
  std::vector<std::pair<std::shared_ptr<Work>, Tensor>> pending_;
};

class PipelineSchedule {
 public:
  enum class Kind { kGPipe, k1F1B };
  using LossFn = std::function<Tensor(const Tensor& output, const Tensor& target)>;
  PipelineSchedule(PipelineStage& stage, int n_microbatches, Kind kind, LossFn loss_fn = nullptr);
  // input on the first stage, target on the last (undefined elsewhere); returns the last stage's
  // per-micro-batch losses (empty elsewhere).
  std::vector<Tensor> step(const Tensor& input = {}, const Tensor& target = {});

 private:
  Tensor forward(int mb, const std::vector<Tensor>& xs, const std::vector<Tensor>& ys, std::vector<Tensor>& losses);
  PipelineStage& stage_;
  int n_;
  Kind kind_;
  LossFn loss_fn_;
};

}  // namespace ember::distributed
