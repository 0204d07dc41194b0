#include "distributed_run.h"

#include <cstdlib>
#include <string>

#include "ember/core/errors.h"
#ifdef EMBER_DISTRIBUTED
#include "ember/distributed/process_group.h"
#include "ember/distributed/reducer.h"
#include "ember/distributed/store.h"
#endif

namespace train_demo {

DistributedRun join_from_environment() {
  const char* rank = std::getenv("RANK");
  const char* world = std::getenv("WORLD_SIZE");
  DistributedRun run;
  if (!rank || !world || std::atoi(world) <= 1) return run;
#ifndef EMBER_DISTRIBUTED
  throw ember::Error("RANK and WORLD_SIZE are set (a launcher started this demo) but ember was built without "
                     "distributed support (Gloo): install libgloo-dev (scripts/setup.sh) and rebuild");
#else
  using namespace ember::distributed;
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  EMBER_CHECK_VALUE(addr && port, "the demo under a launcher needs MASTER_ADDR and MASTER_PORT");
  run.rank = std::atoi(rank);
  run.world = std::atoi(world);
  auto store = std::make_shared<TCPStore>(addr, std::atoi(port), run.rank == 0, kDefaultStoreTimeout, run.world);
  const std::string host(addr);
  GlooOptions options;
  if (host == "localhost" || host.rfind("127.", 0) == 0) options.hostname = "127.0.0.1";
  if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME")) options.interface = iface;
  run.group = make_gloo_process_group(std::make_shared<PrefixStore>("default_pg", store), run.rank, run.world, options);
  return run;
#endif
}

void sum_over_job(const DistributedRun& run, ember::Tensor& values) {
#ifdef EMBER_DISTRIBUTED
  if (run.group) run.group->all_reduce(values, ember::distributed::ReduceOp::SUM)->wait();
#else
  (void)run;
  (void)values;
#endif
}

std::function<ember::Tensor(const ember::Tensor&)> training_forward(const DistributedRun& run,
                                                                   std::shared_ptr<ember::nn::Module> model) {
#ifdef EMBER_DISTRIBUTED
  if (run.group) {
    auto ddp = std::make_shared<ember::distributed::DistributedDataParallel>(model, run.group);
    return [ddp](const ember::Tensor& x) { return ddp->forward(x); };
  }
#endif
  return [model](const ember::Tensor& x) { return model->forward(x); };
}

}  // namespace train_demo
