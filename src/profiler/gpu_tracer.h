#pragma once
// How a device backend reports its GPU work to the profiler. The CUDA backend registers a tracer
// built on CUPTI (src/cuda/cupti_tracer.cpp); the profiler tags each op with its event id while
// the op runs, and the tracer hands back the kernels, copies and memsets that ran, with the id
// of the op that launched them and times on the profiler's clock.
#include <cstdint>
#include <string>
#include <vector>

namespace ember::profiler::detail {

struct DeviceActivity {
  std::string name;
  std::string kind;  // "kernel", "gpu_memcpy", "gpu_memset"
  int device = 0;
  int64_t stream = 0;
  int64_t start_ns = 0, end_ns = 0;  // steady_clock nanoseconds (now_ns())
  int64_t correlation = 0;
  int64_t external_id = -1;  // the profiler event id pushed when it was launched
  int64_t bytes = 0;         // copies and memsets
  std::vector<int64_t> grid, block;
};

// The host call that launched device work (cudaLaunchKernel, cudaMemcpyAsync, ...).
struct RuntimeCall {
  std::string name;
  int64_t start_ns = 0, end_ns = 0;
  uint64_t thread = 0;
  int64_t correlation = 0;
  int64_t external_id = -1;
};

class GpuTracer {
 public:
  virtual ~GpuTracer() = default;
  // Starts collecting; false with the reason when the device cannot be traced here.
  virtual bool start(std::string* why_not) = 0;
  // Tags work launched by this thread until the matching pop with an op's event id.
  virtual void push_external_id(int64_t id) = 0;
  virtual void pop_external_id() = 0;
  // Waits for queued device work, stops and returns everything collected since start.
  virtual void stop(std::vector<DeviceActivity>& activities, std::vector<RuntimeCall>& calls) = 0;
};

// The backend registers its tracer at load time; nullptr when none (a CPU-only build).
void register_gpu_tracer(GpuTracer* tracer);
GpuTracer* gpu_tracer();

// The profiler's clock: steady_clock nanoseconds.
int64_t now_ns();

}  // namespace ember::profiler::detail
