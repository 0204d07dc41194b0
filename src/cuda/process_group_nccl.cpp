// The NCCL process group (backend "nccl"): collectives on CUDA tensors run on a dedicated
// stream per device, after the caller's current stream (an event), and Work.wait() makes the
// caller's current stream wait for them (the host goes on, as torch's); wait(timeout) blocks the
// host instead and aborts the communicator when the timeout passes (a dead or hanging rank
// then fails the others rather than hanging them). The communicator of a device is made at its
// first collective: rank 0's ncclUniqueId travels through the group's store. Registered with
// the distributed layer from a static initialiser (generic code never includes this).
// libnccl is opened at the first NCCL group, not linked: a process that imports ember and then a
// PyTorch with a newer NCCL of its own would otherwise bind PyTorch to ours (one soname).
#if defined(EMBER_DISTRIBUTED) && defined(EMBER_NCCL)
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "cuda/cuda_state.h"
#include "ember/distributed/errors.h"
#include "ember/distributed/process_group.h"
#include "ember/ops.h"

namespace ember::cuda {
namespace {

using namespace ember::distributed;

// NCCL's entry points, from dlopen (see the top). The wrappers below carry NCCL's names, so
// the code reads as NCCL's API; unqualified calls here find them before the header's.
struct NcclLibrary {
  void* handle = nullptr;
  std::string error;
#define EMBER_NCCL_FN(name) decltype(&::name) name##_ = nullptr;
  EMBER_NCCL_FN(ncclGetErrorString) EMBER_NCCL_FN(ncclGetUniqueId) EMBER_NCCL_FN(ncclCommInitRank)
  EMBER_NCCL_FN(ncclCommDestroy) EMBER_NCCL_FN(ncclCommAbort) EMBER_NCCL_FN(ncclCommGetAsyncError)
  EMBER_NCCL_FN(ncclAllReduce) EMBER_NCCL_FN(ncclBroadcast) EMBER_NCCL_FN(ncclReduce) EMBER_NCCL_FN(ncclAllGather)
  EMBER_NCCL_FN(ncclReduceScatter) EMBER_NCCL_FN(ncclSend) EMBER_NCCL_FN(ncclRecv) EMBER_NCCL_FN(ncclGroupStart)
  EMBER_NCCL_FN(ncclGroupEnd)
#undef EMBER_NCCL_FN
  NcclLibrary() {
    for (const char* name : {"libnccl.so.2", "libnccl.so", "/usr/local/cuda/lib64/libnccl.so.2"}) {
      handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle) break;
    }
    if (!handle) {
      error = "libnccl.so.2 could not be opened (put NCCL's directory on LD_LIBRARY_PATH)";
      return;
    }
#define EMBER_NCCL_SYM(name)                                                      \
  name##_ = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name));            \
  if (!name##_) error = std::string("libnccl.so.2 has no ") + #name + " (NCCL 2.10 or newer needed)";
    EMBER_NCCL_SYM(ncclGetErrorString) EMBER_NCCL_SYM(ncclGetUniqueId) EMBER_NCCL_SYM(ncclCommInitRank)
    EMBER_NCCL_SYM(ncclCommDestroy) EMBER_NCCL_SYM(ncclCommAbort) EMBER_NCCL_SYM(ncclCommGetAsyncError)
    EMBER_NCCL_SYM(ncclAllReduce) EMBER_NCCL_SYM(ncclBroadcast) EMBER_NCCL_SYM(ncclReduce) EMBER_NCCL_SYM(ncclAllGather)
    EMBER_NCCL_SYM(ncclReduceScatter) EMBER_NCCL_SYM(ncclSend) EMBER_NCCL_SYM(ncclRecv) EMBER_NCCL_SYM(ncclGroupStart)
    EMBER_NCCL_SYM(ncclGroupEnd)
#undef EMBER_NCCL_SYM
  }
};

const NcclLibrary& nccl_library() {
  static const NcclLibrary lib;
  if (!lib.error.empty()) throw DistBackendError(detail::cat("ProcessGroupNCCL: ", lib.error));
  return lib;
}

// (qualified calls, dyn::ncclX: NCCL's handle types would pull the header's ::ncclX in by
// argument-dependent lookup)
namespace dyn {
#define EMBER_NCCL_FORWARD(name)                                                         \
  template <class... A> auto name(A... a) { return nccl_library().name##_(a...); }
EMBER_NCCL_FORWARD(ncclGetErrorString)
EMBER_NCCL_FORWARD(ncclGetUniqueId)
EMBER_NCCL_FORWARD(ncclCommInitRank)
EMBER_NCCL_FORWARD(ncclCommDestroy)
EMBER_NCCL_FORWARD(ncclCommAbort)
EMBER_NCCL_FORWARD(ncclCommGetAsyncError)
EMBER_NCCL_FORWARD(ncclAllReduce)
EMBER_NCCL_FORWARD(ncclBroadcast)
EMBER_NCCL_FORWARD(ncclReduce)
EMBER_NCCL_FORWARD(ncclAllGather)
EMBER_NCCL_FORWARD(ncclReduceScatter)
EMBER_NCCL_FORWARD(ncclSend)
EMBER_NCCL_FORWARD(ncclRecv)
EMBER_NCCL_FORWARD(ncclGroupStart)
EMBER_NCCL_FORWARD(ncclGroupEnd)
#undef EMBER_NCCL_FORWARD
}  // namespace dyn

void check_nccl(ncclResult_t r, const std::string& what) {
  if (r != ncclSuccess && r != ncclInProgress)
    throw DistBackendError(detail::cat(what, " failed: NCCL error ", int(r), ": ", dyn::ncclGetErrorString(r),
                                       r == ncclUnhandledCudaError || r == ncclSystemError
                                           ? " (NCCL_DEBUG=INFO says more)"
                                           : ""));
}

void check_cuda(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) throw DistBackendError(detail::cat(what, ": CUDA error: ", cudaGetErrorString(e)));
}

ncclDataType_t nccl_type(DType t, const char* what) {
  switch (t) {
    case DType::Int8: return ncclInt8;
    case DType::UInt8: case DType::Bool: return ncclUint8;
    case DType::Int32: return ncclInt32;
    case DType::Int64: return ncclInt64;
    case DType::Float16: return ncclFloat16;
    case DType::BFloat16: return ncclBfloat16;
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
    default: throw TypeError(detail::cat(what, ": NCCL has no ", dtype_name(t), " type"));
  }
}

ncclRedOp_t nccl_op(ReduceOp op, DType t, const char* what) {
  switch (op) {
    case ReduceOp::SUM: return ncclSum;
    case ReduceOp::PRODUCT: return ncclProd;
    case ReduceOp::MIN: return ncclMin;
    case ReduceOp::MAX: return ncclMax;
    case ReduceOp::AVG:
      if (!is_floating(t)) throw TypeError(detail::cat(what, ": ReduceOp.AVG needs a floating dtype, got ", dtype_name(t)));
      return ncclAvg;
  }
  return ncclSum;
}

// Set by the group's watchdog when a collective outlived the timeout (the communicators are then
// aborted); every later wait and collective reports it.
struct Health {
  std::mutex mutex;
  std::string broken;
  std::string message() {
    std::lock_guard<std::mutex> lock(mutex);
    return broken;
  }
};

class NcclWork : public Work {
 public:
  NcclWork(cudaEvent_t done, int device, ncclComm_t comm, std::string what, std::vector<Tensor> outputs,
           std::function<std::string()> who_is_missing, std::shared_ptr<Health> health)
      : done_(done), device_(device), comm_(comm), what_(std::move(what)), outputs_(std::move(outputs)),
        who_is_missing_(std::move(who_is_missing)), health_(std::move(health)) {}
  ~NcclWork() override {
    if (done_) cudaEventDestroy(done_);
  }

