#include <map>
#include <mutex>

#include "ember/distributed/errors.h"
#include "ember/distributed/process_group.h"

namespace ember::distributed {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, ProcessGroupFactory> factories;
};
Registry& registry() {
  static Registry r;
  return r;
}

// Gloo is always there when this directory is built.
const bool gloo_registered = [] {
  register_process_group_backend("gloo", [](std::shared_ptr<Store> store, int rank, int size, const GlooOptions& o) {
    return make_gloo_process_group(std::move(store), rank, size, o);
  });
  return true;
}();

}  // namespace

void register_process_group_backend(const std::string& name, ProcessGroupFactory factory) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().factories[name] = std::move(factory);
}

bool process_group_backend_available(const std::string& name) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  return registry().factories.count(name) > 0;
}

std::shared_ptr<ProcessGroup> make_process_group(const std::string& name, std::shared_ptr<Store> store, int rank,
                                                 int size, const GlooOptions& options) {
  ProcessGroupFactory factory;
  std::string known;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    auto it = registry().factories.find(name);
    if (it != registry().factories.end()) factory = it->second;
    for (const auto& [k, _] : registry().factories) known += (known.empty() ? "" : ", ") + k;
  }
  if (!factory)
    throw DistBackendError(detail::cat("init_process_group: backend '", name, "' is not built into this ember (",
                                       name == "nccl" ? "NCCL needs a CUDA build that found libnccl; " : "",
                                       "available: ", known, ")"));
  auto pg = factory(std::move(store), rank, size, options);
  return pg;
}

}  // namespace ember::distributed
