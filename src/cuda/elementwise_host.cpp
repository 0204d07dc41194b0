// The host side of the CUDA elementwise engine (elementwise_host.h).
#include "cuda/elementwise_host.h"

#include "core/dtype_dispatch.h"
#include "cuda/cuda_state.h"
#include "ember/core/errors.h"

namespace ember::cuda {

static_assert(int(DType::Bool) == kCodeBool && int(DType::UInt8) == kCodeUInt8 && int(DType::Int8) == kCodeInt8 &&
              int(DType::Int16) == kCodeInt16 && int(DType::Int32) == kCodeInt32 && int(DType::Int64) == kCodeInt64 &&
              int(DType::Float16) == kCodeFloat16 && int(DType::BFloat16) == kCodeBFloat16 &&
              int(DType::Float32) == kCodeFloat32 && int(DType::Float64) == kCodeFloat64 &&
              int(DType::Complex64) == kCodeComplex64 && int(DType::Complex128) == kCodeComplex128,
              "elementwise_args.h's dtype codes must be ember::DType's values");
static_assert(kMaxOperands == kMaxIterOperands && kMaxDims == kMaxIterDims);

void throw_dtype_not_implemented(const char* op, int8_t code) { ::ember::throw_dtype_not_implemented(op, DType(code)); }

Device common_device(const char* op, const std::vector<Tensor>& tensors) {
  std::optional<Device> device;
  for (const Tensor& t : tensors) {
    if (!t.defined() || (t.is_cpu() && t.dim() == 0)) continue;
    if (!device) {
      device = t.device();
    } else if (t.device() != *device) {
      throw Error(detail::cat("Expected all tensors to be on the same device, but found at least two devices, ",
                              device->str(), " and ", t.device().str(), "! (when checking arguments for ", op, ")"));
    }
  }
  EMBER_CHECK(device && device->is_cuda(), op, ": expected a CUDA tensor among the arguments");
  return *device;
}

void set_param(ElementwiseArgs& args, int i, const Scalar& v) {
  args.param_f[i] = v.to_double();
  args.param_i[i] = v.is_floating() ? int64_t(v.to_double()) : v.to<int64_t>();
}

ElementwiseArgs make_args(const ElementwisePlan& plan) {
  ElementwiseArgs a;
  a.noutputs = plan.noutputs();
  a.ntensors = plan.ntensors();
  a.numel = plan.numel();
  a.compute = int8_t(plan.compute_dtype());
  EMBER_CHECK(!is_complex(plan.compute_dtype()), "CUDA kernels for complex dtypes are not implemented yet (got ",
              dtype_name(plan.compute_dtype()), ")");
  Device device(DeviceType::CUDA, 0);
  for (int i = 0; i < plan.ntensors(); ++i) {
    const Tensor& t = plan.operand(i);
    a.dtype[i] = int8_t(t.dtype());
    EMBER_CHECK(!is_complex(t.dtype()), "CUDA kernels for complex dtypes are not implemented yet");
    if (t.is_cpu()) {  // a 0-dim host tensor: passed by value
      EMBER_CHECK(i >= plan.noutputs() && t.dim() == 0, "elementwise: a host tensor reached a CUDA kernel");
      Scalar v = t.item();
      a.host_scalar[i] = true;
      a.scalar_f[i] = v.to_double();
      a.scalar_i[i] = is_floating(t.dtype()) ? int64_t(v.to_double()) : v.to<int64_t>();
      a.data[i] = nullptr;
    } else {
      a.data[i] = plan.data(i);
      device = t.device();
    }
  }
  if (plan.is_contiguous() || plan.ndim() == 0) {
    // One dense run (or a single element): the plan leaves its geometry empty.
    a.ndim = 1;
    a.sizes[0] = plan.numel();
    for (int i = 0; i < plan.ntensors(); ++i) a.strides[i][0] = a.host_scalar[i] ? 0 : element_size(plan.operand(i).dtype());
    a.dense = plan.numel() <= 1 || plan.is_contiguous();
    if (plan.ndim() == 0 && !plan.is_contiguous()) {
      // a single element whose operands may be 0-dim: no stride is ever applied
      for (int i = 0; i < plan.ntensors(); ++i) a.strides[i][0] = 0;
    }
  } else {
    a.ndim = plan.ndim();
    a.dense = plan.ndim() == 1;
    for (int d = 0; d < plan.ndim(); ++d) {
      a.sizes[d] = plan.size(d);
      for (int i = 0; i < plan.ntensors(); ++i) a.strides[i][d] = plan.stride(i, d);
    }
    for (int i = 0; i < plan.ntensors() && a.dense; ++i)
      a.dense = a.host_scalar[i] || a.strides[i][0] == element_size(plan.operand(i).dtype());
  }
  a.stream = current_cuda_stream(device.index);
  return a;
}

}  // namespace ember::cuda
