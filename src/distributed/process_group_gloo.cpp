// The Gloo backend: a full mesh of TCP pairs set up through the group's store, and Gloo's own
// collective algorithms (ring allreduce, broadcast, gather, ...) on dense host buffers. One
// worker thread runs the group's collectives in call order, so every rank issues them in the
// same order and async_op overlaps them with the caller's work (DDP's backward). CUDA tensors
// travel through host copies. Send/recv post on the caller's thread (a blocked recv must not
// hold up the queue).
#include <unistd.h>

#include <condition_variable>
#include <complex>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>

#include "distributed/reduce_functions.h"
#include "ember/distributed/errors.h"
#include "ember/distributed/process_group.h"
#include "ember/ops.h"

namespace ember::distributed {
namespace {

// Gloo's rendezvous store over ours.
class StoreAdapter : public gloo::rendezvous::Store {
 public:
  explicit StoreAdapter(std::shared_ptr<distributed::Store> s) : store_(std::move(s)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, Bytes(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    const Bytes b = store_->get(key);
    return std::vector<char>(b.begin(), b.end());
  }
  void wait(const std::vector<std::string>& keys) override { store_->wait(keys); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    store_->wait(keys, timeout);
  }

 private:
  std::shared_ptr<distributed::Store> store_;
};

// Slot prefix of point-to-point messages (Gloo's collectives build theirs from other prefixes).
constexpr uint64_t kP2PSlot = uint64_t(0xe3) << 56;

std::string default_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) == 0 && name[0]) {
    // use it only where it resolves (containers often have names no resolver knows)
    gloo::transport::tcp::attr probe(name);
    try {
      gloo::transport::tcp::CreateDevice(probe);
      return name;
    } catch (const std::exception&) {
    }
  }
  return "127.0.0.1";
}

// A host buffer holding t's values: t itself when dense on the CPU, else a dense CPU copy whose
// result goes back into t afterwards (copy_back).
struct HostBuffer {
  Tensor original, host;
  explicit HostBuffer(const Tensor& t) : original(t) {
    host = (t.is_cpu() && t.is_contiguous()) ? t : t.to(Device(kCPU)).contiguous();
  }
  void* data() const { return host.data_ptr(); }
  size_t bytes() const { return size_t(host.nbytes()); }
  void copy_back() {
    if (host.data_ptr() != original.data_ptr()) original.copy_(host);
  }
};

class GlooWork : public Work {
 public:
  // send/recv: the transport buffer the caller's wait() completes
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
  std::unique_ptr<HostBuffer> host;
  bool is_send = false;
  int peer = -1;  // -1: a recv from any other rank
  int source = -1;
  std::string what;
  int source_rank() const override { return source; }

 protected:
  void wait_transport(Millis timeout) override {
    if (!buffer) return;
    try {
      const auto t = timeout.count() > 0 ? timeout : gloo::transport::kUnsetTimeout;  // unset: the group's timeout
      if (is_send) buffer->waitSend(t);
      else buffer->waitRecv(&source, t);
      if (!is_send) host->copy_back();
      buffer.reset();
      finish(nullptr, {host->original});
    } catch (const std::exception& e) {
      buffer.reset();
      finish(std::make_exception_ptr(DistBackendError(detail::cat(what, " failed: ", e.what()))));
    }
  }
};

