// cuDNN handles per (device, thread), pooled across threads (see cudnn_handle.h), and the
// cuDNN version behind torch.backends.cudnn.version() (ember/cudnn_flags.h).
#if EMBER_CUDNN
#include "cuda/cudnn_handle.h"

#include <mutex>
#include <vector>

#include "cuda/cuda_state.h"
#include "ember/core/errors.h"
#include "ember/cudnn_flags.h"

namespace ember::cuda {

void throw_cudnn_error(cudnnStatus_t status, const char* expr, const char* file, int line) {
  throw Error(detail::cat("cuDNN error: ", cudnnGetErrorString(status), " when calling `", expr, "` (", file, ":",
                          line, ")"));
}

namespace {

// Handles given back by threads that ended, per device. Never destroyed (at process exit the
// driver may already be gone).
struct HandlePool {
  std::mutex mu;
  std::vector<cudnnHandle_t> handles;
};
HandlePool& pool(int device) {
  static auto* pools = new HandlePool[kMaxGpus];
  return pools[device];
}

// This thread's handles; returned to the pools when the thread ends.
struct ThreadHandles {
  cudnnHandle_t h[kMaxGpus] = {};
  ~ThreadHandles() {
    for (int d = 0; d < kMaxGpus; ++d) {
      if (!h[d]) continue;
      HandlePool& p = pool(d);
      std::lock_guard lock(p.mu);
      p.handles.push_back(h[d]);
    }
  }
};
ThreadHandles& thread_handles() {
  thread_local ThreadHandles handles;
  return handles;
}

cudnnHandle_t get_handle(int device) {
  EMBER_CHECK(device >= 0 && device < gpu_count(), "cuDNN: invalid device index ", device);
  cudnnHandle_t& h = thread_handles().h[device];
  if (h) return h;
  {
    HandlePool& p = pool(device);
    std::lock_guard lock(p.mu);
    if (!p.handles.empty()) {
      h = p.handles.back();
      p.handles.pop_back();
      return h;
    }
  }
  cudnnHandle_t created = nullptr;
  EMBER_CUDNN_CHECK(cudnnCreate(&created));  // binds the handle to the current device
  h = created;
  return h;
}

int64_t version() { return int64_t(cudnnGetVersion()); }

[[maybe_unused]] const bool version_registered = (::ember::detail::register_cudnn_version(&version), true);

}  // namespace

cudnnHandle_t cudnn_handle(int device) {
  cudnnHandle_t h = get_handle(device);
  EMBER_CUDNN_CHECK(cudnnSetStream(h, current_cuda_stream(device)));
  return h;
}

}  // namespace ember::cuda
#endif  // EMBER_CUDNN
