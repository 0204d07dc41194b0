#pragma once
// torch.backends.cudnn's process-wide flags, read by the cuDNN convolutions (src/cuda/conv_cudnn.cpp)
// and set from Python (python/ember/backends/cudnn). Backend-neutral: a build without CUDA or
// without cuDNN keeps and reports the flags all the same, and cudnn_version() is 0 there.
//   enabled         (default true)  torch falls back to its own CUDA kernels when false; ember has
//                                    no other CUDA convolution, so it keeps using cuDNN.
//   benchmark       (default false) time the algorithms (cudnnFind*AlgorithmEx) once per shape
//                                    instead of taking cuDNN's heuristic choice.
//   benchmark_limit (default 10)    kept for torch's API; the legacy Find API times every algorithm.
//   deterministic   (default false) only algorithms cuDNN reports as deterministic.
//   allow_tf32      (default true)  float32 convolutions may use TensorFloat32 tensor cores.
#include <cstdint>

namespace ember {

bool cudnn_enabled();
void set_cudnn_enabled(bool enabled);
bool cudnn_benchmark();
void set_cudnn_benchmark(bool benchmark);
int64_t cudnn_benchmark_limit();
void set_cudnn_benchmark_limit(int64_t limit);
bool cudnn_deterministic();
void set_cudnn_deterministic(bool deterministic);
bool cudnn_allow_tf32();
void set_cudnn_allow_tf32(bool allow);

// cudnnGetVersion() (e.g. 91900 for 9.19.0) when this build links cuDNN, else 0.
int64_t cudnn_version();
// True when the build links cuDNN and a GPU answered (torch.backends.cudnn.is_available()).
bool cudnn_is_available();

namespace detail {
// Called once by the cuDNN code (src/cuda/cudnn_handle.cpp) from a static initialiser.
void register_cudnn_version(int64_t (*version)());
}  // namespace detail

}  // namespace ember