class GlooProcessGroup : public ProcessGroup {
 public:
  GlooProcessGroup(std::shared_ptr<Store> store, int rank, int size, const GlooOptions& options)
      : ProcessGroup(rank, size), timeout_(options.timeout), store_(store) {
    EMBER_CHECK_VALUE(size >= 1 && rank >= 0 && rank < size, "ProcessGroupGloo: rank ", rank,
                      " is not in [0, world_size = ", size, ")");
    gloo::transport::tcp::attr attr;
    if (!options.interface.empty()) attr.iface = options.interface;
    else attr.hostname = options.hostname.empty() ? default_hostname() : options.hostname;
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
      context->setTimeout(options.timeout);
      StoreAdapter adapter(store);
      context->connectFullMesh(adapter, device_);
      context_ = context;
    } catch (const DistError&) {
      throw;
    } catch (const std::exception& e) {
      throw DistBackendError(detail::cat("ProcessGroupGloo: rank ", rank, " of ", size,
                                         " could not connect to the others: ", e.what()));
    }
    worker_ = std::thread([this] { run(); });
  }

  ~GlooProcessGroup() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  std::string backend_name() const override { return "gloo"; }

  std::shared_ptr<Work> all_reduce(Tensor t, ReduceOp op) override {
    check_reduce("all_reduce", t, op);
    return enqueue("all_reduce", {t}, [this, op](std::vector<HostBuffer>& b, uint32_t tag) {
      gloo::AllreduceOptions o(context_);
      set_typed_output(o, b[0]);
      o.setReduceFunction(reduce_function(b[0].host.dtype(), op));
      o.setTag(tag);
      o.setTimeout(timeout_);
      gloo::allreduce(o);
      if (op == ReduceOp::AVG) divide_by_size(b[0]);
    });
  }

  std::shared_ptr<Work> broadcast(Tensor t, int root) override {
    check_rank("broadcast", "src", root);
    return enqueue("broadcast", {t}, [this, root](std::vector<HostBuffer>& b, uint32_t tag) {
      gloo::BroadcastOptions o(context_);
      o.setOutput(bytes_of(b[0]), b[0].bytes());
      o.setRoot(root);
      o.setTag(tag);
      o.setTimeout(timeout_);
      gloo::broadcast(o);
    });
  }

  std::shared_ptr<Work> reduce(Tensor t, int root, ReduceOp op) override {
    check_rank("reduce", "dst", root);
    check_reduce("reduce", t, op);
    return enqueue("reduce", {t}, [this, root, op](std::vector<HostBuffer>& b, uint32_t tag) {
      gloo::ReduceOptions o(context_);
      set_typed_output(o, b[0]);
      o.setRoot(root);
      o.setReduceFunction(reduce_function(b[0].host.dtype(), op));
      o.setTag(tag);
      o.setTimeout(timeout_);
      gloo::reduce(o);
      if (op == ReduceOp::AVG && rank_ == root) divide_by_size(b[0]);
    });
  }

  std::shared_ptr<Work> all_gather_into(Tensor out, Tensor in) override {
    check_sizes("all_gather", out, in, size_);
    return enqueue("all_gather", {out, in}, [this](std::vector<HostBuffer>& b, uint32_t tag) {
      gloo::AllgatherOptions o(context_);
      o.setInput(bytes_of(b[1]), b[1].bytes());
      o.setOutput(bytes_of(b[0]), b[0].bytes());
      o.setTag(tag);
      o.setTimeout(timeout_);
      gloo::allgather(o);
    }, /*outputs=*/1);
  }

  std::shared_ptr<Work> gather_into(Tensor out, Tensor in, int root) override {
    check_rank("gather", "dst", root);
    if (rank_ == root) check_sizes("gather", out, in, size_);
    std::vector<Tensor> ts = rank_ == root ? std::vector<Tensor>{out, in} : std::vector<Tensor>{in};
    return enqueue("gather", ts, [this, root](std::vector<HostBuffer>& b, uint32_t tag) {
      gloo::GatherOptions o(context_);
      HostBuffer& input = b.back();
      o.setInput(bytes_of(input), input.bytes());
      if (rank_ == root) o.setOutput(bytes_of(b[0]), b[0].bytes());
      o.setRoot(root);
      o.setTag(tag);
      o.setTimeout(timeout_);
      gloo::gather(o);
    }, rank_ == root ? 1 : 0);
  }

  std::shared_ptr<Work> scatter_from(Tensor out, Tensor in, int root) override {
    check_rank("scatter", "src", root);
    if (rank_ == root) check_sizes("scatter", in, out, size_);
    std::vector<Tensor> ts = rank_ == root ? std::vector<Tensor>{out, in} : std::vector<Tensor>{out};
    return enqueue("scatter", ts, [this, root](std::vector<HostBuffer>& b, uint32_t tag) {
      gloo::ScatterOptions o(context_);
      const size_t chunk = b[0].bytes();
      if (rank_ == root) {
        std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> ins;
        for (int r = 0; r < size_; ++r)
          ins.push_back(context_->createUnboundBuffer(static_cast<char*>(b[1].data()) + r * chunk, chunk));
        o.template setInputs<uint8_t>(std::move(ins));
      }
      o.setOutput(bytes_of(b[0]), chunk);
      o.setRoot(root);
      o.setTag(tag);
      o.setTimeout(timeout_);
      gloo::scatter(o);
    }, 1);
  }

  std::shared_ptr<Work> reduce_scatter_from(Tensor out, Tensor in, ReduceOp op) override {
    return reduce_scatter_consuming(std::move(out), in.clone(), op);
  }

  // Gloo's allreduce over the input in place, then this rank's chunk.
  std::shared_ptr<Work> reduce_scatter_consuming(Tensor out, Tensor in, ReduceOp op) override {
    check_sizes("reduce_scatter", in, out, size_);
    check_reduce("reduce_scatter", in, op);
    return enqueue("reduce_scatter", {out, in}, [this, op](std::vector<HostBuffer>& b, uint32_t tag) {
      gloo::AllreduceOptions o(context_);
      set_typed_output(o, b[1]);
      o.setReduceFunction(reduce_function(b[1].host.dtype(), op));
      o.setTag(tag);
      o.setTimeout(timeout_);
      gloo::allreduce(o);
      const size_t chunk = b[0].bytes();
      std::memcpy(b[0].data(), static_cast<char*>(b[1].data()) + rank_ * chunk, chunk);
      if (op == ReduceOp::AVG) divide_by_size(b[0]);
    }, 1);
  }

  std::shared_ptr<Work> all_to_all(Tensor out, Tensor in) override {
    EMBER_CHECK_VALUE(out.numel() == in.numel() && out.dtype() == in.dtype() && in.numel() % size_ == 0,
                      "all_to_all: expected input and output of one dtype and numel divisible by the world size ",
                      size_, ", got ", in.sizes(), " and ", out.sizes());
    return enqueue("all_to_all", {out, in}, [this](std::vector<HostBuffer>& b, uint32_t tag) {
      gloo::AlltoallOptions o(context_);
      o.setInput(bytes_of(b[1]), b[1].bytes());
      o.setOutput(bytes_of(b[0]), b[0].bytes());
      o.setTag(tag);
      o.setTimeout(timeout_);
      gloo::alltoall(o);
    }, 1);
  }

  std::shared_ptr<Work> all_to_all_v(Tensor out, Tensor in, std::vector<int64_t> out_counts,
                                     std::vector<int64_t> in_counts) override {
    check_splits("all_to_all_single", out, in, out_counts, in_counts);
    return enqueue("all_to_all_single", {out, in}, [this, out_counts, in_counts](std::vector<HostBuffer>& b, uint32_t tag) {
      const int64_t es = b[0].host.element_size();
      std::vector<int64_t> out_bytes, in_bytes;
      for (int64_t c : out_counts) out_bytes.push_back(c * es);
      for (int64_t c : in_counts) in_bytes.push_back(c * es);
      gloo::AlltoallvOptions o(context_);
      o.setInput(bytes_of(b[1]), in_bytes);
      o.setOutput(bytes_of(b[0]), out_bytes);
      o.setTag(tag);
      o.setTimeout(timeout_);
      gloo::alltoallv(o);
    }, 1);
  }

  std::shared_ptr<Work> barrier() override {
    return enqueue("barrier", {}, [this](std::vector<HostBuffer>&, uint32_t tag) {
      gloo::BarrierOptions o(context_);
      o.setTag(tag);
      o.setTimeout(timeout_);
      gloo::barrier(o);
    });
  }

  std::shared_ptr<Work> send(Tensor t, int dst, int tag) override { return post(t, dst, tag, true); }
  std::shared_ptr<Work> recv(Tensor t, int src, int tag) override { return post(t, src, tag, false); }

 private:
  using Task = std::function<void()>;
  using Body = std::function<void(std::vector<HostBuffer>&, uint32_t)>;

  // Queues `body` over host buffers of `tensors`; the first `outputs` of them receive results.
  // (default: the first, as the in-place collectives).
  std::shared_ptr<Work> enqueue(const char* what, std::vector<Tensor> tensors, Body body, int outputs = -1) {
    auto work = std::make_shared<Work>();
    const int n_out = outputs < 0 ? int(std::min<size_t>(1, tensors.size())) : outputs;
    std::string where = detail::cat(what, " on process group '", name_, "' (rank ", rank_, " of ", size_, ", backend gloo)");
    Task task = [this, work, tensors = std::move(tensors), body = std::move(body), n_out, where]() mutable {
      const uint32_t tag = running_tag_++;  // the worker runs them in call order: the same tags on every rank
      try {
        std::vector<HostBuffer> buffers;
        buffers.reserve(tensors.size());
        for (auto& t : tensors) buffers.emplace_back(t);
        body(buffers, tag);
        std::vector<Tensor> outs;
        for (int i = 0; i < n_out; ++i) {
          buffers[size_t(i)].copy_back();
          outs.push_back(buffers[size_t(i)].original);
        }
        work->finish(nullptr, std::move(outs));
      } catch (const ember::Error&) {
        work->finish(std::current_exception());
      } catch (const std::exception& e) {
        work->finish(std::make_exception_ptr(DistBackendError(detail::cat(
            where, " failed (timeout ", timeout_.count(), " ms): ", e.what(), " -- ", who_is_missing(tag)))));
      }
    };
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
    return work;
  }

  std::shared_ptr<Work> post(Tensor t, int peer, int tag, bool is_send) {
    const char* what = is_send ? "send" : "recv";
    if (is_send || peer != -1) check_rank(what, is_send ? "dst" : "src", peer);
    EMBER_CHECK_VALUE(peer != rank_, what, ": a process cannot ", what, is_send ? " to" : " from", " itself (rank ", rank_, ")");
    EMBER_CHECK_VALUE(tag >= 0, what, ": tag must be non-negative, got ", tag);
    auto work = std::make_shared<GlooWork>();
    work->host = std::make_unique<HostBuffer>(t);
    work->is_send = is_send;
    work->peer = peer;
    work->what = peer < 0 ? detail::cat("recv from any rank on process group '", name_, "' (rank ", rank_, ")")
                          : detail::cat(what, is_send ? " to rank " : " from rank ", peer, " on process group '", name_,
                                        "' (rank ", rank_, ")");
    work->buffer = context_->createUnboundBuffer(work->host->data(), work->host->bytes());
    const uint64_t slot = kP2PSlot | uint64_t(uint32_t(tag));
    if (is_send) {
      work->buffer->send(peer, slot);
    } else if (peer >= 0) {
      work->buffer->recv(peer, slot);
    } else {
      std::vector<int> others;
      for (int r = 0; r < size_; ++r)
        if (r != rank_) others.push_back(r);
      work->buffer->recv(others, slot);
    }
    return work;
  }

  void run() {
    for (;;) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, nothing left
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::string who_is_missing(uint32_t tag) {
    return describe_missing_ranks(*store_, "failed_collective_" + std::to_string(tag), rank_, size_,
                                  std::min(timeout_, Millis(3000)));
  }

  void check_rank(const char* what, const char* arg, int r) const {
    EMBER_CHECK_VALUE(r >= 0 && r < size_, what, ": ", arg, " rank ", r, " is not in process group '", name_,
                      "' of size ", size_);
  }
  void check_reduce(const char* what, const Tensor& t, ReduceOp op) const {
    EMBER_CHECK_TYPE(reduce_supported(t.dtype(), op), what, ": ReduceOp.", reduce_op_name(op), " is not supported for ",
                     dtype_name(t.dtype()), " tensors");
  }
  void check_splits(const char* what, const Tensor& out, const Tensor& in, const std::vector<int64_t>& out_counts,
                    const std::vector<int64_t>& in_counts) const {
    EMBER_CHECK_VALUE(out.dtype() == in.dtype(), what, ": expected input and output of one dtype");
    EMBER_CHECK_VALUE(int(out_counts.size()) == size_ && int(in_counts.size()) == size_, what,
                      ": expected one split size per rank (", size_, "), got ", out_counts.size(), " and ",
                      in_counts.size());
    int64_t o = 0, i = 0;
    for (int r = 0; r < size_; ++r) {
      EMBER_CHECK_VALUE(out_counts[size_t(r)] >= 0 && in_counts[size_t(r)] >= 0, what, ": split sizes must be >= 0");
      o += out_counts[size_t(r)];
      i += in_counts[size_t(r)];
    }
    EMBER_CHECK_VALUE(o == out.numel() && i == in.numel(), what, ": the split sizes add up to ", i, " input and ", o,
                      " output elements, the tensors hold ", in.numel(), " and ", out.numel());
  }
  static void check_sizes(const char* what, const Tensor& big, const Tensor& small, int size) {
    EMBER_CHECK_VALUE(big.dtype() == small.dtype(), what, ": expected tensors of one dtype, got ", dtype_name(big.dtype()),
                      " and ", dtype_name(small.dtype()));
    EMBER_CHECK_VALUE(big.numel() == small.numel() * size, what, ": expected a tensor of world_size (", size,
                      ") x ", small.numel(), " elements, got ", big.numel());
  }
  static uint8_t* bytes_of(const HostBuffer& b) { return static_cast<uint8_t*>(b.data()); }
  // A reduction's buffer typed by its element size: Gloo splits it on element boundaries and
  // hands the reduce function element counts.
  template <class O> static void set_typed_output(O& o, const HostBuffer& b) {
    const size_t n = size_t(b.host.numel());
    switch (b.host.element_size()) {
      case 1: o.setOutput(static_cast<uint8_t*>(b.data()), n); break;
      case 2: o.setOutput(static_cast<uint16_t*>(b.data()), n); break;
      case 4: o.setOutput(static_cast<uint32_t*>(b.data()), n); break;
      case 8: o.setOutput(static_cast<uint64_t*>(b.data()), n); break;
      default: o.setOutput(static_cast<std::complex<double>*>(b.data()), n); break;
    }
  }
  void divide_by_size(HostBuffer& b) const {
    Tensor h = b.host;
    h.copy_(div(h, Scalar(size_)));
  }

  Millis timeout_;
  std::shared_ptr<Store> store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stop_ = false;
  uint32_t running_tag_ = 0;  // worker thread only
};

}  // namespace

bool gloo_available() { return true; }

std::shared_ptr<ProcessGroup> make_gloo_process_group(std::shared_ptr<Store> store, int rank, int size,
                                                      const GlooOptions& options) {
  return std::make_shared<GlooProcessGroup>(std::move(store), rank, size, options);
}

}  // namespace ember::distributed
