#pragma once
// empty / empty_strided for every backend: PyTorch's checks, then a TensorImpl over a fresh
// Storage of `device` (its bytes come from that device's registered allocator). A backend's
// kernels only pick the device (CUDA resolves "cuda" to the current GPU).
#include "ember/core/storage.h"
#include "ember/core/tensor_impl.h"
#include "ember/tensor.h"

namespace ember {

inline Tensor empty_on(IntArrayRef size, DType dt, Device device) {
  for (auto s : size) EMBER_CHECK(s >= 0, "empty: Trying to create tensor with negative dimension ", s, ": ", size);
  auto storage = std::make_shared<Storage>(size_t(shape_numel(size) * element_size(dt)), device);
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dt, size.vec(), contiguous_strides(size), 0));
}

inline Tensor empty_strided_on(IntArrayRef size, IntArrayRef stride, DType dt, Device device) {
  EMBER_CHECK(size.size() == stride.size(), "empty_strided: mismatch in length of strides and shape (", size.size(),
              " vs ", stride.size(), ")");
  int64_t extent = 1;
  bool empty_tensor = false;
  for (size_t i = 0; i < size.size(); ++i) {
    EMBER_CHECK(size[i] >= 0, "empty_strided: negative dimension ", size[i]);
    EMBER_CHECK(stride[i] >= 0, "empty_strided: negative strides are not supported, got ", stride);
    if (size[i] == 0) empty_tensor = true;
    extent += (size[i] - 1) * stride[i];
  }
  if (empty_tensor) extent = 0;
  auto storage = std::make_shared<Storage>(size_t(extent * element_size(dt)), device);
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dt, size.vec(), stride.vec(), 0));
}

}  // namespace ember
