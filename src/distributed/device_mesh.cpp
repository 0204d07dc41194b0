#include "ember/distributed/device_mesh.h"

#include <algorithm>

namespace ember::distributed {

DeviceMesh::DeviceMesh(std::shared_ptr<Store> store, int rank, std::vector<int64_t> shape,
                       std::vector<std::string> dim_names, const std::string& backend, const GlooOptions& options)
    : shape_(std::move(shape)), names_(std::move(dim_names)) {
  EMBER_CHECK_VALUE(!shape_.empty(), "DeviceMesh: expected a mesh of at least one dimension");
  EMBER_CHECK_VALUE(names_.empty() || names_.size() == shape_.size(), "DeviceMesh: ", names_.size(),
                    " dimension names for a ", shape_.size(), "-d mesh");
  for (int64_t s : shape_) EMBER_CHECK_VALUE(s >= 1, "DeviceMesh: mesh sizes must be positive, got ", IntArrayRef(shape_));
  EMBER_CHECK_VALUE(rank >= 0 && rank < size(), "DeviceMesh: rank ", rank, " is not in a mesh of ", size(), " ranks ",
                    IntArrayRef(shape_));
  coordinate_.assign(shape_.size(), 0);
  for (int d = ndim() - 1, rest = rank; d >= 0; --d) {  // row-major
    coordinate_[size_t(d)] = rest % shape_[size_t(d)];
    rest /= int(shape_[size_t(d)]);
  }
  for (int d = 0; d < ndim(); ++d) {
    // the line's id: this rank's coordinates with dimension d left out
    std::string line;
    for (int e = 0; e < ndim(); ++e)
      if (e != d) line += "_" + std::to_string(coordinate_[size_t(e)]);
    auto prefixed = std::make_shared<PrefixStore>("mesh_dim" + std::to_string(d) + line, store);
    groups_.push_back(make_process_group(backend, prefixed, local_rank(d), int(shape_[size_t(d)]), options));
  }
}

int64_t DeviceMesh::size() const {
  int64_t n = 1;
  for (int64_t s : shape_) n *= s;
  return n;
}

int DeviceMesh::dim(const std::string& name) const {
  auto it = std::find(names_.begin(), names_.end(), name);
  EMBER_CHECK_VALUE(it != names_.end(), "DeviceMesh: no dimension named '", name, "'");
  return int(it - names_.begin());
}

}  // namespace ember::distributed
