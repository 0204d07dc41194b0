#pragma once
// How a new tensor is made: dtype, device, requires_grad. An aggregate, so call sites read
// ember::zeros({2, 3}, {.dtype = ember::kInt64, .device = "cuda:0"}).
#include <optional>

#include "ember/core/device.h"
#include "ember/core/dtype.h"

namespace ember {

class Generator;

struct TensorOptions {
  std::optional<DType> dtype{};  // unset: the default float dtype (or inferred, for arange/tensor)
  std::optional<Device> device{};  // unset: default_device() (or, for the *_like forms, the source's)
  bool requires_grad = false;

  DType dtype_or(DType fallback) const { return dtype ? *dtype : fallback; }
  DType dtype_or_default() const;
  Device device_or() const { return device ? *device : default_device(); }
  Device device_or(Device fallback) const { return device ? *device : fallback; }
};

}  // namespace ember
