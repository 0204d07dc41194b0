// Allocation, dtype/device conversion, copy_ and fill_: the ops every other op builds on.
#include "ember/compile/capture.h"
#include "ember/core/backend.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember {

Tensor empty(IntArrayRef size, TensorOptions opts) {
  Tensor t = ops::empty()(size, opts);
  if (opts.requires_grad) t.requires_grad_(true);
  return t;
}
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, TensorOptions opts) {
  Tensor t = ops::empty_strided()(size, stride, opts);
  if (opts.requires_grad) t.requires_grad_(true);
  return t;
}

Tensor empty_like(const Tensor& like, TensorOptions opts) {
  return empty(like.sizes(), {.dtype = opts.dtype_or(like.dtype()),
                              .device = opts.device_or(like.device()),
                              .requires_grad = opts.requires_grad});
}

Tensor& copy_(Tensor& self, const Tensor& src, bool non_blocking) {
  ops::copy_()(self, src, non_blocking);
  self.impl()->bump_version();
  return self;
}

Tensor& fill_(Tensor& self, const Scalar& value) {
  ops::fill_()(self, value);
  self.impl()->bump_version();
  return self;
}

Tensor& zero_(Tensor& self) { return fill_(self, 0); }

Tensor clone(const Tensor& self) { return ops::clone()(self); }

Tensor contiguous(const Tensor& self) { return self.is_contiguous() ? self : clone(self); }

Tensor Tensor::to(DType dtype, bool copy) const {
  if (dtype == this->dtype() && !copy) return *this;
  return ops::to_dtype()(*this, dtype);
}

namespace {
Tensor copy_to_device(const Tensor& src, Device device, bool non_blocking);  // differentiable; below, with the gradients
}

Tensor Tensor::to(Device device, bool copy, bool non_blocking) const {
  if (device.type == this->device().type && (device.index < 0 || device.index == this->device().index) && !copy)
    return *this;
  return copy_to_device(*this, device, non_blocking);
}

Tensor Tensor::to(Device device, DType dtype, bool copy, bool non_blocking) const {
  // Host to device with a new dtype: move first and convert on the device, as torch does (the
  // device converts faster, and non_blocking still applies to the transfer).
  if (!device.is_cpu() && this->is_cpu() && dtype != this->dtype()) {
    Tensor moved = to(device, copy, non_blocking);
    return moved.to(dtype, copy && moved.is_same(*this));
  }
  Tensor t = to(dtype, copy);
  return t.to(device, copy && t.is_same(*this), non_blocking);
}

Tensor Tensor::to(const Tensor& other) const { return to(other.device(), other.dtype()); }

// Pinned memory belongs to the accelerator that pins it (CUDA's backend).
Tensor Tensor::pin_memory() const {
  EMBER_CHECK(is_cpu(), "cannot pin '", device().str(), "' memory: only dense CPU tensors can be pinned");
  EMBER_CHECK(has_device_backend(DeviceType::CUDA) && device_backend(DeviceType::CUDA).device_count() > 0,
              "pin_memory: no CUDA GPU is available (pinned memory is for copies to a GPU)");
  if (is_pinned()) return *this;
  DeviceBackend& cuda = device_backend(DeviceType::CUDA);
  size_t nbytes = size_t(numel() * element_size());
  DataPtr p = cuda.allocate_pinned(nbytes);
  auto storage = std::make_shared<Storage>(p.ptr, nbytes, Device(DeviceType::CPU), p.deleter, p.ctx);
  Tensor out(std::make_shared<TensorImpl>(std::move(storage), dtype(), sizes(), contiguous_strides(sizes()), 0));
  ops::copy_()(out, *this, false);
  return out;
}

bool Tensor::is_pinned() const {
  if (!is_cpu() || !has_device_backend(DeviceType::CUDA)) return false;
  const void* p = impl()->storage()->data();
  return p && device_backend(DeviceType::CUDA).is_pinned(p);
}

void Tensor::record_stream(Stream stream) const {
  EMBER_CHECK(device().type == stream.device.type, "record_stream: the stream (", stream.device.str(),
              ") must be of the tensor's device type (", device().str(), ")");
  device_backend(device().type).record_stream(impl()->storage()->data(), stream);
}

