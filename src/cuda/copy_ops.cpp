// CUDA allocation, fill_, copy_ (within a GPU, between GPUs, and to and from the host, with
// dtype conversion and non_blocking transfers from pinned memory), to_dtype and clone.
#include <cuda_runtime_api.h>

#include "cuda/cuda_check.h"
#include "cuda/cuda_memory.h"
#include "cuda/cuda_state.h"
#include "cuda/elementwise_host.h"
#include "cuda/elementwise_launchers.h"
#include "ember/ops.h"
#include "ops/empty_tensor.h"
#include "ops/op_handles.h"

namespace ember::cuda {
namespace {

Device resolved(Device d) { return d.has_index() ? d : Device(DeviceType::CUDA, int16_t(current_gpu())); }

Tensor empty_cuda(IntArrayRef size, TensorOptions opts) {
  return empty_on(size, opts.dtype_or_default(), resolved(opts.device_or()));
}

Tensor empty_strided_cuda(IntArrayRef size, IntArrayRef stride, TensorOptions opts) {
  return empty_strided_on(size, stride, opts.dtype_or_default(), resolved(opts.device_or()));
}

Tensor& fill_cuda(Tensor& self, const Scalar& value) {
  EMBER_CHECK(!is_complex(self.dtype()), "fill_: CUDA complex tensors are not supported yet");
  if (self.numel() == 0) return self;
  GpuGuard guard(self.device().index);
  ElementwisePlan plan({self}, {}, {.op_name = "fill_", .compute_dtype = self.dtype(), .output_dtype = self.dtype(),
                                    .upcast_reduced_float = false, .cast_in_loop = true});
  ElementwiseArgs args = make_args(plan);
  set_param(args, 0, value);
  launch_fill(args);
  return self;
}

// Within one GPU: a memcpy when both sides are dense with one dtype, else the copy kernel
// (strides, broadcasting of src, dtype conversion).
void copy_on_device(Tensor& dst, const Tensor& src) {
  GpuGuard guard(dst.device().index);
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
      IntArrayRef(dst.sizes()) == IntArrayRef(src.sizes())) {
    if (dst.data_ptr() != src.data_ptr())
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), size_t(dst.numel()) * element_size(dst.dtype()),
                                       cudaMemcpyDeviceToDevice, current_cuda_stream(dst.device().index)));
    return;
  }
  Tensor out = dst;
  run_elementwise(out, {src}, {.op_name = "copy_", .compute_dtype = src.dtype(), .output_dtype = dst.dtype(),
                               .cast_inputs = false, .upcast_reduced_float = false},
                  launch_copy);
}

bool dense_same(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.is_contiguous() && b.is_contiguous() && IntArrayRef(a.sizes()) == IntArrayRef(b.sizes());
}

Tensor& copy_cuda(Tensor& self, const Tensor& src, bool non_blocking) {
  EMBER_CHECK(src.numel() == self.numel() || src.numel() == 1 || IntArrayRef(broadcast_shapes(self.sizes(), src.sizes())) == IntArrayRef(self.sizes()),
              "copy_: the source of shape ", src.sizes(), " cannot be broadcast to ", self.sizes());
  if (self.numel() == 0) return self;
  // Broadcasting across devices: expand first, so every path below copies equal shapes.
  Tensor s = IntArrayRef(src.sizes()) == IntArrayRef(self.sizes()) ? src : src.expand(self.sizes());
  const bool dst_gpu = self.is_cuda(), src_gpu = s.is_cuda();
  if (dst_gpu && src_gpu && self.device() == s.device()) {
    copy_on_device(self, s);
    return self;
  }
  if (dst_gpu && src_gpu) {  // GPU to GPU: peer copy of dense bytes, converting on the destination
    Tensor staged = s.is_contiguous() ? s : ops::clone()(s);
    Tensor landing = empty(self.sizes(), {.dtype = staged.dtype(), .device = self.device()});
    GpuGuard g(self.device().index);
    cudaStream_t stream = current_cuda_stream(self.device().index);
    // The source's device must have finished writing `staged` before the peer copy reads it.
    EMBER_CUDA_CHECK(cudaStreamSynchronize(current_cuda_stream(staged.device().index)));
    EMBER_CUDA_CHECK(cudaMemcpyPeerAsync(landing.data_ptr(), self.device().index, staged.data_ptr(), staged.device().index,
                                         size_t(staged.numel()) * element_size(staged.dtype()), stream));
    copy_on_device(self, landing);
    return self;
  }
  // Host <-> GPU: dense bytes of one dtype cross; conversion and strides are handled on the GPU
  // for uploads and on the host for downloads (as torch's copy_).
  const Device gpu = dst_gpu ? self.device() : s.device();
  GpuGuard g(gpu.index);
  cudaStream_t stream = current_cuda_stream(gpu.index);
  const Stream ember_stream = current_stream_of(gpu.index);
  if (dst_gpu) {
    Tensor host = s.is_contiguous() ? s : ops::clone()(s);
    Tensor landing = dense_same(self, host) ? self : empty(self.sizes(), {.dtype = host.dtype(), .device = gpu});
    const bool pinned = is_pinned_ptr(host.data_ptr());
    EMBER_CUDA_CHECK(cudaMemcpyAsync(landing.data_ptr(), host.data_ptr(), size_t(host.numel()) * element_size(host.dtype()),
                                     cudaMemcpyHostToDevice, stream));
    if (non_blocking && pinned) record_pinned_use(host.data_ptr(), ember_stream);
    else EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (!landing.is_same(self)) copy_on_device(self, landing);
    return self;
  }
  // GPU -> host: convert and compact on the GPU, one transfer, then strides on the host.
  Tensor dense = dense_same(s, s) && s.dtype() == self.dtype() ? s : [&] {
    Tensor t = empty(s.sizes(), {.dtype = self.dtype(), .device = gpu});
    copy_on_device(t, s);
    return t;
  }();
  Tensor host = self.is_contiguous() ? self : empty(self.sizes(), {.dtype = self.dtype(), .device = self.device()});
  const bool pinned = is_pinned_ptr(host.data_ptr());
  EMBER_CUDA_CHECK(cudaMemcpyAsync(host.data_ptr(), dense.data_ptr(), size_t(dense.numel()) * element_size(dense.dtype()),
                                   cudaMemcpyDeviceToHost, stream));
  if (non_blocking && pinned && host.is_same(self)) record_pinned_use(host.data_ptr(), ember_stream);
  else EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (!host.is_same(self)) ops::copy_()(self, host, false);
  return self;
}

Tensor to_dtype_cuda(const Tensor& self, DType dtype) {
  Tensor out = empty(self.sizes(), {.dtype = dtype, .device = self.device()});
  copy_on_device(out, self);
  return out;
}

Tensor clone_cuda(const Tensor& self) {
  Tensor out = empty(self.sizes(), {.dtype = self.dtype(), .device = self.device()});
  copy_on_device(out, self);
  return out;
}

EMBER_REGISTER_KERNEL(empty, CUDA, empty_cuda);
EMBER_REGISTER_KERNEL(empty_strided, CUDA, empty_strided_cuda);
EMBER_REGISTER_KERNEL(fill_, CUDA, fill_cuda);
EMBER_REGISTER_KERNEL(copy_, CUDA, copy_cuda);
EMBER_REGISTER_KERNEL(to_dtype, CUDA, to_dtype_cuda);
EMBER_REGISTER_KERNEL(clone, CUDA, clone_cuda);

}  // namespace
}  // namespace ember::cuda
