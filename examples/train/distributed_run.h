#pragma once
// The demo under a launcher (`ember-run --nproc_per_node=N build/train_fashion_mnist ...`): joins
// the job the launcher's variables describe (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) with a
// Gloo process group. Without them it is a single process, as before.
#include <functional>
#include <memory>

#include "ember/nn/module.h"
#include "ember/tensor.h"

namespace ember::distributed {
class ProcessGroup;
}

namespace train_demo {

struct DistributedRun {
  int rank = 0, world = 1;
  std::shared_ptr<ember::distributed::ProcessGroup> group;
  bool lead() const { return rank == 0; }
};

// world 1 when the variables are not set; throws when they are but this build has no
// distributed support.
DistributedRun join_from_environment();
// Sums `values` (a float64 tensor) over the job in place (a no-op for one process). Being a
// collective, it also waits for every process (the demo's barrier before reading rank 0's files).
void sum_over_job(const DistributedRun& run, ember::Tensor& values);
// The model's forward for training: through DistributedDataParallel (rank 0's weights broadcast
// now, gradients averaged in each backward) when the job has several processes.
std::function<ember::Tensor(const ember::Tensor&)> training_forward(const DistributedRun& run,
                                                                   std::shared_ptr<ember::nn::Module> model);

}  // namespace train_demo
