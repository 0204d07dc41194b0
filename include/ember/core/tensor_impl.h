#pragma once
// The data behind a Tensor handle: a window (sizes, strides, offset) onto a Storage.
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "ember/core/array_ref.h"
#include "ember/core/dtype.h"
#include "ember/core/storage.h"

namespace ember {

using Shape = std::vector<int64_t>;

// Shared by a tensor and all its views; bumped by every in-place write, so autograd can tell
// that a tensor it saved has since been modified.
struct VersionCounter {
  std::atomic<uint32_t> version{0};
};

// Autograd keeps its per-tensor state (grad, grad_fn, hooks) behind this interface so the
// core does not depend on the autograd library.
struct AutogradMetaInterface {
  virtual ~AutogradMetaInterface() = default;
  virtual bool requires_grad() const = 0;
};

class TensorImpl {
 public:
  TensorImpl(StoragePtr storage, DType dtype, Shape sizes, Shape strides, int64_t offset);

  const StoragePtr& storage() const { return storage_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  const Shape& sizes() const { return sizes_; }
  const Shape& strides() const { return strides_; }
  int64_t storage_offset() const { return offset_; }
  int64_t dim() const { return int64_t(sizes_.size()); }
  int64_t numel() const { return numel_; }
  bool is_contiguous() const { return is_contiguous_; }
  void* data() const {
    if (storage_->released()) [[unlikely]] throw_no_data();
    return static_cast<char*>(storage_->data()) + offset_ * element_size(dtype_);
  }

  // Re-point this impl at a new window (used by in-place view ops such as squeeze_ / t_).
  void set_geometry(Shape sizes, Shape strides, int64_t offset);
  // Re-point this impl at src's data (storage, dtype, geometry), keeping its own version counter
  // and autograd state: Tensor::set_data (Python's `p.data = t`), so every holder of this impl
  // (an optimizer, a module) sees the new data.
  void set_data_from(const TensorImpl& src);

  const std::shared_ptr<VersionCounter>& version_counter() const { return version_; }
  void share_version_counter(std::shared_ptr<VersionCounter> vc) { version_ = std::move(vc); }
  uint32_t version() const { return version_->version.load(std::memory_order_relaxed); }
  void bump_version() { version_->version.fetch_add(1, std::memory_order_relaxed); }

  // A 0-dim tensor made from a Python-style number: lower promotion priority than tensors.
  bool is_wrapped_number() const { return wrapped_number_; }
  void set_wrapped_number(bool v) { wrapped_number_ = v; }

  // For a view: the tensor whose storage it windows (the root, never itself a view). Autograd
  // needs it when a view is written in place (the base's history changes too).
  const std::shared_ptr<TensorImpl>& view_base() const { return view_base_; }
  void set_view_base(std::shared_ptr<TensorImpl> base) { view_base_ = std::move(base); }
  bool is_view() const { return view_base_ != nullptr; }

  AutogradMetaInterface* autograd_meta() const { return autograd_meta_.get(); }
  void set_autograd_meta(std::unique_ptr<AutogradMetaInterface> m) { autograd_meta_ = std::move(m); }

 private:
  void refresh();
  [[noreturn]] void throw_no_data() const;  // a meta tensor, or FSDP's released storage

  StoragePtr storage_;
  Shape sizes_, strides_;
  int64_t offset_ = 0;
  int64_t numel_ = 0;
  DType dtype_;
  bool is_contiguous_ = true;
  bool wrapped_number_ = false;
  std::shared_ptr<VersionCounter> version_;
  std::shared_ptr<TensorImpl> view_base_;
  std::unique_ptr<AutogradMetaInterface> autograd_meta_;
};

// Row-major strides for a shape.
Shape contiguous_strides(IntArrayRef sizes);
int64_t shape_numel(IntArrayRef sizes);

}  // namespace ember