 protected:
  void wait_transport(Millis timeout) override {
    if (!done_) return;
    if (std::string broken = health_->message(); !broken.empty()) return fail(broken);
    GpuGuard guard(device_);
    if (timeout.count() > 0) {  // block the host, watching for NCCL's errors, up to the timeout
      const auto deadline = std::chrono::steady_clock::now() + timeout;
      for (;;) {
        const cudaError_t q = cudaEventQuery(done_);
        if (q == cudaSuccess) break;
        if (q != cudaErrorNotReady) return fail(detail::cat(what_, ": CUDA error: ", cudaGetErrorString(q)));
        ncclResult_t async = ncclSuccess;
        dyn::ncclCommGetAsyncError(comm_, &async);
        if (async != ncclSuccess && async != ncclInProgress)
          return fail(detail::cat(what_, " failed: NCCL error: ", dyn::ncclGetErrorString(async)));
        if (std::chrono::steady_clock::now() > deadline) {
          dyn::ncclCommAbort(comm_);  // the group is unusable from here, as torch's after its watchdog aborts
          return fail(detail::cat(what_, " timed out after ", timeout.count(), " ms; the communicator was aborted -- ",
                                  who_is_missing_()));
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    } else {
      // the caller's current stream waits; the host goes on
      const cudaError_t e = cudaStreamWaitEvent(current_cuda_stream(device_), done_, 0);
      if (e != cudaSuccess) return fail(detail::cat(what_, ": CUDA error: ", cudaGetErrorString(e)));
    }
    cudaEventDestroy(done_);
    done_ = nullptr;
    finish(nullptr, outputs_);
  }

 private:
  void fail(const std::string& message) {
    cudaEventDestroy(done_);
    done_ = nullptr;
    finish(std::make_exception_ptr(DistBackendError(message)));
  }
  cudaEvent_t done_;
  int device_;
  ncclComm_t comm_;
  std::string what_;
  std::vector<Tensor> outputs_;
  std::function<std::string()> who_is_missing_;
  std::shared_ptr<Health> health_;
};

class NcclProcessGroup : public ProcessGroup {
 public:
  NcclProcessGroup(std::shared_ptr<Store> store, int rank, int size, Millis timeout)
      : ProcessGroup(rank, size), store_(std::move(store)), timeout_(timeout) {
    watchdog_ = std::thread([this] { watch(); });
  }
  ~NcclProcessGroup() override {
    {
      std::lock_guard<std::mutex> lock(watch_mutex_);
      stop_ = true;
    }
    watch_cv_.notify_all();
    watchdog_.join();
    for (auto& w : watched_) cudaEventDestroy(w.event);
    for (auto& [_, comm] : comms_) dyn::ncclCommDestroy(comm);
  }
  std::string backend_name() const override { return "nccl"; }

  std::shared_ptr<Work> all_reduce(Tensor t, ReduceOp op) override {
    return run("all_reduce", t, {t}, [&](ncclComm_t c, cudaStream_t s) {
      return dyn::ncclAllReduce(t.data_ptr(), t.data_ptr(), size_t(t.numel()), nccl_type(t.dtype(), "all_reduce"),
                           nccl_op(op, t.dtype(), "all_reduce"), c, s);
    });
  }
  std::shared_ptr<Work> broadcast(Tensor t, int root) override {
    check_rank("broadcast", root);
    return run("broadcast", t, {t}, [&](ncclComm_t c, cudaStream_t s) {
      return dyn::ncclBroadcast(t.data_ptr(), t.data_ptr(), size_t(t.numel()), nccl_type(t.dtype(), "broadcast"), root, c, s);
    });
  }
  std::shared_ptr<Work> reduce(Tensor t, int root, ReduceOp op) override {
    check_rank("reduce", root);
    return run("reduce", t, {t}, [&](ncclComm_t c, cudaStream_t s) {
      return dyn::ncclReduce(t.data_ptr(), t.data_ptr(), size_t(t.numel()), nccl_type(t.dtype(), "reduce"),
                        nccl_op(op, t.dtype(), "reduce"), root, c, s);
    });
  }
  std::shared_ptr<Work> all_gather_into(Tensor out, Tensor in) override {
    check_sizes("all_gather", out, in);
    return run("all_gather", in, {out, in}, [&](ncclComm_t c, cudaStream_t s) {
      return dyn::ncclAllGather(in.data_ptr(), out.data_ptr(), size_t(in.numel()), nccl_type(in.dtype(), "all_gather"), c, s);
    });
  }
  std::shared_ptr<Work> gather_into(Tensor out, Tensor in, int root) override {
    check_rank("gather", root);
    if (rank_ == root) check_sizes("gather", out, in);
    return run("gather", in, rank_ == root ? std::vector<Tensor>{out, in} : std::vector<Tensor>{in},
               [&](ncclComm_t c, cudaStream_t s) {
                 const size_t n = size_t(in.numel()), bytes = n * size_t(in.element_size());
                 const ncclDataType_t dt = nccl_type(in.dtype(), "gather");
                 dyn::ncclGroupStart();
                 if (rank_ == root)
                   for (int r = 0; r < size_; ++r) dyn::ncclRecv(static_cast<char*>(out.data_ptr()) + r * bytes, n, dt, r, c, s);
                 dyn::ncclSend(in.data_ptr(), n, dt, root, c, s);
                 return dyn::ncclGroupEnd();
               });
  }
  std::shared_ptr<Work> scatter_from(Tensor out, Tensor in, int root) override {
    check_rank("scatter", root);
    if (rank_ == root) check_sizes("scatter", in, out);
    return run("scatter", out, rank_ == root ? std::vector<Tensor>{out, in} : std::vector<Tensor>{out},
               [&](ncclComm_t c, cudaStream_t s) {
                 const size_t n = size_t(out.numel()), bytes = n * size_t(out.element_size());
                 const ncclDataType_t dt = nccl_type(out.dtype(), "scatter");
                 dyn::ncclGroupStart();
                 if (rank_ == root)
                   for (int r = 0; r < size_; ++r) dyn::ncclSend(static_cast<char*>(in.data_ptr()) + r * bytes, n, dt, r, c, s);
                 dyn::ncclRecv(out.data_ptr(), n, dt, root, c, s);
                 return dyn::ncclGroupEnd();
               });
  }
  std::shared_ptr<Work> reduce_scatter_from(Tensor out, Tensor in, ReduceOp op) override {
    check_sizes("reduce_scatter", in, out);
    return run("reduce_scatter", out, {out, in}, [&](ncclComm_t c, cudaStream_t s) {
      return dyn::ncclReduceScatter(in.data_ptr(), out.data_ptr(), size_t(out.numel()), nccl_type(in.dtype(), "reduce_scatter"),
                               nccl_op(op, in.dtype(), "reduce_scatter"), c, s);
    });
  }
  std::shared_ptr<Work> all_to_all(Tensor out, Tensor in) override {
    EMBER_CHECK_VALUE(out.numel() == in.numel() && in.numel() % size_ == 0, "all_to_all: expected input and output of "
                      "one size divisible by the world size ", size_, ", got ", in.sizes(), " and ", out.sizes());
    return run("all_to_all", out, {out, in}, [&](ncclComm_t c, cudaStream_t s) {
      const size_t n = size_t(in.numel() / size_), bytes = n * size_t(in.element_size());
      const ncclDataType_t dt = nccl_type(in.dtype(), "all_to_all");
      dyn::ncclGroupStart();
      for (int r = 0; r < size_; ++r) {
        dyn::ncclSend(static_cast<char*>(in.data_ptr()) + r * bytes, n, dt, r, c, s);
        dyn::ncclRecv(static_cast<char*>(out.data_ptr()) + r * bytes, n, dt, r, c, s);
      }
      return dyn::ncclGroupEnd();
    });
  }
  std::shared_ptr<Work> all_to_all_v(Tensor out, Tensor in, std::vector<int64_t> out_counts,
                                     std::vector<int64_t> in_counts) override {
    EMBER_CHECK_VALUE(int(out_counts.size()) == size_ && int(in_counts.size()) == size_,
                      "all_to_all_single: expected one split size per rank (", size_, ")");
    return run("all_to_all_single", out, {out, in}, [&](ncclComm_t c, cudaStream_t s) {
      const size_t es = size_t(in.element_size());
      const ncclDataType_t dt = nccl_type(in.dtype(), "all_to_all_single");
      size_t in_at = 0, out_at = 0;
      dyn::ncclGroupStart();
      for (int r = 0; r < size_; ++r) {
        dyn::ncclSend(static_cast<char*>(in.data_ptr()) + in_at * es, size_t(in_counts[size_t(r)]), dt, r, c, s);
        dyn::ncclRecv(static_cast<char*>(out.data_ptr()) + out_at * es, size_t(out_counts[size_t(r)]), dt, r, c, s);
        in_at += size_t(in_counts[size_t(r)]);
        out_at += size_t(out_counts[size_t(r)]);
      }
      return dyn::ncclGroupEnd();
    });
  }
  std::shared_ptr<Work> barrier() override {
    // an all_reduce of one value on this process's device, waited on by the host
    const int dev = barrier_device();
    Tensor one = ember::zeros({1}, {.dtype = kFloat32, .device = Device(kCUDA, dev)});
    auto w = all_reduce(one, ReduceOp::SUM);
    w->wait(timeout_);
    return w;
  }
  std::shared_ptr<Work> send(Tensor t, int dst, int tag) override {
    check_rank("send", dst);
    return run("send", t, {t}, [&](ncclComm_t c, cudaStream_t s) {
      return dyn::ncclSend(t.data_ptr(), size_t(t.numel()), nccl_type(t.dtype(), "send"), dst, c, s);
    });
  }
  std::shared_ptr<Work> recv(Tensor t, int src, int tag) override {
    EMBER_CHECK(src >= 0, "recv: the NCCL backend cannot receive from any source: name the sender (src)");
    check_rank("recv", src);
    return run("recv", t, {t}, [&](ncclComm_t c, cudaStream_t s) {
      return dyn::ncclRecv(t.data_ptr(), size_t(t.numel()), nccl_type(t.dtype(), "recv"), src, c, s);
    });
  }

 private:
  template <class F>
  std::shared_ptr<Work> run(const char* what, const Tensor& on, std::vector<Tensor> tensors, F&& issue) {
    for (const Tensor& t : tensors)
      EMBER_CHECK_VALUE(t.is_cuda() && t.is_contiguous() && t.device() == on.device(), what,
                        ": the NCCL backend takes dense CUDA tensors of one device, got a ", t.is_cuda() ? "" : "CPU ",
                        t.is_contiguous() ? "" : "non-contiguous ", "tensor on ", t.device().str());
    const int dev = on.device().index;
    if (std::string broken = health_->message(); !broken.empty()) throw DistBackendError(broken);
    GpuGuard guard(dev);
    std::lock_guard<std::mutex> lock(mutex_);
    last_device_ = dev;
    ncclComm_t comm = comm_for(dev);
    const Stream ns = stream_for(dev);
    cudaStream_t s = stream_handle(ns);
    cudaEvent_t ready = nullptr, done = nullptr;
    const std::string where = detail::cat(what, " on process group '", name_, "' (rank ", rank_, " of ", size_, ", backend nccl)");
    check_cuda(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), where);
    check_cuda(cudaEventRecord(ready, current_cuda_stream(dev)), where);
    check_cuda(cudaStreamWaitEvent(s, ready, 0), where);
    cudaEventDestroy(ready);
    check_nccl(issue(comm, s), where);
    for (const Tensor& t : tensors) t.record_stream(ns);  // the allocator keeps them until the stream is past
    check_cuda(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), where);
    check_cuda(cudaEventRecord(done, s), where);
    const uint64_t seq = sequence_++;  // the same on every rank: collectives are called in one order
    auto store = store_;
    const int rank = rank_, size = size_;
    const Millis wait = std::min(timeout_, Millis(3000));
    auto who = [store, seq, rank, size, wait] {
      return describe_missing_ranks(*store, "failed_collective_" + std::to_string(seq), rank, size, wait);
    };
    cudaEvent_t watch_event = nullptr;  // the watchdog's own copy of the completion point
    check_cuda(cudaEventCreateWithFlags(&watch_event, cudaEventDisableTiming), where);
    check_cuda(cudaEventRecord(watch_event, s), where);
    {
      std::lock_guard<std::mutex> watch_lock(watch_mutex_);
      watched_.push_back({watch_event, dev, comm, where, std::chrono::steady_clock::now() + timeout_, who});
    }
    return std::make_shared<NcclWork>(done, dev, comm, where, std::vector<Tensor>{tensors.front()}, who, health_);
  }

