// CUDA graphs (torch.cuda.CUDAGraph) for the DeviceGraph contract (core/backend.h): stream
// capture into a cudaGraph_t, instantiated once, replayed with one cudaGraphLaunch. Memory the
// capture allocates comes from the graph's private pool (cuda_memory.cpp), which the graph keeps
// until reset, so replays read and write where the capture did.
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/cuda_memory.h"
#include "cuda/cuda_state.h"
#include "ember/core/errors.h"

namespace ember::cuda {
namespace {

class CudaGraph final : public DeviceGraph {
 public:
  ~CudaGraph() override {
    try {
      reset();
    } catch (...) {  // a destructor must not throw; the CUDA error stays sticky for the next call
    }
  }

  void capture_begin(Stream stream, int64_t pool, int mode) override {
    EMBER_CHECK(!capturing_ && !exec_, "CUDAGraph.capture_begin: this graph already holds a capture (call reset() "
                                       "first to capture again)");
    EMBER_CHECK(stream.id != 0, "CUDA graphs must be captured on a non-default stream. (However, after capture, it's "
                                "ok to replay them on the default stream.)");
    EMBER_CHECK(mode >= 0 && mode <= 2, "CUDAGraph.capture_begin: unknown capture mode ", mode);
    device_ = stream.device.index;
    GpuGuard guard(device_);
    pool_ = pool > 0 ? pool : new_graph_pool_id();
    retain_graph_pool(pool_, device_);
    stream_ = stream;
    try {
      begin_pool_capture(device_, stream.id, pool_);  // throws when the stream is being captured already
    } catch (...) {
      release_graph_pool(pool_);
      pool_ = 0;
      throw;
    }
    const cudaStreamCaptureMode modes[] = {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal,
                                           cudaStreamCaptureModeRelaxed};
    const cudaError_t err = cudaStreamBeginCapture(stream_handle(stream), modes[mode]);
    if (err != cudaSuccess) {
      end_pool_capture(device_, stream.id);
      release_graph_pool(pool_);
      pool_ = 0;
      throw_cuda_error(err, "cudaStreamBeginCapture", __FILE__, __LINE__);
    }
    capturing_ = true;
  }

  void capture_end() override {
    EMBER_CHECK(capturing_, "CUDAGraph.capture_end: no capture is in progress (call capture_begin first)");
    GpuGuard guard(device_);
    cudaGraph_t graph = nullptr;
    const cudaError_t err = cudaStreamEndCapture(stream_handle(stream_), &graph);
    end_pool_capture(device_, stream_.id);
    capturing_ = false;
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      if (graph) (void)cudaGraphDestroy(graph);
      release_graph_pool(pool_);
      pool_ = 0;
      throw Error(detail::cat(
          "CUDAGraph.capture_end: the capture failed (", cudaGetErrorString(err),
          "). Something queued during the capture synchronized with the host (.item(), .cpu(), printing a tensor, "
          "a copy from pageable memory, torch.cuda.synchronize) or used a stream that did not join the capturing "
          "stream again; the graph is empty"));
    }
    graph_ = graph;
    const cudaError_t ierr = cudaGraphInstantiateWithFlags(&exec_, graph_, 0);
    if (ierr != cudaSuccess) {
      exec_ = nullptr;
      reset();
      throw_cuda_error(ierr, "cudaGraphInstantiateWithFlags", __FILE__, __LINE__);
    }
  }

  void replay(Stream stream) override {
    EMBER_CHECK(exec_, "CUDAGraph.replay: the graph holds no capture (capture_begin and capture_end first)");
    EMBER_CHECK(stream.device.index == device_, "CUDAGraph.replay: the graph was captured on cuda:", device_,
                ", the stream is on cuda:", stream.device.index);
    GpuGuard guard(device_);
    EMBER_CUDA_CHECK(cudaGraphLaunch(exec_, stream_handle(stream)));
  }

  void reset() override {
    if (capturing_) {  // abandoned mid-capture: end it so the stream works again
      GpuGuard guard(device_);
      cudaGraph_t g = nullptr;
      (void)cudaStreamEndCapture(stream_handle(stream_), &g);
      (void)cudaGetLastError();
      if (g) (void)cudaGraphDestroy(g);
      end_pool_capture(device_, stream_.id);
      capturing_ = false;
    }
    if (exec_) EMBER_CUDA_CHECK(cudaGraphExecDestroy(exec_));
    if (graph_) EMBER_CUDA_CHECK(cudaGraphDestroy(graph_));
    exec_ = nullptr;
    graph_ = nullptr;
    if (pool_ > 0) release_graph_pool(pool_);
    pool_ = 0;
  }

  int64_t pool() const override { return pool_; }

 private:
  int device_ = -1;
  Stream stream_{};
  int64_t pool_ = 0;
  bool capturing_ = false;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace

std::unique_ptr<DeviceGraph> make_cuda_graph() { return std::make_unique<CudaGraph>(); }

bool stream_is_capturing(Stream stream) {
  if (!captures_underway()) return false;  // only ember's own captures are ever under way
  GpuGuard guard(stream.device.index);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  EMBER_CUDA_CHECK(cudaStreamIsCapturing(stream_handle(stream), &status));
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace ember::cuda
