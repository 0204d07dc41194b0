#pragma once
// Fused kernels for accelerators: the contract between ember.compile's fusion (generic, in
// src/compile/) and a backend that builds generated kernels at run time (the CUDA backend's
// NVRTC builder, src/cuda/nvrtc_codegen.cpp), added by registration as every backend piece is,
// so generic code names no device. A group over tensors of a device whose backend registered a
// builder gets device source (codegen_device_source.cpp); without one, fusion stays on the CPU.
#include <cstdint>
#include <memory>
#include <string>

#include "ember/core/device.h"

namespace ember::compiler {

// How many pointers and numbers a generated device kernel takes, fixed by its source:
//   forward:  {numel, inner, in[n_in], out[n_out], scalar[n_in]}
//   backward: {numel, inner, in[n_in], grad_out[n_out], grad_in[n_in], scalar[n_in]}
// in[k] is operand k's device pointer (nullptr for a number the host passes in scalar[k]).
struct DeviceKernelShape {
  int n_in = 0, n_out = 0;
  bool has_backward = false;
};

class DeviceKernel {
 public:
  virtual ~DeviceKernel() = default;
  // Launches on `device` (the group's tensors' GPU), on its current stream (asynchronous, as
  // every kernel).
  virtual void run(const Device& device, int64_t numel, int64_t inner, const void* const* in, void* const* out,
                   const float* scalars) const = 0;
  virtual void run_backward(const Device& device, int64_t numel, int64_t inner, const void* const* in,
                            const void* const* grad_out, void* const* grad_in, const float* scalars) const = 0;
  bool from_cache = false;  // found in the disk cache, not compiled now
  double seconds = 0;       // what building it took
};

// Builds (or loads from the disk cache) the kernels of `source` for the current device; throws
// with the compiler's log when it does not build.
using DeviceKernelBuilder = std::shared_ptr<const DeviceKernel> (*)(const std::string& source,
                                                                    const DeviceKernelShape& shape);

void register_device_codegen(DeviceType type, DeviceKernelBuilder builder);
// The builder for tensors of this device type, or nullptr.
DeviceKernelBuilder device_codegen(DeviceType type);

}  // namespace ember::compiler