  ncclComm_t comm_for(int dev) {
    auto it = comms_.find(dev);
    if (it != comms_.end()) return it->second;
    ncclUniqueId id;
    const std::string key = "nccl_unique_id_" + std::to_string(dev_generation_++);
    if (rank_ == 0) {
      check_nccl(dyn::ncclGetUniqueId(&id), "ncclGetUniqueId");
      store_->set(key, Bytes(reinterpret_cast<uint8_t*>(&id), reinterpret_cast<uint8_t*>(&id) + sizeof(id)));
    } else {
      const Bytes b = store_->get(key);
      EMBER_CHECK(b.size() == sizeof(id), "ProcessGroupNCCL: a malformed unique id in the store");
      std::memcpy(&id, b.data(), sizeof(id));
    }
    ncclComm_t comm = nullptr;
    check_nccl(dyn::ncclCommInitRank(&comm, size_, id, rank_),
               detail::cat("ProcessGroupNCCL: rank ", rank_, " of ", size_, " joining on cuda:", dev));
    comms_[dev] = comm;
    return comm;
  }

  Stream stream_for(int dev) {
    auto it = streams_.find(dev);
    if (it != streams_.end()) return it->second;
    const Stream s = pooled_stream(dev, 0);
    streams_[dev] = s;
    return s;
  }

