#pragma once
// DeviceMesh for C++ programs (Python's is ember.distributed.device_mesh): the world's ranks laid
// out row-major as an n-d array, with a process group per mesh dimension for this rank's line
// along it (on a 2 x 2 ("dp", "tp") mesh of ranks [[0, 1], [2, 3]], rank 1's "tp" group is {0, 1}
// and its "dp" group {1, 3}). Each line's group meets under its own store prefix, so only its
// members create it.
//
//   DeviceMesh mesh(store, rank, {2, 2}, {"dp", "tp"});
//   auto fc = tensor_parallel::ColumnParallelLinear::from(linear, mesh.group("tp"));
//   FullyShardedDataParallel fsdp(model, mesh.group("dp"));
#include <memory>
#include <string>
#include <vector>

#include "ember/distributed/process_group.h"
#include "ember/distributed/store.h"

namespace ember::distributed {

class DeviceMesh {
 public:
  DeviceMesh(std::shared_ptr<Store> store, int rank, std::vector<int64_t> shape,
             std::vector<std::string> dim_names = {}, const std::string& backend = "gloo",
             const GlooOptions& options = {});
  int ndim() const { return int(shape_.size()); }
  int64_t size() const;
  int64_t size(int dim) const { return shape_.at(size_t(dim)); }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& coordinate() const { return coordinate_; }
  int local_rank(int dim) const { return int(coordinate_.at(size_t(dim))); }
  int dim(const std::string& name) const;
  const std::shared_ptr<ProcessGroup>& group(int dim) const { return groups_.at(size_t(dim)); }
  const std::shared_ptr<ProcessGroup>& group(const std::string& name) const { return group(dim(name)); }

 private:
  std::vector<int64_t> shape_, coordinate_;
  std::vector<std::string> names_;
  std::vector<std::shared_ptr<ProcessGroup>> groups_;
};

}  // namespace ember::distributed