Scalar Tensor::item() const {
  compiler::detail::note_break("Tensor.item() reads a value into the program");
  EMBER_CHECK(numel() == 1, "a Tensor with ", numel(),
              " elements cannot be converted to Scalar");
  EMBER_CHECK(!is_meta(), "Tensor.item() cannot be called on meta tensors");
  Tensor c = is_cpu() ? *this : cpu();
  const void* p = c.data_ptr();
  switch (dtype()) {
    case DType::Bool: return Scalar(*static_cast<const bool*>(p));
    case DType::UInt8: return Scalar(int64_t(*static_cast<const uint8_t*>(p)));
    case DType::Int8: return Scalar(int64_t(*static_cast<const int8_t*>(p)));
    case DType::Int16: return Scalar(int64_t(*static_cast<const int16_t*>(p)));
    case DType::Int32: return Scalar(int64_t(*static_cast<const int32_t*>(p)));
    case DType::Int64: return Scalar(*static_cast<const int64_t*>(p));
    case DType::Float16: return Scalar(double(float(*static_cast<const Half*>(p))));
    case DType::BFloat16: return Scalar(double(float(*static_cast<const BFloat16*>(p))));
    case DType::Float32: return Scalar(double(*static_cast<const float*>(p)));
    case DType::Float64: return Scalar(*static_cast<const double*>(p));
    case DType::Complex64: return Scalar(complex128(*static_cast<const complex64*>(p)));
    case DType::Complex128: return Scalar(*static_cast<const complex128*>(p));
  }
  return Scalar();
}

template <class T> std::vector<T> Tensor::tolist() const {
  compiler::detail::note_break("Tensor.tolist() reads values into the program");
  Tensor c = ember::contiguous(is_cpu() ? *this : cpu()).to(dtype_of<T>);
  const T* p = static_cast<const T*>(c.data_ptr());
  return std::vector<T>(p, p + c.numel());
}
template std::vector<bool> Tensor::tolist<bool>() const;
template std::vector<uint8_t> Tensor::tolist<uint8_t>() const;
template std::vector<int8_t> Tensor::tolist<int8_t>() const;
template std::vector<int16_t> Tensor::tolist<int16_t>() const;
template std::vector<int32_t> Tensor::tolist<int32_t>() const;
template std::vector<int64_t> Tensor::tolist<int64_t>() const;
template std::vector<float> Tensor::tolist<float>() const;
template std::vector<double> Tensor::tolist<double>() const;
template std::vector<complex64> Tensor::tolist<complex64>() const;
template std::vector<complex128> Tensor::tolist<complex128>() const;

}  // namespace ember

// ---------------------------------------------------------------- gradients
#include "autograd/record.h"

namespace ember {
namespace {
using namespace autograd;  // record, below_autograd, saved_input, grad_for, ...

Tensor clone_ag(const Tensor& self) {
  Tensor out = below_autograd([&] { return ops::clone()(self); });
  record("CloneBackward0", {self}, {out}, {}, [](const variable_list& g, LambdaNode&) -> variable_list { return {g[0]}; });
  return out;
}
// A copy onto another device with its own gradient (back to the source's device), so that
// Tensor::to(device) and copy_'s autograd kernel never re-enter copy_'s autograd kernel.
Tensor copy_to_device(const Tensor& src, Device device, bool non_blocking) {
  Tensor out = empty(src.sizes(), {.dtype = src.dtype(), .device = device});
  below_autograd([&] { return ops::copy_()(out, src, non_blocking); });
  out.impl()->bump_version();
  record("ToCopyBackward0", {src}, {out}, {}, [from = src.device()](const variable_list& g, LambdaNode&) -> variable_list {
    return {g[0].to(from)};
  });
  return out;
}

Tensor to_dtype_ag(const Tensor& self, DType dtype) {
  Tensor out = below_autograd([&] { return ops::to_dtype()(self, dtype); });
  record("ToCopyBackward0", {self}, {out}, {}, [from = self.dtype()](const variable_list& g, LambdaNode&) -> variable_list {
    return {g[0].to(from)};
  });
  return out;
}
Tensor& copy_ag(Tensor& self, const Tensor& src, bool non_blocking) {
  return record_inplace(self, false, [&](const Tensor&) {
    // Not src.to(device): that copies through copy_, whose autograd kernel this is.
    Tensor v = src.to(self.dtype());
    if (v.device() != self.device()) v = copy_to_device(v, self.device(), non_blocking);
    return IntArrayRef(v.sizes()) == IntArrayRef(self.sizes()) ? v.view(self.sizes()) : v.expand(self.sizes());
  });
}
Tensor& fill_ag(Tensor& self, const Scalar& value) {
  return record_inplace(self, false, [&](const Tensor&) { return full(self.sizes(), value, {.dtype = self.dtype(), .device = self.device()}); });
}

EMBER_REGISTER_KERNEL(clone, Autograd, clone_ag);
EMBER_REGISTER_KERNEL(to_dtype, Autograd, to_dtype_ag);
EMBER_REGISTER_KERNEL(copy_, Autograd, copy_ag);
EMBER_REGISTER_KERNEL(fill_, Autograd, fill_ag);

}  // namespace
}  // namespace ember
