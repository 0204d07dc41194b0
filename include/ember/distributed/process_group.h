#pragma once
// Process groups (torch.distributed's ProcessGroup): the collectives of a set of processes over
// one backend. Gloo (CPU tensors; CUDA tensors through host copies) is built in when Debian's
// libgloo-dev was found (ember::distributed::gloo_available()). Collectives run in the order
// they are called, on a worker thread of the group: the returned Work completes when the
// collective has, and rethrows its error from wait().
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember/distributed/store.h"
#include "ember/tensor.h"

namespace ember::distributed {

enum class ReduceOp { SUM, AVG, PRODUCT, MIN, MAX };
const char* reduce_op_name(ReduceOp op);

// The handle of a collective or point-to-point operation (torch's Work).
class Work {
 public:
  virtual ~Work() = default;
  // Blocks until done; rethrows the operation's error. False when `timeout` (if positive)
  // passed first.
  bool wait(Millis timeout = Millis(0));
  bool is_completed();
  bool is_success();
  // The tensors the operation produced (torch's Work.result()).
  std::vector<Tensor> result();
  // A finished recv's sender (recv from any source); -1 for other work.
  virtual int source_rank() const { return -1; }

  // For the backends: mark done (error: null on success) and keep the outputs.
  void finish(std::exception_ptr error, std::vector<Tensor> outputs = {});

 protected:
  // Point-to-point work completes by waiting on its transport (run on the caller's thread).
  virtual void wait_transport(Millis timeout) {}

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::exception_ptr error_;
  std::vector<Tensor> outputs_;
};

class ProcessGroup {
 public:
  ProcessGroup(int rank, int size) : rank_(rank), size_(size) {}
  virtual ~ProcessGroup() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  virtual std::string backend_name() const = 0;
  // A name for messages ("default_pg", "group 2 [0, 3]").
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  // The tensors are dense on any device; results are written into them in place.
  virtual std::shared_ptr<Work> all_reduce(Tensor t, ReduceOp op) = 0;
  virtual std::shared_ptr<Work> broadcast(Tensor t, int root) = 0;
  virtual std::shared_ptr<Work> reduce(Tensor t, int root, ReduceOp op) = 0;
  // out: size() * numel elements of the input's dtype, rank r's input at [r * numel, ...).
  virtual std::shared_ptr<Work> all_gather_into(Tensor out, Tensor in) = 0;
  // out (root only): as all_gather_into's.
  virtual std::shared_ptr<Work> gather_into(Tensor out, Tensor in, int root) = 0;
  // in (root only): size() * numel elements, rank r receives [r * numel, ...) into out.
  virtual std::shared_ptr<Work> scatter_from(Tensor out, Tensor in, int root) = 0;
  // in: size() * numel elements; out receives the reduction of everyone's chunk `rank()`.
  virtual std::shared_ptr<Work> reduce_scatter_from(Tensor out, Tensor in, ReduceOp op) = 0;
  // The same when the caller gives up `in` (it may be overwritten): a backend whose reduce-scatter
  // would copy its input first (Gloo's is an all-reduce plus a chunk) can work in it directly.
  virtual std::shared_ptr<Work> reduce_scatter_consuming(Tensor out, Tensor in, ReduceOp op) {
    return reduce_scatter_from(std::move(out), std::move(in), op);
  }
  // in, out: size() * numel elements; chunk r of in goes to rank r, chunk r of out comes from r.
  virtual std::shared_ptr<Work> all_to_all(Tensor out, Tensor in) = 0;
  // Uneven splits: in_counts[r] elements of in, in order, go to rank r; out_counts[r] elements
  // from rank r fill out in order.
  virtual std::shared_ptr<Work> all_to_all_v(Tensor out, Tensor in, std::vector<int64_t> out_counts,
                                             std::vector<int64_t> in_counts) = 0;
  virtual std::shared_ptr<Work> barrier() = 0;
  virtual std::shared_ptr<Work> send(Tensor t, int dst, int tag) = 0;
  virtual std::shared_ptr<Work> recv(Tensor t, int src, int tag) = 0;  // src -1: any other rank

 protected:
  int rank_, size_;
  std::string name_ = "default_pg";
};

bool gloo_available();

// After a collective failed: every surviving rank checks in on `store` under `key` and waits up
// to `wait` for the others; returns "missing rank 2 (...)" naming those that did not (they
// exited or hang elsewhere), or why it cannot tell. Both backends' failure messages end with it.
std::string describe_missing_ranks(Store& store, const std::string& key, int rank, int size, Millis wait);

// Options of a process group (the name is Gloo's; NCCL reads the timeout only).
struct GlooOptions {
  Millis timeout{1'800'000};  // torch's default process-group timeout: 30 minutes
  // The address the group's connections listen on: a hostname or IP, or an interface name
  // (GLOO_SOCKET_IFNAME); empty: this host's name, or loopback when it does not resolve.
  std::string hostname;
  std::string interface;
};

// A Gloo process group meeting through `store` (the group's own namespace: a PrefixStore).
std::shared_ptr<ProcessGroup> make_gloo_process_group(std::shared_ptr<Store> store, int rank, int size,
                                                      const GlooOptions& options);

// Backends by name ("gloo"; "nccl" where the CUDA build found NCCL): a backend registers its
// factory from a static initialiser, so generic code never includes a backend's headers.
using ProcessGroupFactory =
    std::function<std::shared_ptr<ProcessGroup>(std::shared_ptr<Store>, int rank, int size, const GlooOptions&)>;
void register_process_group_backend(const std::string& name, ProcessGroupFactory factory);
bool process_group_backend_available(const std::string& name);
// Throws naming the backends there are when `name` is not one of them.
std::shared_ptr<ProcessGroup> make_process_group(const std::string& name, std::shared_ptr<Store> store, int rank,
                                                 int size, const GlooOptions& options);

}  // namespace ember::distributed