  int barrier_device() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (last_device_ >= 0) return last_device_;
    const int n = gpu_count();
    EMBER_CHECK(n > 0, "barrier: the NCCL backend needs a GPU");
    return rank_ % n;  // torch's guess without a device_id: one GPU per local rank
  }

  void check_rank(const char* what, int r) const {
    EMBER_CHECK_VALUE(r >= 0 && r < size_, what, ": rank ", r, " is not in process group '", name_, "' of size ", size_);
  }
  void check_sizes(const char* what, const Tensor& big, const Tensor& small) const {
    EMBER_CHECK_VALUE(big.dtype() == small.dtype() && big.numel() == small.numel() * size_, what,
                      ": expected a tensor of world_size (", size_, ") x ", small.numel(), " elements of ",
                      dtype_name(small.dtype()), ", got ", big.numel(), " of ", dtype_name(big.dtype()));
  }

  // torch's watchdog: a collective still running after the timeout aborts the communicators, so
  // a dead or hung peer fails this process's work (and its stream's waiters) instead of hanging
  // them, even when nobody calls wait(timeout).
  void watch() {
    std::unique_lock<std::mutex> lock(watch_mutex_);
    while (!stop_) {
      watch_cv_.wait_for(lock, std::chrono::milliseconds(100));
      const auto now = std::chrono::steady_clock::now();
      for (auto it = watched_.begin(); it != watched_.end();) {
        GpuGuard guard(it->device);
        const cudaError_t q = cudaEventQuery(it->event);
        if (q == cudaSuccess) {
          cudaEventDestroy(it->event);
          it = watched_.erase(it);
          continue;
        }
        if (now > it->deadline) {
          const std::string what = it->what;
          auto who = it->who;
          for (auto& w : watched_) cudaEventDestroy(w.event);
          watched_.clear();
          lock.unlock();  // (run() takes mutex_ and then watch_mutex_: never the other way round)
          for (auto& [_, comm] : comms_snapshot()) dyn::ncclCommAbort(comm);
          const std::string message = detail::cat(what, " timed out after ", timeout_.count(),
                                                  " ms (watchdog); the NCCL communicators were aborted -- ", who());
          {
            std::lock_guard<std::mutex> h(health_->mutex);
            health_->broken = message;
          }
          std::fprintf(stderr, "[ember ProcessGroupNCCL rank %d] %s\n", rank_, message.c_str());
          lock.lock();
          break;
        }
        ++it;
      }
    }
  }
  std::map<int, ncclComm_t> comms_snapshot() {
    std::lock_guard<std::mutex> lock(mutex_);
    return comms_;
  }

  struct Watched {
    cudaEvent_t event;
    int device;
    ncclComm_t comm;
    std::string what;
    std::chrono::steady_clock::time_point deadline;
    std::function<std::string()> who;
  };

  std::shared_ptr<Store> store_;
  Millis timeout_;
  std::shared_ptr<Health> health_ = std::make_shared<Health>();
  std::mutex watch_mutex_;
  std::condition_variable watch_cv_;
  std::vector<Watched> watched_;
  bool stop_ = false;
  std::thread watchdog_;
  std::mutex mutex_;
  std::map<int, ncclComm_t> comms_;
  std::map<int, Stream> streams_;
  int dev_generation_ = 0;
  uint64_t sequence_ = 0;
  int last_device_ = -1;
};

const bool nccl_registered = [] {
  register_process_group_backend("nccl", [](std::shared_ptr<Store> store, int rank, int size, const GlooOptions& o) {
    return std::make_shared<NcclProcessGroup>(std::move(store), rank, size, o.timeout);
  });
  return true;
}();

}  // namespace
}  // namespace ember::cuda
#endif
